package dev.ncclguard.agent;

import dev.ncclguard.log.Log;
import dev.ncclguard.track.TrackerListener;

/**
 * log-level=debug: a line for each handle the tracker begins or ends to follow, then what the live
 * view is told. Only with debug on: the default level costs nothing here (this is not installed).
 */
final class DebugListener implements TrackerListener {
    private final TrackerListener next;

    DebugListener(TrackerListener next) {
        this.next = next;
    }

    @Override
    public void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
            String commId) {
        Log.debug("tracking communicator 0x" + Long.toHexString(handle) + " (rank " + rank + " of " + nranks
                + ", device " + device + (commId != null ? ", commId " + commId : "") + "): " + api + " through " + bridge
                + " on thread \"" + Thread.currentThread().getName() + "\"");
        next.communicatorCreated(handle, api, bridge, rank, nranks, device, commId);
    }

    @Override
    public void communicatorReleased(long handle, String api, String bridge) {
        Log.debug("communicator 0x" + Long.toHexString(handle) + " released: " + api + " through " + bridge);
        next.communicatorReleased(handle, api, bridge);
    }

    @Override
    public void eventCreated(long handle) {
        Log.debug("tracking event 0x" + Long.toHexString(handle) + " on thread \"" + Thread.currentThread().getName() + "\"");
        next.eventCreated(handle);
    }

    @Override
    public void eventDestroyed(long handle) {
        Log.debug("event 0x" + Long.toHexString(handle) + " destroyed");
        next.eventDestroyed(handle);
    }

    @Override
    public void streamCreated(long handle) {
        Log.debug("tracking stream 0x" + Long.toHexString(handle) + " on thread \"" + Thread.currentThread().getName() + "\"");
        next.streamCreated(handle);
    }

    @Override
    public void streamDestroyed(long handle) {
        Log.debug("stream 0x" + Long.toHexString(handle) + " destroyed");
        next.streamDestroyed(handle);
    }

    @Override
    public void firstCall() {
        Log.debug("the application's first NCCL or CUDA call was tracked");
        next.firstCall();
    }
}
