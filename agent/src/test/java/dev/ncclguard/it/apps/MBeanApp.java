package dev.ncclguard.it.apps;

import com.sun.jna.NativeLibrary;
import com.sun.jna.ptr.PointerByReference;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * Says whether the platform MBean server existed 2 s into main, before any NCCL or CUDA call (it needs
 * --add-opens java.management/java.lang.management=ALL-UNNAMED to look without creating it), then
 * makes one tracked CUDA call and waits for ncclguard's MBean to appear.
 */
public final class MBeanApp {
    private MBeanApp() {
    }

    public static void main(String[] args) throws Exception {
        Field field = ManagementFactory.class.getDeclaredField("platformMBeanServer");
        field.setAccessible(true);
        // long enough for a registration started in premain, on its own thread, to have happened
        Thread.sleep(2000);
        System.out.println("platform MBean server 2 s into main: " + (field.get(null) == null ? "absent" : "present"));

        NativeLibrary cudart = NativeLibrary.getInstance(System.getProperty("ncclguard.emu") + "/libcudart.so.13");
        PointerByReference event = new PointerByReference();
        if (cudart.getFunction("cudaEventCreate").invokeInt(new Object[] {event}) != 0) {
            throw new IllegalStateException("cudaEventCreate failed");
        }
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("dev.ncclguard:type=Tracker");
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!server.isRegistered(name) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        System.out.println("after the first call: " + (server.isRegistered(name)
                ? "registered, " + server.getAttribute(name, "EventsCreated") + " event created" : "not registered"));
    }
}
