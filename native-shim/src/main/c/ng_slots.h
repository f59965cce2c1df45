/* The C slots of events and streams and the maps to them: what the wrappers' hot paths (inlined
 * into ng_wrap.c) and ng_track.c share; their pools, maps, stream owners and the hot paths'
 * out-of-line parts are ng_slots.c's. See ng_track.c for what they are. */
#ifndef NG_SLOTS_H
#define NG_SLOTS_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "ng.h"
#include "ng_arch.h"
#include "ng_caller.h"
#include "ng_map.h"

/* ---------------------------------------------------------------- the lock word */
/* The thread sanitizer has no fences: the fields they order for seqlock readers are atomics,
 * which it does not check; the fields guarded by the lock it checks through the lock's CAS and
 * release store. */
#if defined(__SANITIZE_THREAD__)
#define NG_FENCE(order) ((void)0)
#else
#define NG_FENCE(order) atomic_thread_fence(order)
#endif
#define NG_ENDED 1u
#define NG_HELD 2u
#define NG_SPINS 64

static inline void ng_back_off(int *spins) {
  if (*spins < NG_SPINS) {
    ng_pause();
    (*spins)++;
  } else {
    sched_yield();
    *spins = 0;
  }
}

static inline void ng_word_lock(_Atomic uint32_t *l) {
  int spins = 0;
  while (1) {
    uint32_t v = atomic_load_explicit(l, NG_RELAXED);
    if (!(v & NG_HELD) && atomic_compare_exchange_weak_explicit(l, &v, v | NG_HELD, memory_order_acquire, NG_RELAXED)) {
      /* the guarded stores that follow must not pass the held bit */
      NG_FENCE(memory_order_release);
      return;
    }
    ng_back_off(&spins);
  }
}

static inline void ng_word_unlock(_Atomic uint32_t *l) {
  /* adding NG_HELD to a word that has it clears it and carries into the version */
  atomic_store_explicit(l, atomic_load_explicit(l, NG_RELAXED) + NG_HELD, NG_RELEASE);
}

static inline uint32_t ng_read_version(_Atomic uint32_t *l) { return atomic_load_explicit(l, NG_ACQUIRE); }

static inline int ng_validate(_Atomic uint32_t *l, uint32_t version) {
  NG_FENCE(memory_order_acquire);
  return !(version & NG_HELD) && atomic_load_explicit(l, NG_RELAXED) == version;
}

static inline int ng_ended(_Atomic uint32_t *l) { return (atomic_load_explicit(l, NG_ACQUIRE) & NG_ENDED) != 0; }

/* ---------------------------------------------------------------- slots */
#define NG_REF_C 1u /* C follows the handle (not destroyed, not moved to Java) */
#define NG_REF_J 2u /* a Java record points at the slot */
/* made by native code with a stack Java knows, no upcall made: Java has no record of it until it
 * adopts the slot (a snapshot, or a Java call on the handle); a release that finds it makes no
 * upcall either. Set and cleared with NG_REF_C's incarnation only. */
#define NG_REF_LAZY 4u

/* What event and stream slots share, first in both: what a hot call reads of any slot, in 32 bytes
 * of its first cache line. */
typedef struct {
  _Atomic uint64_t key;    /* the event handle or stream key; 0 when free */
  _Atomic uint64_t handle; /* as the application sees it */
  _Atomic uint32_t lock;
  _Atomic uint32_t inc;
  uint32_t where_base;   /* (its index + 1) << 7, set once: a record's stream bits but the incarnation (ng_rec) */
  _Atomic uint32_t busy; /* a stream's owner is between its check and its store (see ng_stream_count); unused in events */
} ng_head;
_Static_assert(sizeof(ng_head) == 32, "a slot's head leaves its hot fields room in its first cache line");

/* The key of an ended or free slot: no handle's (a handle is a user-space address or a small
 * special value), so a hot path that tests a key alone never takes an ended slot. */
#define NG_DEAD_KEY UINT64_MAX

/* Ends the slot's incarnation; under its lock. The key goes first: a hot path that saw the key
 * before checked before the end, as one that saw it earlier still would. */
static inline void ng_mark_ended(ng_head *h) {
  atomic_store_explicit(&h->key, NG_DEAD_KEY, NG_RELEASE);
  atomic_store_explicit(&h->lock, atomic_load_explicit(&h->lock, NG_RELAXED) | NG_ENDED, NG_RELAXED);
}

/* What only creations, releases and the slow paths read, in a slot's second cache line. */
typedef struct {
  _Atomic uint32_t refs; /* written under the map lock only (ng_track.c) */
  int32_t next_free; /* guarded by the map lock */
  _Atomic int device;
} ng_cold;
#define NG_COLD_AT 64
static inline ng_cold *ng_cold_of(ng_head *h) { return (ng_cold *)((char *)h + NG_COLD_AT); }
#define NG_WHERE_INDEX_SHIFT 7
static inline int32_t ng_slot_index(const ng_head *h) { return (int32_t)(h->where_base >> NG_WHERE_INDEX_SHIFT) - 1; }

/* An event's last record in one 16-byte word, written and read whole (see ng_rec_store): no lock on
 * a record. seq is the record's own op number (unique across streams; 0: never recorded); where
 * packs, from bit 0: the stream slot's incarnation (7 bits) and the stream's slot + 1 (23 bits, 0:
 * none), which is the stream slot's where_base with its incarnation, then the event's incarnation
 * (7 bits: a record a late writer of an earlier incarnation left is told apart, and so is a stream
 * slot reused since) and seq minus the op number the record's completion covers (27 bits; all
 * ones: unknown, it covers nothing). */
typedef struct {
  int64_t seq;
  uint64_t where;
} __attribute__((aligned(16))) ng_rec;

/* A record and a query touch the first cache line only. */
typedef struct {
  ng_head h;
  ng_rec rec;
  _Atomic int64_t completed_seq;
  /* the stream of the last record as the application sees it, for when that stream's slot was
   * reused since (event_pending reads the handle from the slot while it is still the record's) */
  _Atomic uint64_t stream_handle;
  ng_cold cold;
  /* an event made with NG_REF_LAZY: what Java's record will say of its creation; under the map lock */
  struct {
    uint32_t stack, thread; /* depot id, thread id (ng_stack.h) */
    int64_t created_ms;
    uint64_t site; /* the ng_site, as Java's long caller */
    int32_t fn;
  } birth;
} __attribute__((aligned(64))) ng_eslot; /* a slot never shares a cache line with another */
_Static_assert(offsetof(ng_eslot, cold) == NG_COLD_AT && sizeof(ng_eslot) == 128,
               "a record's and a query's fields are in the first cache line, the cold ones in the second");

/* Counting an op touches the first cache line only: the head (with the owner's busy word), the
 * counts and the owner. */
typedef struct {
  ng_head h;
  _Atomic int64_t enqueued;
  _Atomic int64_t reserved; /* the highest op number reserved; raised under the lock */
  _Atomic uintptr_t owner;  /* the thread that counts with plain stores, NG_SHARED, or 0 */
  ng_cold cold __attribute__((aligned(64)));
  _Atomic int64_t base;
  _Atomic int64_t done;
  /* the last device synchronize's token and the count it saw at its start, written under the
   * lock; the token also read without it (a synchronize's exit passes streams it never marked) */
  _Atomic int64_t sync_token;
  int64_t sync_count;
} __attribute__((aligned(64))) ng_sslot;
_Static_assert(offsetof(ng_sslot, cold) == NG_COLD_AT && sizeof(ng_sslot) == 128,
               "what counting an op touches is in one cache line, the cold fields in the next");

#define NG_CHUNK_BITS 12
#define NG_CHUNK (1 << NG_CHUNK_BITS)
#define NG_MAX_CHUNKS 1024

/* What a slot's address is made from (kind, size, the first chunks) in the pool's first line, which
 * nothing writes but a new chunk: a framework's creation, whose lines the work between its
 * operations evicts, reads one, and the lookups of other threads share it. The count of slots
 * handed out, written as a pool grows, on a line of its own after the chunks. */
typedef struct {
  int kind; /* 0 events (ng_epool), 1 streams: its words in ng_locked */
  size_t size;
  ng_map *map;
  _Atomic(char *) chunks[NG_MAX_CHUNKS];
  _Atomic int32_t high __attribute__((aligned(64))); /* slots handed out so far */
} __attribute__((aligned(64))) ng_pool;
/* The free list's head, the slots handed out and given back: under the map lock, in its line. */
#define NG_FREE_HEAD(p) (ng_locked.free_head[(p)->kind])
static inline int32_t ng_pool_live(ng_pool *p) {
  return atomic_load_explicit(&ng_locked.taken[p->kind], NG_RELAXED) - atomic_load_explicit(&ng_locked.given_back[p->kind], NG_RELAXED);
}

extern ng_map ng_events;  /* event handle -> slot + 2, or NG_JAVA_MARK */
extern ng_map ng_streams; /* stream key -> slot + 2, or NG_JAVA_MARK */
extern ng_map ng_comms;   /* communicator -> device + 1 */
#define NG_JAVA_MARK 1u

extern ng_pool ng_epool;
extern ng_pool ng_spool;

static inline ng_head *ng_slot_at(ng_pool *p, int32_t i) {
  char *c = atomic_load_explicit(&p->chunks[i >> NG_CHUNK_BITS], NG_ACQUIRE);
  return (ng_head *)(c + (size_t)(i & (NG_CHUNK - 1)) * p->size);
}
#define NG_ESLOT(i) ((ng_eslot *)ng_slot_at(&ng_epool, (i)))
#define NG_SSLOT(i) ((ng_sslot *)ng_slot_at(&ng_spool, (i)))

/* The id Java holds for a slot: its index, 7 bits of its incarnation (so that a late release or
 * read of an id whose slot was reused since is refused), and the stream bit. */
#define NG_INDEX_BITS 22
#define NG_INDEX_MASK ((1 << NG_INDEX_BITS) - 1)
#define NG_INC_MASK 0x7F
_Static_assert((NG_MAX_CHUNKS << NG_CHUNK_BITS) <= (1 << NG_INDEX_BITS), "slot indexes fit their bits");
_Static_assert(NG_INDEX_BITS < 23 && NG_INC_MASK < (1 << NG_WHERE_INDEX_SHIFT), "a slot's index + 1 and incarnation fit a record's stream bits");


/* ---------------------------------------------------------------- the op sequence */
#define NG_RESERVED (1 << 20)



static inline int64_t ng_reserve(int64_t up_to) {
  int64_t now = atomic_load_explicit(&ng_w.op_seq, NG_RELAXED);
  while (now < up_to && !atomic_compare_exchange_weak_explicit(&ng_w.op_seq, &now, up_to, NG_RELAXED, NG_RELAXED)) {
  }
  return up_to;
}

/* ---------------------------------------------------------------- streams (StreamRecord) */
/* Counting an op takes no lock, where StreamRecord takes its own. Op numbers past the reservation
 * reserve more, under the lock; a count made on a slot that was reused meanwhile is taken back.
 * A device synchronize reads each stream's count at its start (ng_api_device_sync_enter): what a
 * count adds is the count alone.
 *
 * The count itself is a plain load and store by the stream's owner, the first thread that counted
 * on it, and an atomic add by every thread once a second one did: most streams are fed by one
 * thread, and a locked add cost a record a third of its own work (and may wait for the stores the
 * real call left buffered). The owner says it is busy, then checks that it still owns the stream; a
 * thread that takes the stream from it marks it NG_SHARED, then runs membarrier(2), which makes every
 * thread of the process pass a full barrier, so the owner either saw NG_SHARED or its busy word is
 * seen, and waits for busy to clear before its own add. Without membarrier there are no owners. */
#define NG_SHARED ((uintptr_t)1)
void ng_stream_reserve(ng_sslot *s, int64_t n);
/* Lets streams get owners, once membarrier is registered on a thread of its own (at promotion). */
void ng_owners_start(void);
/* Whether streams have owners (membarrier registered), for stats(). */
extern atomic_int ng_owners;
/* At load, before any call: the maps, whether a record is one store, the owners' fork handler,
 * the hint every call site starts with (ng_hint_none). */
void ng_slots_init(void);
int64_t ng_stream_count_shared(ng_sslot *s);
void ng_stream_uncount(ng_sslot *s);

/* This thread's identity: its thread pointer. */
static inline uintptr_t ng_me(void) {
#if defined(__x86_64__)
  uintptr_t p;
  __asm__("mov %%fs:0, %0" : "=r"(p));
  return p;
#else
  return (uintptr_t)__builtin_thread_pointer();
#endif
}

/* The count of a thread that does not own the stream (ng_stream_count_shared), then the checks of
 * every count: more numbers reserved when they ran out, and the count taken back if the slot is
 * another stream's now. The count, or -1. */
int64_t ng_count_slow(ng_sslot *s, uint32_t inc);
int64_t ng_count_fixup(ng_sslot *s, uint32_t inc, int64_t mine);

/* Counts one op on a stream: its number (unique across streams), or -1 when the slot is another
 * stream's now. The owner's plain store inline, as the hot paths run it; the rest out of line. */
__attribute__((always_inline)) static inline int64_t ng_stream_count(ng_sslot *s, uint32_t inc) {
  uintptr_t me = ng_me();
  if (NG_LIKELY(atomic_load_explicit(&s->owner, NG_RELAXED) == me)) {
    atomic_store_explicit(&s->h.busy, 1, NG_RELAXED);
    /* busy before the check: the compiler keeps the order, a taker's membarrier makes the CPU's */
    atomic_signal_fence(memory_order_seq_cst);
    if (NG_LIKELY(atomic_load_explicit(&s->owner, NG_RELAXED) == me)) {
      int64_t mine = atomic_load_explicit(&s->enqueued, NG_RELAXED) + 1;
      atomic_store_explicit(&s->enqueued, mine, NG_RELEASE);
      atomic_store_explicit(&s->h.busy, 0, NG_RELEASE);
      if (NG_LIKELY((mine <= atomic_load_explicit(&s->reserved, NG_RELAXED)) &
                    (atomic_load_explicit(&s->h.inc, NG_ACQUIRE) == inc)))
        return mine;
      return ng_count_fixup(s, inc, mine);
    }
    atomic_store_explicit(&s->h.busy, 0, NG_RELEASE);
  }
  return ng_count_slow(s, inc);
}

static inline void ng_stream_enqueue(ng_sslot *s, uint32_t inc) { (void)ng_stream_count(s, inc); }

/* The op number the completion of a record counted as op mine covers (StreamRecord.enqueueRecord's
 * rule): all of its stream's work before it when the count at its enter was mine - 1, else the
 * work before its enter, or before its own op if that is less. */
static inline int64_t ng_record_covers(int64_t at_enter, int64_t mine) {
  int64_t before = mine - 1;
  if (NG_LIKELY(at_enter == before)) return mine;
  return before < at_enter ? before : at_enter;
}

/* The op number an event record's completion covers (ng_record_covers), and the record's own op
 * number (unique: an event's record number); -1 if the slot is another stream's now.
 * count_at_enter < 0: the stream was not known at enter. */
static inline int64_t ng_stream_enqueue_record(ng_sslot *s, uint32_t inc, int64_t count_at_enter, int64_t *mine_out) {
  /* a count read at enter is this incarnation's (else ng_stream_count refuses) and so not below its base */
  int64_t at_enter = count_at_enter >= 0 ? count_at_enter : atomic_load_explicit(&s->base, NG_RELAXED);
  int64_t mine = ng_stream_count(s, inc);
  if (NG_UNLIKELY(mine < 0)) return -1;
  *mine_out = mine;
  return ng_record_covers(at_enter, mine);
}

/* Ops up to number n are complete; numbers of another incarnation fall below its base. */
static inline void ng_stream_mark_done(ng_sslot *s, int64_t n) {
  while (1) {
    int64_t d = atomic_load_explicit(&s->done, NG_ACQUIRE);
    if (n <= d || n > atomic_load_explicit(&s->enqueued, NG_ACQUIRE)) return;
    if (atomic_compare_exchange_weak_explicit(&s->done, &d, n, memory_order_acq_rel, NG_RELAXED)) return;
  }
}


/* ---------------------------------------------------------------- events (EventRecord) */
#define NG_REC_STREAM_INC_SHIFT 0
#define NG_REC_STREAM_SHIFT NG_WHERE_INDEX_SHIFT
#define NG_REC_INC_SHIFT 30
#define NG_REC_DELTA_SHIFT 37
#define NG_REC_DELTA_UNKNOWN ((1ull << 27) - 1)

static inline uint64_t ng_rec_where(int32_t stream, uint32_t stream_inc, uint32_t inc, int64_t seq, int64_t op) {
  /* without branches (a record's hot path runs straight through): op <= 0 or op > seq is unknown */
  uint64_t d = (uint64_t)(seq - op);
  uint64_t delta = (op > 0) & (op <= seq) & (d < NG_REC_DELTA_UNKNOWN) ? d : NG_REC_DELTA_UNKNOWN;
  return (uint64_t)(uint32_t)(stream + 1) << NG_REC_STREAM_SHIFT | (uint64_t)(inc & NG_INC_MASK) << NG_REC_INC_SHIFT |
         (uint64_t)(stream_inc & NG_INC_MASK) << NG_REC_STREAM_INC_SHIFT | delta << NG_REC_DELTA_SHIFT;
}
static inline int32_t ng_rec_stream(ng_rec r) {
  return (int32_t)((r.where >> NG_REC_STREAM_SHIFT) & ((1u << (NG_REC_INC_SHIFT - NG_REC_STREAM_SHIFT)) - 1)) - 1;
}
static inline int ng_rec_of(ng_rec r, uint32_t inc) { return ((r.where >> NG_REC_INC_SHIFT) & NG_INC_MASK) == (inc & NG_INC_MASK); }
static inline int ng_rec_on_stream_inc(ng_rec r, uint32_t stream_inc) {
  return ((r.where >> NG_REC_STREAM_INC_SHIFT) & NG_INC_MASK) == (stream_inc & NG_INC_MASK);
}
static inline int64_t ng_rec_op(ng_rec r) {
  uint64_t delta = r.where >> NG_REC_DELTA_SHIFT;
  return delta == NG_REC_DELTA_UNKNOWN ? 0 : r.seq - (int64_t)delta;
}

/* Whether a record is one 16-byte store (aligned), a release, read by one load, an acquire:
 * single-copy atomic on x86-64 with AVX and on aarch64 with FEAT_LSE2 (ng_arch.h), so a record
 * takes no lock and no locked instruction. Elsewhere, and under the thread sanitizer (which cannot
 * see such a store), the slot's lock guards the two halves and readers read them as a seqlock.
 * Set once, before the first slot. */
#if NG_REC_WHOLE_POSSIBLE
/* The one store, where ng_w.rec_whole */
static inline void ng_rec_store_whole(ng_eslot *e, int64_t seq, uint64_t where) { ng_arch_store_pair(&e->rec, seq, where); }
#endif

static inline void ng_rec_store(ng_eslot *e, int64_t seq, uint64_t where) {
#if NG_REC_WHOLE_POSSIBLE
  if (NG_LIKELY(ng_w.rec_whole)) {
    ng_rec_store_whole(e, seq, where);
    return;
  }
#endif
  ng_word_lock(&e->h.lock);
  __atomic_store_n(&e->rec.seq, seq, __ATOMIC_RELAXED);
  __atomic_store_n(&e->rec.where, where, __ATOMIC_RELAXED);
  ng_word_unlock(&e->h.lock);
}

static inline ng_rec ng_rec_load(ng_eslot *e) {
  ng_rec r;
#if NG_REC_WHOLE_POSSIBLE
  if (NG_LIKELY(ng_w.rec_whole)) {
    ng_arch_pair v = ng_arch_load_pair(&e->rec);
    r.seq = (int64_t)v.w[0];
    r.where = v.w[1];
    return r;
  }
#endif
  int spins = 0;
  while (1) {
    uint32_t version = ng_read_version(&e->h.lock);
    r.seq = __atomic_load_n(&e->rec.seq, __ATOMIC_RELAXED);
    r.where = __atomic_load_n(&e->rec.where, __ATOMIC_RELAXED);
    if (ng_validate(&e->h.lock, version)) return r;
    ng_back_off(&spins);
  }
}

/* The number of the event's last record in incarnation inc, 0 if none. */
static inline int64_t ng_event_last_seq(ng_eslot *e, uint32_t inc) {
  ng_rec r = ng_rec_load(e);
  return ng_rec_of(r, inc) ? r.seq : 0;
}

/* A record, unless the slot is another incarnation's or ended by now. A writer that checked just
 * before a release and a reuse may still land its record on the next incarnation: its incarnation
 * bits tell readers to ignore it. */
__attribute__((always_inline)) static inline void ng_event_recorded(ng_eslot *e, uint32_t inc, ng_sslot *s, uint32_t sinc,
                                                                 int64_t op, int64_t seq) {
  uint32_t now = atomic_load_explicit(&e->h.inc, NG_ACQUIRE);
  if (NG_UNLIKELY((now != inc) | ng_ended(&e->h.lock))) return;
  atomic_store_explicit(&e->stream_handle, atomic_load_explicit(&s->h.handle, NG_RELAXED), NG_RELAXED);
  ng_rec_store(e, seq, ng_rec_where(ng_slot_index(&s->h), sinc, inc, seq, op));
}

/* The record numbered seq is complete, and with it its stream's ops up to the record. */
static inline void ng_event_completed(ng_eslot *e, int64_t seq) {
  if (seq == 0 || seq == atomic_load_explicit(&e->completed_seq, NG_ACQUIRE)) return;
  ng_rec r = ng_rec_load(e);
  if (r.seq != seq || !ng_rec_of(r, atomic_load_explicit(&e->h.inc, NG_ACQUIRE))) return;
  /* the stream first: once completed_seq says so, the record's work is marked done */
  int32_t on = ng_rec_stream(r);
  if (on >= 0) ng_stream_mark_done(NG_SSLOT(on), ng_rec_op(r));
  while (1) {
    int64_t done = atomic_load_explicit(&e->completed_seq, NG_ACQUIRE);
    if (done == seq || ng_rec_load(e).seq != seq) return;
    if (atomic_compare_exchange_weak_explicit(&e->completed_seq, &done, seq, memory_order_acq_rel, NG_RELAXED)) return;
  }
}


static inline int ng_special_stream(uint64_t h) { return h == 0 || h == NG_STREAM_LEGACY || h == NG_STREAM_PER_THREAD; }

/* ---------------------------------------------------------------- the wrappers' hot paths */
/* The hot calls of the application on C slots, inlined into each wrapper with its effect known at
 * compile time: one lock-free lookup per handle before the real call, the slot's own update after
 * it, nothing else. The common case of each runs straight through in as few instructions as it
 * can (what a wrapper runs after a real call is paid at the host's rate of the moment, and a slow
 * host pays 1.5-2.5 times a fast one's: docs/performance.md); every other case (a miss, a JAVA
 * mark, a special stream, work inside a native group, a stream shared by threads, a reused slot)
 * leaves it for an out-of-line function, before the real call for the generic path (ng_enter /
 * ng_exit), after it for the rest of the same update. */
#define NG_HOT __attribute__((always_inline))
#define NG_COLD __attribute__((noinline, cold))

/* A caller's hints start as this slot, which no key is valid on (ended): no NULL test on the hot path. */
extern ng_head ng_no_slot;

static inline ng_head *ng_hot_slot(int events, int32_t i) {
  ng_pool *p = events ? &ng_epool : &ng_spool;
  char *c = atomic_load_explicit(&p->chunks[i >> NG_CHUNK_BITS], NG_ACQUIRE);
  return (ng_head *)(c + (size_t)(i & (NG_CHUNK - 1)) * (events ? sizeof(ng_eslot) : sizeof(ng_sslot)));
}

/* Whether a slot is key's: an ended slot's key is dead (ng_mark_ended). Its incarnation is read first. */
static inline int ng_hot_valid(ng_head *h, uint64_t key, uint32_t *inc) {
  *inc = atomic_load_explicit(&h->inc, NG_ACQUIRE);
  return atomic_load_explicit(&h->key, NG_ACQUIRE) == key;
}

/* The slot of key: the call site's hint when it is that handle's (a loop on one event or stream
 * reads no map), else the map's (ng_hot_find_map, out of line), which becomes the hint if the site
 * has none or an ended one. NULL: not a C slot. The wrappers test the hint alone (NG_FIND_HINT)
 * and leave a miss to a function of its own, whose lookups go on to the maps (NG_FIND_MAP): a call
 * out of line on the wrapper's path would keep its arguments in saved registers. */
ng_head *ng_hot_find_map(int events, ng_caller *c, uint64_t key, uint32_t *inc);
/* The event slots this thread made last (ng_made_event), which its hint misses ask before the map:
 * a framework records each event it makes right after making it (PyTorch's end event, on the
 * launching thread), at a call site whose hint holds an earlier operation's event. Their lines are
 * the ones the creation just wrote; the map's would be a miss. */
#define NG_MADE 2
extern __thread ng_head *ng_made[NG_MADE];
static inline void ng_made_event(ng_head *h) {
  ng_made[1] = ng_made[0];
  ng_made[0] = h;
}
/* The slot of key if it is the event this thread made last (or the one before), else NULL: a slot
 * once made stays a slot (pools are never freed), so the test is a hint's. */
NG_HOT static inline ng_head *ng_hot_made(uint64_t key, uint32_t *inc) {
  for (int i = 0; i < NG_MADE; i++) {
    ng_head *m = ng_made[i];
    if (m != NULL && ng_hot_valid(m, key, inc)) return m;
  }
  return NULL;
}
NG_HOT static inline ng_head *ng_hot_find(int events, ng_caller *c, uint64_t key, uint32_t *inc) {
  ng_head *hint = atomic_load_explicit(&c->hint[events], NG_ACQUIRE);
  if (NG_LIKELY(ng_hot_valid(hint, key, inc))) return hint;
  return ng_hot_find_map(events, c, key, inc);
}

/* Whether a stream hint that missed the stream's own handle is the legacy default stream's slot
 * (0 and cudaStreamLegacy) where the process sees one device: ng_legacy_key (learned by
 * ng_track.c's learn_devices), that slot's key then, else 0. */
extern _Atomic uint64_t ng_legacy_key;
NG_HOT static inline int ng_hot_legacy(ng_head *hint, uint64_t stream, uint32_t *inc) {
  uint64_t k = atomic_load_explicit(&ng_legacy_key, NG_RELAXED);
  return stream <= NG_STREAM_LEGACY && k != 0 && ng_hot_valid(hint, k, inc);
}

/* A record's update after its op was counted as mine, for the cases the hot path leaves: another
 * thread counted on the stream between the record's enter (count at_enter) and its count. */
void ng_record_slow(ng_eslot *e, uint32_t einc, ng_sslot *s, uint32_t sinc, int64_t at_enter, int64_t mine);

/* A record that covers all of its stream's work before it (the count at its enter was mine - 1:
 * delta 0), as ng_event_recorded stores it; unless the slot is another incarnation's by now. One
 * that ended during the call (the event destroyed while recorded) takes it harmlessly: nothing
 * reads an ended slot's record. gated: the call passed its open gate (a constant). */
NG_HOT static inline void ng_hot_recorded(ng_eslot *e, uint32_t einc, ng_sslot *s, uint32_t sinc, int64_t mine, int gated) {
  if (NG_UNLIKELY(atomic_load_explicit(&e->h.inc, NG_ACQUIRE) != einc)) return;
  atomic_store_explicit(&e->stream_handle, atomic_load_explicit(&s->h.handle, NG_RELAXED), NG_RELAXED);
  /* the event's bits masked before the shift (the compiler would mask after it, with a 10-byte constant) */
  uint32_t ebits = einc & NG_INC_MASK;
  __asm__("" : "+r"(ebits));
  uint64_t where = (uint64_t)(s->h.where_base | (sinc & NG_INC_MASK)) | (uint64_t)ebits << NG_REC_INC_SHIFT;
#if NG_REC_WHOLE_POSSIBLE
  /* a gate only opens where a record is one store (ng_gate_slow): no test of rec_whole behind one;
   * a _miss may run with its gate closed (no AVX: the store would fault; no LSE2: it could tear) */
  if (gated) ng_rec_store_whole(e, mine, where);
  else ng_rec_store(e, mine, where);
#else
  (void)gated;
  ng_rec_store(e, mine, where);
#endif
}

/* An event seen complete (a query's or synchronize's success) whose last record, numbered seq when
 * the call began, is not marked complete yet. */
void ng_event_seen_complete(ng_eslot *e, uint32_t inc, int64_t seq);
/* A stream seen idle whose ops up to n (its count when the call began) are not all marked done. */
void ng_stream_seen_idle(ng_sslot *s, uint32_t inc, int64_t n);

#endif
