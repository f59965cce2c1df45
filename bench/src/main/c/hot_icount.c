/* Instructions per hot call, counted by callgrind: what the agent's wrappers execute, which no
 * host's state changes (a VM's slow minute moves nanoseconds, not instructions). Loads
 * libncclguard.so in its test mode (no JVM; C callbacks in place of Java's), promotes it, then
 * loads NativeHotCalls' JNI library (native_hotcalls.c, linked by soname against libcudart.so.13
 * and libnccl.so.2: bench's stand-ins here, which return at once) and runs its loops without a
 * JVM, each between callgrind's client requests: one dump per loop, wrapper and real function.
 * scripts/icount.sh builds and runs it and prints instructions per call.
 * With --forward and the counting build (make prof), it times the framework loop instead: tracked,
 * with every wrapper forwarding (ncclguard_prof_forward), and calling the stand-ins directly
 * (scripts/forward-check.sh): what the in-process rounds of scripts/gpu/85-torch.sh leave out.
 * With --handoff it times the framework loop with its releases on a second thread, tracked and
 * real, with --watchdog the loop in ProcessGroupNCCL's shape (queries on a second thread); with --lines it runs the ring loop with EVICT bytes written between operations, for
 * cachegrind (scripts/lines.sh). LEGACY=1 puts the --watchdog and --lines loops on the legacy
 * default stream. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include "ncclguard_test.h"

/* hot_calls' loop numbers (native_hotcalls.c) and their names */
static const struct {
  int fn;
  const char *name;
} loops[] = {{0, "cudaEventQuery"}, {1, "cudaEventRecord"},  {2, "ncclAllReduce"},
             {3, "cudaGetDevice"},  {12, "cudaStreamQuery"}, {13, "cudaStreamWaitEvent"},
             {14, "pointer-dispatch"}};

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
/* one Java stack for every creation (a JNI method's frame first, as AsyncGetCallTrace gives it): the
 * framework loop's creations take the path of a stack Java confirmed (no upcall), as under a JVM */
static int c_java_stack(int64_t *frames, int max) {
  static const int64_t stack[] = {0x1000, -3, 0x2000, 12, 0x3000, 40};
  int n = max < 3 ? max : 3;
  for (int i = 0; i < 2 * n; i++) frames[i] = stack[i];
  return n;
}
static const ncclguard_hooks hooks = {c_enter, c_exit, c_hot_enter, c_hot_exit, c_seen, NULL, NULL, c_java_stack, NULL};

static void *must(void *p, const char *what) {
  if (p == NULL) {
    fprintf(stderr, "hot_icount: %s: %s\n", what, dlerror());
    exit(2);
  }
  return p;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* --forward: 5 rounds of the framework loop tracked, forwarded and real, ns per operation */
static int forward_rounds(void *agent, void (*framework)(int, long), long n) {
  void (*forward)(int) = dlsym(agent, "ncclguard_prof_forward");
  if (forward == NULL) {
    fprintf(stderr, "hot_icount: --forward needs the counting build (make prof): no ncclguard_prof_forward\n");
    return 2;
  }
  static const char *names[] = {"tracked", "forwarded", "real"};
  for (int round = 0; round < 5; round++) {
    for (int mode = 0; mode < 3; mode++) {
      forward(mode == 1);
      framework(mode == 2, n);
      double t0 = now_ns();
      framework(mode == 2, n);
      printf("round %d %-9s %.1f ns an operation\n", round + 1, names[mode], (now_ns() - t0) / (double)n);
    }
  }
  forward(0);
  return 0;
}

static double thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* --handoff: 5 rounds of the framework loop with its releases on a second thread
 * (hot_framework_handoff), tracked and real: ns an operation, wall and this thread's CPU;
 * --watchdog: the same of the loop in ProcessGroupNCCL's shape (hot_framework_watchdog) */
static int handoff_rounds(int (*handoff)(int, long), long n) {
  /* ROUNDS pairs (5 unless set): short rounds, many, where the host drifts between them */
  int rounds = getenv("ROUNDS") != NULL ? atoi(getenv("ROUNDS")) : 5;
  for (int round = 0; round < rounds; round++) {
    for (int real = 0; real < 2; real++) {
      if (handoff(real, n) != 0) return 2;
      double t0 = now_ns(), c0 = thread_cpu_ns();
      handoff(real, n);
      printf("round %d %-7s %.1f ns an operation (this thread's CPU %.1f)\n", round + 1, real ? "real" : "tracked",
             (now_ns() - t0) / (double)n, (thread_cpu_ns() - c0) / (double)n);
    }
  }
  return 0;
}

/* EVICT bytes (else dflt) written between the loops' operations (hot_framework_evict); 0 when the
 * buffer could not be had, with the line that says so */
static int set_evict(void *bench, size_t dflt) {
  int (*evict)(size_t) = must(dlsym(bench, "hot_framework_evict"), "hot_framework_evict");
  const char *bytes = getenv("EVICT");
  if (!evict(bytes != NULL ? strtoull(bytes, NULL, 10) : dflt)) {
    fprintf(stderr, "hot_icount: EVICT: no memory for it\n");
    return 0;
  }
  /* EVICT_CODE bytes of code run between operations too (x86-64) */
  int (*code)(size_t) = must(dlsym(bench, "hot_framework_evict_code"), "hot_framework_evict_code");
  const char *code_bytes = getenv("EVICT_CODE");
  if (code(code_bytes != NULL ? strtoull(code_bytes, NULL, 10) : 0)) return 1;
  fprintf(stderr, "hot_icount: EVICT_CODE: no executable memory for it (or not x86-64)\n");
  return 0;
}

/* hot_icount <libncclguard.so> <libncclguard-bench-native.so> [calls per loop] [--forward | --handoff | --watchdog | --lines] */
int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: hot_icount <libncclguard.so> <libncclguard-bench-native.so> [calls]\n");
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
  void *bench = must(dlopen(argv[2], RTLD_NOW), argv[2]);
  const char *(*set_up)(void) = must(dlsym(bench, "hot_set_up"), "hot_set_up");
  void (*calls)(int, int, long) = must(dlsym(bench, "hot_calls"), "hot_calls");
  void (*framework)(int, long) = must(dlsym(bench, "hot_framework"), "hot_framework");
  const char *failed = set_up();
  if (failed != NULL) {
    fprintf(stderr, "hot_icount: %s\n", failed);
    return 4;
  }
  /* LEGACY=1: the loops of --watchdog and --lines on the legacy default stream (where PyTorch runs
   * its synchronous collectives) instead of the stream made at set-up */
  if (getenv("LEGACY") != NULL && strcmp(getenv("LEGACY"), "1") == 0)
    ((void (*)(int))must(dlsym(bench, "hot_framework_legacy"), "hot_framework_legacy"))(1);
  if (argc > 4 && strcmp(argv[4], "--forward") == 0) return forward_rounds(agent, framework, n);
  if (argc > 4 && strcmp(argv[4], "--lines") == 0) {
    /* the ring loop, with EVICT bytes (2 MiB unless set) written between operations: n operations
     * after 200 to settle, for cachegrind's count of the lines they miss (scripts/lines.sh) */
    if (!set_evict(bench, 2u << 20)) return 2;
    /* LOOP=watchdog: the loop in ProcessGroupNCCL's shape (hot_framework_watchdog) instead */
    if (getenv("LOOP") != NULL && strcmp(getenv("LOOP"), "watchdog") == 0) {
      int (*watchdog)(int, long) = must(dlsym(bench, "hot_framework_watchdog"), "hot_framework_watchdog");
      return watchdog(0, 200) != 0 || watchdog(0, n) != 0 ? 2 : 0;
    }
    void (*ring)(int, long) = must(dlsym(bench, "hot_framework_ring"), "hot_framework_ring");
    ring(0, 200);
    ring(0, n);
    return 0;
  }
  if (argc > 4 && strcmp(argv[4], "--handoff") == 0)
    return handoff_rounds(must(dlsym(bench, "hot_framework_handoff"), "hot_framework_handoff"), n);
  if (argc > 4 && strcmp(argv[4], "--watchdog") == 0) {
    /* EVICT bytes (none unless set) written between operations: the interpreter's work */
    if (!set_evict(bench, 0)) return 2;
    return handoff_rounds(must(dlsym(bench, "hot_framework_watchdog"), "hot_framework_watchdog"), n);
  }
  char name[64];
  for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++) {
    for (int real = 0; real < 2; real++) {
      calls(loops[i].fn, real, n); /* warm: callers, hints and lazy bindings settle before counting */
      CALLGRIND_ZERO_STATS;
      calls(loops[i].fn, real, n);
      snprintf(name, sizeof name, "%s/%s/%ld", loops[i].name, real ? "real" : "wrapper", n);
      CALLGRIND_DUMP_STATS_AT(name);
    }
  }
  /* the framework operation (native_hotcalls.c's framework_op): 2 creations, 2 records, an
   * all-reduce, a query, 2 releases; on the stream made at set-up, then on the legacy default
   * stream (PyTorch's synchronous collectives) */
  void (*legacy)(int) = must(dlsym(bench, "hot_framework_legacy"), "hot_framework_legacy");
  /* and as ProcessGroupNCCL keeps its work: each operation's events live for 16 operations
   * (hot_framework_ring), so the call sites' hints hold other events */
  void (*ring)(int, long) = must(dlsym(bench, "hot_framework_ring"), "hot_framework_ring");
  static const char *rows[] = {"framework", "framework-default", "framework-ring"};
  for (int row = 0; row < 3; row++) {
    legacy(row == 1);
    void (*loop)(int, long) = row == 2 ? ring : framework;
    for (int real = 0; real < 2; real++) {
      loop(real, n);
      CALLGRIND_ZERO_STATS;
      loop(real, n);
      snprintf(name, sizeof name, "%s/%s/%ld", rows[row], real ? "real" : "wrapper", n);
      CALLGRIND_DUMP_STATS_AT(name);
    }
  }
  legacy(0);
  return 0;
}
