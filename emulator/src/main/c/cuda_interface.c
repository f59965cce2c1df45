/* The runtime's side of the table libnccl.so.2 gets the runtime's internals through: one
 * exported data symbol, looked up with dlsym on this library, so that libnccl needs none of
 * the emu_rt_ functions through the dynamic linker (see nccl_runtime.c). */
#include "emu.h"

const char *emu_rt_error_string(cudaError_t e) { return cudaGetErrorString(e); }

const struct emu_rt_ops emu_rt_interface = {
    .size = sizeof(struct emu_rt_ops),
    .abi = EMU_RT_ABI,
    .knob = emu_rt_knob,
    .device_count = emu_rt_device_count,
    .destroy_timeout_ms = emu_rt_destroy_timeout_ms,
    .exit_waits = emu_rt_exit_waits,
    .current_device = emu_rt_current_device,
    .live_add = emu_rt_live_add,
    .live_acquire = emu_rt_live_acquire,
    .live_remove = emu_rt_live_remove,
    .live_update = emu_rt_live_update,
    .mem_alloc = emu_rt_mem_alloc,
    .mem_free = emu_rt_mem_free,
    .stream_acquire = emu_rt_stream_acquire,
    .stream_release = emu_rt_stream_release,
    .stream_enqueue = emu_rt_stream_enqueue,
    .stream_device = emu_rt_stream_device,
    .error_string = emu_rt_error_string,
};
