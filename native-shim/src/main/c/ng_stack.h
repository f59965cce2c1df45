/* The Java stacks of creations made from native code on Java threads, taken without entering the
 * JVM and stored once in a depot (ng_stack.c). */
#ifndef NG_STACK_H
#define NG_STACK_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* One Java frame as AsyncGetCallTrace gives it: its bytecode index (-3 for a native method) and
 * its jmethodID (NULL: none made yet). ASGCT_CallFrame's layout. */
typedef struct {
  int32_t bci;
  void *method;
} ng_frame;

/* What a creation learned of its Java stack: its depot id (0: none) and the thread's id (0: none). */
typedef struct {
  uint32_t id;
  uint32_t thread;
  int repeat; /* the stack and the thread were confirmed by Java before: no upcall needed */
  void *entry;
  uint32_t epoch; /* the wrapped natives' epoch the stack was taken in */
} ng_stack_take;

/* The calling thread's Java stack, looked up (or stored) in the depot. Fills *t; returns t->repeat. */
int ng_stack_now(ng_stack_take *t);
/* Java held the handle created with t's stack: creations at that stack, and at any stack under its first
 * frame's method, on this thread need no upcall from now on. */
void ng_stack_confirm(const ng_stack_take *t);
/* This thread's id as ng_stack_now gives it (one at its first call). */
uint32_t ng_stack_thread(void);
/* The frames of stack id into out (at most max); how many the stack has, -1 for an unknown id. */
int ng_stack_frames(uint32_t id, ng_frame *out, int max);
/* Java's wrapped natives changed: every stack must be confirmed again. */
void ng_stack_invalidate(void);
/* The jmethodID every mounted virtual thread's frames run above (Continuation.enter), or NULL:
 * a walk that meets it keeps the frames above it, and its creation takes the upcall with thread 0
 * (the frames below are the carrier's, and so is this thread's id). */
void ng_stack_set_vthread_entry(void *method);
/* The bound on distinct stacks (0: the depot is off, every creation takes an upcall). */
void ng_stack_set_max(int64_t max);
/* Stacks stored, and their bytes. */
int64_t ng_stack_count(void);
int64_t ng_stack_bytes(void);

#pragma GCC visibility pop

#endif
