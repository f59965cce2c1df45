package dev.ncclguard.live;

import dev.ncclguard.report.Leak;
import dev.ncclguard.report.Report;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timestamp;

/**
 * The agent's JDK Flight Recorder events, named under {@code dev.ncclguard}. Each is built only
 * when JFR records it ({@link Event#isEnabled()}), so they cost a flag check when it does not.
 * Loaded only where the jdk.jfr module is present.
 */
final class JfrEvents {
    private JfrEvents() {
    }

    static void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
            String commId) {
        CommunicatorCreated e = new CommunicatorCreated();
        if (e.isEnabled()) {
            e.handle = hex(handle);
            e.api = api;
            e.bridge = bridge;
            e.rank = rank;
            e.nranks = nranks;
            e.device = device;
            e.commId = commId;
            e.commit();
        }
    }

    static void communicatorReleased(long handle, String api, String bridge) {
        CommunicatorReleased e = new CommunicatorReleased();
        if (e.isEnabled()) {
            e.handle = hex(handle);
            e.api = api;
            e.bridge = bridge;
            e.commit();
        }
    }

    /** One LeakFound per leak of the exit report, and one CleanupAction per leak cleanup acted on. */
    static void exitReport(Report report) {
        // leaks made at one place share one stack list: joined once for the run of them
        java.util.List<String> lastStack = null;
        String joined = null;
        for (Leak leak : report.leaks()) {
            LeakFound found = new LeakFound();
            if (found.isEnabled()) {
                found.kind = leak.kind().word();
                found.handle = leak.handle();
                found.api = leak.api();
                found.bridge = leak.bridge();
                found.thread = leak.thread();
                found.createdAt = leak.createdAtMillis();
                if (leak.stack() != lastStack) {
                    lastStack = leak.stack();
                    joined = String.join("\n", lastStack);
                }
                found.creationStack = joined;
                found.commit();
            }
            if (leak.cleanup() != dev.ncclguard.cleanup.Outcome.NONE) {
                CleanupAction action = new CleanupAction();
                if (action.isEnabled()) {
                    action.kind = leak.kind().word();
                    action.handle = leak.handle();
                    action.outcome = leak.cleanup().word();
                    action.note = leak.cleanupNote();
                    action.commit();
                }
            }
        }
    }

    private static String hex(long handle) {
        return "0x" + Long.toHexString(handle);
    }

    @Name("dev.ncclguard.CommunicatorCreated")
    @Label("Communicator Created")
    @Category({"ncclguard"})
    @Description("An NCCL communicator was created (ncclCommInitRank, InitAll, Split, ...)")
    public static final class CommunicatorCreated extends Event {
        @Label("Handle")
        String handle;
        @Label("API")
        String api;
        @Label("Bridge")
        String bridge;
        @Label("Rank")
        @Description("-1 when unknown")
        int rank;
        @Label("Ranks")
        @Description("-1 when unknown")
        int nranks;
        @Label("Device")
        int device;
        @Label("Communicator Id")
        String commId;
    }

    @Name("dev.ncclguard.CommunicatorReleased")
    @Label("Communicator Released")
    @Category({"ncclguard"})
    @Description("An NCCL communicator was destroyed or aborted")
    public static final class CommunicatorReleased extends Event {
        @Label("Handle")
        String handle;
        @Label("API")
        String api;
        @Label("Bridge")
        String bridge;
    }

    @Name("dev.ncclguard.LeakFound")
    @Label("Leak Found")
    @Category({"ncclguard"})
    @Description("A communicator, event or stream the application left behind, found by the exit report")
    @StackTrace(false)
    public static final class LeakFound extends Event {
        @Label("Kind")
        String kind;
        @Label("Handle")
        String handle;
        @Label("API")
        String api;
        @Label("Bridge")
        String bridge;
        @Label("Thread")
        @Description("The thread that created it")
        String thread;
        @Label("Created At")
        @Timestamp(Timestamp.MILLISECONDS_SINCE_EPOCH)
        long createdAt;
        @Label("Creation Stack")
        String creationStack;
    }

    @Name("dev.ncclguard.CleanupAction")
    @Label("Cleanup Action")
    @Category({"ncclguard"})
    @Description("What action=cleanup did to one leak at exit")
    @StackTrace(false)
    public static final class CleanupAction extends Event {
        @Label("Kind")
        String kind;
        @Label("Handle")
        String handle;
        @Label("Outcome")
        String outcome;
        @Label("Note")
        String note;
    }
}
