/* Who called a wrapper, where the real function is, the gates (ng_caller.c). */
#ifndef NG_CALLER_H
#define NG_CALLER_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ng.h"

#pragma GCC visibility push(hidden)

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
  int gone;         /* unloaded: dropped from the objects, its callers from the table */
  atomic_int driver; /* took driver functions from cuGetProcAddress (a static cudart): ng_caller_behind */
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
  int via;              /* the catalog function the call instruction called, if known, else -1: a call
                         * of another (its definition's tail call) is that library's own */
} __attribute__((aligned(64)));

#define NG_CALLERS_BITS 14
#define NG_CALLERS (1u << NG_CALLERS_BITS)
typedef struct {
  _Atomic uintptr_t ret;
  _Atomic(ng_caller *) caller;
} ng_caller_slot;
extern ng_caller_slot ng_callers[NG_CALLERS];

/* At load: the fork handler (a fork's child only forwards). */
void ng_caller_init(void);
uint32_t ng_redecide(ng_caller *c);
void *ng_resolve(ng_object *o, int fn);
/* The test mode's pause once a slow path holds the caller lock (ncclguard_hooks.caller_locked). */
void ng_caller_set_test_locked(void (*f)(int where));
/* The object that stands for "no particular caller": libnccl.so.2 / libcudart.so.13, RTLD_NEXT. */
extern ng_object ng_default_object;
void *ng_real_default(int fn);
/* The thread's current device: the real cudaGetDevice's (not a catalog function), 0 where it fails
 * or no runtime is loaded. */
int ng_current_device(void);
/* The same with the real cudaGetDevice's status (-1: no runtime loaded); *device is 0 where it failed. */
int ng_get_device(int *device);
/* The real cudaGetDeviceCount's count, else -1. Asked only after a successful cudaGetDevice: a
 * failure would become the application's last error. */
int ng_device_count(void);
/* Whether a file's base name is NCCL's, CUDA's or another NVIDIA library's. */
int ng_is_nvidia_name(const char *name);
/* The object containing `at` took catalog function fn from dlsym on a handle, where it is defined
 * at `real`: its calls of fn through that pointer are its own, and forward there. */
void ng_caller_named(uintptr_t at, int fn, uintptr_t real);
/* Whether the object took a driver function that way (a static cudart, through cuGetProcAddress). */
int ng_object_uses_driver(ng_object *o);
/* The caller that names a return address `pc` of c's object found further up the stack (the
 * application's call of a static cudart, whose one call site of each driver function serves
 * them all): its library and exported symbol, c's decision; made once per pc, never in the table
 * the wrappers read. c itself when there are too many. */
ng_caller *ng_caller_at_frame(ng_caller *c, uintptr_t pc);
/* What dladdr says of the call before return address ret (ret - 1: a call may be its function's
 * last instruction): 0 if it lies in no object; *sym: the exported symbol it lies inside, NULL when
 * it lies past that symbol's end (dladdr names the nearest one below: a static function after it is
 * not it). Takes the linker's load lock: never called under the caller lock. */
int ng_addr_symbol(uintptr_t ret, Dl_info *info, const char **sym);
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
 * The state's part is one word for every function (a load and a constant's or on the hot path:
 * a framework's wrapped calls read one line for it, not the several a word per function spread
 * over), made again by ng_gate_refresh after each change of the state. */
extern struct ng_gate_state {
  _Atomic uint64_t word; /* the current state << 9: one word for every function */
} ng_gate;
static inline uint64_t ng_gate_word(int fn) { return atomic_load_explicit(&ng_gate.word, NG_RELAXED) | (uint64_t)fn << 1; }
void ng_gate_refresh(void);
typedef struct {
  void *real; /* NULL: no real function (ng_missing) */
  uint64_t track;
  ng_caller *caller; /* c, or its successor when c's object was unloaded */
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

/* What a new call site's hints start as: a slot no key is valid on (ng_slots.c sets it at load,
 * before any call: the hot path tests no NULL). */
extern void *ng_hint_none;

/* Sets the dying bit of the state (JVMTI VMDeath, the exit hook's dying(), exit(3), the library's
 * destructor): from then on wrappers only forward. */
void ng_mark_dying(void);

/* A site's library and exported symbol as Java names it (long caller): malloc'ed, or NULL. */
char *ng_caller_library(int64_t caller);
char *ng_caller_symbol(int64_t caller);

#pragma GCC visibility pop

#endif
