/* fake_jni.h's library as TensorFlow's and XLA's NCCL stubs are: linked against neither NCCL nor
 * cudart, it dlopens libnccl.so.2 and libcudart.so.13 (by path, from NG_EMU: the thread sanitizer's
 * dlopen interceptor searches its own RUNPATH, not the caller's) and takes each function from dlsym
 * on those handles. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake_jni.h"

#define EXPORT __attribute__((visibility("default")))

static void *nccl, *cudart;

/* the function of that name in one of the two handles (dlsym, as a stub loader does) */
static void *fn(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (p == NULL) abort();
  return p;
}
#define NCCL(name) ((__typeof__(&name))fn(nccl, #name))
#define CUDART(name) ((__typeof__(&name))fn(cudart, #name))

static void *open_emulated(const char *name) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", getenv("NG_EMU"), name);
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

__attribute__((constructor)) static void open_libraries(void) {
  nccl = open_emulated("libnccl.so.2");
  cudart = open_emulated("libcudart.so.13");
  if (nccl == NULL || cudart == NULL) abort();
}

static int unique_id(ncclUniqueId *id) { return NCCL(ncclGetUniqueId)(id); }
static int comm_init(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) { return NCCL(ncclCommInitRank)(comm, nranks, id, rank); }
static int comm_init_all(ncclComm_t *comms, int n, const int *devlist) { return NCCL(ncclCommInitAll)(comms, n, devlist); }
static int comm_split(ncclComm_t comm, int color, int key, ncclComm_t *child) { return NCCL(ncclCommSplit)(comm, color, key, child, NULL); }
static int comm_destroy(ncclComm_t comm) { return NCCL(ncclCommDestroy)(comm); }
static int comm_abort(ncclComm_t comm) { return NCCL(ncclCommAbort)(comm); }
static int allreduce(float *buf, size_t n, ncclComm_t comm, cudaStream_t s) {
  return NCCL(ncclAllReduce)(buf, buf, n, ncclFloat32, ncclSum, comm, s);
}
static int group_start(void) { return NCCL(ncclGroupStart)(); }
static int group_end(void) { return NCCL(ncclGroupEnd)(); }
static int event_create(cudaEvent_t *e) { return CUDART(cudaEventCreateWithFlags)(e, cudaEventDisableTiming); }
static int event_record(cudaEvent_t e, cudaStream_t s) { return CUDART(cudaEventRecord)(e, s); }
static int event_query(cudaEvent_t e) { return CUDART(cudaEventQuery)(e); }
static int event_sync(cudaEvent_t e) { return CUDART(cudaEventSynchronize)(e); }
static int event_destroy(cudaEvent_t e) { return CUDART(cudaEventDestroy)(e); }
static int stream_create(cudaStream_t *s) { return CUDART(cudaStreamCreateWithFlags)(s, cudaStreamNonBlocking); }
static int stream_sync(cudaStream_t s) { return CUDART(cudaStreamSynchronize)(s); }
static int stream_query(cudaStream_t s) { return CUDART(cudaStreamQuery)(s); }
static int stream_wait(cudaStream_t s, cudaEvent_t e) { return CUDART(cudaStreamWaitEvent)(s, e, 0); }
static int stream_destroy(cudaStream_t s) { return CUDART(cudaStreamDestroy)(s); }
static int set_device(int device) { return CUDART(cudaSetDevice)(device); }
static int device_sync(void) { return CUDART(cudaDeviceSynchronize)(); }
static int host_func(cudaStream_t s, void (*f)(void *), void *arg) { return CUDART(cudaLaunchHostFunc)(s, f, arg); }
static int get_device(int *device) { return CUDART(cudaGetDevice)(device); }

EXPORT const fake_jni fake_jni_functions = {
    .unique_id = unique_id, .comm_init = comm_init, .comm_init_all = comm_init_all, .comm_split = comm_split,
    .comm_destroy = comm_destroy, .comm_abort = comm_abort, .allreduce = allreduce, .group_start = group_start,
    .group_end = group_end, .event_create = event_create, .event_record = event_record, .event_query = event_query,
    .event_sync = event_sync, .event_destroy = event_destroy, .stream_create = stream_create,
    .stream_sync = stream_sync, .stream_query = stream_query, .stream_wait = stream_wait,
    .stream_destroy = stream_destroy, .set_device = set_device, .device_sync = device_sync,
    .host_func = host_func, .get_device = get_device,
};

/* dlsym(RTLD_DEFAULT) from here: its own scope (it is loaded RTLD_LOCAL) holds its own symbols */
EXPORT void *fj_default_lookup(const char *name) { return dlsym(RTLD_DEFAULT, name); }
