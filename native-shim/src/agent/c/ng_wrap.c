/* The wrappers: one exported function per catalog function, expanded from the generated
 * ng_catalog.h. Each forwards to the real definition its caller would have reached; only calls
 * of the application (ng_tracks) go through ng_enter/ng_exit, and nothing is done once the JVM
 * began to die. A struct by value (ncclUniqueId) is forwarded as a value; its slot holds its
 * address, valid during the call. */
#include "ng.h"
#include "ng_slots.h"

#define NG_SLOT_PTR(i, x) a_[i] = (uint64_t)(uintptr_t)(x);
#define NG_SLOT_INT(i, x) a_[i] = (uint64_t)(int64_t)(x);
#define NG_SLOT_UINT(i, x) a_[i] = (uint64_t)(x);
#define NG_SLOT_ADDR(i, x) a_[i] = (uint64_t)(uintptr_t) & (x);

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
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = NG_IS_NCCL_##lib,
const unsigned char ng_fn_nccl[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X
#define X(id, name, lib, effect, params, args, nargs, slots, callable) [id] = callable,
const unsigned char ng_fn_callable[NG_FN_COUNT] = {NG_CATALOG(X)};
#undef X

_Static_assert(NG_FN_COUNT <= 255, "function ids fit the tables");

/* The argument at a catalog position, 0 for none (positions are constants: this folds away). */
#define NG_ARG(a, pos) ((pos) >= 0 ? (a)[(pos) >= 0 ? (pos) : 0] : 0)
#define NG_HOT_EFFECT(e)                                                                        \
  ((e) == NG_EFFECT_EVENT_QUERY || (e) == NG_EFFECT_EVENT_SYNC || (e) == NG_EFFECT_STREAM_SYNC ||  \
   (e) == NG_EFFECT_STREAM_QUERY || (e) == NG_EFFECT_EVENT_RECORD || (e) == NG_EFFECT_COMM_ENQUEUE || \
   (e) == NG_EFFECT_STREAM_WAIT_EVENT)

/* ncclResult_t and cudaError_t are both enums returned as int */
#define X(id, name, lib, effect, params, args, nargs, slots, callable)                            \
  NG_EXPORT int name params {                                                                     \
    ng_caller *c_ = ng_caller_of(__builtin_return_address(0));                                    \
    int(*real_) params = (int(*) params)ng_real(c_, id);                                          \
    if (NG_UNLIKELY(real_ == NULL)) return ng_missing(id);                                        \
    if (!ng_tracks(c_)) return real_ args;                                                        \
    ng_call k_;                                                                                   \
    uint64_t *a_ = k_.a;                                                                          \
    (void)a_;                                                                                     \
    slots if (NG_HOT_EFFECT(effect)) {                                                            \
      ng_hot h_;                                                                                  \
      if (NG_LIKELY(ng_hot_enter(&h_, c_, effect, NG_ARG(a_, ng_pos[id].handle), NG_ARG(a_, ng_pos[id].stream)))) { \
        int r_ = real_ args;                                                                      \
        ng_hot_exit(&h_, effect, r_);                                                             \
        return r_;                                                                                \
      }                                                                                           \
    }                                                                                             \
    if (NG_UNLIKELY(!ng_enter(&k_, c_, id))) ng_park(id);                                          \
    int r_ = real_ args;                                                                          \
    ng_exit(&k_, r_);                                                                             \
    return r_;                                                                                    \
  }
NG_CATALOG(X)
#undef X
