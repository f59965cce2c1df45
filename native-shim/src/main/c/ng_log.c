/* Logging, clocks and plain threads: the utilities every file of the library may use (ng_log.h),
 * in a file of their own so that none includes the JNI file for them. And the last error, a line
 * that Java's lastError() and the test mode read. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "ng_log.h"

static char last_error[512];
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;

void ng_log(const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof(line), "ncclguard: native: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t w = write(2, line, len);
  (void)w;
}

void ng_log_once(atomic_int *flag, const char *fmt, ...) {
  if (atomic_exchange(flag, 1) != 0) return;
  char line[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  ng_log("%s", line);
}

int64_t ng_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#if defined(__x86_64__) || defined(__aarch64__)
/* The CPU's counter: the TSC (constant rate on every x86-64 this runs on: constant_tsc), aarch64's
 * virtual count (a constant rate by definition). A thread whose TSC reads fault (prctl PR_SET_TSC,
 * PR_TSC_SIGSEGV) faults in the vDSO's clock_gettime as well (checked: a test thread died there),
 * so reading the counter adds no failure the clock has not. */
static inline uint64_t ticks(void) {
#if defined(__x86_64__)
  return __rdtsc();
#else
  uint64_t v;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#endif
}

/* The counter's rate, from the first anchor of the process and the latest one 50 ms or more after
 * it (0: not known yet), and ns per count in 32.32 fixed point; every thread's anchor: a reading of
 * CLOCK_REALTIME and the count at it. */
static _Atomic uint64_t ticks_per_ms NG_READ_MOSTLY, ns_per_tick NG_READ_MOSTLY;
static _Atomic uint64_t first_ticks;
static _Atomic int64_t first_ns;
static __thread uint64_t at_ticks;
static __thread int64_t at_ns;

static __attribute__((noinline)) int64_t anchor(uint64_t before) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t t = before + (ticks() - before) / 2;
  int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  at_ticks = t;
  at_ns = ns;
  uint64_t zero = 0;
  if (atomic_load_explicit(&first_ticks, memory_order_acquire) == 0) {
    atomic_store_explicit(&first_ns, ns, memory_order_relaxed);
    atomic_compare_exchange_strong_explicit(&first_ticks, &zero, t, memory_order_release, memory_order_relaxed);
  } else {
    uint64_t t0 = atomic_load_explicit(&first_ticks, memory_order_acquire);
    int64_t span = ns - atomic_load_explicit(&first_ns, memory_order_relaxed);
    if (span >= 50000000 && t > t0) {
      double per_ms = (double)(t - t0) * 1e6 / (double)span;
      /* a counter slower than 1 MHz, or one faster than 4 GHz per ns: the clock every time */
      /* stored when it moved by more than 1/4096 (a quarter of a microsecond over an anchor's
       * millisecond): every wrapped call reads the line these words live in (NG_READ_MOSTLY) */
      uint64_t old = atomic_load_explicit(&ticks_per_ms, memory_order_relaxed);
      uint64_t now = (uint64_t)per_ms;
      if (per_ms >= 1000 && per_ms < 4e9 && (now > old ? now - old : old - now) > old / 4096) {
        atomic_store_explicit(&ns_per_tick, (uint64_t)(1e6 / per_ms * 4294967296.0), memory_order_relaxed);
        atomic_store_explicit(&ticks_per_ms, now, memory_order_release);
      }
    }
  }
  return ns / 1000000;
}

int64_t ng_birth_ms(void) {
  uint64_t t = ticks();
  uint64_t per_ms = atomic_load_explicit(&ticks_per_ms, memory_order_acquire);
  uint64_t d = t - at_ticks;
  /* within a millisecond of counts after this thread's anchor (a counter that went back wraps:
   * re-anchored); d < 2^32 and ns_per_tick < 2^42 (1 MHz at least): the product fits */
  if (__builtin_expect((d < per_ms) & (at_ns != 0), 1))
    return (at_ns + (int64_t)((d * atomic_load_explicit(&ns_per_tick, memory_order_relaxed)) >> 32)) / 1000000;
  return anchor(t);
}
#else
int64_t ng_birth_ms(void) { return ng_now_ms(); }
#endif

int64_t ng_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ng_start_plain_thread(void *(*fn)(void *), void *arg) {
  pthread_attr_t attr;
  pthread_t t;
  if (pthread_attr_init(&attr) != 0) return -1;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* no signal of the process is ever delivered to it: it blocks them all from its start */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&t, &attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return rc;
}

void ng_set_error(const char *fmt, ...) {
  pthread_mutex_lock(&error_lock);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&error_lock);
}

const char *ng_last_error(void) { return last_error; }

int ng_last_error_copy(char *out, size_t n) {
  pthread_mutex_lock(&error_lock);
  int any = last_error[0] != '\0';
  if (any) snprintf(out, n, "%s", last_error);
  pthread_mutex_unlock(&error_lock);
  return any;
}
