package dev.ncclguard.micrometer;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import dev.ncclguard.samples.jna.Nccl;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

/**
 * An application that uses Micrometer: two communicators made by ncclCommInitAll, one destroyed;
 * the binder on a SimpleMeterRegistry; once the agent's MBean answers, each meter printed as
 * "name value".
 */
public final class MicrometerApp {
    private MicrometerApp() {
    }

    public static void main(String[] args) throws Exception {
        Nccl nccl = Native.load(System.getProperty("ncclguard.emu") + "/libnccl.so.2", Nccl.class);
        Pointer[] comms = new Pointer[2];
        if (nccl.ncclCommInitAll(comms, 2, new int[] {0, 1}) != 0 || nccl.ncclCommDestroy(comms[0]) != 0) {
            throw new IllegalStateException("the emulator failed");
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new NcclGuardMetrics().bindTo(registry);
        long until = System.nanoTime() + 30_000_000_000L;
        while (Double.isNaN(registry.get("ncclguard.communicators.live").gauge().value())) {
            if (System.nanoTime() - until > 0) {
                throw new IllegalStateException("the agent's MBean never answered");
            }
            Thread.sleep(50);
        }
        for (Meter meter : registry.getMeters()) {
            System.out.println(meter.getId().getName() + " " + meter.measure().iterator().next().getValue());
        }
    }
}
