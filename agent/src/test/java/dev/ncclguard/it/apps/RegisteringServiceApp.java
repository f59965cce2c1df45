package dev.ncclguard.it.apps;

import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.lang.management.ManagementFactory;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * A service that registers buffers with its communicator and never deregisters them all, through
 * JNA's Function calls on the emulator: a one-rank communicator (ncclCommInitAll), ncclMemAlloc's
 * memory, three registrations of 4 KiB, a window of 4 KiB and a device communicator; it prints the
 * MBean's counts, deregisters one registration, prints them again and the live report's JSON
 * ("live-json: ..."), then exits with everything else alive.
 */
public final class RegisteringServiceApp {
    private static final String[] COUNTS = {"LiveMemory", "LiveMemoryBytes", "LiveRegistrations", "RegisteredBytes",
        "LiveWindows", "WindowBytes", "LiveDeviceCommunicators"};

    private RegisteringServiceApp() {
    }

    public static void main(String[] args) throws Exception {
        String emu = System.getProperty("ncclguard.emu");
        NativeLibrary cudart = NativeLibrary.getInstance(emu + "/libcudart.so.13");
        NativeLibrary nccl = NativeLibrary.getInstance(emu + "/libnccl.so.2");
        check(cudart.getFunction("cudaSetDevice").invokeInt(new Object[] {0}), "cudaSetDevice");
        Memory comms = new Memory(8);
        check(nccl.getFunction("ncclCommInitAll").invokeInt(new Object[] {comms, 1, null}), "ncclCommInitAll");
        Pointer comm = comms.getPointer(0);
        PointerByReference memory = new PointerByReference();
        check(nccl.getFunction("ncclMemAlloc").invokeInt(new Object[] {memory, 1L << 20}), "ncclMemAlloc");
        Pointer buffer = memory.getValue();
        Pointer[] registrations = new Pointer[3];
        for (int i = 0; i < registrations.length; i++) {
            PointerByReference handle = new PointerByReference();
            check(nccl.getFunction("ncclCommRegister").invokeInt(new Object[] {comm, buffer.share(i * 8192L), 4096L,
                handle}), "ncclCommRegister");
            registrations[i] = handle.getValue();
        }
        PointerByReference window = new PointerByReference();
        check(nccl.getFunction("ncclCommWindowRegister").invokeInt(new Object[] {comm, buffer.share(65536), 4096L,
            window, 1}), "ncclCommWindowRegister");
        // NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER of 2.29.3: size, magic, version, ginContextCount 4
        Memory reqs = new Memory(72);
        reqs.clear();
        reqs.setLong(0, 72);
        reqs.setInt(8, 0xcafebeef);
        reqs.setInt(12, 22903);
        reqs.setInt(60, 4);
        Memory devComm = new Memory(200);
        devComm.clear();
        check(nccl.getFunction("ncclDevCommCreate").invokeInt(new Object[] {comm, reqs, devComm}), "ncclDevCommCreate");

        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("dev.ncclguard:type=Tracker");
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!server.isRegistered(name) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        print(server, name, "registered");
        check(nccl.getFunction("ncclCommDeregister").invokeInt(new Object[] {comm, registrations[0]}),
                "ncclCommDeregister");
        print(server, name, "after one deregister");
        System.out.println("live-json: " + String.valueOf(server.invoke(name, "reportJson", null, null)).replace('\n', ' '));
    }

    private static void print(MBeanServer server, ObjectName name, String when) throws Exception {
        StringBuilder line = new StringBuilder(when).append(':');
        for (String count : COUNTS) {
            line.append(' ').append(count).append('=').append(server.getAttribute(name, count));
        }
        System.out.println(line);
    }

    private static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned " + status);
        }
    }
}
