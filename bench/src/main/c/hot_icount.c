/* Instructions per hot call, counted by callgrind: what the agent's wrappers execute, which no
 * host's state changes (a VM's slow minute moves nanoseconds, not instructions).
 * Two roles from this one file:
 *   -DICOUNT_APP: libicount-app.so, a "JNI library" linked by soname against libcudart.so.13 and
 *     libnccl.so.2 (bench's stand-ins, which return at once), whose loops call each function
 *     through its PLT (bound to libncclguard.so's wrappers after the promotion) or through the
 *     real function's address.
 *   the program: loads libncclguard.so in its test mode (no JVM; C callbacks), promotes it, loads
 *     the app, makes its handles through the wrappers (so they are C's), then runs each loop between
 *     callgrind's client requests, one dump per loop.
 * scripts/icount.sh builds and runs it and prints instructions per call, wrapper against real. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct ncclComm *ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;


#ifdef ICOUNT_APP
int cudaEventQuery(cudaEvent_t e);
int cudaEventRecord(cudaEvent_t e, cudaStream_t s);
int cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
int cudaStreamCreate(cudaStream_t *s);
int cudaStreamQuery(cudaStream_t s);
int cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
int cudaGetDevice(int *d);
int cudaMalloc(void **p, size_t n);
int ncclGetUniqueId(ncclUniqueId *id);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, ncclComm_t comm, cudaStream_t stream);

static int (*real_query)(cudaEvent_t);
static int (*real_record)(cudaEvent_t, cudaStream_t);
static int (*real_allreduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
static int (*real_get_device)(int *);
static int (*real_stream_query)(cudaStream_t);
static int (*real_wait)(cudaStream_t, cudaEvent_t, unsigned);
static cudaStream_t stream;
static cudaEvent_t event;
static ncclComm_t comm;
static float *buffer;

__attribute__((visibility("default"))) const char *icount_setup(void) {
  void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (cudart == NULL || nccl == NULL) return "libcudart.so.13 or libnccl.so.2 is not loaded";
  real_query = (int (*)(cudaEvent_t))dlsym(cudart, "cudaEventQuery");
  real_record = (int (*)(cudaEvent_t, cudaStream_t))dlsym(cudart, "cudaEventRecord");
  real_get_device = (int (*)(int *))dlsym(cudart, "cudaGetDevice");
  real_stream_query = (int (*)(cudaStream_t))dlsym(cudart, "cudaStreamQuery");
  real_wait = (int (*)(cudaStream_t, cudaEvent_t, unsigned))dlsym(cudart, "cudaStreamWaitEvent");
  real_allreduce = (int (*)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t))dlsym(nccl, "pncclAllReduce");
  if (!real_query || !real_record || !real_get_device || !real_stream_query || !real_wait || !real_allreduce)
    return "a real function is missing";
  ncclUniqueId id;
  if (cudaStreamCreate(&stream) != 0 || cudaEventCreateWithFlags(&event, 2) != 0 || ncclGetUniqueId(&id) != 0 ||
      ncclCommInitRank(&comm, 1, id, 0) != 0 || cudaMalloc((void **)&buffer, 64 * sizeof(float)) != 0)
    return "setting up the stream, event, communicator or buffer failed";
  return NULL;
}

__attribute__((visibility("default"))) void icount_run(int fn, int real, long n) {
  int device;
  switch (fn * 2 + (real ? 1 : 0)) {
  case 0: for (long i = 0; i < n; i++) cudaEventQuery(event); break;
  case 1: for (long i = 0; i < n; i++) real_query(event); break;
  case 2: for (long i = 0; i < n; i++) cudaEventRecord(event, stream); break;
  case 3: for (long i = 0; i < n; i++) real_record(event, stream); break;
  case 4: for (long i = 0; i < n; i++) ncclAllReduce(buffer, buffer, 1, 7, 0, comm, stream); break;
  case 5: for (long i = 0; i < n; i++) real_allreduce(buffer, buffer, 1, 7, 0, comm, stream); break;
  case 6: for (long i = 0; i < n; i++) cudaGetDevice(&device); break;
  case 7: for (long i = 0; i < n; i++) real_get_device(&device); break;
  case 8: for (long i = 0; i < n; i++) cudaStreamQuery(stream); break;
  case 9: for (long i = 0; i < n; i++) real_stream_query(stream); break;
  case 10: for (long i = 0; i < n; i++) cudaStreamWaitEvent(stream, event, 0); break;
  case 11: for (long i = 0; i < n; i++) real_wait(stream, event, 0); break;
  default: break;
  }
}

#else
#include <valgrind/callgrind.h>

#include "ncclguard_test.h"

#define LOOPS 6
static const char *const loop_name[LOOPS] = {"cudaEventQuery",  "cudaEventRecord", "ncclAllReduce",
                                             "cudaGetDevice",   "cudaStreamQuery", "cudaStreamWaitEvent"};

static int64_t c_enter(int fn, const int64_t *s, int n, int64_t c) {
  (void)fn, (void)s, (void)n, (void)c;
  return 0;
}
static int c_exit(int fn, const int64_t *s, int n, int st, int64_t t, int64_t c, int slot) {
  (void)fn, (void)s, (void)n, (void)st, (void)t, (void)c;
  return slot >= 0;
}
static int64_t c_hot_enter(int fn, int64_t h, int64_t s, int64_t c) {
  (void)fn, (void)h, (void)s, (void)c;
  return NCCLGUARD_NOT_JAVAS;
}
static void c_hot_exit(int fn, int64_t h, int64_t s, int st, int64_t t, int64_t c) {
  (void)fn, (void)h, (void)s, (void)st, (void)t, (void)c;
}
static int c_seen(int fn, int64_t h, int d, int slot, int64_t c) {
  (void)fn, (void)h, (void)d, (void)slot, (void)c;
  return 1;
}
static const ncclguard_hooks hooks = {c_enter, c_exit, c_hot_enter, c_hot_exit, c_seen, NULL, NULL};

static void *must(void *p, const char *what) {
  if (p == NULL) {
    fprintf(stderr, "hot_icount: %s: %s\n", what, dlerror());
    exit(2);
  }
  return p;
}

/* hot_icount <libncclguard.so> <libicount-app.so> [calls per loop] */
int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: hot_icount <libncclguard.so> <libicount-app.so> [calls]\n");
    return 2;
  }
  long n = argc > 3 ? atol(argv[3]) : 10000;
  void *agent = must(dlopen(argv[1], RTLD_LAZY), argv[1]);
  const ncclguard_api *(*test)(const ncclguard_hooks *) = must(dlsym(agent, "ncclguard_test"), "ncclguard_test");
  const ncclguard_api *ng = test(&hooks);
  if (!ng->promote()) {
    fprintf(stderr, "hot_icount: promotion failed: %s\n", ng->last_error());
    return 3;
  }
  void *app = must(dlopen(argv[2], RTLD_NOW), argv[2]);
  const char *(*setup)(void) = must(dlsym(app, "icount_setup"), "icount_setup");
  void (*run)(int, int, long) = must(dlsym(app, "icount_run"), "icount_run");
  const char *err = setup();
  if (err != NULL) {
    fprintf(stderr, "hot_icount: %s\n", err);
    return 4;
  }
  char name[64];
  for (int fn = 0; fn < LOOPS; fn++) {
    for (int real = 0; real < 2; real++) {
      run(fn, real, n); /* warm: callers, hints and lazy bindings settle before counting */
      CALLGRIND_ZERO_STATS;
      run(fn, real, n);
      snprintf(name, sizeof name, "%s/%s/%ld", loop_name[fn], real ? "real" : "wrapper", n);
      CALLGRIND_DUMP_STATS_AT(name);
    }
  }
  return 0;
}
#endif
