/* The exit watchdog. Armed by the exit hook when a call into NCCL or CUDA never returned: the JVM
 * then goes on to exit(3), whose handlers (the libraries' own exit work) get `millis`; if they have
 * not ended the process by then, this plain thread (never attached to the JVM) calls
 * _exit(status). Armed once: the flag is set before the values are written and the thread is made
 * after, so the thread reads them after pthread_create's barrier and nothing else ever writes them. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ng_log.h"
#include "ng_watchdog.h"

static atomic_int watchdog_armed;
static long watchdog_millis;
static int watchdog_status;

static void *exit_watchdog(void *p) {
  (void)p;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += watchdog_millis / 1000;
  until.tv_nsec += (watchdog_millis % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
  }
  char line[160];
  int n = snprintf(line, sizeof(line),
                   "ncclguard: the libraries' exit handlers had not finished after %ld ms; _exit(%d)\n",
                   watchdog_millis, watchdog_status);
  if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
    /* nowhere left to say it: the status is what matters */
  }
  _exit(watchdog_status);
  return NULL;
}

int ng_watchdog_arm(int64_t millis, int status) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&watchdog_armed, &expected, 1)) return 1; /* armed already */
  watchdog_millis = millis < 0 ? 0 : millis > 86400000L ? 86400000L : (long)millis;
  watchdog_status = status;
  if (ng_start_plain_thread(exit_watchdog, NULL) == 0) return 1;
  atomic_store(&watchdog_armed, 0);
  return 0;
}
