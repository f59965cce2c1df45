package dev.ncclguard.control;

import dev.ncclguard.json.Json;
import dev.ncclguard.report.Report.BeforeAttach;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Asks NCCL's RAS service (NCCL 2.24+, a TCP socket on localhost:28028 unless NCCL_RAS_ADDR says
 * otherwise, on by default) which communicators exist: at an attach, the only way to learn of those
 * created before the agent came. The protocol is NCCL's own client's (src/ras/client.cc): lines
 * {@code CLIENT PROTOCOL 2}, {@code TIMEOUT n}, {@code SET FORMAT json} (answered {@code OK} by NCCL
 * versions that have it, an {@code ERROR} line by older ones), then {@code STATUS}, whose answer
 * runs until NCCL closes the connection.
 */
public final class Ras {
    static final String DEFAULT_ADDRESS = "localhost:28028";
    static final int PROTOCOL = 2;
    /** Seconds each leg of RAS's collective may take among the job's processes (NCCL's default is 5). */
    static final int LEG_TIMEOUT_SECONDS = 2;
    private static final long MAX_CONNECT_MILLIS = 1000;
    private static final int MAX_ANSWER_CHARS = 8 << 20;

    /** What RAS said: the job's communicators, and of their ranks those in this process (null when it does not say). */
    record Answer(String ncclVersion, int communicators, Integer ranksHere) {
    }

    private Ras() {
    }

    /**
     * Asks, within {@code timeout}, and says what was learned; never throws.
     *
     * @param env the process's environment (NCCL_RAS_ENABLE, NCCL_RAS_ADDR)
     * @param pid this process, to count its ranks in RAS's JSON answer
     */
    public static BeforeAttach ask(Map<String, String> env, long pid, Duration timeout) {
        if ("0".equals(env.get("NCCL_RAS_ENABLE"))) {
            return new BeforeAttach(BeforeAttach.UNAVAILABLE, null, null, "NCCL's RAS service is off in this process"
                    + " (NCCL_RAS_ENABLE=0): communicators created before the attach are not counted");
        }
        String address = env.getOrDefault("NCCL_RAS_ADDR", DEFAULT_ADDRESS);
        if (address.isEmpty()) {
            address = DEFAULT_ADDRESS;
        }
        Answer answer;
        try {
            answer = query(address, pid, timeout);
        } catch (ConnectException | SocketTimeoutException e) {
            return new BeforeAttach(BeforeAttach.UNAVAILABLE, null, null, "at attach, no NCCL RAS service answered at "
                    + address + " (NCCL before 2.24, RAS turned off, or no communicator created yet):"
                    + " communicators created before the attach are not counted");
        } catch (IOException | RuntimeException e) {
            return new BeforeAttach(BeforeAttach.FAILED, null, null, "at attach, asking NCCL's RAS service at " + address
                    + " failed (" + e.getMessage() + "): communicators created before the attach are not counted");
        }
        return new BeforeAttach(BeforeAttach.ANSWERED, answer.communicators(), answer.ranksHere(),
                note(address, answer));
    }

    static String note(String address, Answer a) {
        String who = "at attach, NCCL " + (a.ncclVersion() == null ? "" : a.ncclVersion() + " ") + "RAS (" + address + ")";
        if (a.communicators() == 0) {
            return who + " knew of no communicator: none existed before the attach";
        }
        String comms = a.communicators() + (a.communicators() == 1 ? " communicator" : " communicators");
        String here;
        if (a.ranksHere() == null) {
            here = " (its text answer does not say how many ranks are in this process)";
        } else if (a.ranksHere() == 0) {
            here = ", none with a rank in this process (did another NCCL process on this host answer?)";
        } else {
            here = ", " + a.ranksHere() + (a.ranksHere() == 1 ? " rank" : " ranks") + " of them in this process";
        }
        return who + " knew of " + comms + " in the job" + here
                + ": created before the attach, they are not tracked and not in this report";
    }

    static Answer query(String address, long pid, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        InetSocketAddress target = socketAddress(address);
        try (Socket socket = new Socket()) {
            socket.connect(target, (int) Math.max(1, Math.min(MAX_CONNECT_MILLIS, timeout.toMillis())));
            try {
                return converse(socket, pid, deadline);
            } catch (SocketTimeoutException e) {
                // it listens, so it is no longer "unavailable": a slow or stuck answer is a failure
                throw new IOException("no complete answer within " + timeout.toMillis() + " ms");
            }
        }
    }

    private static Answer converse(Socket socket, long pid, long deadline) throws IOException {
        socket.setSoTimeout(remainingMillis(deadline));
        BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        OutputStream out = socket.getOutputStream();
        send(out, "CLIENT PROTOCOL " + PROTOCOL);
        String hello = line(in, deadline, socket);
        if (hello == null || !hello.regionMatches(true, 0, "SERVER PROTOCOL ", 0, 16)) {
            throw new IOException("not an NCCL RAS service: it answered " + quote(hello));
        }
        send(out, "TIMEOUT " + LEG_TIMEOUT_SECONDS);
        String ok = line(in, deadline, socket);
        if (ok == null || !ok.equalsIgnoreCase("OK")) {
            throw new IOException("TIMEOUT answered " + quote(ok));
        }
        send(out, "SET FORMAT json");
        // older NCCL answers "ERROR: Unknown command ..." and keeps the connection: text it is
        boolean json = "OK".equalsIgnoreCase(line(in, deadline, socket));
        send(out, "STATUS");
        StringBuilder answer = new StringBuilder();
        char[] buf = new char[8192];
        int n;
        while ((n = in.read(buf)) > 0) {
            answer.append(buf, 0, n);
            if (answer.length() > MAX_ANSWER_CHARS) {
                throw new IOException("STATUS answer longer than " + MAX_ANSWER_CHARS + " characters");
            }
            socket.setSoTimeout(remainingMillis(deadline));
        }
        return json ? parseJson(answer.toString(), pid) : parseText(answer.toString());
    }

    /** The JSON format (NCCL versions with SET FORMAT): communicators, each with its ranks and their pids. */
    static Answer parseJson(String body, long pid) {
        Object root;
        try {
            root = Json.parse(body.trim());
        } catch (Json.ParseException e) {
            throw new IllegalArgumentException("its JSON answer is not JSON: " + e.getMessage(), e);
        }
        if (!(root instanceof Map<?, ?> map) || !(map.get("communicators") instanceof List<?> comms)) {
            throw new IllegalArgumentException("its JSON answer has no communicators list");
        }
        int ranksHere = 0;
        for (Object comm : comms) {
            if (comm instanceof Map<?, ?> c && c.get("ranks") instanceof List<?> ranks) {
                for (Object rank : ranks) {
                    if (rank instanceof Map<?, ?> r && r.get("pid") instanceof Number p && p.longValue() == pid) {
                        ranksHere++;
                    }
                }
            }
        }
        Object version = map.get("nccl_version");
        return new Answer(version == null ? null : String.valueOf(version), comms.size(), ranksHere);
    }

    /**
     * The text format: a "Communicators" table whose rows are groups of alike communicators, the
     * second column counting the communicators of the group; "No communicator data collected!" when none.
     */
    static Answer parseText(String body) {
        String version = null;
        List<String> lines = body.lines().toList();
        for (String line : lines) {
            if (line.startsWith("NCCL version ")) {
                String[] words = line.split("\\s+");
                version = words.length > 2 ? words[2] : null;
                break;
            }
        }
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            if (line.startsWith("No communicator data collected")) {
                return new Answer(version, 0, null);
            }
            if (line.startsWith("Group") && line.contains("Comms")) {
                int comms = 0;
                // the header's second line, then one row per group until a blank line
                for (int j = i + 2; j < lines.size() && !lines.get(j).isBlank(); j++) {
                    String[] cells = lines.get(j).trim().split("\\s+");
                    if (cells.length < 2 || !cells[0].matches("[0-9]+") || !cells[1].matches("[0-9]+")) {
                        throw new IllegalArgumentException("unexpected row in its communicator table: " + quote(lines.get(j)));
                    }
                    comms += Integer.parseInt(cells[1]);
                }
                return new Answer(version, comms, null);
            }
        }
        throw new IllegalArgumentException("its answer has no communicator table");
    }

    private static InetSocketAddress socketAddress(String address) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1) {
            throw new IllegalArgumentException("NCCL_RAS_ADDR " + quote(address) + " is not host:port");
        }
        String host = address.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new InetSocketAddress(host, Integer.parseInt(address.substring(colon + 1)));
    }

    private static void send(OutputStream out, String command) throws IOException {
        out.write((command + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static String line(BufferedReader in, long deadline, Socket socket) throws IOException {
        socket.setSoTimeout(remainingMillis(deadline));
        return in.readLine();
    }

    private static int remainingMillis(long deadline) throws SocketTimeoutException {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        if (left <= 0) {
            throw new SocketTimeoutException("no answer in time");
        }
        return (int) Math.min(Integer.MAX_VALUE, left);
    }

    private static String quote(String s) {
        if (s == null) {
            return "nothing";
        }
        return "'" + (s.length() > 80 ? s.substring(0, 80) + "..." : s) + "'";
    }
}
