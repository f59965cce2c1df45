/* The CUDA driver (ng_driver.c): cuGetProcAddress handed to a static cudart, and the agent's own
 * calls through libcuda.so.1 where no CUDA runtime serves them. */
#ifndef NG_DRIVER_H
#define NG_DRIVER_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* What a dlsym of `name` on a real handle hands back, the object at `ret` having asked: for
 * cuGetProcAddress / cuGetProcAddress_v2 defined at `real`, this library's stand-in for it (which
 * hands back wrappers of the catalog's driver functions); NULL for any other name. */
void *ng_driver_proc_hook(const char *name, uintptr_t real, uintptr_t ret);

/* The agent's own call of runtime function fn (a query, synchronize or destroy of an event or a
 * stream, cudaSetDevice) made through the loaded driver's equivalent: its CUresult (the same codes
 * for these), *done 0 when no driver is loaded or fn has no equivalent. */
int ng_driver_call(int fn, int64_t a0, int *done);

#pragma GCC visibility pop

#endif
