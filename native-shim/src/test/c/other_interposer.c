/* Another interposer, as profilers, HAMi-core and site tools are: it defines NCCL's and cudart's
 * functions, counts them, and forwards to the next definition (dlsym(RTLD_NEXT); the loaded library
 * by its soname when there is none, as NCCL loaded in a local scope leaves). It counts after the
 * call, so the call it forwards is not a tail call: its return address is inside this library. */
#include <dlfcn.h>
#include <stddef.h>

#include "nccl_api.h"

#define EXPORT __attribute__((visibility("default")))

static int counted;

static void *next(const char *lib, const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p == NULL) {
    void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
    if (h != NULL) {
      p = dlsym(h, name);
      dlclose(h);
    }
  }
  return p;
}

#define FORWARD(lib, ret, name, params, args)                                                      \
  EXPORT ret name params {                                                                          \
    ret (*real) params = (ret (*) params)next(lib, #name);                                          \
    ret r_ = real args;                                                                             \
    __atomic_fetch_add(&counted, 1, __ATOMIC_RELAXED);                                              \
    return r_;                                                                                      \
  }

FORWARD("libnccl.so.2", ncclResult_t, ncclCommInitRank, (ncclComm_t * c, int n, ncclUniqueId id, int r), (c, n, id, r))
FORWARD("libnccl.so.2", ncclResult_t, ncclCommDestroy, (ncclComm_t c), (c))
FORWARD("libcudart.so.13", cudaError_t, cudaStreamSynchronize, (cudaStream_t s), (s))

EXPORT int other_counted(void) { return __atomic_load_n(&counted, __ATOMIC_RELAXED); }
