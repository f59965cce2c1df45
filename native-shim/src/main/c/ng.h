/* libncclguard.so: the agent's native part, a file per role (docs/design.md, "The native part"):
 *   ng.c          the process's words and the catalog as tables: the state every file shares
 *   ng_log.c      logging, clocks, plain threads, the last error Java reads
 *   ng_map.c      the maps from handles to C slots (lock-free reads, locked writes)
 *   ng_elf.c      loaded objects read in memory: dynamic symbols, relocations, version needs
 *   ng_caller.c   who called (the caller cache), where the real function is, the gates, dying
 *   ng_patch.c    import-slot patching of loaded objects, the dlopen/dlsym/dlvsym hooks
 *   ng_driver.c   the CUDA driver: cuGetProcAddress for a static cudart, the agent's own driver calls
 *   ng_slots.c    the C slots' pools, maps and stream owners, the hot paths' out-of-line parts
 *   ng_track.c    what each wrapped call does to the slots, and Java's view of them
 *   ng_wrap.c     the wrappers, expanded from the catalog's generated header (ng_catalog.h)
 *   ng_bt.c       native backtraces of creations on threads with no Java frames
 *   ng_stack.c    Java stacks of creations on Java threads, without a JVM transition, in a depot
 *   ng_upcall.c   the upcalls into Java (or the test mode's C callbacks), threads attached as daemons,
 *                 the JVMTI names of a depot frame
 *   ng_prof.c     NCCL's profiler plugin (ncclProfiler_v4/_v5/_v6)
 *   ng_watchdog.c the exit watchdog
 *   ng_load.c     the library's constructor and destructor, promotion into the global scope
 *   ng_jni.c      JNI_OnLoad and the JNI natives of Interposer, nothing else
 *   ng_test.c     the test mode (ncclguard_test.h): the natives as C functions, C callbacks for upcalls
 * x.h declares what x.c defines for the others and no other file's names, and no file includes
 * another's header but for what it uses, so the includes have no circle (check_includes.sh).
 * NVIDIA's ABIs are abi/'s. Everything not exported through NG_EXPORT is hidden. */
#ifndef NG_H
#define NG_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "cuda_driver_api.h"
#include "nccl_api.h"
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

/* cudaStreamLegacy and cudaStreamPerThread as the words a slot key is compared with */
#define NG_STREAM_LEGACY ((uint64_t)(uintptr_t)cudaStreamLegacy)
#define NG_STREAM_PER_THREAD ((uint64_t)(uintptr_t)cudaStreamPerThread)

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
/* the CUDA driver's (libcuda.so.1: cuEventCreate ...), neither NCCL's nor the runtime's */
extern const unsigned char ng_fn_driver[NG_FN_COUNT];
extern const unsigned char ng_fn_callable[NG_FN_COUNT];
/* The id of the function of that name, or -1. */
int ng_fn_id(const char *name);

/* ---------------------------------------------------------------- process-wide words */
/* The process's state, in one cache line. Its writers are rare (stream creations and counts past
 * their reservation, native group starts and ends, a change of the lists, dying). A hot path reads
 * threads_in_groups (collectives) and, through ng_gate, what state says.
 * state: the generation of suppressions and wrapped natives (bumped when Java changes them:
 * caller decisions are re-made) << 1 | dying (set by JVMTI VMDeath, the Java exit hook's dying(),
 * exit(3) or this library's destructor: from then on wrappers only forward, and nothing calls
 * into the JVM).
 * op_seq: the last op number reserved (streams reserve ranges of it: ng_slots.h); threads_in_groups:
 * threads inside a native ncclGroupStart; rec_whole: see ng_rec_store. */
typedef struct {
  atomic_uint state;
  atomic_int threads_in_groups;
  int rec_whole;
  _Atomic int64_t op_seq;
} __attribute__((aligned(64))) ng_words;
extern ng_words ng_w;
/* Whether a record can be one 16-byte store on this build (ng_rec_store in ng_slots.h); ng_w.rec_whole
 * says whether this CPU does it. */
#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(__SANITIZE_THREAD__)
#define NG_REC_WHOLE_POSSIBLE 1
#else
#define NG_REC_WHOLE_POSSIBLE 0
#endif
#define NG_DYING 1u
static inline int ng_is_dying(void) { return atomic_load_explicit(&ng_w.state, memory_order_relaxed) & NG_DYING; }
/* Counters for stats(): upcalls made, upcalls that left an exception (cleared), real functions not found. */
extern atomic_long ng_exceptions_cleared, ng_missing_real, ng_upcalls;
/* A build with -DNG_CALL_PROFILE counts each wrapper's calls (all, slow, miss, generic) and the
 * TSC cycles of the generic path's own work, for the debug line at exit: where a framework's loop
 * pays, on a host with no profiler. The shipped build has none of it. */
#ifdef NG_CALL_PROFILE
#include <x86intrin.h>
/* a function's counts and cycles on a line of their own (8 words: the 4 counts, the cycles, and in
 * the steps build its lookups after a hint's miss and their cycles): a framework's launching
 * thread and its watchdog call different functions */
extern atomic_long ng_cp_calls[NG_FN_COUNT][8];
#define ng_cp_cycles_of(id) ng_cp_calls[id][4]
/* the function whose _miss runs on this thread (the steps build): its lookups are counted as its */
extern __thread int ng_cp_miss_fn;
#define NG_CP_COUNT(id, k) atomic_fetch_add_explicit(&ng_cp_calls[id][k], 1, NG_RELAXED)
#define NG_CP_TSC() ((uint64_t)__rdtsc())
#define NG_CP_ADD(id, c) atomic_fetch_add_explicit(&ng_cp_cycles_of(id), (long)(c), NG_RELAXED)
/* Steps inside the generic and map paths, each with its count and cycles: which part of a
 * creation, a release or a hint's miss a framework pays for (X(step, name) over NG_CP_STEPS). */
#define NG_CP_STEPS(X)                                                                              \
  X(CREATE_DEVICE, "creation: current device") X(CREATE_STACK, "creation: Java stack")              \
  X(CREATE_BIRTH, "creation: time") X(CREATE_LOCKED, "creation: slot (map lock held)")              \
  X(RELEASE_FIND, "release: slot found") X(RELEASE_LAZY, "release: lazy end (map lock held)")       \
  X(MISS_FIND, "hint missed: lookup, on a thread that made no event") X(RELEASE_ELSEWHERE, "release on another thread than the creation (none timed)") \
  X(MISS_FIND_MAKER, "hint missed: lookup, on a thread that made events")
#define NG_CP_STEP_ID(step, name) NG_CP_##step,
enum { NG_CP_STEPS(NG_CP_STEP_ID) NG_CP_STEP_COUNT };
#undef NG_CP_STEP_ID
/* each step's count and cycles on a line of its own (of 8 words, 2 used): the steps of a framework's
 * launching thread and of its watchdog would otherwise add to one line from two cores */
extern atomic_long ng_cp_step[NG_CP_STEP_COUNT][8];
#ifdef NG_CALL_STEPS
#define NG_CP_STEP_TSC() NG_CP_TSC()
#define NG_CP_STEP(step, t0)                                                                        \
  (atomic_fetch_add_explicit(&ng_cp_step[NG_CP_##step][0], 1, NG_RELAXED),                         \
   atomic_fetch_add_explicit(&ng_cp_step[NG_CP_##step][1], (long)(NG_CP_TSC() - (t0)), NG_RELAXED))
#else
#define NG_CP_STEP_TSC() ((uint64_t)0)
#define NG_CP_STEP(step, t0) ((void)(t0))
#endif
#else
#define NG_CP_COUNT(id, k) ((void)0)
#define NG_CP_TSC() ((uint64_t)0)
#define NG_CP_ADD(id, c) ((void)(c))
#define NG_CP_STEP_TSC() ((uint64_t)0)
#define NG_CP_STEP(step, t0) ((void)(t0))
#endif
/* ncclguard_prof_forward(1) (exported by the counting builds, and by the forwarding-toggle build,
 * -DNG_FORWARD_TOGGLE: the shipped build with this switch alone): every wrapper forwards at once,
 * as an untracked call does, until ncclguard_prof_forward(0); a benchmark's phases with and without
 * the agent's work in one process (scripts/gpu/85-torch.sh's in-process rounds). The shipped build
 * has none of it. */
#if defined(NG_CALL_PROFILE) || defined(NG_FORWARD_TOGGLE)
extern atomic_int ng_cp_forward;
#define NG_CP_FORWARDING() NG_UNLIKELY(atomic_load_explicit(&ng_cp_forward, NG_RELAXED))
#else
#define NG_CP_FORWARDING() 0
#endif
/* upcalls per catalog function (ng_upcalls counts them all); read by the debug line at exit */
extern atomic_long ng_upcalls_fn[NG_FN_COUNT];
/* The file this library was loaded from (dladdr of a static function), its load base, and the end
 * of its highest segment. */
extern const char *ng_self_path;
extern uintptr_t ng_self_base, ng_self_end;

#pragma GCC visibility pop

#endif
