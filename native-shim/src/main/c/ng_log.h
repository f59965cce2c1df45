/* Logging, clocks and plain threads (ng_log.c): what every file of the library may use. And the
 * last error, a line for Java's lastError(). */
#ifndef NG_LOG_H
#define NG_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* The words a framework's creation reads and almost nothing writes (the gate word, the depot's
 * epoch and bound, the clock's rate, cudaGetDevice's address, the upcalls' readiness), each a
 * static of its own file, share one cache line: the section ng_read_mostly, which ng.c aligns to
 * 64 bytes and check_lines.sh keeps within 64. Spread over a line each, they were as many lines an
 * operation finds evicted by the work between operations. */
#define NG_READ_MOSTLY __attribute__((section("ng_read_mostly")))

/* A line on stderr, prefixed "ncclguard: native: ". */
void ng_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ng_log the first time flag is set. */
void ng_log_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* CLOCK_REALTIME in ms, CLOCK_MONOTONIC in ns */
int64_t ng_now_ms(void);
int64_t ng_now_ns(void);
/* CLOCK_REALTIME in ms for a creation's time, without reading the clock each time: the CPU's
 * counter since this thread's last reading, which is at most a millisecond of counts old
 * (docs/design.md, "Creations at hot-call cost"). */
int64_t ng_birth_ms(void);
/* Starts fn on a detached thread that blocks every signal and is never attached to the JVM; 0 on success. */
int ng_start_plain_thread(void *(*fn)(void *), void *arg);
/* The reason the last promotion, user plugin or setenv failed, for Java's lastError(). */
void ng_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last error ("" if none), as the test mode reads it: unguarded. */
const char *ng_last_error(void);
/* Copies the last error under its lock; 0 if there is none. */
int ng_last_error_copy(char *out, size_t n);

#pragma GCC visibility pop

#endif
