/* The state every file of the library shares (ng.h): the process's words, the counters, where the
 * library was loaded from, and the catalog as tables, expanded from the generated ng_catalog.h. */
#include <string.h>

#include "ng.h"
#include "ng_log.h"

ng_words ng_w = {.state = 1u << 1}; /* generation 1, not dying */
/* The read-mostly line's start (ng_log.h, NG_READ_MOSTLY), which it aligns to 64 bytes: ng.c is the
 * first object linked, so the others' words follow it (check_lines.sh checks they fit the line). */
NG_READ_MOSTLY __attribute__((aligned(64), used)) static char read_mostly_line[0];
atomic_long ng_exceptions_cleared, ng_missing_real, ng_upcalls;
atomic_long ng_upcalls_fn[NG_FN_COUNT];
#ifdef NG_CALL_PROFILE
atomic_long ng_cp_calls[NG_FN_COUNT][8] __attribute__((aligned(64)));
__thread int ng_cp_miss_fn;
atomic_long ng_cp_step[NG_CP_STEP_COUNT][8] __attribute__((aligned(64)));
/* The counting builds' calls of the catalog function named `name` that reached `path` (0 the
 * wrapper, 1 its slow path, 2 its hint's miss, 3 its generic path), -1 for an unknown name: which
 * path a call takes, for the tests that say so (native-shim/src/test/c/prof_paths.c). */
NG_EXPORT long ncclguard_prof_calls(const char *name, int path);
NG_EXPORT long ncclguard_prof_calls(const char *name, int path) {
  for (int fn = 0; fn < NG_FN_COUNT; fn++)
    if (strcmp(ng_fn_name[fn], name) == 0 && path >= 0 && path < 4) return atomic_load(&ng_cp_calls[fn][path]);
  return -1;
}
#endif
#if defined(NG_CALL_PROFILE) || defined(NG_FORWARD_TOGGLE)
atomic_int ng_cp_forward;
NG_EXPORT void ncclguard_prof_forward(int on);
NG_EXPORT void ncclguard_prof_forward(int on) { atomic_store_explicit(&ng_cp_forward, on != 0, NG_RELAXED); }
#endif
const char *ng_self_path = "";
uintptr_t ng_self_base, ng_self_end;

_Static_assert(NG_FN_COUNT <= 255, "function ids fit the tables");

#define P(id, h, pa, st, ev, r, nr, u, d, co, k, cnt, rl, cm, by) [id] = {h, pa, st, ev, r, nr, u, d, co, k, cnt, rl, cm, by},
const ng_positions ng_pos[NG_FN_COUNT] = {NG_POSITIONS(P)};
#undef P

#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = #name,
const char *const ng_fn_name[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = effect,
const unsigned char ng_fn_effect[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = nargs,
const unsigned char ng_fn_nargs[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X
#define NG_IS_NCCL_NCCL 1
#define NG_IS_NCCL_CUDART 0
#define NG_IS_NCCL_CUDA 0
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = NG_IS_NCCL_##lib,
const unsigned char ng_fn_nccl[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X
#define NG_IS_DRIVER_NCCL 0
#define NG_IS_DRIVER_CUDART 0
#define NG_IS_DRIVER_CUDA 1
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = NG_IS_DRIVER_##lib,
const unsigned char ng_fn_driver[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = callable,
const unsigned char ng_fn_callable[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X

int ng_fn_id(const char *name) {
  for (int i = 0; i < NG_FN_COUNT; i++) {
    if (strcmp(ng_fn_name[i], name) == 0) return i;
  }
  return -1;
}
