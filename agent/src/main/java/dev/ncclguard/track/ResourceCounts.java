package dev.ncclguard.track;

/**
 * What the live communicators hold and the ncclMemAlloc memory alive, at one moment: the numbers
 * of the live view (JMX), where a service that registers and never deregisters grows.
 *
 * @param memory             ncclMemAlloc allocations not freed
 * @param memoryBytes        their bytes, as asked for
 * @param memoryAllocated    ncclMemAlloc calls that succeeded since the tracker started
 * @param memoryFreed        ncclMemFree calls that freed one of them
 * @param registrations      buffer registrations of live communicators not deregistered
 *                           (a handle NCCL's cache gave out again counts each time)
 * @param registeredBytes    bytes those registrations cover (a handle once)
 * @param windows            windows of live communicators not deregistered
 * @param windowBytes        bytes those windows cover
 * @param deviceCommunicators device communicators of live communicators not destroyed
 */
public record ResourceCounts(
        long memory,
        long memoryBytes,
        long memoryAllocated,
        long memoryFreed,
        long registrations,
        long registeredBytes,
        long windows,
        long windowBytes,
        long deviceCommunicators) {
}
