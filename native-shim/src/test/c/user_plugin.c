/* An application's own profiler plugin, for the forwarding tests: built as
 * libnccl-profiler-ngtest5.so (ncclProfiler_v5) and libnccl-profiler-ngtest4.so (ncclProfiler_v4).
 * It asks for the mask in NGP_MASK and logs every call with what it was given; its handles point
 * into its own log, so a test can tell its handles from anyone else's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_profiler.h"
#include "user_plugin.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
EXPORT ngp_call ngp_calls[NGP_MAX];
EXPORT int ngp_ncalls;
static int contexts[16];
static int ncontexts;

static ngp_call *log_call(int what) {
  pthread_mutex_lock(&lock);
  ngp_call *c = &ngp_calls[ngp_ncalls < NGP_MAX ? ngp_ncalls++ : NGP_MAX - 1];
  memset(c, 0, sizeof(*c));
  c->what = what;
  return c;
}

static ncclResult_t init_common(void **context, uint64_t comm_id, int *mask, const char *name, int nranks, int rank) {
  ngp_call *c = log_call(NGP_INIT);
  c->comm_id = comm_id;
  c->nranks = nranks;
  c->rank = rank;
  c->name = name;
  const char *m = getenv("NGP_MASK");
  *mask = m != NULL ? (int)strtol(m, NULL, 0) : 0;
  *context = &contexts[ncontexts++ % 16];
  c->context = *context;
  pthread_mutex_unlock(&lock);
  return 0;
}

static ncclResult_t start_common(void *context, void **handle, uint64_t type, void *parent, const void *descr, size_t size) {
  ngp_call *c = log_call(NGP_START);
  c->context = context;
  c->type = type;
  c->parent = parent;
  memcpy(c->descr, descr, size < sizeof(c->descr) ? size : sizeof(c->descr));
  *handle = c;
  pthread_mutex_unlock(&lock);
  return 0;
}

static ncclResult_t stop(void *handle) {
  ngp_call *c = log_call(NGP_STOP);
  c->parent = handle;
  pthread_mutex_unlock(&lock);
  return 0;
}

static ncclResult_t record(void *handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v4_t *args) {
  ngp_call *c = log_call(NGP_RECORD);
  c->parent = handle;
  c->state = state;
  (void)args;
  pthread_mutex_unlock(&lock);
  return 0;
}

static ncclResult_t finalize(void *context) {
  ngp_call *c = log_call(NGP_FINALIZE);
  c->context = context;
  pthread_mutex_unlock(&lock);
  return 0;
}

#if NGP_VERSION == 5
static ncclResult_t init5(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes, int nranks, int rank,
                 ncclDebugLogger_t logfn) {
  (void)nnodes, (void)logfn;
  return init_common(context, comm_id, mask, name, nranks, rank);
}
static ncclResult_t start5(void *context, void **handle, ncclProfilerEventDescr_v5_t *d) {
  return start_common(context, handle, d->type, d->parentObj, d, sizeof(*d));
}
EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {"ngtest5", init5, start5, stop, record, finalize};
#else
static ncclResult_t init4(void **context, int *mask, const char *name, uint64_t comm_hash, int nnodes, int nranks, int rank,
                 ncclDebugLogger_t logfn) {
  (void)nnodes, (void)logfn;
  return init_common(context, comm_hash, mask, name, nranks, rank);
}
static ncclResult_t start4(void *context, void **handle, ncclProfilerEventDescr_v4_t *d) {
  return start_common(context, handle, d->type, d->parentObj, d, sizeof(*d));
}
EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {"ngtest4", init4, start4, stop, record, finalize};
#endif
