/* The wrappers: one exported function per catalog function, expanded from the generated
 * ng_catalog.h. Each forwards to the real definition its caller would have reached; only calls
 * of the application (ng_gate_slow, ng_tracks) are tracked, and nothing is done once the JVM
 * began to die. A hot call on C slots is tracked inside the wrapper (ng_slots.h); every other
 * tracked call goes through its function's generic path (ng_enter / ng_exit), a function of its
 * own, out of the hot path's way. A struct by value (ncclUniqueId) is forwarded as a value; its
 * slot holds its address, valid during the call. */
/* The wrappers define NCCL's and cudart's functions with int results (the enums' register: an
 * enum result costs the hot paths what the compiler then no longer knows of a status), so they take
 * abi/'s types without its prototypes. */
#define NCCLGUARD_ABI_TYPES_ONLY
#include "ng.h"
#include "ng_caller.h"
#include "ng_slots.h"
#include "ng_track.h"

#define NG_SLOT_PTR(i, x) a_[i] = (uint64_t)(uintptr_t)(x);
/* abi/'s enums have no negative values, so gcc makes them unsigned: an INT slot of one is the int
 * it is passed as, sign-extended like any other */
#define NG_AS_INT(x) _Generic((x), ncclDataType_t: (int)(x), ncclRedOp_t: (int)(x), default: (x))
#define NG_SLOT_INT(i, x) a_[i] = (uint64_t)(int64_t)NG_AS_INT(x);
#define NG_SLOT_UINT(i, x) a_[i] = (uint64_t)(x);
#define NG_SLOT_ADDR(i, x) a_[i] = (uint64_t)(uintptr_t) & (x);

_Static_assert(NG_MAX_ARGS <= 9, "NG_WITH_<nargs> is defined for up to 9 parameters");

/* The catalog's positions as constants of this file (ng.c's ng_pos is the other files'), so that
 * a hot path's lookup of its handle and stream folds away. */
#define P(id, h, pa, st, ev, r, nr, u, d, co, k, cnt, rl, cm, by) [id] = {h, pa, st, ev, r, nr, u, d, co, k, cnt, rl, cm, by},
static const ng_positions positions[NG_FN_COUNT] = {NG_POSITIONS(P)};
#undef P

/* A function's positions as two constants, their bytes in the struct's order (little-endian), for
 * the generic path: folded at compile time, so ng_enter reads no table. */
#define NG_B(id, f, at) ((uint64_t)(uint8_t)positions[id].f << (8 * (at)))
#define NG_POS_LO(id) (NG_B(id, handle, 0) | NG_B(id, parent, 1) | NG_B(id, stream, 2) | NG_B(id, event, 3) | \
                       NG_B(id, rank, 4) | NG_B(id, nranks, 5) | NG_B(id, unique_id, 6) | NG_B(id, device, 7))
#define NG_POS_HI(id) (NG_B(id, color, 0) | NG_B(id, key, 1) | NG_B(id, count, 2) | NG_B(id, rank_list, 3) | \
                       NG_B(id, comm, 4) | NG_B(id, bytes, 5))
_Static_assert(sizeof(ng_positions) == 14, "NG_POS_LO and NG_POS_HI name every position");

/* The argument at a catalog position, 0 for none (positions are constants: this folds away). */
#define NG_ARG(a, pos) ((pos) >= 0 ? (a)[(pos) >= 0 ? (pos) : 0] : 0)

/* The out-of-line paths' parameters and arguments: the caller and the real function (or the
 * return address, for _slow), then the call's own, which a function of no parameters has none of:
 * NG_WITH_<nargs>((first...), (list...)) is (first..., list...), or (first...) for nargs 0. */
#define NG_UNPAREN(...) __VA_ARGS__
#define NG_WITH_0(first, list) first
#define NG_WITH_N(first, list) (NG_UNPAREN first, NG_UNPAREN list)
#define NG_WITH_1 NG_WITH_N
#define NG_WITH_2 NG_WITH_N
#define NG_WITH_3 NG_WITH_N
#define NG_WITH_4 NG_WITH_N
#define NG_WITH_5 NG_WITH_N
#define NG_WITH_6 NG_WITH_N
#define NG_WITH_7 NG_WITH_N
#define NG_WITH_8 NG_WITH_N
#define NG_WITH_9 NG_WITH_N

/* 0, made where it is returned: the compiler would otherwise keep a successful call's status in a
 * saved register across the update that follows, to return it. */
static inline int ng_success(void) {
  int zero = 0;
  __asm__("" : "+r"(zero));
  return zero;
}

#define NG_IS(e, x) ((e) == NG_EFFECT_##x)
#define NG_ON_EVENT(e) (NG_IS(e, EVENT_QUERY) || NG_IS(e, EVENT_SYNC))
#define NG_ON_STREAM(e) (NG_IS(e, STREAM_SYNC) || NG_IS(e, STREAM_QUERY))
#define NG_COUNTS(e) (NG_IS(e, COMM_ENQUEUE) || NG_IS(e, STREAM_WAIT_EVENT))
#define NG_HOT_EFFECT(e) (NG_ON_EVENT(e) || NG_ON_STREAM(e) || NG_COUNTS(e) || NG_IS(e, EVENT_RECORD))

/* A slot lookup of the hot path: the call site's hint alone (in the wrapper), or the maps too (in
 * its _miss function); `miss` when the key has no C slot. */
#define NG_FIND_HINT(type, var, events, key, inc, miss)                                             \
  type *var = (type *)atomic_load_explicit(&c_->hint[events], NG_ACQUIRE);                         \
  if (NG_UNLIKELY(!ng_hot_valid(&var->h, key, &inc))) miss;
#define NG_FIND_MAP(type, var, events, key, inc, miss)                                              \
  uint64_t var##t_ = NG_CP_STEP_TSC();                                                                   \
  type *var = (type *)ng_hot_find(events, c_, key, &inc);                                          \
  NG_CP_STEP_MISS(var##t_);                                                                         \
  if (NG_UNLIKELY(var == NULL)) miss;
/* the steps build splits a miss's lookups by thread: a framework's launching thread makes events,
 * its watchdog makes none */
#ifdef NG_CALL_STEPS
#define NG_CP_STEP_MISS(t0)                                                                         \
  (atomic_fetch_add_explicit(&ng_cp_calls[ng_cp_miss_fn][5], 1, NG_RELAXED),                        \
   atomic_fetch_add_explicit(&ng_cp_calls[ng_cp_miss_fn][6], (long)(NG_CP_TSC() - (t0)), NG_RELAXED), \
   ng_made[0] != NULL ? NG_CP_STEP(MISS_FIND_MAKER, t0) : NG_CP_STEP(MISS_FIND, t0))
#define NG_CP_MISS_FN(id) (ng_cp_miss_fn = (id))
#else
#define NG_CP_MISS_FN(id) ((void)0)
#define NG_CP_STEP_MISS(t0) NG_CP_STEP(MISS_FIND, t0)
#endif

#define NG_IS_MAP_NG_FIND_HINT 0
#define NG_IS_MAP_NG_FIND_MAP 1
/* A stream's hint missed: in the wrapper, the legacy stream's constant key is tried before the
 * miss; in its _miss function, hk_ was that key already. */
#define NG_STREAM_MISS_NG_FIND_HINT(miss)                                                           \
  if (!ng_hot_legacy(&s_->h, hs_, &sinc_)) miss;
#define NG_STREAM_MISS_NG_FIND_MAP(miss) miss;
/* A record's event hint missed: in the wrapper, the events this thread made last are tried before
 * the miss (a framework records each event right after making it), and one found replaces an ended
 * hint, as the _miss function's lookup does (which asks them too). A store, not that lookup's
 * compare-and-swap: a call on this path made the wrapper save registers on every call; a hint is
 * any slot, checked against the key, and a lost store costs a later miss. */
#define NG_EVENT_MISS_NG_FIND_HINT(miss)                                                            \
  if ((ef_ = (ng_eslot *)ng_hot_made(hh_, &einc_)) == NULL) miss;                                   \
  if (ng_ended(&((ng_head *)atomic_load_explicit(&c_->hint[1], NG_RELAXED))->lock))              \
    atomic_store_explicit(&c_->hint[1], (void *)ef_, NG_RELEASE);
#define NG_EVENT_MISS_NG_FIND_MAP(miss) miss;

/* The hot path of each hot effect: found its slots, made the real call and returned; or took
 * `miss` without having made it. The arguments are in a_ (the catalog's slots). */
#define NG_HOT_PATH(id, effect, args, FIND, miss)                                                  \
  const uint64_t hh_ = NG_ARG(a_, positions[id].handle), hs_ = NG_ARG(a_, positions[id].stream);           \
  (void)hh_, (void)hs_;                                                                             \
  if (NG_ON_EVENT(effect)) {                                                                        \
    uint32_t inc_;                                                                                  \
    FIND(ng_eslot, e_, 1, hh_, inc_, miss)                                                          \
    /* the last record's number, whatever its incarnation: the rare other case is out of line */    \
    int64_t seq_ = __atomic_load_n(&e_->rec.seq, __ATOMIC_ACQUIRE);                                 \
    int r_ = real_ args;                                                                            \
    if (NG_UNLIKELY((r_ == 0) & (seq_ != 0) & (seq_ != atomic_load_explicit(&e_->completed_seq, NG_ACQUIRE)))) \
      ng_event_seen_complete(e_, inc_, seq_);                                                       \
    return r_;                                                                                      \
  } else {                                                                                          \
    /* work inside a native group counts at its end: the generic path defers it */                  \
    if (NG_IS(effect, COMM_ENQUEUE) && NG_UNLIKELY(atomic_load_explicit(&ng_w.threads_in_groups, NG_RELAXED) != 0) && \
        ng_self.group_depth > 0)                                                                    \
      goto generic_;                                                                                \
    /* a record's event first: its device keys a special stream's slot */                          \
    uint32_t einc_ = 0;                                                                             \
    ng_eslot *e_ = NULL;                                                                            \
    if (NG_IS(effect, EVENT_RECORD)) {                                                              \
      FIND(ng_eslot, ef_, 1, hh_, einc_, NG_EVENT_MISS_##FIND(miss))                                \
      e_ = ef_;                                                                                     \
    }                                                                                               \
    (void)e_, (void)einc_;                                                                          \
    /* a special stream (0, 1, 2) keys its slot by device (a collective's communicator's, a       \
     * record's event's, else the thread's current one) and thread (ng_special_key): PyTorch runs   \
     * a synchronous collective and its records on the current stream. The wrapper's hint misses   \
     * it, and the maps find it; but where the process sees one device the legacy stream's key is  \
     * a constant (ng_legacy_key), which the wrapper checks its hint against after the miss (a      \
     * created stream's path has no test more) and its _miss function takes */                     \
    uint64_t hk_ = hs_;                                                                             \
    if (NG_IS_MAP_##FIND && NG_UNLIKELY(ng_special_stream(hs_))) {                                  \
      uint64_t one_ = atomic_load_explicit(&ng_legacy_key, NG_RELAXED);                             \
      if (one_ != 0 && hs_ != NG_STREAM_PER_THREAD) hk_ = one_;                                     \
      else                                                                                          \
        hk_ = NG_IS(effect, EVENT_RECORD)                                                           \
                  ? ng_special_record_key(hs_, atomic_load_explicit(&e_->cold.device, NG_RELAXED))  \
                  : ng_special_key(hs_, NG_IS(effect, COMM_ENQUEUE) ? hh_ : 0, NG_IS(effect, COMM_ENQUEUE)); \
    }                                                                                               \
    uint32_t sinc_;                                                                                 \
    FIND(ng_sslot, s_, 0, hk_, sinc_, NG_STREAM_MISS_##FIND(miss))                                  \
    if (NG_COUNTS(effect)) {                                                                        \
      int r_ = real_ args;                                                                          \
      if (NG_UNLIKELY(r_ != 0)) return r_;                                                          \
      (void)ng_stream_count(s_, sinc_);                                                                \
      return ng_success();                                                                          \
    }                                                                                               \
    int64_t at_enter_ = atomic_load_explicit(&s_->enqueued, NG_ACQUIRE);                            \
    if (NG_ON_STREAM(effect)) {                                                                     \
      int r_ = real_ args;                                                                          \
      if (NG_UNLIKELY((r_ == 0) & (at_enter_ > atomic_load_explicit(&s_->done, NG_ACQUIRE))))       \
        ng_stream_seen_idle(s_, sinc_, at_enter_);                                                  \
      return r_;                                                                                    \
    }                                                                                               \
    int r_ = real_ args;                                                                            \
    if (NG_UNLIKELY(r_ != 0)) return r_;                                                            \
    int64_t mine_ = ng_stream_count(s_, sinc_);                                                        \
    if (NG_LIKELY(mine_ == at_enter_ + 1)) ng_hot_recorded(e_, einc_, s_, sinc_, mine_, !NG_IS_MAP_##FIND);            \
    else if (mine_ >= 0) ng_record_slow(e_, einc_, s_, sinc_, at_enter_, mine_);                    \
    return ng_success();                                                                            \
  }

/* A wrapper starts a cache line: its hot path spans as few lines as its bytes need (a real call can
 * leave the wrapper's code to be fetched again, line by line: docs/performance.md). */
#define NG_LINE_ALIGNED __attribute__((aligned(64)))

/* ncclResult_t and cudaError_t are both enums returned as int. Per function:
 *   _generic  the generic path (ng_enter / ng_exit), for every tracked call the hot path leaves;
 *   _miss     the hot path again, for a call site whose hint missed: its lookups go on to the maps;
 *   _slow     the whole wrapper, for a call site not in its hashed slot or whose gate is closed;
 *   the wrapper: the hashed caller, its gate, the hot path on the hints; anything else is a tail
 *   call to one of the above, so that its arguments stay in their registers up to the real call
 *   and only what the hot path keeps across it is saved. */
#define X(id, name, lib, effect, params, args, nargs, slots, callable)                            \
  static NG_COLD int name##_generic NG_WITH_##nargs((ng_caller * c_, void *rp_), params) {                                \
    int(*real_) params = (int(*) params)rp_;                                                      \
    ng_call k_;                                                                                   \
    uint64_t *a_ = k_.a;                                                                          \
    (void)a_;                                                                                     \
    NG_CP_COUNT(id, 3);                                                                           \
    uint64_t t0_ = NG_CP_TSC();                                                                   \
    slots if (NG_UNLIKELY(!ng_enter(&k_, c_, id, effect, NG_POS_LO(id), NG_POS_HI(id)))) ng_park(id); \
    uint64_t t1_ = NG_CP_TSC();                                                                   \
    int r_ = real_ args;                                                                          \
    uint64_t t2_ = NG_CP_TSC();                                                                   \
    ng_exit(&k_, r_);                                                                             \
    NG_CP_ADD(id, t1_ - t0_ + NG_CP_TSC() - t2_);                                                 \
    return r_;                                                                                    \
  }                                                                                               \
  static __attribute__((noinline)) int name##_miss NG_WITH_##nargs((ng_caller * c_, void *rp_), params) {                 \
    int(*real_) params = (int(*) params)rp_;                                                      \
    if (NG_CP_FORWARDING()) return real_ args;                                                    \
    NG_CP_COUNT(id, 2);                                                                           \
    NG_CP_MISS_FN(id);                                                                            \
    if (NG_HOT_EFFECT(effect)) {                                                                  \
      uint64_t a_[NG_MAX_ARGS];                                                                   \
      slots NG_HOT_PATH(id, effect, args, NG_FIND_MAP, goto generic_)                             \
    }                                                                                             \
  generic_:                                                                                       \
    return name##_generic NG_WITH_##nargs((c_, (void *)real_), args);                                               \
  }                                                                                               \
  static __attribute__((noinline)) int name##_slow NG_WITH_##nargs((uintptr_t ret_), params) {                \
    NG_CP_COUNT(id, 1);                                                                           \
    ng_caller *c_ = ng_caller_of((void *)ret_);                                                   \
    uint64_t g_ = atomic_load_explicit(&c_->gate, NG_ACQUIRE) ^ ng_gate_word(id);                 \
    int(*real_) params = (int(*) params)atomic_load_explicit(&c_->real, NG_RELAXED);              \
    if (g_ == 0) return name##_miss NG_WITH_##nargs((c_, (void *)real_), args);                                     \
    if (g_ == 1) return real_ args;                                                               \
    ng_gate_result s_ = ng_gate_slow(c_, id);                                                     \
    if (NG_UNLIKELY(s_.real == NULL)) return ng_missing(id);                                      \
    real_ = (int(*) params)s_.real;                                                               \
    c_ = s_.caller;                                                                               \
    if (!s_.track) return real_ args;                                                             \
    return name##_miss NG_WITH_##nargs((c_, (void *)real_), args);                                                  \
  }                                                                                               \
  NG_EXPORT NG_LINE_ALIGNED int name params {                                                     \
    NG_CP_COUNT(id, 0);                                                                           \
    uintptr_t ret_ = (uintptr_t)__builtin_return_address(0);                                      \
    ng_caller_slot *cs_ = &ng_callers[ng_hash_addr(ret_)];                                        \
    if (NG_UNLIKELY(atomic_load_explicit(&cs_->ret, NG_ACQUIRE) != ret_))                         \
      return name##_slow NG_WITH_##nargs((ret_), args);                                               \
    ng_caller *c_ = atomic_load_explicit(&cs_->caller, NG_ACQUIRE);                               \
    uint64_t g_ = atomic_load_explicit(&c_->gate, NG_ACQUIRE) ^ ng_gate_word(id);                 \
    int(*real_) params = (int(*) params)atomic_load_explicit(&c_->real, NG_RELAXED);              \
    if (NG_UNLIKELY(g_ != 0)) {                                                                   \
      if (g_ == 1) return real_ args;                                                             \
      return name##_slow NG_WITH_##nargs((ret_), args);                                               \
    }                                                                                             \
    if (NG_CP_FORWARDING()) return real_ args;                                                    \
    if (NG_HOT_EFFECT(effect)) {                                                                  \
      uint64_t a_[NG_MAX_ARGS];                                                                   \
      slots NG_HOT_PATH(id, effect, args, NG_FIND_HINT, goto miss_)                               \
    }                                                                                             \
  miss_:                                                                                          \
    return name##_miss NG_WITH_##nargs((c_, (void *)real_), args);                                                  \
  generic_:                                                                                       \
    return name##_generic NG_WITH_##nargs((c_, (void *)real_), args);                                               \
  }
NG_CATALOG(X)
#undef X
