package dev.ncclguard.it.apps;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.ptr.PointerByReference;

/**
 * Leaks two communicators (ncclCommInitAll on devices 0 and 1) and an event, prints "ready", then
 * leaves the JVM the way the first argument says:
 * <ul>
 * <li>{@code return}: main returns;</li>
 * <li>{@code exit-from-thread}: System.exit(3) from another thread while main waits;</li>
 * <li>{@code throw}: main throws;</li>
 * <li>{@code wait}: main waits for a signal (SIGTERM, SIGINT);</li>
 * <li>{@code release-during-exit}: a thread destroys communicator 0 before main returns (with
 *     NCCLEMU_HANG=ncclCommDestroy it stays inside), and a thread started by the application's
 *     shutdown hook destroys communicator 1 half a second into the exit, while the agent's cleanup
 *     releases it;</li>
 * <li>{@code one-device}: instead of InitAll, two single-rank communicators on device 0, then
 *     main returns.</li>
 * <li>{@code exit-while-destroying}: a thread of the application destroys communicator 0 (with
 *     NCCLEMU_HANG=ncclCommDestroy it stays inside), and main calls System.exit(3) meanwhile.</li>
 * </ul>
 */
public final class ExitApp {
    public interface Nccl extends Library {
        int ncclCommInitAll(Pointer[] comms, int ndev, int[] devlist);

        int ncclGetUniqueId(Id id);

        int ncclCommInitRank(PointerByReference comm, int nranks, Id.ByValue id, int rank);

        int ncclCommDestroy(Pointer comm);
    }

    public interface Cudart extends Library {
        int cudaSetDevice(int device);

        int cudaStreamCreate(PointerByReference stream);

        int cudaEventCreate(PointerByReference event);

        int cudaEventRecord(Pointer event, Pointer stream);
    }

    @Structure.FieldOrder("internal")
    public static class Id extends Structure {
        public byte[] internal = new byte[128];

        public static class ByValue extends Id implements Structure.ByValue {
        }
    }

    private ExitApp() {
    }

    private static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned " + status);
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String emu = System.getProperty("ncclguard.emu");
        Cudart cudart = Native.load(emu + "/libcudart.so.13", Cudart.class);
        Nccl nccl = Native.load(emu + "/libnccl.so.2", Nccl.class);
        Pointer[] comms = new Pointer[2];
        if (mode.equals("one-device")) {
            for (int i = 0; i < 2; i++) {
                Id id = new Id();
                check(nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
                Id.ByValue byValue = new Id.ByValue();
                byValue.internal = id.internal.clone();
                PointerByReference comm = new PointerByReference();
                check(nccl.ncclCommInitRank(comm, 1, byValue, 0), "ncclCommInitRank");
                comms[i] = comm.getValue();
            }
        } else {
            check(nccl.ncclCommInitAll(comms, 2, null), "ncclCommInitAll");
        }
        check(cudart.cudaSetDevice(0), "cudaSetDevice");
        PointerByReference stream = new PointerByReference();
        PointerByReference event = new PointerByReference();
        check(cudart.cudaStreamCreate(stream), "cudaStreamCreate");
        check(cudart.cudaEventCreate(event), "cudaEventCreate");
        check(cudart.cudaEventRecord(event.getValue(), stream.getValue()), "cudaEventRecord");
        System.out.println("ready");
        System.out.flush();
        switch (mode) {
            case "return", "one-device" -> {
            }
            case "exit-from-thread" -> {
                Thread exiter = new Thread(() -> System.exit(3), "exiter");
                exiter.start();
                exiter.join();
                Thread.sleep(Long.MAX_VALUE); // System.exit never returns: the JVM ends first
            }
            case "throw" -> throw new IllegalStateException("the application failed");
            case "wait" -> Thread.sleep(Long.MAX_VALUE);
            case "release-during-exit" -> releaseDuringExit(nccl, comms);
            case "exit-while-destroying" -> {
                Thread destroyer = new Thread(() -> System.out.println("destroy of comm 0 returned "
                        + nccl.ncclCommDestroy(comms[0])), "app-destroy-0");
                destroyer.start();
                Thread.sleep(300); // inside ncclCommDestroy now
                System.exit(3);
            }
            default -> throw new IllegalArgumentException(mode);
        }
    }

    private static void releaseDuringExit(Nccl nccl, Pointer[] comms) throws InterruptedException {
        Thread early = new Thread(() -> System.out.println("destroy of comm 0 returned "
                + nccl.ncclCommDestroy(comms[0])), "app-destroy-0");
        early.setDaemon(true);
        early.start();
        Thread.sleep(300); // inside ncclCommDestroy now: the application is releasing comm 0
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Thread late = new Thread(() -> {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
                System.out.println("destroy of comm 1 returned " + nccl.ncclCommDestroy(comms[1]));
            }, "app-destroy-1");
            late.setDaemon(true);
            late.start();
        }, "app-hook"));
    }
}
