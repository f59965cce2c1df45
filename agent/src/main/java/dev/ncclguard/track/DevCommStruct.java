package dev.ncclguard.track;

/**
 * What ncclDevCommDestroy needs of a device communicator: its communicator and the struct NCCL
 * filled in (a copy destroys it, as NCCL finds it by its resourceWindow).
 *
 * @param comm  the communicator's handle
 * @param bytes the struct as read at its creation, zero-padded to the largest NCCL's layout; null
 *              when it could not be read whole (cleanup cannot destroy it then)
 */
public record DevCommStruct(long comm, byte[] bytes) {
}
