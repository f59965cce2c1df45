package dev.ncclguard.control;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A stand-in for NCCL's RAS service on a loopback port, speaking its client protocol as
 * src/ras/client_support.cc does: it answers CLIENT PROTOCOL, TIMEOUT and SET FORMAT (or, as NCCL
 * before the JSON format, an ERROR line), then the STATUS answer given, and closes.
 */
public final class FakeRas implements AutoCloseable {
    private final ServerSocket server;
    private final String json;
    private final String text;
    /** The commands received, in order. */
    public final List<String> commands = new CopyOnWriteArrayList<>();

    /**
     * @param json the STATUS answer in JSON, or null to act as an NCCL without SET FORMAT
     * @param text the STATUS answer in text
     */
    public FakeRas(String json, String text) throws IOException {
        this.server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        this.json = json;
        this.text = text;
        Thread t = new Thread(this::serve, "fake-ras");
        t.setDaemon(true);
        t.start();
    }

    /** The address for NCCL_RAS_ADDR. */
    public String address() {
        return "127.0.0.1:" + server.getLocalPort();
    }

    private void serve() {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                converse(s);
            } catch (IOException e) {
                // closed, or the client went away: wait for the next one
            }
        }
    }

    private void converse(Socket s) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        OutputStream out = s.getOutputStream();
        boolean jsonFormat = false;
        String line;
        while ((line = in.readLine()) != null) {
            commands.add(line);
            String cmd = line.toUpperCase();
            if (cmd.startsWith("CLIENT PROTOCOL ")) {
                write(out, "SERVER PROTOCOL 2\n");
            } else if (cmd.startsWith("TIMEOUT ")) {
                write(out, "OK\n");
            } else if (cmd.equals("SET FORMAT JSON") && json != null) {
                jsonFormat = true;
                write(out, "OK\n");
            } else if (cmd.equals("STATUS")) {
                write(out, jsonFormat ? json : text);
                return;
            } else {
                write(out, "ERROR: Unknown command " + line + "\n");
            }
        }
    }

    private static void write(OutputStream out, String text) throws IOException {
        out.write(text.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** A JSON answer: one communicator of {@code nranks} ranks, all in process {@code pid}. */
    public static String json(long pid, int nranks) {
        StringBuilder ranks = new StringBuilder();
        for (int r = 0; r < nranks; r++) {
            ranks.append(r == 0 ? "" : ",\n").append("        {\n          \"rank\": ").append(r)
                    .append(",\n          \"host\": \"127.0.0.1\",\n          \"pid\": ").append(pid)
                    .append(",\n          \"cuda_dev\": ").append(r).append(",\n          \"nvml_dev\": ").append(r)
                    .append(",\n          \"status\": {\n            \"init_state\": 0,\n            \"async_error\": 0,\n"
                            + "            \"finalize_called\": false,\n            \"destroy_flag\": false,\n"
                            + "            \"abort_flag\": false\n          },\n          \"collective_counts\": {\n"
                            + "            \"AllReduce\": 12\n          }\n        }");
        }
        return "{\n  \"nccl_version\": \"2.28.3\",\n  \"cuda_runtime_version\": 13000,\n  \"cuda_driver_version\": 13000,\n"
                + "  \"timestamp\": \"2025-06-01 12:00:00\",\n  \"communicators_count\": 1,\n  \"communicators\": [\n"
                + "    {\n      \"hash\": \"0x1c3d\",\n      \"secondary_hash\": \"0x2:0x3\",\n      \"size\": " + nranks
                + ",\n      \"ranks_count\": " + nranks + ",\n      \"missing_ranks_count\": 0,\n      \"ranks\": [\n"
                + ranks + "\n      ],\n      \"missing_ranks\": [\n      ]\n    }\n  ],\n"
                + "  \"ras\": {\n    \"collection_time_sec\": 0.002,\n    \"timeouts_count\": 0\n  }\n}\n";
    }

    /** A text answer whose communicator table has groups of 3 and 1 communicators. */
    public static String text() {
        return "NCCL version 2.24.3 compiled with CUDA 12.8\n"
                + "CUDA runtime version 12080, driver version 12080\n\n"
                + "Job summary\n===========\n\n"
                + "  Nodes  Processes         GPUs  Processes     GPUs\n"
                + "(total)   per node  per process    (total)  (total)\n"
                + "      1          1            2          1        2\n\n"
                + "Communicators... (0.00s)\n=============\n\n"
                + "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
                + "    #  in group  per comm  per node  per comm  in group\n"
                + "    0         3         1         2         2         2   RUNNING      OK\n"
                + "    1         1         1         1         1         1   RUNNING      OK\n\n"
                + "Errors\n======\n\n";
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
