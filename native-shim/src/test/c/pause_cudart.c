/* A cudaEventDestroy and an ncclCommDestroy in front of the emulator's, for test_interposer's
 * ordering cases: each makes the real call, then runs the callback the test armed (once), so that
 * another thread's calls land between a release's real call and the agent's exit of it, as a
 * preempted thread lets them. The fake JNI library that needs them first (libfakejni_paused.so)
 * makes them the agent's real functions. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "nccl_api.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*after_fn)(cudaEvent_t);
static _Atomic(after_fn) after_destroy;
static _Atomic(cudaError_t (*)(cudaEvent_t)) real_destroy;

EXPORT void pause_after_next_destroy(after_fn fn) { atomic_store(&after_destroy, fn); }

/* The emulator's function, by its library's handle: this library's own reference would bind to
 * the agent's. */
static void *real_of(const char *lib, const char *name) {
  void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
  void *f = h != NULL ? dlsym(h, name) : NULL;
  if (h != NULL) dlclose(h);
  return f;
}

EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  cudaError_t (*real)(cudaEvent_t) = atomic_load(&real_destroy);
  if (real == NULL && (real = (cudaError_t(*)(cudaEvent_t))real_of("libcudart.so.13", "cudaEventDestroy")) == NULL)
    return cudaErrorUnknown;
  atomic_store(&real_destroy, real);
  cudaError_t r = real(e);
  after_fn fn = atomic_exchange(&after_destroy, NULL);
  if (fn != NULL) fn(e);
  return r;
}

typedef void (*after_comm_fn)(ncclComm_t);
static _Atomic(after_comm_fn) after_comm_destroy;
static _Atomic(ncclResult_t (*)(ncclComm_t)) real_comm_destroy;

EXPORT void pause_after_next_comm_destroy(after_comm_fn fn) { atomic_store(&after_comm_destroy, fn); }

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  ncclResult_t (*real)(ncclComm_t) = atomic_load(&real_comm_destroy);
  if (real == NULL && (real = (ncclResult_t(*)(ncclComm_t))real_of("libnccl.so.2", "ncclCommDestroy")) == NULL)
    return ncclInternalError;
  atomic_store(&real_comm_destroy, real);
  ncclResult_t r = real(comm);
  after_comm_fn fn = atomic_exchange(&after_comm_destroy, NULL);
  if (fn != NULL) fn(comm);
  return r;
}
