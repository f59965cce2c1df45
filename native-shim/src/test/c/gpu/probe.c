/* A probe for the GPU machine (and a quiet CPU), not part of the product: libncclguard.so with the
 * real NCCL and CUDA runtime, or the emulator, and no JVM (the test mode, counting callbacks).
 *   probe <libncclguard.so> <libfakejni.so> bench [iters]   hot calls: wrapper against real
 *   probe <libncclguard.so> <libfakejni.so> plugin [floats]  NCCL loads us as its plugin; in flight
 *   probe <libncclguard.so> <libstatic.so> static            NCCL linked into the calling library
 * NCCL_PROFILER_PLUGIN must name libncclguard.so for plugin and static. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_jni.h"
#include "ncclguard_test.h"

static const ncclguard_api *ng;
static const fake_jni *fj;
static atomic_int exits_by_fn[256];

static int64_t c_enter(int fn, const int64_t *s, int n, int64_t c) {
  (void)fn, (void)s, (void)n, (void)c;
  return 0;
}
static int c_exit(int fn, const int64_t *s, int n, int st, int64_t t, int64_t c, int slot) {
  (void)s, (void)n, (void)st, (void)t, (void)c;
  atomic_fetch_add(&exits_by_fn[fn & 255], 1);
  return slot >= 0;
}
static int64_t c_hot_enter(int fn, int64_t h, int64_t s, int64_t c) {
  (void)fn, (void)h, (void)s, (void)c;
  return NCCLGUARD_NOT_JAVAS;
}
static void c_hot_exit(int fn, int64_t h, int64_t s, int st, int64_t t, int64_t c) { (void)fn, (void)h, (void)s, (void)st, (void)t, (void)c; }
static int c_seen(int fn, int64_t h, int d, int slot, int64_t c) {
  (void)fn, (void)h, (void)d, (void)slot, (void)c;
  return 1;
}
static const ncclguard_hooks counting = {c_enter, c_exit, c_hot_enter, c_hot_exit, c_seen, NULL, NULL, NULL, NULL};

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *must(void *p, const char *what) {
  if (p == NULL) {
    fprintf(stderr, "probe: %s: %s\n", what, dlerror());
    exit(2);
  }
  return p;
}

#define CHECK(call)                                                              \
  do {                                                                           \
    int s_ = (call);                                                             \
    if (s_ != 0) {                                                               \
      fprintf(stderr, "probe: %s failed: %d\n", #call, s_);                      \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* min and median ns per call over rounds, wrapper against real, interleaved */
static void report(const char *what, double *w, double *r, int rounds) {
  qsort(w, (size_t)rounds, sizeof(double), cmp);
  qsort(r, (size_t)rounds, sizeof(double), cmp);
  printf("%-32s wrapper %8.1f ns, real %8.1f ns, added %6.1f ns (min of %d; medians %.1f / %.1f, added %.1f)\n", what,
         w[0], r[0], w[0] - r[0], rounds, w[rounds / 2], r[rounds / 2], w[rounds / 2] - r[rounds / 2]);
}

static void bench(long iters) {
  void *cudart = must(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD), "libcudart.so.13");
  void *nccl = must(dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD), "libnccl.so.2");
  int (*query)(cudaEvent_t) = must(dlsym(cudart, "cudaEventQuery"), "cudaEventQuery");
  int (*record)(cudaEvent_t, cudaStream_t) = must(dlsym(cudart, "cudaEventRecord"), "cudaEventRecord");
  int (*sync)(cudaStream_t) = must(dlsym(cudart, "cudaStreamSynchronize"), "cudaStreamSynchronize");
  int (*get_device)(int *) = must(dlsym(cudart, "cudaGetDevice"), "cudaGetDevice");
  int (*create)(cudaEvent_t *, unsigned) = must(dlsym(cudart, "cudaEventCreateWithFlags"), "cudaEventCreateWithFlags");
  int (*destroy)(cudaEvent_t) = must(dlsym(cudart, "cudaEventDestroy"), "cudaEventDestroy");
  int (*allreduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t) =
      must(dlsym(nccl, "pncclAllReduce"), "pncclAllReduce");
  cudaStream_t s;
  cudaEvent_t e;
  CHECK(fj->stream_create(&s));
  CHECK(fj->event_create(&e));
  ncclUniqueId id;
  ncclComm_t comm;
  CHECK(fj->unique_id(&id));
  CHECK(fj->comm_init(&comm, 1, id, 0));
  float *buf;
  CHECK(fj->malloc_device((void **)&buf, 64 * sizeof(float)));
  CHECK(fj->event_record(e, s));
  CHECK(fj->stream_sync(s));
  enum { ROUNDS = 9 };
  const char *names[] = {"cudaEventQuery", "cudaEventRecord", "ncclAllReduce (1 float)", "cudaGetDevice (not wrapped)",
                         "cudaEventCreate+Destroy"};
  for (int fn = 0; fn < 5; fn++) {
    double w[ROUNDS], r[ROUNDS];
    long n = fn == 2 ? iters / 20 : fn == 1 ? iters / 4 : fn == 4 ? iters / 20 : iters;
    for (int round = -1; round < ROUNDS; round++) {
      for (int real = 0; real < 2; real++) {
        double total = 0;
        int dev;
        cudaEvent_t x;
        for (long done = 0; done < n;) {
          long k = n - done < 256 ? n - done : 256;
          double t0 = now_ns();
          switch (fn * 2 + real) {
          case 0: for (long i = 0; i < k; i++) fj->event_query(e); break;
          case 1: for (long i = 0; i < k; i++) query(e); break;
          case 2: for (long i = 0; i < k; i++) fj->event_record(e, s); break;
          case 3: for (long i = 0; i < k; i++) record(e, s); break;
          case 4: for (long i = 0; i < k; i++) fj->allreduce(buf, 1, comm, s); break;
          case 5: for (long i = 0; i < k; i++) allreduce(buf, buf, 1, 7, 0, comm, s); break;
          case 6: for (long i = 0; i < k; i++) fj->get_device(&dev); break;
          case 7: for (long i = 0; i < k; i++) get_device(&dev); break;
          case 8: for (long i = 0; i < k; i++) { fj->event_create(&x); fj->event_destroy(x); } break;
          case 9: for (long i = 0; i < k; i++) { create(&x, 2); destroy(x); } break;
          }
          total += now_ns() - t0;
          if (fn == 1 || fn == 2) real ? sync(s) : fj->stream_sync(s);
          done += k;
        }
        if (round >= 0) (real ? r : w)[round] = total / (double)n;
      }
    }
    report(names[fn], w, r, ROUNDS);
  }
}

static void plugin(size_t floats) {
  ncclComm_t comm;
  ncclUniqueId id;
  CHECK(fj->unique_id(&id));
  CHECK(fj->comm_init(&comm, 1, id, 0));
  int64_t rec[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  int n = ng->plugin_comms(rec, 4);
  printf("plugin: %d communicator record(s); commId 0x%llx rank %lld nranks %lld nNodes %lld mask 0x%llx\n", n,
         (unsigned long long)rec[1], (long long)rec[2], (long long)rec[3], (long long)rec[4], (unsigned long long)rec[9]);
  printf("plugin: ncclCommInitRank's exit upcalls: %d\n", atomic_load(&exits_by_fn[ng->function_id("ncclCommInitRank")]));
  int64_t record = rec[0];
  cudaStream_t s;
  CHECK(fj->stream_create(&s));
  float *a, *b;
  CHECK(fj->malloc_device((void **)&a, floats * sizeof(float)));
  CHECK(fj->malloc_device((void **)&b, floats * sizeof(float)));
  int64_t f[NCCLGUARD_IN_FLIGHT_LONGS];
  /* a first small one: NCCL's first KernelCh events tell the plugin it sends them */
  CHECK(fj->allreduce2(a, b, 1024, comm, s));
  CHECK(fj->stream_sync(s));
  usleep(200000);
  int after_first = ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS);
  printf("plugin: after a first allreduce and its sync: in flight %d, completed %lld\n", after_first, (long long)f[5]);
  for (int k = 0; k < 3; k++) {
    double t0 = now_ns();
    CHECK(fj->allreduce2(a, b, floats, comm, s));
    double t1 = now_ns();
    int right_after = ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS);
    printf("plugin: allreduce of %zu floats enqueued in %.0f us; in flight right after: %d (oldest: kind %lld count %lld)\n",
           floats, (t1 - t0) / 1e3, right_after, (long long)f[2], (long long)f[3]);
    double seen_done = -1;
    int q;
    while ((q = fj->stream_query(s)) == 600) {
      if (seen_done < 0 && ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS) == 0) seen_done = now_ns();
    }
    double t2 = now_ns();
    if (seen_done < 0) {
      for (int i = 0; i < 2000 && ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS) != 0; i++) usleep(100);
      seen_done = now_ns();
    }
    printf("plugin: stream done %.0f us after the call; plugin saw it finished %+.0f us from the stream's query (negative: before)\n",
           (t2 - t0) / 1e3, (seen_done - t2) / 1e3);
  }
  printf("plugin: completed ops counted: %lld\n", (long long)f[5]);
  CHECK(fj->comm_destroy(comm));
  printf("plugin: after destroy, unfinalized records: %d\n", ng->plugin_comms(rec, 4));
}

static void statically_linked(void *lib) {
  int (*run)(int, ncclComm_t *) = must(dlsym(lib, "sf_run"), "sf_run");
  ncclComm_t comm;
  int r = run(0, &comm);
  printf("static: sf_run: %d; ncclCommInitRank exit upcalls (interposer): %d; cudaStreamCreate: %d\n", r,
         atomic_load(&exits_by_fn[ng->function_id("ncclCommInitRank")]),
         atomic_load(&exits_by_fn[ng->function_id("cudaStreamCreate")]));
  int64_t rec[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  int n = ng->plugin_comms(rec, 4);
  printf("static: plugin records: %d (commId 0x%llx)\n", n, n > 0 ? (unsigned long long)rec[1] : 0ull);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 4) return 2;
  void *agent = must(dlopen(argv[1], RTLD_LAZY), argv[1]);
  const ncclguard_api *(*test)(const ncclguard_hooks *) = must(dlsym(agent, "ncclguard_test"), "ncclguard_test");
  ng = test(&counting);
  if (!ng->promote()) return 3;
  void *lib = must(dlopen(argv[2], RTLD_NOW), argv[2]);
  fj = dlsym(lib, "fake_jni_functions");
  if (strcmp(argv[3], "bench") == 0) bench(argc > 4 ? atol(argv[4]) : 2000000);
  else if (strcmp(argv[3], "plugin") == 0) plugin(argc > 4 ? (size_t)atol(argv[4]) : (size_t)1 << 28);
  else if (strcmp(argv[3], "static") == 0) statically_linked(lib);
  int64_t st[7];
  ng->stats(st, 7);
  printf("stats: callers %lld, event slots %lld, stream slots %lld, missing real %lld\n", (long long)st[0], (long long)st[1],
         (long long)st[2], (long long)st[4]);
  return 0;
}
