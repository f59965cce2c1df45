/* libncclguard.so: the agent's native part. Shared state of its files:
 *   ng_load.c    JNI_OnLoad, the JNI natives, upcalls into Java, the dying flag, test mode
 *   ng_caller.c  who called (the caller cache) and where the real function is (forwarding)
 *   ng_map.c     the maps from handles to C slots (lock-free reads, locked writes)
 *   ng_track.c   the C slots of events and streams, and what each wrapped call does to them
 *   ng_wrap.c    the wrappers, expanded from the catalog's generated header (ng_catalog.h)
 *   ng_prof.c    NCCL's profiler plugin (ncclProfiler_v4/_v5/_v6)
 *   ng_bt.c      native backtraces of creations on threads with no Java frames
 * Everything not exported through NG_EXPORT is hidden (-fvisibility=hidden). */
#ifndef NG_H
#define NG_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "ng_abi.h"
#include "ng_catalog.h"

/* Everything declared from here on is the library's own: hidden, so that the hot paths reach
 * the shared state directly, not through the GOT. */
#pragma GCC visibility push(hidden)

#define NG_EXPORT __attribute__((visibility("default")))
#define NG_LIKELY(x) __builtin_expect(!!(x), 1)
#define NG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NG_RELAXED memory_order_relaxed
#define NG_ACQUIRE memory_order_acquire
#define NG_RELEASE memory_order_release

enum ng_fn_id {
#define X(id, name, lib, effect, params, args, nargs, slots, callable) NG_FN_##name = id,
  NG_CATALOG(X)
#undef X
};

/* ---------------------------------------------------------------- the catalog as tables */
typedef struct {
  signed char handle, parent, stream, event, rank, nranks, unique_id, device, color, key, count, rank_list, comm, bytes;
} ng_positions;
extern const ng_positions ng_pos[NG_FN_COUNT];
extern const char *const ng_fn_name[NG_FN_COUNT];
extern const unsigned char ng_fn_effect[NG_FN_COUNT];
extern const unsigned char ng_fn_nargs[NG_FN_COUNT];
extern const unsigned char ng_fn_nccl[NG_FN_COUNT];
extern const unsigned char ng_fn_callable[NG_FN_COUNT];

/* ---------------------------------------------------------------- process-wide words */
/* The process's state, in one cache line. Its writers are rare (stream creations and counts past
 * their reservation, native group starts and ends, a change of the lists, dying). A hot path reads
 * threads_in_groups (collectives) and, through ng_gate_words, what state says.
 * state: the generation of suppressions and wrapped natives (bumped when Java changes them:
 * caller decisions are re-made) << 1 | dying (set by JVMTI VMDeath, the Java exit hook's dying(),
 * exit(3) or this library's destructor: from then on wrappers only forward, and nothing calls
 * into the JVM).
 * op_seq: the last op number reserved (streams reserve ranges of it: ng_slots.h); threads_in_groups:
 * threads inside a native ncclGroupStart; rec_whole: see rec_store. */
typedef struct {
  atomic_uint state;
  atomic_int threads_in_groups;
  int rec_whole;
  _Atomic int64_t op_seq;
} __attribute__((aligned(64))) ng_words;
extern ng_words ng_w;
#define NG_DYING 1u
static inline int ng_is_dying(void) { return atomic_load_explicit(&ng_w.state, memory_order_relaxed) & NG_DYING; }
/* Counters for stats(): upcalls that left an exception (cleared), real functions not found. */
extern atomic_long ng_exceptions_cleared, ng_missing_real, ng_upcalls;
void ng_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ng_log_once(atomic_int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t ng_now_ms(void);
int64_t ng_now_ns(void);
/* Starts fn on a detached thread that blocks every signal and is never attached to the JVM; 0 on success. */
int ng_start_plain_thread(void *(*fn)(void *), void *arg);
/* The file this library was loaded from (dladdr of a static function), and its load base. */
extern const char *ng_self_path;
extern uintptr_t ng_self_base;

/* ---------------------------------------------------------------- callers (ng_caller.c) */
typedef struct ng_object ng_object;
typedef struct ng_caller ng_caller;
typedef struct ng_site ng_site;

/* A loaded object that called a wrapper, and the real functions its calls forward to. */
struct ng_object {
  uintptr_t base;
  char *path;
  const char *name; /* basename of path */
  int nvidia;       /* NCCL's, CUDA's or another NVIDIA library's own calls: never tracked */
  int own_defs;     /* may define the functions itself (NCCL linked in statically) */
  _Atomic(void *) real[NG_FN_COUNT];
  ng_object *next;
};

/* Where a creation came from: the caller, and on threads with no Java frames a backtrace.
 * Never freed; the id Java gets (long caller) is its address. */
struct ng_site {
  ng_caller *caller;
  int nframes;
  uint64_t hash;
  ng_site *next;
  void *frames[16];
};

/* One return address that called a wrapper. What a hot call reads is in its first cache line. */
struct ng_caller {
  _Atomic uint64_t gate;     /* see ng_gate_word; 0 until the first call decided */
  _Atomic(void *) real;      /* the real definition of the function this call site calls */
  /* the slots this call site used first: checked against their own key, replaced once ended */
  _Atomic(void *) hint[2];
  _Atomic uint32_t decision; /* generation << 1 | track */
  _Atomic int fn;            /* the function this call site calls, once known (-1: several) */
  ng_object *obj;
  uintptr_t ret;
  char *sym;            /* the exported symbol the return address lies in, or NULL */
  ng_site site;         /* the plain site: caller only, no frames */
  ng_caller *next;      /* the overflow chain */
} __attribute__((aligned(64)));

#define NG_CALLERS_BITS 14
#define NG_CALLERS (1u << NG_CALLERS_BITS)
typedef struct {
  _Atomic uintptr_t ret;
  _Atomic(ng_caller *) caller;
} ng_caller_slot;
extern ng_caller_slot ng_callers[NG_CALLERS];

uint32_t ng_redecide(ng_caller *c);
void *ng_resolve(ng_object *o, int fn);
/* The object that stands for "no particular caller": libnccl.so.2 / libcudart.so.13, RTLD_NEXT. */
extern ng_object ng_default_object;
void *ng_real_default(int fn);
/* The real cudaGetDevice (not a catalog function), or NULL. */
int ng_current_device(void);
int ng_set_suppressed(const char *const *names, int n);
int ng_set_wrapped(const char *const *names, int n);
int ng_callers_known(void);

/* Fibonacci hashing of the address's low 32 bits, where call sites differ (a 32-bit multiply by an
 * immediate: short code on the hot path); sites 4 GiB apart probe on (ng_caller_find). */
static inline uint32_t ng_hash_addr(uintptr_t r) { return ((uint32_t)r * 0x9E3779B1u) >> (32 - NG_CALLERS_BITS); }

/* The caller entry of a return address: two loads when it sits in its hashed slot, as nearly all
 * do (a slot's caller is published before its return address, and never changes); the other
 * probes and the first sight are out of line. */
ng_caller *ng_caller_find(uintptr_t ret);
static inline ng_caller *ng_caller_of(void *ret) {
  uintptr_t r = (uintptr_t)ret;
  ng_caller_slot *s = &ng_callers[ng_hash_addr(r)];
  if (NG_LIKELY(atomic_load_explicit(&s->ret, NG_ACQUIRE) == r)) return atomic_load_explicit(&s->caller, NG_ACQUIRE);
  return ng_caller_find(r);
}

/* Whether the call is the application's and is to be tracked: its caller's decision, made under
 * the current generation, and the JVM not dying. */
static inline int ng_tracks(ng_caller *c) {
  uint32_t d = atomic_load_explicit(&c->decision, NG_RELAXED);
  uint32_t s = atomic_load_explicit(&ng_w.state, NG_RELAXED);
  if (NG_LIKELY(((d ^ s) >> 1) == 0)) return (d & ~s) & 1;
  if (s & NG_DYING) return 0;
  return ng_redecide(c) & 1;
}

void *ng_real_slow(ng_caller *c, int fn);

/* A wrapper's first test, one compare for what ng_real and ng_tracks tell: a caller's gate is
 * (the process state it was decided under) << 9 | fn << 1 | (1 if not tracked), set once the call
 * site is known to call fn alone; so gate ^ ng_gate_word(fn) is 0 for a tracked call, 1 for an
 * untracked one (forwarded at once, to c->real), anything else when the site calls several
 * functions, the suppressions changed or the JVM is dying (its bit lands on bit 9): ng_gate_slow.
 * The words of the current state are kept per function (one load, no arithmetic, on the hot
 * path), made again by ng_gate_refresh after each change of the state. */
extern _Atomic uint64_t ng_gate_words[NG_FN_COUNT];
static inline uint64_t ng_gate_word(int fn) { return atomic_load_explicit(&ng_gate_words[fn], NG_RELAXED); }
void ng_gate_refresh(void);
typedef struct {
  void *real; /* NULL: no real function (ng_missing) */
  uint64_t track;
} ng_gate_result;
ng_gate_result ng_gate_slow(ng_caller *c, int fn);

/* The real function: a call site calls one function, whose definition its entry keeps. */
static inline void *ng_real(ng_caller *c, int fn) {
  if (NG_LIKELY(atomic_load_explicit(&c->fn, NG_RELAXED) == fn)) {
    void *p = atomic_load_explicit(&c->real, NG_ACQUIRE);
    if (NG_LIKELY(p != NULL)) return p;
  }
  return ng_real_slow(c, fn);
}

/* What a wrapper returns when no real function exists: logged once per function. */
int ng_missing(int fn);

/* ---------------------------------------------------------------- maps (ng_map.c) */
typedef struct ng_map ng_map;
struct ng_map_table;
struct ng_map {
  _Atomic(struct ng_map_table *) table;
  uint32_t used; /* guarded by the writers' lock */
};
void ng_map_init(ng_map *m, uint32_t capacity);
typedef struct {
  _Atomic uint64_t key;
  _Atomic uint64_t value;
} ng_map_entry;

struct ng_map_table {
  uint32_t mask;
  ng_map_entry e[];
};

static inline uint32_t ng_map_slot(uint64_t key, uint32_t mask) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (uint32_t)key & mask;
}

/* Lock-free: the value of key, or 0. Under concurrent writes a lookup may miss or see another
 * key's value; callers validate what they found and retry a miss with ng_map_get_locked. */
static inline uint64_t ng_map_get(ng_map *m, uint64_t key) {
  struct ng_map_table *t = atomic_load_explicit(&m->table, NG_ACQUIRE);
  uint32_t i = ng_map_slot(key, t->mask);
  for (uint32_t probes = 0; probes <= t->mask; probes++) {
    uint64_t k = atomic_load_explicit(&t->e[i].key, NG_ACQUIRE);
    if (k == key) return atomic_load_explicit(&t->e[i].value, NG_ACQUIRE);
    if (k == 0) return 0;
    i = (i + 1) & t->mask;
  }
  return 0;
}
/* Writers hold ng_map_lock. */
uint64_t ng_map_get_locked(ng_map *m, uint64_t key);
void ng_map_put(ng_map *m, uint64_t key, uint64_t value);
void ng_map_remove(ng_map *m, uint64_t key);
void ng_map_lock(void);
void ng_map_unlock(void);

/* ---------------------------------------------------------------- tracking (ng_track.c) */
/* A wrapped call in progress, from its enter to its exit. */
typedef struct ng_call {
  int fn;
  int mode; /* NG_MODE_* */
  ng_caller *caller;
  uint64_t a[NG_MAX_ARGS];
  int64_t token;  /* C's token: event record number, stream count, op sequence */
  int64_t jtoken; /* Java's token */
  void *slot;     /* the C slot found at enter */
  uint32_t inc;   /* its incarnation */
  uint64_t key;   /* the stream key or handle looked up */
  int device;
  int prof_first, prof_count;
} ng_call;

/* false: the handle was claimed by the exit-time cleanup; the wrapper parks the thread. */
int ng_enter(ng_call *k, ng_caller *c, int fn);
void ng_exit(ng_call *k, int status);
void ng_park(int fn) __attribute__((noreturn));

/* Slot ids Java sees: event slots 0.., stream slots with bit 30 set. */
#define NG_STREAM_SLOT_BIT (1 << 30)
void ng_track_init(void);
/* Lets streams get owners (see stream_count), once membarrier is registered on a thread of its own. */
void ng_owners_start(void);
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
void ng_track_stats(int64_t *out, int n);

/* ---------------------------------------------------------------- upcalls (ng_load.c) */
/* What hotEnter answers when Java follows neither handle. */
#define NG_NOT_JAVAS (INT64_MIN + 1)
/* What enter answers for a release of a handle the exit-time cleanup claimed. */
#define NG_CLAIMED (INT64_MIN)
/* Whether upcalls can be made from this thread now (a JVM or test hooks, not dying). */
int ng_up_ready(void);
/* Whether this thread had Java frames before it called (a Java thread, not one we attached). */
int ng_up_java_thread(void);
int64_t ng_up_enter(int fn, const uint64_t *slots, int n, ng_site *site, int *ok);
int ng_up_exit(int fn, const uint64_t *slots, int n, int status, int64_t token, ng_site *site, int slot);
int64_t ng_up_hot_enter(int fn, uint64_t handle, uint64_t stream, ng_site *site, int *ok);
void ng_up_hot_exit(int fn, uint64_t handle, uint64_t stream, int status, int64_t token, ng_site *site);
int ng_up_seen(int fn, uint64_t handle, int device, int slot, ng_site *site);
void ng_up_plugin_init(int64_t record);

/* ---------------------------------------------------------------- backtraces (ng_bt.c) */
/* The site of a creation: a backtrace on threads with no Java frames, else the caller's plain site. */
ng_site *ng_site_of(ng_caller *c);
void ng_bt_init(void);
/* Formatted for Java, on request: malloc'ed, the caller frees. */
char *ng_site_backtrace(ng_site *s);

/* ---------------------------------------------------------------- profiler plugin (ng_prof.c) */
int ng_prof_user_plugin(const char *name, char *err, size_t errlen);
/* The profiler records of communicator inits on this thread between mark and take. */
void ng_prof_mark(void);
void ng_prof_take(int *first, int *count);
int ng_prof_inits_since(int64_t seq, int64_t *out, int n);
int ng_prof_comms(int64_t *out, int n);
void ng_prof_claim(int64_t record);
int ng_prof_in_flight(int64_t record, int64_t *out, int n);
int ng_prof_in_flight_names(int64_t record, const char **func, const char **datatype);
const char *ng_prof_comm_name(int64_t record);
#define NG_PROF_RECORD_LONGS 10

#pragma GCC visibility pop

#endif
