/* See fake_jni.h. */
#include "fake_jni.h"

#include <pthread.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

static int unique_id(ncclUniqueId *id) { return ncclGetUniqueId(id); }
static int comm_init(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) { return ncclCommInitRank(comm, nranks, id, rank); }
static int comm_init_all(ncclComm_t *comms, int n, const int *devlist) { return ncclCommInitAll(comms, n, devlist); }
static int comm_split(ncclComm_t comm, int color, int key, ncclComm_t *child) { return ncclCommSplit(comm, color, key, child, NULL); }
static int comm_destroy(ncclComm_t comm) { return ncclCommDestroy(comm); }
static int comm_abort(ncclComm_t comm) { return ncclCommAbort(comm); }
static int allreduce(float *buf, size_t n, ncclComm_t comm, cudaStream_t s) {
  return ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, s);
}
static int group_start(void) { return ncclGroupStart(); }
static int group_end(void) { return ncclGroupEnd(); }
static int event_create(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDisableTiming); }
static int event_record(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); }
static int event_query(cudaEvent_t e) { return cudaEventQuery(e); }
static int event_sync(cudaEvent_t e) { return cudaEventSynchronize(e); }
static int event_destroy(cudaEvent_t e) { return cudaEventDestroy(e); }
static int stream_create(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
static int stream_sync(cudaStream_t s) { return cudaStreamSynchronize(s); }
static int stream_query(cudaStream_t s) { return cudaStreamQuery(s); }
static int stream_wait(cudaStream_t s, cudaEvent_t e) { return cudaStreamWaitEvent(s, e, 0); }
static int stream_destroy(cudaStream_t s) { return cudaStreamDestroy(s); }
static int set_device(int device) { return cudaSetDevice(device); }
static int device_sync(void) { return cudaDeviceSynchronize(); }
static int malloc_device(void **p, size_t n) { return cudaMalloc(p, n); }
static int free_device(void *p) { return cudaFree(p); }
static int host_func(cudaStream_t s, void (*fn)(void *), void *arg) { return cudaLaunchHostFunc(s, fn, arg); }

struct job {
  void (*fn)(void *);
  void *arg;
};

static void *run_job(void *p) {
  struct job *j = p;
  j->fn(j->arg);
  return NULL;
}

static void on_thread(void (*fn)(void *), void *arg) {
  struct job j = {fn, arg};
  pthread_t t;
  pthread_create(&t, NULL, run_job, &j);
  pthread_join(t, NULL);
}

/* exported, so that dladdr names it as the caller */
EXPORT int fj_exported_stream_create(cudaStream_t *s) { return cudaStreamCreate(s); }

EXPORT int Java_dev_example_Ep_eventCreate(cudaEvent_t *e) { return cudaEventCreate(e); }
EXPORT int Java_dev_example_Ep_eventCreate__J(cudaEvent_t *e) { return cudaEventCreate(e); }

/* weak: the emulator does not define it; after promotion the reference binds to the wrapper */
ncclResult_t ncclAllReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void *config)
    __attribute__((weak));
static int allreduce_config(float *buf, size_t n, ncclComm_t comm, cudaStream_t s) {
  return ncclAllReduceConfig(buf, buf, n, ncclFloat32, ncclSum, comm, s, NULL);
}

static int get_device(int *device) { return cudaGetDevice(device); }
static int allreduce2(const float *send, float *recv, size_t n, ncclComm_t comm, cudaStream_t s) {
  return ncclAllReduce(send, recv, n, ncclFloat32, ncclSum, comm, s);
}

static __attribute__((noinline)) int call_through(int (*fn)(void *), void *arg) { return fn(arg); }

EXPORT const fake_jni fake_jni_functions = {
    unique_id,     comm_init,     comm_init_all, comm_split,    comm_destroy,   comm_abort,  allreduce,
    group_start,   group_end,     event_create,  event_record,  event_query,    event_sync,  event_destroy,
    stream_create, stream_sync,   stream_query,  stream_wait,   stream_destroy, set_device,  device_sync,
    malloc_device, free_device,   host_func,     on_thread,     Java_dev_example_Ep_eventCreate,
    Java_dev_example_Ep_eventCreate__J, allreduce_config, fj_exported_stream_create, get_device, allreduce2,
    call_through,
};
