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
