/* What each wrapped call does to the C slots (ng_enter / ng_exit), the natives' view of them, and
 * what C keeps per host thread (ng_track.c). */
#ifndef NG_TRACK_H
#define NG_TRACK_H

#include <pthread.h>
#include <stdint.h>

#include "ng.h"
#include "ng_caller.h"

#pragma GCC visibility push(hidden)

/* A wrapped call in progress, from its enter to its exit. */
typedef struct ng_call {
  int fn;
  int mode; /* NG_MODE_* */
  /* the function's effect and catalog positions, constants of its wrapper (ng_wrap.c): no read of
   * the catalog's tables, whose lines a framework's operation would find evicted */
  int effect;
  ng_positions pos;
  ng_caller *caller;
  uint64_t a[NG_MAX_ARGS];
  int64_t token;  /* C's token: event record number, stream count, op sequence */
  int64_t jtoken; /* Java's token */
  void *slot;     /* the C slot found at enter */
  uint32_t inc;   /* its incarnation */
  uint64_t key;   /* the stream key or handle looked up */
  int device;
  int prof_first, prof_count;
  /* a lazy event released before its real call: what a failed release puts back (ng_track.c) */
  struct {
    uint32_t stack, thread;
    int64_t created_ms;
    uint64_t site;
    int32_t fn;
    int device;
    int64_t seq, completed;
    uint64_t where, stream_handle;
  } kept;
} ng_call;

/* false: the handle was claimed by the exit-time cleanup; the wrapper parks the thread. */
/* pos_lo, pos_hi: the function's ng_positions, its bytes in order (ng_wrap.c's NG_POS_LO/HI) */
int ng_enter(ng_call *k, ng_caller *c, int fn, int effect, uint64_t pos_lo, uint64_t pos_hi);
void ng_exit(ng_call *k, int status);
void ng_park(int fn) __attribute__((noreturn));

/* Slot ids Java sees: event slots 0.., stream slots with bit 30 set. */
#define NG_STREAM_SLOT_BIT (1 << 30)
/* At load, before any call: the slots (ng_slots_init), the per-thread state. */
void ng_track_init(void);
int64_t ng_api_slot_token(int fn, int slot);
int64_t ng_api_slot_exit(int fn, int slot, uint64_t other, int status, int64_t token);
int64_t ng_api_device_sync_enter(int device);
void ng_api_device_sync_exit(int device, int64_t token);
void ng_api_events_pending(const int32_t *slots, int n, int64_t *out);
void ng_api_streams_pending(const int32_t *slots, int n, int64_t *out);
void ng_api_release_slot(int slot);
/* A Java record of a C event on a Java stream: the event's state is Java's from now on. */
void ng_api_event_to_java(uint64_t handle);
int ng_api_call(int64_t caller, int fn, int64_t a0, int64_t a1, int64_t a2, int64_t a3);
/* ng_api_call's answer for a runtime function that neither a CUDA runtime nor the driver serves
 * (Interposer.NO_CUDA on the Java side) */
#define NG_NO_CUDA (-2)
void ng_track_stats(int64_t *out, int n);
void ng_track_debug_line(void);
uint64_t ng_special_key(uint64_t stream, uint64_t comm, int enqueue);
/* A record's special stream key, its event's slot's device read (-1: none). */
uint64_t ng_special_record_key(uint64_t stream, int event_device);
/* Events made with no upcall (NG_REF_LAZY) taken over by Java: 8 longs each (ncclguard_test.h's
 * NCCLGUARD_ADOPT_LONGS); all of them (at most n), or the one of a handle. */
int ng_api_adopt_events(int64_t *out, int n);
int ng_api_adopt_event(int64_t handle, int64_t *out);
/* How many such events are live and not adopted now. */
int64_t ng_api_lazy_live(void);

#pragma GCC visibility pop

/* ---------------------------------------------------------------- per host thread */
typedef struct {
  int32_t slot;
  uint32_t inc;
} ng_grouped;

/* What the CUDA runtime and NCCL keep per host thread, as far as C needs it. */
typedef struct {
  int group_depth;
  int ngrouped, cap;
  ng_grouped *grouped;
  int told_device; /* the device last passed to Java for cudaSetDevice, valid if told */
  int told;
  uint32_t id; /* for cudaStreamPerThread's key */
} ng_thread;

extern __thread ng_thread ng_self;
extern pthread_key_t ng_thread_key;

#endif
