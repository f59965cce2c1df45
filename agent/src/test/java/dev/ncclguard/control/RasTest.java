package dev.ncclguard.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.report.Report.BeforeAttach;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RasTest {
    private static final long PID = 4242;
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    @Test
    void jsonAnswerCountsTheJobsCommunicatorsAndTheRanksOfThisProcess() {
        Ras.Answer a = Ras.parseJson(FakeRas.json(PID, 2), PID);
        assertEquals(1, a.communicators());
        assertEquals(2, a.ranksHere());
        assertEquals("2.28.3", a.ncclVersion());
        assertEquals(0, Ras.parseJson(FakeRas.json(PID + 1, 2), PID).ranksHere());
    }

    @Test
    void textAnswerSumsTheCommunicatorsOfEveryGroup() {
        Ras.Answer a = Ras.parseText(FakeRas.text());
        assertEquals(4, a.communicators());
        assertNull(a.ranksHere());
        assertEquals("2.24.3", a.ncclVersion());
    }

    @Test
    void textAnswerWithNoCommunicatorCountsNone() {
        assertEquals(0, Ras.parseText("NCCL version 2.24.3 compiled with CUDA 12.8\n\nCommunicators... (0.00s)\n"
                + "=============\n\nNo communicator data collected!\n").communicators());
    }

    @Test
    void answerWithoutCommunicatorTableIsAnError() {
        assertThrows(IllegalArgumentException.class, () -> Ras.parseText("hello\n"));
        assertThrows(IllegalArgumentException.class, () -> Ras.parseJson("{\"x\": 1}", PID));
    }

    @Test
    void answerCutShortIsAnErrorNamingWhere() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Ras.parseJson("{\"communicators\": [{\"ranks\": [", PID));
        assertTrue(e.getMessage().contains("line 1"), e.getMessage());
    }

    @Test
    void asksInJsonWhereNcclHasIt() throws Exception {
        try (FakeRas ras = new FakeRas(FakeRas.json(PID, 2), FakeRas.text())) {
            BeforeAttach b = Ras.ask(Map.of("NCCL_RAS_ADDR", ras.address()), PID, TIMEOUT);
            assertEquals(BeforeAttach.ANSWERED, b.ras(), b.note());
            assertEquals(1, b.communicators());
            assertEquals(2, b.ranksHere());
            assertTrue(b.note().contains("1 communicator") && b.note().contains("2 ranks of them in this process"),
                    b.note());
            assertEquals(List.of("CLIENT PROTOCOL 2", "TIMEOUT 2", "SET FORMAT json", "STATUS"), ras.commands);
        }
    }

    @Test
    void fallsBackToTextWhereNcclHasNoJsonFormat() throws Exception {
        try (FakeRas ras = new FakeRas(null, FakeRas.text())) {
            BeforeAttach b = Ras.ask(Map.of("NCCL_RAS_ADDR", ras.address()), PID, TIMEOUT);
            assertEquals(BeforeAttach.ANSWERED, b.ras(), b.note());
            assertEquals(4, b.communicators());
            assertNull(b.ranksHere());
        }
    }

    @Test
    void nothingListeningIsUnavailable() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        BeforeAttach b = Ras.ask(Map.of("NCCL_RAS_ADDR", "127.0.0.1:" + port), PID, TIMEOUT);
        assertEquals(BeforeAttach.UNAVAILABLE, b.ras());
        assertNull(b.communicators());
        assertTrue(b.note().contains("no NCCL RAS service answered at 127.0.0.1:" + port), b.note());
    }

    @Test
    void rasTurnedOffIsNotAsked() {
        BeforeAttach b = Ras.ask(Map.of("NCCL_RAS_ENABLE", "0", "NCCL_RAS_ADDR", "256.0.0.1:1"), PID, TIMEOUT);
        assertEquals(BeforeAttach.UNAVAILABLE, b.ras());
        assertTrue(b.note().contains("NCCL_RAS_ENABLE=0"), b.note());
    }

    @Test
    void somethingElseOnThePortIsAFailure() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread t = new Thread(() -> {
                try (var c = s.accept()) {
                    c.getOutputStream().write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes());
                } catch (Exception e) {
                    // the test reads what was answered
                }
            });
            t.start();
            BeforeAttach b = Ras.ask(Map.of("NCCL_RAS_ADDR", "127.0.0.1:" + s.getLocalPort()), PID, TIMEOUT);
            assertEquals(BeforeAttach.FAILED, b.ras(), b.note());
            assertTrue(b.note().contains("not an NCCL RAS service"), b.note());
            t.join();
        }
    }
}
