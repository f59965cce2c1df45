/* Stand-ins for libcudart.so.13 and libnccl.so.2 that do nothing and return at once: with them
 * under NativeHotCalls (-Dncclguard.emu=<their directory>), "real" costs a call and a return,
 * and what the wrapper adds is the agent's own work alone, without the microsecond of a real
 * cudaEventRecord and its noise. A benchmark tool, never a test double of behaviour: handles are
 * distinct heap addresses, every call succeeds (an event's creation may be given a duration:
 * STUB_CREATE_NS). Built twice, once per soname (STUB_NCCL). */
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static void *handle(void) { return malloc(16); }

#ifndef STUB_NCCL
#include <time.h>
/* STUB_CREATE_NS=N: an event's creation takes N ns (a busy wait), as the real runtime's own work
 * does, so that what a wrapper does before the real call can overlap it (scripts/evict-time.sh) */
static long create_ns = -1;
static void create_work(void) {
  if (create_ns < 0) {
    const char *v = getenv("STUB_CREATE_NS");
    create_ns = v != NULL ? atol(v) : 0;
  }
  if (create_ns == 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < create_ns);
}
#endif

#ifndef STUB_NCCL
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
EXPORT int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
EXPORT int cudaGetDevice(int *d) { *d = 0; return 0; }
EXPORT int cudaSetDevice(int d) { (void)d; return 0; }
EXPORT int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
EXPORT int cudaDriverGetVersion(int *v) { *v = 13000; return 0; }
EXPORT int cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return 0; }
EXPORT int cudaFree(void *p) { free(p); return 0; }
EXPORT int cudaStreamCreate(cudaStream_t *s) { *s = handle(); return 0; }
EXPORT int cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { (void)f; *s = handle(); return 0; }
EXPORT int cudaStreamDestroy(cudaStream_t s) { free(s); return 0; }
EXPORT int cudaStreamSynchronize(cudaStream_t s) { (void)s; return 0; }
EXPORT int cudaStreamQuery(cudaStream_t s) { (void)s; return 0; }
EXPORT int cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { (void)s, (void)e, (void)f; return 0; }
EXPORT int cudaEventCreate(cudaEvent_t *e) { create_work(); *e = handle(); return 0; }
EXPORT int cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { (void)f; create_work(); *e = handle(); return 0; }
EXPORT int cudaEventDestroy(cudaEvent_t e) { free(e); return 0; }
EXPORT int cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e, (void)s; return 0; }
EXPORT int cudaEventQuery(cudaEvent_t e) { (void)e; return 0; }
EXPORT int cudaEventSynchronize(cudaEvent_t e) { (void)e; return 0; }
EXPORT int cudaDeviceSynchronize(void) { return 0; }
EXPORT int cudaLaunchHostFunc(cudaStream_t s, void (*fn)(void *), void *data) { (void)s; fn(data); return 0; }
EXPORT const char *cudaGetErrorString(int e) { (void)e; return "no error (stub)"; }
#else
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *ncclComm_t;
#define BOTH(ret, name, params, ...) EXPORT ret name params __VA_ARGS__ EXPORT ret p##name params __VA_ARGS__
BOTH(int, ncclGetVersion, (int *v), { *v = 22803; return 0; })
BOTH(int, ncclGetUniqueId, (ncclUniqueId *id), { memset(id, 1, sizeof(*id)); return 0; })
BOTH(int, ncclCommInitRank, (ncclComm_t *c, int n, ncclUniqueId id, int r), { (void)n, (void)id, (void)r; *c = handle(); return 0; })
BOTH(int, ncclCommDestroy, (ncclComm_t c), { free(c); return 0; })
BOTH(int, ncclCommAbort, (ncclComm_t c), { free(c); return 0; })
BOTH(int, ncclCommCount, (ncclComm_t c, int *n), { (void)c; *n = 1; return 0; })
BOTH(int, ncclCommCuDevice, (ncclComm_t c, int *d), { (void)c; *d = 0; return 0; })
BOTH(int, ncclCommUserRank, (ncclComm_t c, int *r), { (void)c; *r = 0; return 0; })
BOTH(int, ncclCommGetAsyncError, (ncclComm_t c, int *e), { (void)c; *e = 0; return 0; })
BOTH(int, ncclGroupStart, (void), { return 0; })
BOTH(int, ncclGroupEnd, (void), { return 0; })
BOTH(int, ncclAllReduce, (const void *s, void *r, size_t n, int t, int o, ncclComm_t c, void *st),
     { (void)s, (void)r, (void)n, (void)t, (void)o, (void)c, (void)st; return 0; })
BOTH(int, ncclAllReduceConfig, (const void *s, void *r, size_t n, int t, int o, ncclComm_t c, void *st, const void *cf),
     { (void)s, (void)r, (void)n, (void)t, (void)o, (void)c, (void)st, (void)cf; return 0; })
BOTH(int, ncclCommInitAll, (ncclComm_t *c, int n, const int *devs), { (void)devs; for (int i = 0; i < n; i++) c[i] = handle(); return 0; })
BOTH(int, ncclCommSplit, (ncclComm_t c, int color, int key, ncclComm_t *out, void *cf), { (void)c, (void)color, (void)key, (void)cf; *out = handle(); return 0; })
BOTH(const char *, ncclGetErrorString, (int e), { (void)e; return "no error (stub)"; })
#endif
