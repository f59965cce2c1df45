/* The test mode of libncclguard.so: C programs (native-shim/src/test/c) load the library
 * without a JVM, register C callbacks in place of the Java upcalls, and reach what the JNI natives
 * do through this table. A JVM never calls ncclguard_test; it changes nothing until called. */
#ifndef NCCLGUARD_TEST_H
#define NCCLGUARD_TEST_H

#include <stdint.h>

/* What Interposer's upcalls receive, as C callbacks (see docs/design.md, the C <-> Java contract). */
typedef struct {
  int64_t (*enter)(int fn, const int64_t *slots, int n, int64_t caller);
  int (*exit)(int fn, const int64_t *slots, int n, int status, int64_t token, int64_t caller, int slot);
  int64_t (*hot_enter)(int fn, int64_t handle, int64_t stream, int64_t caller);
  void (*hot_exit)(int fn, int64_t handle, int64_t stream, int status, int64_t token, int64_t caller);
  int (*seen)(int fn, int64_t handle, int device, int slot, int64_t caller);
  void (*plugin_init)(int64_t record);
  /* whether the calling thread counts as a Java thread; NULL: every thread does */
  int (*java_thread)(void);
  /* the calling thread's Java frames in place of AsyncGetCallTrace's, top first: (method, bci)
   * pairs into frames (2 * max longs), a method 0 for one with no jmethodID yet; returns how many,
   * -1 for none. NULL: no Java stacks, every creation calls exit */
  int (*java_stack)(int64_t *frames, int max);
  /* called by a slow path once it holds the caller lock (where: 0 a call site's first sight, 1 a
   * real function's lookup), to hold it there; NULL: not called */
  void (*caller_locked)(int where);
} ncclguard_hooks;

/* What the JNI natives of Interposer do, as C functions. Strings returned are malloc'ed. */
typedef struct {
  int (*promote)(void);
  const char *(*last_error)(void);
  void (*wrapped_natives)(const char *const *names, int n);
  void (*suppress_callers)(const char *const *names, int n);
  int64_t (*slot_token)(int fn, int slot);
  int64_t (*slot_exit)(int fn, int slot, int64_t other, int status, int64_t token);
  int64_t (*device_sync_enter)(int device);
  void (*device_sync_exit)(int device, int64_t token);
  void (*events_pending)(const int32_t *slots, int n, int64_t *out);
  void (*streams_pending)(const int32_t *slots, int n, int64_t *out);
  int (*call)(int64_t caller, int fn, int64_t a0, int64_t a1, int64_t a2, int64_t a3);
  void (*release_slot)(int slot);
  void (*dying)(void);
  char *(*caller_library)(int64_t caller);
  char *(*caller_symbol)(int64_t caller);
  char *(*caller_backtrace)(int64_t caller);
  int (*user_plugin)(const char *name);
  int (*plugin_inits_since)(int64_t seq, int64_t *out, int n);
  int (*plugin_comms)(int64_t *out, int n);
  void (*plugin_claim)(int64_t record);
  int (*in_flight)(int64_t record, int64_t *out, int n);
  void (*stats)(int64_t *out, int n);
  int (*function_id)(const char *name);
  /* events created with a stack Java confirmed, no upcall made: taken over by Java (adopted),
   * NCCLGUARD_ADOPT_LONGS longs each; returns how many were written (at most n) */
  int (*adopt_events)(int64_t *out, int n);
  /* the one such event of that handle: 1 when adopted into out */
  int (*adopt_event)(int64_t handle, int64_t *out);
  /* the depot's bound on distinct stacks (0: off) */
  void (*stack_depot)(int64_t max);
  /* Interposer.patchImports: the import slots of loaded objects from now on; objects patched now */
  int (*patch_imports)(void);
  /* objects patched, slots written, slots left (not writable) */
  void (*patch_stats)(long out[3]);
  /* takes (1) or lets go of (0) every lock of the profiler plugin, as a thread a fork catches */
  void (*prof_hold_locks)(int hold);
  /* the method every virtual thread's frames run above (JNI_OnLoad's Continuation.enter) */
  void (*stack_vthread_entry)(void *method);
} ncclguard_api;

/* Enters the test mode with these callbacks (NULL: no upcalls at all) and returns the natives. */
const ncclguard_api *ncclguard_test(const ncclguard_hooks *hooks);

/* Slot ids: event slots count from 0, stream slots have this bit. */
#define NCCLGUARD_STREAM_SLOT_BIT (1 << 30)
/* What hot_enter answers for a handle Java does not follow; what enter answers for a release of
 * a handle the exit-time cleanup claimed. */
#define NCCLGUARD_NOT_JAVAS (INT64_MIN + 1)
#define NCCLGUARD_CLAIMED INT64_MIN
/* plugin_inits_since / plugin_comms: longs per record: id, commId, rank, nranks, nNodes,
 * initSeq, initMillis, flags (1 finalized, 2 claimed, 4 inited on a Java thread), thread id,
 * activation mask NCCL was given */
#define NCCLGUARD_PLUGIN_RECORD_LONGS 10
/* in_flight: collectives, p2p, oldest's kind (1 coll, 2 p2p, 0 none), its count (elements), its
 * age in ns, ops completed */
#define NCCLGUARD_IN_FLIGHT_LONGS 6
/* adopt_events: slot id, handle, function id, stack id, thread id, created (epoch ms), caller, device */
#define NCCLGUARD_ADOPT_LONGS 8
/* stats: what each of its longs counts (Java's CSlots reads LAZY_CREATED and LAZY_RELEASED by
 * these indexes) */
enum {
  NCCLGUARD_STAT_CALLERS,           /* call sites known */
  NCCLGUARD_STAT_EVENTS_LIVE,       /* live event slots */
  NCCLGUARD_STAT_STREAMS_LIVE,      /* live stream slots */
  NCCLGUARD_STAT_EXCEPTIONS,        /* Java exceptions an upcall cleared */
  NCCLGUARD_STAT_MISSING_REAL,      /* calls of a function no loaded object defines */
  NCCLGUARD_STAT_UPCALLS,           /* upcalls made */
  NCCLGUARD_STAT_OP_SEQ,            /* the op sequence */
  NCCLGUARD_STAT_OWNERS,            /* stream owners */
  NCCLGUARD_STAT_DEPOT_STACKS,      /* distinct creating stacks in the depot */
  NCCLGUARD_STAT_DEPOT_BYTES,       /* the depot's bytes */
  NCCLGUARD_STAT_EVENT_SLOTS_MADE,  /* event slots ever made (the pool's high mark) */
  NCCLGUARD_STAT_STREAM_SLOTS_MADE, /* stream slots ever made */
  NCCLGUARD_STAT_LAZY_CREATED,      /* events created with no upcall */
  NCCLGUARD_STAT_LAZY_RELEASED,     /* of those, destroyed with no upcall */
  NCCLGUARD_STAT_LAZY_ADOPTED,      /* of those, adopted by Java */
  NCCLGUARD_STAT_MEMO_HITS,         /* creations whose Java stack came from their JNI call's memo (no walk) */
  NCCLGUARD_STAT_MEMO_TAKES,        /* memos taken (ng_hotspot.c) */
  NCCLGUARD_STATS
};

#endif
