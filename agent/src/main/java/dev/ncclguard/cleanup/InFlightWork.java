package dev.ncclguard.cleanup;

import dev.ncclguard.track.HandleView;

/**
 * How many NCCL operations are in flight now on a leaked communicator, as NCCL's profiler plugin
 * says: cleanup waits for them (within its share of the timeout) before it destroys, as a program
 * that synchronizes its streams before ncclCommDestroy would. Never blocks, never throws.
 */
public interface InFlightWork {
    InFlightWork NONE = new InFlightWork() {
        @Override
        public long count(HandleView comm) {
            return 0;
        }
    };

    long count(HandleView comm);
}
