/* The hot-call benchmark's JNI library: C loops over cudaEventQuery, cudaEventRecord,
 * ncclAllReduce and an untracked function (cudaGetDevice), each once through this library's PLT
 * (bound to ncclguard's wrappers when the agent's native part was promoted before this library
 * loaded) and once through the real function's address (dlsym on the loaded libcudart.so.13 /
 * libnccl.so.2), in the same process: the difference is what the wrapper adds per call. Also
 * creations (cudaEventCreate + cudaEventDestroy), whose wrapper calls into Java when the agent's
 * Java side is there. Linked by soname against libnccl.so.2 and libcudart.so.13. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;

int cudaEventQuery(cudaEvent_t e);
int cudaEventRecord(cudaEvent_t e, cudaStream_t s);
int cudaEventCreate(cudaEvent_t *e);
int cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
int cudaEventDestroy(cudaEvent_t e);
int cudaStreamCreate(cudaStream_t *s);
int cudaStreamSynchronize(cudaStream_t s);
int cudaStreamQuery(cudaStream_t s);
int cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
int cudaGetDevice(int *d);
int cudaDeviceSynchronize(void);
int cudaMalloc(void **p, size_t n);
int ncclGetUniqueId(ncclUniqueId *id);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, ncclComm_t comm, cudaStream_t stream);

static int (*real_query)(cudaEvent_t);
static int (*real_record)(cudaEvent_t, cudaStream_t);
static int (*real_create)(cudaEvent_t *);
static int (*real_destroy)(cudaEvent_t);
static int (*real_get_device)(int *);
static int (*real_sync)(cudaStream_t);
static int (*real_allreduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
static int (*real_stream_query)(cudaStream_t);
static int (*real_wait)(cudaStream_t, cudaEvent_t, unsigned);
static int (*real_create_flags)(cudaEvent_t *, unsigned);
static int (*real_device_sync)(void);

static cudaStream_t stream;
static cudaEvent_t event;       /* cudaEventDisableTiming, as events made to synchronize are */
static cudaEvent_t timed_event; /* the default: a record also takes a timestamp */
static ncclComm_t comm;
static float *buffer;
static void probe_init(void);

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* dlsym as the C library defines it. Under the agent this library's own dlsym import slot points at
 * ncclguard's hook, which hands out the wrappers for catalog names (a lookup by name is tracked like
 * a call through the PLT): the real side of each pair must not be a wrapper. dlvsym with
 * RTLD_DEFAULT is passed through by that hook. */
static void *(*libc_dlsym)(void *, const char *);

/* sym from the library behind handle, never a wrapper; NULL where it is not that library's own */
static void *real_sym(void *handle, const char *name) {
  void *p = libc_dlsym(handle, name);
  struct link_map *lm = NULL;
  Dl_info info;
  if (p == NULL || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL || dladdr(p, &info) == 0 ||
      info.dli_fname == NULL || strcmp(info.dli_fname, lm->l_name) != 0)
    return NULL;
  return p;
}

/* The real functions, from the loaded libraries by soname (never loading one), and the handles
 * the loops use, made through the PLT (so that, under the agent, they are C's). NULL, or what failed.
 * Exported under a plain name too: scripts/icount.sh drives the loops without a JVM (hot_icount.c). */
EXPORT const char *hot_set_up(void) {
  void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (cudart == NULL || nccl == NULL) return "libcudart.so.13 or libnccl.so.2 is not loaded";
  libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
  if (libc_dlsym == NULL) libc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
  if (libc_dlsym == NULL) return "the C library's dlsym (GLIBC_2.34 or GLIBC_2.2.5) was not found";
  real_stream_query = (int (*)(cudaStream_t))real_sym(cudart, "cudaStreamQuery");
  real_wait = (int (*)(cudaStream_t, cudaEvent_t, unsigned))real_sym(cudart, "cudaStreamWaitEvent");
  real_query = (int (*)(cudaEvent_t))real_sym(cudart, "cudaEventQuery");
  real_record = (int (*)(cudaEvent_t, cudaStream_t))real_sym(cudart, "cudaEventRecord");
  real_create = (int (*)(cudaEvent_t *))real_sym(cudart, "cudaEventCreate");
  real_destroy = (int (*)(cudaEvent_t))real_sym(cudart, "cudaEventDestroy");
  real_create_flags = (int (*)(cudaEvent_t *, unsigned))real_sym(cudart, "cudaEventCreateWithFlags");
  real_get_device = (int (*)(int *))real_sym(cudart, "cudaGetDevice");
  real_sync = (int (*)(cudaStream_t))real_sym(cudart, "cudaStreamSynchronize");
  real_device_sync = (int (*)(void))real_sym(cudart, "cudaDeviceSynchronize");
  real_allreduce = (int (*)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t))real_sym(nccl, "pncclAllReduce");
  if (real_stream_query == NULL || real_wait == NULL || real_query == NULL || real_record == NULL || real_create == NULL ||
      real_destroy == NULL || real_create_flags == NULL || real_get_device == NULL || real_sync == NULL || real_device_sync == NULL || real_allreduce == NULL)
    return "a real function is missing from libcudart.so.13 / libnccl.so.2, or its lookup did not reach that library";
  ncclUniqueId id;
  if (cudaStreamCreate(&stream) != 0 || cudaEventCreateWithFlags(&event, 2 /* cudaEventDisableTiming */) != 0 ||
      cudaEventCreate(&timed_event) != 0 || ncclGetUniqueId(&id) != 0 ||
      ncclCommInitRank(&comm, 1, id, 0) != 0 || cudaMalloc((void **)&buffer, 256 * sizeof(float)) != 0)
    return "setting up the stream, event, communicator or buffer failed";
  probe_init();
  return NULL;
}

JNIEXPORT jstring JNICALL Java_dev_ncclguard_bench_NativeHotCalls_setUp(JNIEnv *env, jclass c) {
  (void)c;
  const char *failed = hot_set_up();
  return failed != NULL ? (*env)->NewStringUTF(env, failed) : NULL;
}

/* ---------------------------------------------------------------- probes */
/* What the real record's footprint does to the work that follows it: the real cudaEventRecord
 * through one more stack frame, then that frame plus chains of dependent loads (eight lines on
 * eight pages, eight lines on one page), 256 bytes of its own stack or 450 bytes of code. Each is paired with
 * the real record alone; on the stand-ins they cost what their instructions cost, and what a real
 * call adds to that is its footprint (its cache lines, TLB entries or return stack). */
#define PROBE_LINES 8
static char probe_pages[PROBE_LINES][4096] __attribute__((aligned(4096)));
static char probe_page[PROBE_LINES * 64] __attribute__((aligned(4096)));
static void *volatile probe_sink;

static void probe_init(void) {
  for (int i = 0; i < PROBE_LINES; i++) {
    /* chains: each line holds the address of the next (page i + 1, at a line that differs per page) */
    *(void **)&probe_pages[i][(i * 64) % 4096] = &probe_pages[(i + 1) % PROBE_LINES][((i + 1) * 64) % 4096];
    *(void **)&probe_page[i * 64] = &probe_page[((i + 1) % PROBE_LINES) * 64];
  }
}

static __attribute__((noinline)) int probe_frame(cudaEvent_t e, cudaStream_t s, int chase) {
  int r = real_record(e, s);
  void *p = chase == 1 ? (void *)&probe_pages[0][0] : chase == 2 ? (void *)&probe_page[0] : NULL;
  if (p != NULL) {
    for (int i = 0; i < PROBE_LINES; i++) p = *(void *volatile *)p;
    probe_sink = p;
  }
  __asm__ volatile("" ::: "memory");
  return r;
}

/* 128 instructions in four independent chains (about 450 bytes of code, as much as a wrapper's
 * hot path): what running code the real call's footprint evicted costs */
static __attribute__((noinline)) int probe_code(cudaEvent_t e, cudaStream_t s) {
  int r = real_record(e, s);
  int a = r, b = r, c = r, d = r;
  __asm__ volatile(".rept 32\n\taddl $1, %0\n\taddl $1, %1\n\taddl $1, %2\n\taddl $1, %3\n\t.endr"
                   : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  return a + b + c + d - 4 * r - 128 + r;
}

/* the same 128 adds before the real call: whether work costs more after the call than before it */
static __attribute__((noinline)) int probe_code_before(cudaEvent_t e, cudaStream_t s) {
  int a = 0, b = 0, c = 0, d = 0;
  __asm__ volatile(".rept 32\n\taddl $1, %0\n\taddl $1, %1\n\taddl $1, %2\n\taddl $1, %3\n\t.endr"
                   : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  int r = real_record(e, s);
  return a + b + c + d - 128 + r;
}

/* 128 adds after the call again, as a loop of 32 rounds over 4 (about 20 bytes of code, 64 more
 * instructions): against probe_code, whether what costs is the code's bytes (fetched again after
 * the real call) or its instructions */
static __attribute__((noinline)) int probe_code_loop(cudaEvent_t e, cudaStream_t s) {
  int r = real_record(e, s);
  int a = r, b = r, c = r, d = r;
  for (int i = 0; i < 32; i++) __asm__ volatile("addl $1, %0\n\taddl $1, %1\n\taddl $1, %2\n\taddl $1, %3"
                                                : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
  return a + b + c + d - 4 * r - 128 + r;
}

static __attribute__((noinline)) int probe_stack(cudaEvent_t e, cudaStream_t s) {
  volatile char frame[256];
  for (int i = 0; i < 256; i += 32) frame[i] = (char)i;
  int r = real_record(e, s);
  __asm__ volatile("" ::: "memory");
  return r + frame[r & 255];
}

/* One call instruction reaching two functions in turn through a pointer, as a dispatcher's does:
 * cudaEventQuery and cudaStreamQuery, through their addresses here (the wrappers) or the real ones. */
typedef int (*one_arg_fn)(void *);
static one_arg_fn volatile dispatch[2];

static void dispatched(jlong n, one_arg_fn query, one_arg_fn stream_query) {
  dispatch[0] = query;
  dispatch[1] = stream_query;
  for (jlong i = 0; i < n; i++) dispatch[i & 1]((i & 1) ? (void *)stream : (void *)event);
}

/* One piece of n calls of fn (see loop), through the wrapper or the real function. 12 to 14
 * (cudaStreamQuery, cudaStreamWaitEvent, the two queries through one pointer) only for hot_icount.c. */
EXPORT void hot_calls(int fn, int real, jlong n) {
  int device;
  switch (fn * 2 + (real ? 1 : 0)) {
  case 0: for (jlong i = 0; i < n; i++) cudaEventQuery(event); break;
  case 1: for (jlong i = 0; i < n; i++) real_query(event); break;
  case 2: for (jlong i = 0; i < n; i++) cudaEventRecord(event, stream); break;
  case 3: for (jlong i = 0; i < n; i++) real_record(event, stream); break;
  case 4: for (jlong i = 0; i < n; i++) ncclAllReduce(buffer, buffer, 1, 7, 0, comm, stream); break;
  case 5: for (jlong i = 0; i < n; i++) real_allreduce(buffer, buffer, 1, 7, 0, comm, stream); break;
  case 6: for (jlong i = 0; i < n; i++) cudaGetDevice(&device); break;
  case 7: for (jlong i = 0; i < n; i++) real_get_device(&device); break;
  case 8: for (jlong i = 0; i < n; i++) cudaEventRecord(timed_event, stream); break;
  case 9: for (jlong i = 0; i < n; i++) real_record(timed_event, stream); break;
  /* the probes, each against the real record alone */
  case 10: for (jlong i = 0; i < n; i++) probe_frame(event, stream, 0); break;
  case 12: for (jlong i = 0; i < n; i++) probe_frame(event, stream, 1); break;
  case 14: for (jlong i = 0; i < n; i++) probe_frame(event, stream, 2); break;
  case 16: for (jlong i = 0; i < n; i++) probe_stack(event, stream); break;
  case 18: for (jlong i = 0; i < n; i++) probe_code(event, stream); break;
  case 20: for (jlong i = 0; i < n; i++) probe_code_before(event, stream); break;
  case 22: for (jlong i = 0; i < n; i++) probe_code_loop(event, stream); break;
  case 11: case 13: case 15: case 17: case 19: case 21: case 23: for (jlong i = 0; i < n; i++) real_record(event, stream); break;
  case 24: for (jlong i = 0; i < n; i++) cudaStreamQuery(stream); break;
  case 25: for (jlong i = 0; i < n; i++) real_stream_query(stream); break;
  case 26: for (jlong i = 0; i < n; i++) cudaStreamWaitEvent(stream, event, 0); break;
  case 27: for (jlong i = 0; i < n; i++) real_wait(stream, event, 0); break;
  case 28: dispatched(n, (one_arg_fn)cudaEventQuery, (one_arg_fn)cudaStreamQuery); break;
  case 29: dispatched(n, (one_arg_fn)real_query, (one_arg_fn)real_stream_query); break;
  default: break;
  }
}

/* The queued work would otherwise grow without bound: drained outside the timed or counted part. */
static void drain(int fn, int real) {
  if (fn >= 5) real_sync(stream);
  else if (fn == 1 || fn == 2 || fn == 4) real ? real_sync(stream) : cudaStreamSynchronize(stream);
}

/* What a loop calls: 0 cudaEventQuery, 1 cudaEventRecord, 2 ncclAllReduce, 3 cudaGetDevice
 * (untracked: not wrapped at all), 4 cudaEventRecord of an event with timing; 5-11 the probes
 * (real = true: the real record alone). Returns the elapsed ns of `iters` calls (stream
 * synchronizes every 256 calls are outside the timed part). */
JNIEXPORT jlong JNICALL Java_dev_ncclguard_bench_NativeHotCalls_loop(JNIEnv *env, jclass c, jint fn, jboolean real,
                                                                   jlong iters) {
  (void)env, (void)c;
  if (fn < 0 || fn > 11) return -1;
  int64_t total = 0;
  for (jlong done = 0; done < iters;) {
    jlong n = iters - done < 256 ? iters - done : 256;
    int64_t t0 = now_ns();
    hot_calls(fn, real, n);
    total += now_ns() - t0;
    drain(fn, real);
    done += n;
  }
  return total;
}

/* ---------------------------------------------------------------- hardware counters */
/* Two groups of four, since a virtual PMU often has four general counters: each leader counts
 * cycles, so a group's other counts can be read per cycle too. Counted in user mode only. */
#define COUNTERS 8
static const struct {
  uint32_t type;
  uint64_t config;
} counter[COUNTERS] = {
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_L1D | PERF_COUNT_HW_CACHE_OP_READ << 8 | PERF_COUNT_HW_CACHE_RESULT_MISS << 16},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_DTLB | PERF_COUNT_HW_CACHE_OP_READ << 8 | PERF_COUNT_HW_CACHE_RESULT_MISS << 16},
    {PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_ITLB | PERF_COUNT_HW_CACHE_OP_READ << 8 | PERF_COUNT_HW_CACHE_RESULT_MISS << 16},
    {PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_L1I | PERF_COUNT_HW_CACHE_OP_READ << 8 | PERF_COUNT_HW_CACHE_RESULT_MISS << 16},
};
static int counter_fd[COUNTERS] = {-1, -1, -1, -1, -1, -1, -1, -1};

static const char *open_counters(char *why, size_t len) {
  if (counter_fd[0] >= 0) return NULL;
  for (int i = 0; i < COUNTERS; i++) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = counter[i].type;
    a.config = counter[i].config;
    a.disabled = i % 4 == 0;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_GROUP;
    int leader = i % 4 == 0 ? -1 : counter_fd[i - i % 4];
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, leader, 0);
    if (fd < 0) {
      snprintf(why, len, "perf_event_open of counter %d failed: %s (no PMU in this VM, a seccomp filter, or "
               "kernel.perf_event_paranoid > 2)", i, strerror(errno));
      for (int j = 0; j < i; j++) close(counter_fd[j]), counter_fd[j] = -1;
      return why;
    }
    counter_fd[i] = fd;
  }
  return NULL;
}

/* Counts of `iters` calls of fn into out[0..7] (cycles, instructions, branch misses, L1D load
 * misses; cycles, dTLB load misses, iTLB misses, L1I misses), each group over its own pieces of
 * 256 calls with the drains outside; null, or why the counters cannot be read. */
JNIEXPORT jstring JNICALL Java_dev_ncclguard_bench_NativeHotCalls_counted(JNIEnv *env, jclass c, jint fn,
                                                                        jboolean real, jlong iters, jlongArray out) {
  (void)c;
  char why[256];
  if (fn < 0 || fn > 9) return (*env)->NewStringUTF(env, "no such loop");
  if (open_counters(why, sizeof why) != NULL) return (*env)->NewStringUTF(env, why);
  jlong sum[COUNTERS] = {0};
  for (int g = 0; g < COUNTERS; g += 4) {
    int leader = counter_fd[g];
    ioctl(leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    for (jlong done = 0; done < iters;) {
      jlong n = iters - done < 256 ? iters - done : 256;
      ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
      hot_calls(fn, real, n);
      ioctl(leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
      drain(fn, real);
      done += n;
    }
    uint64_t values[1 + 4];
    if (read(leader, values, sizeof values) != (ssize_t)sizeof values || values[0] != 4) {
      return (*env)->NewStringUTF(env, "reading a counter group failed");
    }
    for (int i = 0; i < 4; i++) sum[g + i] = (jlong)values[1 + i];
  }
  (*env)->SetLongArrayRegion(env, out, 0, COUNTERS, sum);
  return NULL;
}

/* One cudaEventCreate + cudaEventDestroy pair, through the PLT (the wrappers) or the real functions. */
static inline void one_pair(int real) {
  cudaEvent_t e;
  if (real) {
    real_create(&e);
    real_destroy(e);
  } else {
    cudaEventCreate(&e);
    cudaEventDestroy(e);
  }
}

/* cudaEventCreate + cudaEventDestroy pairs: the elapsed ns of `iters` pairs. */
JNIEXPORT jlong JNICALL Java_dev_ncclguard_bench_NativeHotCalls_creations(JNIEnv *env, jclass c, jboolean real,
                                                                        jlong iters) {
  (void)env, (void)c;
  int64_t t0 = now_ns();
  for (jlong i = 0; i < iters; i++) one_pair(real);
  return now_ns() - t0;
}

/* cudaDeviceSynchronize from C on a Java thread, with `streams` more streams made through the PLT
 * first (C's, as a framework's pool: PyTorch's holds 128): the elapsed ns of `iters` calls, each
 * after a record on the set-up stream (so each synchronize has work counted before it). */
JNIEXPORT jlong JNICALL Java_dev_ncclguard_bench_NativeHotCalls_deviceSyncs(JNIEnv *env, jclass c, jboolean real,
                                                                          jint streams, jlong iters) {
  (void)env, (void)c;
  static int made;
  for (; made < streams; made++) {
    cudaStream_t s;
    if (cudaStreamCreate(&s) != 0) return -1;
  }
  int64_t total = 0;
  for (jlong i = 0; i < iters; i++) {
    cudaEventRecord(event, stream);
    int64_t t0 = now_ns();
    if ((real ? real_device_sync() : cudaDeviceSynchronize()) != 0) return -1;
    total += now_ns() - t0;
  }
  return total;
}

/* One cudaEventCreate + cudaEventDestroy pair, a JNI call of its own: the native part's memo (one
 * per JNI call) cannot serve it, so a creation through the wrapper walks its Java stack each time
 * (AsyncGetCallTrace), and at a stack never seen also takes the upcall that shows Java the stack. */
JNIEXPORT void JNICALL Java_dev_ncclguard_bench_NativeHotCalls_pair(JNIEnv *env, jclass c, jboolean real) {
  (void)env, (void)c;
  one_pair(real);
}

/* Whether the framework loop runs on the legacy default stream (0), where PyTorch 2.11 runs a
 * synchronous collective (the current stream), or on the stream made at set-up. */
static int fw_legacy;

/* One operation of a framework's loop, as ProcessGroupNCCL makes it: two fresh events (timing
 * off), one recorded before the collective and one after it, the collective, a query of the
 * second, both destroyed. Through the PLT (the wrappers) or the real functions. */
static void framework_op(int real) {
  cudaStream_t st = fw_legacy ? NULL : stream;
  cudaEvent_t start, end;
  if (real) {
    real_create_flags(&start, 2);
    real_create_flags(&end, 2);
    real_record(start, st);
    real_allreduce(buffer, buffer, 256, 7, 0, comm, st);
    real_record(end, st);
    real_query(end);
    real_destroy(start);
    real_destroy(end);
  } else {
    cudaEventCreateWithFlags(&start, 2);
    cudaEventCreateWithFlags(&end, 2);
    cudaEventRecord(start, st);
    ncclAllReduce(buffer, buffer, 256, 7, 0, comm, st);
    cudaEventRecord(end, st);
    cudaEventQuery(end);
    cudaEventDestroy(start);
    cudaEventDestroy(end);
  }
}

/* 1: the framework loop runs on the legacy default stream; 0: on the stream made at set-up */
EXPORT void hot_framework_legacy(int legacy) {
  fw_legacy = legacy;
}

JNIEXPORT void JNICALL Java_dev_ncclguard_bench_NativeHotCalls_frameworkOnDefaultStream(JNIEnv *env, jclass c, jboolean on) {
  (void)env, (void)c;
  hot_framework_legacy(on);
}

EXPORT void hot_framework(int real, jlong n) {
  for (jlong i = 0; i < n; i++) framework_op(real);
}

/* The functions a framework operation calls, the wrappers (through this library's PLT) or the real
 * ones, for the loops that keep events across operations (ring, handoff). */
typedef struct {
  int (*create)(cudaEvent_t *, unsigned);
  int (*record)(cudaEvent_t, cudaStream_t);
  int (*query)(cudaEvent_t);
  int (*destroy)(cudaEvent_t);
  int (*allreduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
} fw_calls;

static fw_calls fw_calls_of(int real) {
  if (real) return (fw_calls){real_create_flags, real_record, real_query, real_destroy, real_allreduce};
  return (fw_calls){cudaEventCreateWithFlags, cudaEventRecord, cudaEventQuery, cudaEventDestroy, ncclAllReduce};
}

/* An operation but its releases, as framework_op makes it: two fresh events (timing off), one
 * recorded before the all-reduce and one after it, a query of the second. */
static inline void fw_operation(const fw_calls *f, cudaEvent_t e[2]) {
  cudaStream_t st = fw_legacy ? NULL : stream;
  f->create(&e[0], 2);
  f->create(&e[1], 2);
  f->record(e[0], st);
  f->allreduce(buffer, buffer, 256, 7, 0, comm, st);
  f->record(e[1], st);
  f->query(e[1]);
}

/* Bytes written between two operations of the ring loop (one store a cache line; 0: none): the
 * work a framework does between its collectives (PyTorch's interpreter) evicts the agent's lines,
 * which a tight loop keeps cached. For counting the lines an operation misses (scripts/lines.sh,
 * under cachegrind), and for timing tracked against forwarded rounds in one process (the pass
 * dominates an operation's time: scripts/evict-time.sh takes the medians of many short rounds). */
static volatile char *ring_evict;
static size_t ring_evict_bytes;

/* Code run between two operations (hot_framework_evict_code: none unless set): the interpreter's
 * own code evicts the agent's instructions from the first-level and second-level caches, which
 * data stores alone leave in place (cachegrind's first-level instruction cache keeps them). */
static void (*ring_evict_code)(void);

/* One store in every line of the eviction buffer, then the code block (none unless set). */
static void fw_evict(void) {
  for (size_t b = 0; b < ring_evict_bytes; b += 64) ring_evict[b]++;
  if (ring_evict_code != NULL) ring_evict_code();
}

/* Spins until the other thread's count of operations done passes `past`. */
static void fw_wait_past(_Atomic long *count, long past) {
  while (atomic_load_explicit(count, memory_order_acquire) <= past) __builtin_ia32_pause();
}

/* bytes of 8-byte no-ops and a return, executable (x86-64; 0: none). 1 if set. */
EXPORT int hot_framework_evict_code(size_t bytes) {
#if defined(__x86_64__)
  static const unsigned char nop8[8] = {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};
  ring_evict_code = NULL;
  if (bytes == 0) return 1;
  bytes = (bytes + 7) & ~(size_t)7;
  unsigned char *code = mmap(NULL, bytes + 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 0;
  for (size_t b = 0; b < bytes; b += 8) memcpy(code + b, nop8, 8);
  code[bytes] = 0xC3;
  if (mprotect(code, bytes + 64, PROT_READ | PROT_EXEC) != 0) return 0;
  ring_evict_code = (void (*)(void))(uintptr_t)code;
  return 1;
#else
  return bytes == 0;
#endif
}

EXPORT int hot_framework_evict(size_t bytes) {
  free((void *)ring_evict);
  ring_evict = bytes == 0 ? NULL : calloc(bytes, 1);
  ring_evict_bytes = ring_evict == NULL ? 0 : bytes;
  return bytes == 0 || ring_evict != NULL;
}

/* The framework loop as ProcessGroupNCCL keeps its work: an operation's events live on for RING
 * operations (its work object, until the watchdog sees it complete), so each call site's hint holds
 * another operation's event and every record, query and release looks its event up further. The
 * same calls as framework_op's; n operations from an empty ring to an empty ring. */
#define RING 16
EXPORT void hot_framework_ring(int real, jlong n) {
  static cudaEvent_t ring[RING][2];
  fw_calls f = fw_calls_of(real);
  for (jlong i = 0; i < n + RING; i++) {
    cudaEvent_t *old = ring[i % RING];
    if (i >= RING) {
      f.destroy(old[0]);
      f.destroy(old[1]);
    }
    if (i >= n) continue;
    fw_evict();
    fw_operation(&f, old);
  }
}

/* The framework loop with its releases on another thread, as ProcessGroupNCCL's watchdog drops a
 * completed work's events: this thread makes each operation's two events, records them around the
 * all-reduce and queries the second; a releaser thread destroys them, HANDOFF operations behind
 * (a ring of their events, one writer and one reader). What the agent's shared state costs when
 * creations and releases run on two cores. n operations; both threads done at return. */
#define HANDOFF 64
static struct {
  cudaEvent_t e[HANDOFF][2];
  _Atomic long made, released;
  long n;
  int real;
} handoff;

static void *releaser(void *p) {
  (void)p;
  int (*destroy)(cudaEvent_t) = fw_calls_of(handoff.real).destroy;
  for (long i = 0; i < handoff.n; i++) {
    fw_wait_past(&handoff.made, i);
    destroy(handoff.e[i % HANDOFF][0]);
    destroy(handoff.e[i % HANDOFF][1]);
    atomic_store_explicit(&handoff.released, i + 1, memory_order_release);
  }
  return NULL;
}

EXPORT int hot_framework_handoff(int real, jlong n) {
  fw_calls f = fw_calls_of(real);
  handoff.n = n;
  handoff.real = real;
  atomic_store(&handoff.made, 0);
  atomic_store(&handoff.released, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, releaser, NULL) != 0) return -1;
  for (long i = 0; i < n; i++) {
    fw_wait_past(&handoff.released, i - HANDOFF);
    fw_operation(&f, handoff.e[i % HANDOFF]);
    atomic_store_explicit(&handoff.made, i + 1, memory_order_release);
  }
  pthread_join(t, NULL);
  return 0;
}

/* The framework loop in ProcessGroupNCCL's shape: this thread makes each operation's event, runs
 * the all-reduce and records the event after it; a watchdog thread queries each event once
 * (Work::isCompleted), in order; this thread destroys an operation's event WATCH operations later,
 * once the watchdog has queried it (PyTorch releases on the launching thread: docs/performance.md).
 * What the agent costs the launching thread when another core reads and writes the slots it made.
 * n operations; both threads done at return. */
#define WATCH 16
static struct {
  cudaEvent_t e[WATCH];
  _Atomic long made, queried;
  long n;
  int real;
} watch;

static void *watchdog(void *p) {
  (void)p;
  /* WATCHDOG_CPU=N: this thread on CPU N alone (the launching thread's placement is the caller's,
   * taskset): where the lines both threads write travel between cores, or stay in one core's caches */
  const char *cpu = getenv("WATCHDOG_CPU");
  if (cpu != NULL && *cpu != '\0') {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(cpu), &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) fprintf(stderr, "WATCHDOG_CPU=%s: not set\n", cpu);
  }
  int (*query)(cudaEvent_t) = fw_calls_of(watch.real).query;
  for (long i = 0; i < watch.n; i++) {
    fw_wait_past(&watch.made, i);
    query(watch.e[i % WATCH]);
    atomic_store_explicit(&watch.queried, i + 1, memory_order_release);
  }
  return NULL;
}

EXPORT int hot_framework_watchdog(int real, jlong n) {
  fw_calls f = fw_calls_of(real);
  cudaStream_t st = fw_legacy ? NULL : stream;
  watch.n = n;
  watch.real = real;
  atomic_store(&watch.made, 0);
  atomic_store(&watch.queried, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, watchdog, NULL) != 0) return -1;
  for (long i = 0; i < n + WATCH; i++) {
    if (i >= WATCH) {
      /* the event of WATCH operations ago, once the watchdog has seen it */
      fw_wait_past(&watch.queried, i - WATCH);
      f.destroy(watch.e[i % WATCH]);
    }
    if (i >= n) continue;
    fw_evict();
    f.create(&watch.e[i % WATCH], 2);
    f.allreduce(buffer, buffer, 256, 7, 0, comm, st);
    f.record(watch.e[i % WATCH], st);
    atomic_store_explicit(&watch.made, i + 1, memory_order_release);
  }
  pthread_join(t, NULL);
  return 0;
}

/* The framework loop: the elapsed ns of `iters` operations, the stream synchronized every 256
 * outside the timed part. */
JNIEXPORT jlong JNICALL Java_dev_ncclguard_bench_NativeHotCalls_framework(JNIEnv *env, jclass c, jboolean real,
                                                                        jlong iters) {
  (void)env, (void)c;
  int64_t total = 0;
  for (jlong done = 0; done < iters;) {
    jlong n = iters - done < 256 ? iters - done : 256;
    int64_t t0 = now_ns();
    hot_framework(real, n);
    total += now_ns() - t0;
    real_sync(fw_legacy ? NULL : stream);
    done += n;
  }
  return total;
}

/* Where this library's references went: the object defining what its PLT reached. */
JNIEXPORT jstring JNICALL Java_dev_ncclguard_bench_NativeHotCalls_boundTo(JNIEnv *env, jclass c) {
  (void)c;
  /* the address the PLT resolves to, as this library sees it */
  void *p = (void *)&cudaEventQuery;
  Dl_info info;
  return dladdr(p, &info) != 0 && info.dli_fname != NULL ? (*env)->NewStringUTF(env, info.dli_fname) : NULL;
}
