/* The hot state of the events and streams native code uses, and what each wrapped call does.
 *
 * A C slot per event and stream that native code created, or a stream first seen in native work,
 * ports the Java tracker's EventRecord and StreamRecord exactly: a one-word lock (NG_ENDED, NG_HELD and a
 * version: a CAS to take it, a release store to free it, a seqlock for readers), an event's last
 * record in one 16-byte word stored whole (no lock: see ng_rec in ng_slots.h), op numbers
 * reserved 2^20 at a time in one op sequence (an op counted by its stream's owner with a plain
 * store, or by one atomic add once the stream is shared, where the Java record takes its lock),
 * an event record numbered by its own op number (unique: op ranges of streams never overlap,
 * where the Java tracker takes per-thread blocks of the sequence), completions raised by CAS,
 * enqueueRecord's count-at-enter rule, markDone. A device synchronize here covers each stream's
 * count at its start (where the Java tracker compares op sequences: see ng_api_device_sync_enter).
 * Hot calls on C slots never enter the JVM. Handles Java follows stay Java's: a native hot call on
 * one goes to Java (hotEnter/hotExit); the maps keep a JAVA mark for them, a hint only.
 *
 * Slots are never freed to the system: a slot is reused for another handle once C ended it and
 * Java released it (releaseSlot), with a new incarnation, which a thread that found the slot
 * before checks under the slot's lock. Op numbers of an old incarnation lie below the base of any
 * later one, so markDone and completions of the old one change nothing in the new. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ng.h"
#include "ng_bt.h"
#include "ng_caller.h"
#include "ng_driver.h"
#include "ng_hotspot.h"
#include "ng_log.h"
#include "ng_map.h"
#include "ng_prof.h"
#include "ng_slots.h"
#include "ng_stack.h"
#include "ng_track.h"
#include "ng_upcall.h"

__thread ng_thread ng_self;
pthread_key_t ng_thread_key;
static _Atomic uint32_t thread_ids;

/* An add to a counter whose writers all hold the map lock (ng_locked's): a plain add, no locked
 * instruction on a creation's path; readers read it relaxed. */
static inline void locked_add(_Atomic int64_t *c, int64_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, NG_RELAXED) + n, NG_RELAXED);
}
static inline void locked_add32(_Atomic int32_t *c, int32_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, NG_RELAXED) + n, NG_RELAXED);
}

static int slot_id(ng_pool *p, int32_t i, uint32_t inc) {
  return i | (int)((inc & NG_INC_MASK) << NG_INDEX_BITS) | (p == &ng_spool ? NG_STREAM_SLOT_BIT : 0);
}

/* The slot an id names, if it is still that incarnation; NULL otherwise. */
static ng_head *slot_of_id(ng_pool *p, int id) {
  if (id < 0 || ((id & NG_STREAM_SLOT_BIT) != 0) != (p == &ng_spool)) return NULL;
  int32_t i = id & NG_INDEX_MASK;
  if (i >= atomic_load_explicit(&p->high, NG_ACQUIRE)) return NULL;
  ng_head *h = ng_slot_at(p, i);
  if ((atomic_load_explicit(&h->inc, NG_ACQUIRE) & NG_INC_MASK) != ((uint32_t)id >> NG_INDEX_BITS & NG_INC_MASK)) return NULL;
  return h;
}

/* A free slot (kept: one off the free list, or -1), or -1 when 4M are in use; under the map lock.
 * The caller sets it up. */
static int32_t slot_alloc_as(ng_pool *p, int32_t kept) {
  int32_t i = kept;
  if (i < 0 && (i = NG_FREE_HEAD(p)) >= 0) {
    NG_FREE_HEAD(p) = ng_cold_of(ng_slot_at(p, i))->next_free;
  } else if (i < 0) {
    i = atomic_load_explicit(&p->high, NG_RELAXED);
    if ((i >> NG_CHUNK_BITS) >= NG_MAX_CHUNKS) return -1;
    if ((i & (NG_CHUNK - 1)) == 0) {
      char *chunk = aligned_alloc(64, (size_t)NG_CHUNK * p->size);
      if (chunk == NULL) return -1;
      memset(chunk, 0, (size_t)NG_CHUNK * p->size);
      atomic_store_explicit(&p->chunks[i >> NG_CHUNK_BITS], chunk, NG_RELEASE);
    }
    atomic_store_explicit(&p->high, i + 1, NG_RELEASE);
  }
  locked_add32(&ng_locked.taken[p->kind], 1);
  ng_head *h = ng_slot_at(p, i);
  h->where_base = (uint32_t)(i + 1) << NG_WHERE_INDEX_SHIFT;
  /* a new incarnation: NG_ENDED cleared, the version kept going */
  atomic_store_explicit(&h->lock, atomic_load_explicit(&h->lock, NG_RELAXED) & ~(NG_ENDED | NG_HELD), NG_RELAXED);
  /* a release: a hot path that reads the new incarnation (acquire) sees the old key's end and the
   * lock word's reset. Only this function writes it, under the map lock: a store, not a locked add */
  atomic_store_explicit(&h->inc, atomic_load_explicit(&h->inc, NG_RELAXED) + 1, NG_RELEASE);
  return i;
}

static int32_t slot_alloc(ng_pool *p) { return slot_alloc_as(p, -1); }

/* A creation site's last lazily released event slot, kept for that site's next lazy creation: a
 * framework's site then makes its events in the slot it made them in before, and the hints of the
 * sites that record and query them (one slot each) keep hitting, where the free list's order would
 * swap two sites' slots every operation. Direct-mapped by site, under the map lock; a slot pushed
 * out goes to the free list. At most one slot per entry: bounded. */
#define REUSE_BITS 8
static struct {
  uint64_t site;
  int32_t slot;
} reuse[1 << REUSE_BITS];

static inline uint32_t reuse_at(uint64_t site) { return (uint32_t)((site * 0x9E3779B97F4A7C15ull) >> (64 - REUSE_BITS)); }

static void reuse_keep(uint64_t site, int32_t i) {
  uint32_t r = reuse_at(site);
  if (reuse[r].site != 0) {
    ng_cold_of(ng_slot_at(&ng_epool, reuse[r].slot))->next_free = NG_FREE_HEAD(&ng_epool);
    NG_FREE_HEAD(&ng_epool) = reuse[r].slot;
  }
  reuse[r].site = site;
  reuse[r].slot = i;
}

static int32_t reuse_take(uint64_t site) {
  uint32_t r = reuse_at(site);
  if (reuse[r].site != site) return -1;
  reuse[r].site = 0;
  return reuse[r].slot;
}

/* Drops refs; the slot is free once neither C nor Java holds it. Under the map lock if locked.
 * A slot's refs change under the map lock alone (plain stores; readers without it load them with
 * acquire): a lazy release then needs no locked instruction of its own for them. */
static void slot_unref_as(ng_pool *p, int32_t i, uint32_t refs, int locked) {
  ng_head *h = ng_slot_at(p, i);
  if (refs & NG_REF_C) refs |= NG_REF_LAZY; /* C's end ends its lazy incarnation too */
  if (!locked) ng_map_lock();
  uint32_t before = atomic_load_explicit(&ng_cold_of(h)->refs, NG_RELAXED);
  atomic_store_explicit(&ng_cold_of(h)->refs, before & ~refs, NG_RELEASE);
  if ((before & refs) != 0 && (before & ~refs) == 0) {
    atomic_store_explicit(&h->key, NG_DEAD_KEY, NG_RELAXED);
    ng_cold_of(h)->next_free = NG_FREE_HEAD(p);
    NG_FREE_HEAD(p) = i;
    locked_add32(&ng_locked.given_back[p->kind], 1);
  }
  if (!locked) ng_map_unlock();
}

static void slot_unref(ng_pool *p, int32_t i, uint32_t refs) { slot_unref_as(p, i, refs, 0); }

/* The slot ended: hot calls that found it before change nothing now. */
static void slot_end(ng_head *h) {
  ng_word_lock(&h->lock);
  ng_mark_ended(h);
  ng_word_unlock(&h->lock);
}

/* What find's entry v names: its slot, NULL with *java for a JAVA mark, or NULL with *java 0
 * (nothing, or a slot no longer key's). */
static inline ng_head *found(ng_pool *p, uint64_t key, uint64_t v, uint32_t *inc, int *java) {
  *java = v == NG_JAVA_MARK;
  if (v < 2) return NULL;
  ng_head *h = ng_slot_at(p, (int32_t)(v - 2));
  *inc = atomic_load_explicit(&h->inc, NG_ACQUIRE);
  return atomic_load_explicit(&h->key, NG_ACQUIRE) == key && !ng_ended(&h->lock) ? h : NULL;
}

/* find's retry under the map lock, out of line: a lock-free lookup misses only under concurrent
 * writes, or where the map holds nothing for key (a release's code stays a few lines) */
static NG_COLD ng_head *find_locked(ng_pool *p, uint64_t key, uint32_t *inc, int *java) {
  ng_map_lock();
  ng_head *h = found(p, key, ng_map_get_locked(p->map, key), inc, java);
  ng_map_unlock();
  return h;
}

/* The slot a map holds for key: the slot, NULL with *java for a JAVA mark, or NULL. */
static ng_head *find(ng_pool *p, uint64_t key, uint32_t *inc, int *java) {
  ng_head *h = found(p, key, ng_map_get(p->map, key), inc, java);
  if (NG_LIKELY(h != NULL || *java)) return h;
  return find_locked(p, key, inc, java);
}

static int64_t stream_pending_ops(ng_sslot *s) {
  int64_t d = atomic_load_explicit(&s->done, NG_ACQUIRE);
  return atomic_load_explicit(&s->enqueued, NG_ACQUIRE) - d;
}

/* Whether recorded and its last record never seen complete; the stream of that record. */
static int event_pending(ng_eslot *e, int32_t *stream, uint64_t *stream_handle) {
  int spins = 0;
  while (1) {
    int64_t done = atomic_load_explicit(&e->completed_seq, NG_ACQUIRE);
    ng_rec r = ng_rec_load(e);
    uint64_t handle = atomic_load_explicit(&e->stream_handle, NG_RELAXED);
    if (atomic_load_explicit(&e->completed_seq, NG_ACQUIRE) == done) {
      if (!ng_rec_of(r, atomic_load_explicit(&e->h.inc, NG_ACQUIRE))) {
        *stream = -1;
        *stream_handle = 0;
        return 0;
      }
      /* the stream's handle from its slot while that is still the record's stream, else as recorded */
      int32_t on = ng_rec_stream(r);
      if (on >= 0) {
        ng_sslot *s = NG_SSLOT(on);
        uint32_t before = atomic_load_explicit(&s->h.inc, NG_ACQUIRE);
        uint64_t now = atomic_load_explicit(&s->h.handle, NG_ACQUIRE);
        if (ng_rec_on_stream_inc(r, before) && atomic_load_explicit(&s->h.inc, NG_ACQUIRE) == before) handle = now;
      }
      *stream = on;
      *stream_handle = handle;
      return r.seq != 0 && done != r.seq;
    }
    ng_back_off(&spins);
  }
}


static inline void thread_gone(void *p) {
  (void)p;
  free(ng_self.grouped);
  ng_self.grouped = NULL;
  ng_self.cap = ng_self.ngrouped = 0;
}

/* ---------------------------------------------------------------- making slots */

#define LEGACY_KEY 0x8000000000000000ull
#define PER_THREAD_KEY 0xC000000000000000ull

static uint64_t special_key(uint64_t handle, int device) {
  uint64_t dev = (uint64_t)device & 0xFFFF;
  if (handle == NG_STREAM_PER_THREAD) {
    if (ng_self.id == 0) ng_self.id = atomic_fetch_add_explicit(&thread_ids, 1, NG_RELAXED) + 1;
    return PER_THREAD_KEY | (uint64_t)ng_self.id << 16 | dev;
  }
  return LEGACY_KEY | dev;
}

/* Where the process sees one device (the runtime's count is 1, as CUDA_VISIBLE_DEVICES naming one
 * GPU a process makes it: torchrun's and a container's ranks), every device number is 0 and the
 * legacy default stream's key a constant, which the wrappers' hot paths take (ng_legacy_key, ng_slots.h)
 * with no cudaGetDevice and no communicator's or event's device looked up: PyTorch runs its
 * synchronous collectives and their records on that stream. Learned at the first special stream
 * (the runtime is in use by then); 0 until then, and for good where the process sees several. */
static atomic_int devices_learned; /* not in the read-mostly line: read only where ng_legacy_key is 0 */

/* The thread's current device, and the first time the device count with it (after the
 * cudaGetDevice succeeded: a failed count would be the application's last error). */
static NG_COLD int learn_devices(void) {
  int device;
  int ok = ng_get_device(&device) == 0;
  if (!atomic_exchange(&devices_learned, 1) && ok && ng_device_count() == 1)
    atomic_store_explicit(&ng_legacy_key, LEGACY_KEY, NG_RELEASE);
  return device;
}

static inline int one_device(void) {
  if (NG_LIKELY(atomic_load_explicit(&ng_legacy_key, NG_ACQUIRE) != 0)) return 1;
  if (NG_UNLIKELY(!atomic_load_explicit(&devices_learned, NG_ACQUIRE))) (void)learn_devices();
  return atomic_load_explicit(&ng_legacy_key, NG_ACQUIRE) != 0;
}

/* The thread's current device: 0 where the process sees one device (no call: a creation's and a
 * release's cudaGetDevice, about 220 cycles on an H100 host with PyTorch's loop around it), else the
 * runtime's. */
static int device_now(void) {
  if (NG_LIKELY(atomic_load_explicit(&ng_legacy_key, NG_ACQUIRE) != 0)) return 0;
  if (NG_UNLIKELY(!atomic_load_explicit(&devices_learned, NG_ACQUIRE))) return learn_devices();
  return ng_current_device();
}

/* The device a special stream's work goes to: the communicator's for a collective; a record's
 * event's (cudaEventRecord succeeds only where "event and stream are on the same device", so a
 * counted record's stream is its event's device's, and no cudaGetDevice is made: 37 ns a record on
 * the H200's cudart); the thread's current one otherwise (a stream may wait for another device's
 * event). One rule for the generic path (work_enter, stream_sync_enter) and the hot paths
 * (ng_special_key, and ng_special_record_key with the event's slot), which must find the same slot. */
enum { SPECIAL_OTHER, SPECIAL_ENQUEUE, SPECIAL_RECORD };
static int comm_device(uint64_t comm);
static int event_device(uint64_t event);
/* A record's device: its event's slot's (-1: the event has none), else the current one. */
static int record_device(int event_device) {
  return event_device >= 0 ? event_device : device_now();
}
static int special_device(uint64_t handle, int kind) {
  if (one_device()) return 0;
  if (kind == SPECIAL_ENQUEUE) return comm_device(handle);
  return kind == SPECIAL_RECORD ? record_device(event_device(handle)) : device_now();
}

/* A special stream's key for a hot path's map lookup: per device and, for the per-thread stream, thread. */
uint64_t ng_special_key(uint64_t stream, uint64_t comm, int enqueue) {
  return special_key(stream, special_device(comm, enqueue ? SPECIAL_ENQUEUE : SPECIAL_OTHER));
}

uint64_t ng_special_record_key(uint64_t stream, int event_device) { return special_key(stream, record_device(event_device)); }

/* A new slot for key, replacing whatever the map held (a JAVA mark, or a slot whose release was
 * not seen); under the map lock. Returns the slot's index or -1. */
static int32_t event_slot_new(uint64_t handle, int device, uint32_t *inc, int32_t kept) {
  int32_t i = slot_alloc_as(&ng_epool, kept);
  if (i < 0) return -1;
  ng_eslot *e = NG_ESLOT(i);
  atomic_store_explicit(&e->h.handle, handle, NG_RELAXED);
  atomic_store_explicit(&e->cold.device, device, NG_RELAXED);
  atomic_store_explicit(&e->cold.refs, NG_REF_C, NG_RELAXED);
  *inc = atomic_load_explicit(&e->h.inc, NG_RELAXED);
  atomic_store_explicit(&e->completed_seq, 0, NG_RELAXED);
  atomic_store_explicit(&e->stream_handle, 0, NG_RELAXED);
  ng_rec_store(e, 0, ng_rec_where(-1, 0, *inc, 0, 0));
  atomic_store_explicit(&e->h.key, handle, NG_RELEASE);
  uint64_t old = ng_map_swap(&ng_events, handle, (uint64_t)i + 2);
  if (old >= 2) {
    ng_head *h = ng_slot_at(&ng_epool, (int32_t)(old - 2));
    if (atomic_load_explicit(&h->key, NG_RELAXED) == handle) {
      slot_end(h);
      slot_unref_as(&ng_epool, (int32_t)(old - 2), NG_REF_C, 1);
    }
  }
  return i;
}

static int32_t stream_slot_new(uint64_t key, uint64_t handle, int device, uint32_t *inc) {
  uint64_t old = ng_map_get_locked(&ng_streams, key);
  int32_t i = slot_alloc(&ng_spool);
  if (i < 0) return -1;
  ng_sslot *s = NG_SSLOT(i);
  int64_t base = atomic_fetch_add_explicit(&ng_w.op_seq, NG_RESERVED + 1, NG_RELAXED) + 1;
  atomic_store_explicit(&s->h.handle, handle, NG_RELAXED);
  atomic_store_explicit(&s->cold.device, device, NG_RELAXED);
  atomic_store_explicit(&s->cold.refs, NG_REF_C, NG_RELAXED);
  atomic_store_explicit(&s->base, base, NG_RELAXED);
  atomic_store_explicit(&s->reserved, base + NG_RESERVED, NG_RELAXED);
  atomic_store_explicit(&s->sync_token, 0, NG_RELAXED);
  atomic_store_explicit(&s->enqueued, base, NG_RELAXED);
  atomic_store_explicit(&s->owner, 0, NG_RELAXED);
  atomic_store_explicit(&s->h.busy, 0, NG_RELAXED);
  atomic_store_explicit(&s->done, base, NG_RELAXED);
  atomic_store_explicit(&s->h.key, key, NG_RELEASE);
  *inc = atomic_load_explicit(&s->h.inc, NG_RELAXED);
  ng_map_put(&ng_streams, key, (uint64_t)i + 2);
  if (old >= 2) {
    ng_head *h = ng_slot_at(&ng_spool, (int32_t)(old - 2));
    if (atomic_load_explicit(&h->key, NG_RELAXED) == key) {
      slot_end(h);
      slot_unref_as(&ng_spool, (int32_t)(old - 2), NG_REF_C, 1);
    }
  }
  return i;
}

/* Ends the C state of a handle: released, or moved to Java (then a JAVA mark stays). */
static void forget(ng_pool *p, uint64_t key, int mark_java) {
  ng_map_lock();
  uint64_t v = ng_map_get_locked(p->map, key);
  int32_t i = -1;
  if (v >= 2 && atomic_load_explicit(&ng_slot_at(p, (int32_t)(v - 2))->key, NG_RELAXED) == key) i = (int32_t)(v - 2);
  if (mark_java) {
    ng_map_put(p->map, key, NG_JAVA_MARK);
  } else if (v != 0) {
    ng_map_remove(p->map, key);
  }
  /* ended under the map lock, as every end of a slot is (forget_slot relies on it) */
  if (i >= 0) {
    slot_end(ng_slot_at(p, i));
    slot_unref_as(p, i, NG_REF_C, 1);
  }
  ng_map_unlock();
}

/* Ends the slot a release found before its real call, if it is still that incarnation, and takes
 * its key out of the map only if the map still names that incarnation: the address may have been
 * handed out (and given a new slot) by the time the release returns, and that slot may be this
 * one again, freed and taken by the address's next creation on another thread. */
static void forget_slot(ng_pool *p, uint64_t key, ng_head *h, uint32_t inc) {
  /* one lock section for the map, the end and the free list (a release on a framework's hot path) */
  ng_map_lock();
  /* the incarnation changes under the map lock alone */
  int same = atomic_load_explicit(&h->inc, NG_RELAXED) == inc;
  uint64_t v = ng_map_get_locked(p->map, key);
  if (same && (v == (uint64_t)ng_slot_index(h) + 2 || v == NG_JAVA_MARK)) ng_map_remove(p->map, key);
  if (same && p == &ng_epool && ng_w.rec_whole) {
    /* an event's lock word guards only a record's two halves where a record is not one store:
     * here every writer of it holds the map lock (slot_alloc, slot_end, lazy_release, this) */
    ng_mark_ended(h);
  } else if (same) {
    ng_word_lock(&h->lock);
    ng_mark_ended(h);
    ng_word_unlock(&h->lock);
  }
  if (same) slot_unref_as(p, ng_slot_index(h), NG_REF_C, 1);
  ng_map_unlock();
}

static void mark_java(ng_pool *p, uint64_t key) {
  ng_map_lock();
  if (ng_map_get_locked(p->map, key) == 0) ng_map_put(p->map, key, NG_JAVA_MARK);
  ng_map_unlock();
}

static void unmark_java(ng_pool *p, uint64_t key) {
  ng_map_lock();
  if (ng_map_get_locked(p->map, key) == NG_JAVA_MARK) ng_map_remove(p->map, key);
  ng_map_unlock();
}

/* Java took the slot (a record of its own points at it), unless C ended it meanwhile: a release
 * racing the creation's upcall. A release of an id without NG_REF_J is then a no-op. */
static void java_holds(ng_pool *p, int32_t i, uint32_t inc) {
  ng_head *h = ng_slot_at(p, i);
  ng_map_lock();
  uint32_t r = atomic_load_explicit(&ng_cold_of(h)->refs, NG_RELAXED);
  if ((r & NG_REF_C) && atomic_load_explicit(&h->inc, NG_RELAXED) == inc)
    atomic_store_explicit(&ng_cold_of(h)->refs, r | NG_REF_J, NG_RELEASE);
  ng_map_unlock();
}

static int comm_device(uint64_t comm) {
  uint64_t v = ng_map_get(&ng_comms, comm);
  if (v == 0) {
    ng_map_lock();
    v = ng_map_get_locked(&ng_comms, comm);
    ng_map_unlock();
  }
  return v != 0 ? (int)(uint32_t)v - 1 : device_now();
}

/* The device of the event's C slot, -1 if it has none. */
static int event_device(uint64_t event) {
  uint64_t v = ng_map_get(&ng_events, event);
  if (v < 2) return -1;
  ng_eslot *e = NG_ESLOT((int32_t)(v - 2));
  return atomic_load_explicit(&e->h.key, NG_ACQUIRE) == event ? atomic_load_explicit(&e->cold.device, NG_RELAXED) : -1;
}

static uint32_t comm_creations; /* under the map lock */

/* A communicator's entry: its device + 1 in the low half, its creation's number in the high half,
 * so that a destroy's exit takes out the entry it found at its enter and not one a communicator
 * made at the same address meanwhile put there (comm_released). */
static void comm_created(uint64_t comm, int device) {
  if (comm == 0) return;
  ng_map_lock();
  ng_map_put(&ng_comms, comm, (uint64_t)++comm_creations << 32 | ((uint32_t)device + 1));
  ng_map_unlock();
}

/* After a destroy or abort that succeeded: the entry its enter found (seen), if the address still
 * holds it. A communicator the library made at the freed address before this exit keeps its own. */
static void comm_released(uint64_t comm, uint64_t seen) {
  if (seen == 0) return;
  ng_map_lock();
  ng_map_remove_if(&ng_comms, comm, seen);
  ng_map_unlock();
}

void ng_track_init(void) {
  ng_slots_init();
  pthread_key_create(&ng_thread_key, thread_gone);
}

/* ---------------------------------------------------------------- the wrapped calls */
enum { MODE_NONE, MODE_C, MODE_C_NEW, MODE_JAVA, MODE_UP, MODE_LAZY };

#define A(k, pos) ((pos) >= 0 ? (k)->a[(pos)] : 0)

/* The stream a wrapped call's work goes to: C's (found or to be made at exit) or Java's. */
static void work_enter(ng_call *k, uint64_t handle, uint64_t stream, int enqueue) {
  int java;
  if (ng_special_stream(stream)) {
    /* the special streams of native calls are C's, per device (and thread), never asked for */
    int kind = enqueue ? SPECIAL_ENQUEUE : k->effect == NG_EFFECT_EVENT_RECORD ? SPECIAL_RECORD : SPECIAL_OTHER;
    k->device = special_device(handle, kind);
    k->key = special_key(stream, k->device);
    ng_head *h = find(&ng_spool, k->key, &k->inc, &java);
    k->slot = h;
    k->mode = h != NULL ? MODE_C : MODE_C_NEW;
    k->token = h != NULL ? atomic_load_explicit(&((ng_sslot *)h)->enqueued, NG_ACQUIRE) : -1;
    return;
  }
  k->key = stream;
  ng_head *h = find(&ng_spool, stream, &k->inc, &java);
  if (h != NULL) {
    k->slot = h;
    k->mode = MODE_C;
    k->token = atomic_load_explicit(&((ng_sslot *)h)->enqueued, NG_ACQUIRE);
    return;
  }
  if (ng_up_ready()) {
    int ok;
    int64_t t = ng_up_hot_enter(k->fn, handle, stream, &k->caller->site, &ok);
    if (ok && t != NG_NOT_JAVAS) {
      k->mode = MODE_JAVA;
      k->jtoken = t;
      if (!java) mark_java(&ng_spool, stream);
      return;
    }
  }
  k->mode = MODE_C_NEW;
  k->token = -1;
  k->device = -1;
}

/* The C slot of the stream work went to, made now if it was first seen. */
static ng_sslot *work_stream(ng_call *k, uint64_t handle, uint64_t stream, int enqueue) {
  if (k->mode == MODE_C) return (ng_sslot *)k->slot;
  int device = k->device;
  if (device < 0) device = enqueue ? comm_device(handle) : device_now();
  uint32_t inc;
  int32_t i;
  int made = 0;
  ng_map_lock();
  uint64_t v = ng_map_get_locked(&ng_streams, k->key);
  if (v >= 2 && atomic_load_explicit(&NG_SSLOT((int32_t)(v - 2))->h.key, NG_RELAXED) == k->key &&
      !ng_ended(&NG_SSLOT((int32_t)(v - 2))->h.lock)) {
    i = (int32_t)(v - 2); /* another thread made it meanwhile */
    inc = atomic_load_explicit(&NG_SSLOT(i)->h.inc, NG_RELAXED);
  } else {
    i = stream_slot_new(k->key, stream, device, &inc);
    made = 1;
  }
  ng_map_unlock();
  if (i < 0) return NULL;
  k->inc = inc;
  if (made && ng_up_ready() && ng_up_seen(k->fn, stream, device, slot_id(&ng_spool, i, inc), &k->caller->site))
    java_holds(&ng_spool, i, inc);
  return NG_SSLOT(i);
}

static void work_exit(ng_call *k, int status) {
  const ng_positions *p = &k->pos;
  int effect = k->effect;
  int enqueue = effect == NG_EFFECT_COMM_ENQUEUE;
  uint64_t handle = A(k, p->handle);
  uint64_t stream = A(k, p->stream);
  if (k->mode == MODE_JAVA) {
    ng_up_hot_exit(k->fn, handle, stream, status, k->jtoken, &k->caller->site);
    /* a record of a C event on a Java stream moves the event to Java */
    if (effect == NG_EFFECT_EVENT_RECORD && status == 0) {
      int java;
      uint32_t inc;
      if (find(&ng_epool, handle, &inc, &java) != NULL) forget(&ng_epool, handle, 1);
    }
    return;
  }
  if (status != 0) return;
  ng_sslot *s = work_stream(k, handle, stream, enqueue);
  if (s == NULL) return;
  if (enqueue) {
    if (ng_self.group_depth > 0) {
      if (ng_self.ngrouped == ng_self.cap) {
        int cap = ng_self.cap == 0 ? 16 : ng_self.cap * 2;
        ng_grouped *g = realloc(ng_self.grouped, (size_t)cap * sizeof(*g));
        if (g == NULL) {
          ng_stream_enqueue(s, k->inc);
          return;
        }
        if (ng_self.grouped == NULL) pthread_setspecific(ng_thread_key, &ng_self);
        ng_self.grouped = g;
        ng_self.cap = cap;
      }
      ng_self.grouped[ng_self.ngrouped++] = (ng_grouped){ng_slot_index(&s->h), k->inc};
    } else {
      ng_stream_enqueue(s, k->inc);
    }
  } else if (effect == NG_EFFECT_STREAM_WAIT_EVENT) {
    ng_stream_enqueue(s, k->inc);
  } else { /* EVENT_RECORD */
    int64_t mine;
    int64_t op = ng_stream_enqueue_record(s, k->inc, k->token, &mine);
    if (op < 0) return;
    int java;
    uint32_t einc;
    ng_eslot *e = (ng_eslot *)find(&ng_epool, handle, &einc, &java);
    if (e == NULL) {
      /* events follow their stream: a Java event (or one never seen) recorded on a C stream is C's now */
      int device = device_now();
      ng_map_lock();
      int32_t i = event_slot_new(handle, device, &einc, -1);
      ng_map_unlock();
      if (i < 0) return;
      e = NG_ESLOT(i);
      ng_event_recorded(e, einc, s, k->inc, op, mine);
      if (ng_up_ready() && ng_up_seen(k->fn, handle, device, slot_id(&ng_epool, i, einc), &k->caller->site))
        java_holds(&ng_epool, i, einc);
      return;
    }
    ng_event_recorded(e, einc, s, k->inc, op, mine);
  }
}

static void event_enter(ng_call *k, uint64_t event) {
  int java;
  ng_head *h = find(&ng_epool, event, &k->inc, &java);
  if (h != NULL) {
    k->mode = MODE_C;
    k->slot = h;
    k->token = ng_event_last_seq((ng_eslot *)h, k->inc);
    return;
  }
  if (ng_up_ready()) {
    int ok;
    int64_t t = ng_up_hot_enter(k->fn, event, 0, &k->caller->site, &ok);
    if (ok && t != NG_NOT_JAVAS) {
      k->mode = MODE_JAVA;
      k->jtoken = t;
      if (!java) mark_java(&ng_epool, event);
      return;
    }
    if (java) unmark_java(&ng_epool, event);
  }
  k->mode = MODE_NONE;
}

static void stream_sync_enter(ng_call *k, uint64_t stream) {
  int java;
  uint64_t key = ng_special_stream(stream) ? ng_special_key(stream, 0, 0) : stream;
  ng_head *h = find(&ng_spool, key, &k->inc, &java);
  if (h != NULL) {
    k->mode = MODE_C;
    k->slot = h;
    k->token = atomic_load_explicit(&((ng_sslot *)h)->enqueued, NG_ACQUIRE);
    return;
  }
  if (!ng_special_stream(stream) && ng_up_ready()) {
    int ok;
    int64_t t = ng_up_hot_enter(k->fn, stream, stream, &k->caller->site, &ok);
    if (ok && t != NG_NOT_JAVAS) {
      k->mode = MODE_JAVA;
      k->jtoken = t;
      if (!java) mark_java(&ng_spool, stream);
      return;
    }
    if (java) unmark_java(&ng_spool, stream);
  }
  k->mode = MODE_NONE;
}

/* Slots for a non-hot upcall: the arguments, then the thread's device and the profiler records
 * of communicator inits made inside the call (first record, count). */
#define EXTRA_SLOTS 3

static int up_exit(ng_call *k, int status, ng_site *site, int slot) {
  int n = ng_fn_nargs[k->fn];
  uint64_t a[NG_MAX_ARGS + EXTRA_SLOTS];
  memcpy(a, k->a, (size_t)n * sizeof(uint64_t));
  a[n] = (uint64_t)(int64_t)k->device;
  a[n + 1] = (uint64_t)(int64_t)k->prof_first;
  a[n + 2] = (uint64_t)(int64_t)k->prof_count;
  return ng_up_exit(k->fn, a, n + EXTRA_SLOTS, status, k->jtoken, site, slot);
}

/* A release of a lazy event (NG_REF_LAZY, Java has no record) ends it before its real call, in one
 * section of the map lock: its refs go from C|LAZY to none (so no adoption takes it, and Java, which
 * never held it, cannot start to: refs change under that lock alone), its key leaves the map, the
 * slot is ended and kept for its creation site's next creation (reuse_keep). What a failed release
 * must put back is kept in the call (lazy_put_back). False if it is not (any longer) lazy. */
static int lazy_release(ng_call *k) {
  ng_eslot *e = (ng_eslot *)k->slot;
  if (atomic_load_explicit(&e->cold.refs, NG_ACQUIRE) != (NG_REF_C | NG_REF_LAZY)) return 0;
  int32_t i = ng_slot_index(&e->h);
  ng_map_lock();
  if (atomic_load_explicit(&e->h.inc, NG_RELAXED) != k->inc ||
      atomic_load_explicit(&e->cold.refs, NG_RELAXED) != (NG_REF_C | NG_REF_LAZY)) {
    ng_map_unlock();
    return 0;
  }
  atomic_store_explicit(&e->cold.refs, 0, NG_RELEASE);
#ifdef NG_CALL_STEPS
  if (e->birth.thread != ng_stack_thread()) NG_CP_STEP(RELEASE_ELSEWHERE, NG_CP_STEP_TSC());
#endif
  ng_rec rec = ng_rec_load(e);
  k->kept.stack = e->birth.stack;
  k->kept.thread = e->birth.thread;
  k->kept.created_ms = e->birth.created_ms;
  k->kept.site = e->birth.site;
  k->kept.fn = e->birth.fn;
  k->kept.seq = ng_rec_of(rec, k->inc) ? rec.seq : 0;
  k->kept.where = rec.where;
  k->kept.completed = atomic_load_explicit(&e->completed_seq, NG_RELAXED);
  k->kept.stream_handle = atomic_load_explicit(&e->stream_handle, NG_RELAXED);
  k->kept.device = atomic_load_explicit(&e->cold.device, NG_RELAXED);
  ng_map_remove_if(&ng_events, k->key, (uint64_t)i + 2);
  if (ng_w.rec_whole) {
    /* an event's lock word guards only a record's two halves where a record is not one store:
     * here every writer of it holds the map lock (slot_alloc, slot_end, forget_slot, this) */
    ng_mark_ended(&e->h);
  } else {
    slot_end(&e->h);
  }
  atomic_store_explicit(&e->h.key, NG_DEAD_KEY, NG_RELAXED);
  reuse_keep(k->kept.site, i);
  locked_add32(&ng_locked.given_back[ng_epool.kind], 1);
  locked_add(&ng_locked.lazy_released, 1);
  ng_map_unlock();
  return 1;
}

/* The real release failed: the event lives on, lazy again, in a slot of its own, unless its handle
 * was taken by another C slot meanwhile. */
static void lazy_put_back(ng_call *k) {
  ng_map_lock();
  uint64_t v = ng_map_get_locked(&ng_events, k->key);
  uint32_t inc;
  int32_t i = v == 0 ? event_slot_new(k->key, k->kept.device, &inc, -1) : -1;
  if (i >= 0) {
    ng_eslot *e = NG_ESLOT(i);
    e->birth.stack = k->kept.stack;
    e->birth.thread = k->kept.thread;
    e->birth.created_ms = k->kept.created_ms;
    e->birth.site = k->kept.site;
    e->birth.fn = k->kept.fn;
    atomic_store_explicit(&e->stream_handle, k->kept.stream_handle, NG_RELAXED);
    atomic_store_explicit(&e->completed_seq, k->kept.completed, NG_RELAXED);
    /* the record, as this incarnation's */
    uint64_t where = (k->kept.where & ~((uint64_t)NG_INC_MASK << NG_REC_INC_SHIFT)) |
                     (uint64_t)(inc & NG_INC_MASK) << NG_REC_INC_SHIFT;
    if (k->kept.seq != 0) ng_rec_store(e, k->kept.seq, where);
    atomic_store_explicit(&e->cold.refs, NG_REF_C | NG_REF_LAZY, NG_RELEASE);
    locked_add(&ng_locked.lazy_created, 1);
  }
  ng_map_unlock();
}

/* A release's enter, and a communicator's, a device synchronize's: the upcall, after the slot a
 * release ends was found (and a lazy event's ended: nothing to ask). 0: Java claimed the call. */
static int release_enter(ng_call *k, ng_caller *c, int fn, int effect) {
  const ng_positions *p = &k->pos;
  k->mode = MODE_UP;
  if (effect == NG_EFFECT_EVENT_DESTROY || effect == NG_EFFECT_STREAM_DESTROY) {
    /* the slot this release ends, found before the address can be handed out again */
    int java;
    int event = effect == NG_EFFECT_EVENT_DESTROY;
    k->key = event ? A(k, p->handle) : A(k, p->stream);
    uint64_t t_ = NG_CP_STEP_TSC();
    if (event || !ng_special_stream(k->key)) k->slot = find(event ? &ng_epool : &ng_spool, k->key, &k->inc, &java);
    NG_CP_STEP(RELEASE_FIND, t_);
    t_ = NG_CP_STEP_TSC();
    if (event && k->slot != NULL && lazy_release(k)) {
      NG_CP_STEP(RELEASE_LAZY, t_);
      k->mode = MODE_LAZY;
      return 1; /* Java never had it: nothing to ask, nothing to tell */
    }
  }
  k->device = device_now();
  if (effect == NG_EFFECT_COMM_DESTROY || effect == NG_EFFECT_COMM_ABORT) {
    /* the communicator's entry, for its exit to take out that one alone (under the lock: a
     * lock-free lookup may see another key's value under concurrent writes) */
    ng_map_lock();
    k->token = (int64_t)ng_map_get_locked(&ng_comms, A(k, p->handle));
    ng_map_unlock();
  } else if (effect == NG_EFFECT_DEVICE_SYNC) {
    /* what each stream counted before this step was enqueued before the synchronize */
    k->token = ng_api_device_sync_enter(k->device);
  }
  if (ng_up_ready()) {
    int ok;
    uint64_t a[NG_MAX_ARGS + EXTRA_SLOTS];
    int n = ng_fn_nargs[fn];
    memcpy(a, k->a, (size_t)n * sizeof(uint64_t));
    a[n] = (uint64_t)(int64_t)k->device;
    a[n + 1] = a[n + 2] = 0;
    k->jtoken = ng_up_enter(fn, a, n + EXTRA_SLOTS, &c->site, &ok);
    if (ok && k->jtoken == NG_CLAIMED) return 0;
  }
  return 1;
}

int ng_enter(ng_call *k, ng_caller *c, int fn, int effect, uint64_t pos_lo, uint64_t pos_hi) {
  k->effect = effect;
  memcpy(&k->pos, &pos_lo, 8);
  memcpy((char *)&k->pos + 8, &pos_hi, sizeof(ng_positions) - 8);
  const ng_positions *p = &k->pos;
  k->fn = fn;
  k->caller = c;
  k->mode = MODE_NONE;
  k->token = k->jtoken = 0;
  k->slot = NULL;
  k->device = -1;
  k->prof_first = k->prof_count = 0;
  /* a framework's creations and releases, an operation's each, before the switch: its jump table
   * is a line of its own, which the work between operations evicts */
  if (effect == NG_EFFECT_EVENT_CREATE || effect == NG_EFFECT_STREAM_CREATE) {
    k->mode = MODE_UP;
    return 1;
  }
  if (effect == NG_EFFECT_EVENT_DESTROY || effect == NG_EFFECT_STREAM_DESTROY) return release_enter(k, c, fn, effect);
  switch (effect) {
  case NG_EFFECT_EVENT_QUERY:
  case NG_EFFECT_EVENT_SYNC:
    event_enter(k, A(k, p->handle));
    return 1;
  case NG_EFFECT_STREAM_SYNC:
  case NG_EFFECT_STREAM_QUERY:
    stream_sync_enter(k, A(k, p->stream));
    return 1;
  case NG_EFFECT_EVENT_RECORD:
  case NG_EFFECT_STREAM_WAIT_EVENT:
    work_enter(k, A(k, p->handle), A(k, p->stream), 0);
    return 1;
  case NG_EFFECT_COMM_ENQUEUE:
    work_enter(k, A(k, p->handle), A(k, p->stream), 1);
    return 1;
  case NG_EFFECT_COMM_DESTROY:
  case NG_EFFECT_COMM_ABORT:
  case NG_EFFECT_DEVICE_SYNC:
    return release_enter(k, c, fn, effect);
  case NG_EFFECT_COMM_CREATE:
  case NG_EFFECT_COMM_CREATE_ALL:
  case NG_EFFECT_COMM_SPLIT:
  case NG_EFFECT_COMM_SHRINK:
    k->mode = MODE_UP;
    k->device = device_now();
    ng_prof_mark();
    return 1;
  default:
    k->mode = MODE_UP;
    return 1;
  }
}

static uint64_t out_handle(uint64_t pointer, int i) {
  return pointer != 0 ? (uint64_t)(uintptr_t)((void *const *)(uintptr_t)pointer)[i] : 0;
}

static void grouped_flush(int launched) {
  for (int i = 0; launched && i < ng_self.ngrouped; i++) ng_stream_enqueue(NG_SSLOT(ng_self.grouped[i].slot), ng_self.grouped[i].inc);
  ng_self.ngrouped = 0;
}

/* A creation's exit: its slot, and for an event on a Java thread its stack without a JVM
 * transition (lazy: no upcall), else the upcall. */
static void create_exit(ng_call *k, int status) {
  const ng_positions *p = &k->pos;
  int effect = k->effect;
  uint64_t h = status == 0 ? out_handle(A(k, p->handle), 0) : 0;
  if (h == 0 || (effect == NG_EFFECT_STREAM_CREATE && ng_special_stream(h))) {
    if (ng_up_ready()) up_exit(k, status, &k->caller->site, -1);
    return;
  }
  uint64_t t_ = NG_CP_STEP_TSC();
  k->device = device_now();
  NG_CP_STEP(CREATE_DEVICE, t_);
  /* an event on a Java thread: its Java stack, without a JVM transition; a stack Java knows
   * (and this thread) needs no upcall */
  ng_stack_take st = {0, 0, 0, NULL, 0};
  t_ = NG_CP_STEP_TSC();
  int lazy = effect == NG_EFFECT_EVENT_CREATE && ng_up_ready() && ng_stack_now(&st);
  NG_CP_STEP(CREATE_STACK, t_);
  /* a static cudart's one call site: the application's caller up the stack (ng_bt.c), outside the lock */
  ng_site *lazy_site = lazy && NG_UNLIKELY(atomic_load_explicit(&k->caller->obj->driver, NG_RELAXED)) ? ng_site_of(k->caller)
                                                                                                    : &k->caller->site;
  /* its time, read before the lock: the counter's read is most of the section otherwise */
  t_ = NG_CP_STEP_TSC();
  int64_t born = lazy ? ng_birth_ms() : 0;
  NG_CP_STEP(CREATE_BIRTH, t_);
  uint32_t inc;
  t_ = NG_CP_STEP_TSC();
  ng_map_lock();
  int32_t i = effect == NG_EFFECT_EVENT_CREATE
                  ? event_slot_new(h, k->device, &inc, lazy ? reuse_take((uint64_t)(uintptr_t)&k->caller->site) : -1)
                  : stream_slot_new(h, h, k->device, &inc);
  if (lazy && i >= 0) {
    ng_eslot *e = NG_ESLOT(i);
    e->birth.stack = st.id;
    e->birth.thread = st.thread;
    e->birth.created_ms = born;
    e->birth.site = (uint64_t)(uintptr_t)lazy_site;
    e->birth.fn = k->fn;
    atomic_store_explicit(&e->cold.refs, NG_REF_C | NG_REF_LAZY, NG_RELEASE);
    locked_add(&ng_locked.lazy_created, 1);
  }
  ng_map_unlock();
  NG_CP_STEP(CREATE_LOCKED, t_);
  if (effect == NG_EFFECT_EVENT_CREATE && i >= 0) ng_made_event(&NG_ESLOT(i)->h);
  if (lazy && i >= 0) return;
  if (ng_up_ready()) {
    ng_site *site = ng_site_of(k->caller);
    int id = i < 0 ? -1 : slot_id(effect == NG_EFFECT_EVENT_CREATE ? &ng_epool : &ng_spool, i, inc);
    /* a creation's token: its stack's depot id and its thread's id, for Java to learn them */
    k->jtoken = (int64_t)((uint64_t)st.thread << 32 | st.id);
    if (up_exit(k, status, site, id) && i >= 0) {
      java_holds(effect == NG_EFFECT_EVENT_CREATE ? &ng_epool : &ng_spool, i, inc);
      if (effect == NG_EFFECT_EVENT_CREATE) ng_stack_confirm(&st);
    }
  }
}

/* A release's exit: a lazy event's was ended before its call (put back if the call failed); else
 * the slot forgotten, and the upcall. */
static void release_exit(ng_call *k, int status) {
  int effect = k->effect;
  ng_pool *pool = effect == NG_EFFECT_EVENT_DESTROY ? &ng_epool : &ng_spool;
  if (k->mode == MODE_LAZY) {
    /* released before the call; a failure puts it back */
    if (NG_UNLIKELY(status != 0)) lazy_put_back(k);
    return;
  }
  if (status == 0 && k->slot != NULL) {
    forget_slot(pool, k->key, (ng_head *)k->slot, k->inc);
  } else if (status == 0 && (effect == NG_EFFECT_EVENT_DESTROY || !ng_special_stream(k->key))) {
    unmark_java(pool, k->key);
  }
  if (ng_up_ready()) up_exit(k, status, &k->caller->site, -1);
}

void ng_exit(ng_call *k, int status) {
  const ng_positions *p = &k->pos;
  int effect = k->effect;
  /* as in ng_enter: creations and releases before the switch's table */
  if (effect == NG_EFFECT_EVENT_CREATE || effect == NG_EFFECT_STREAM_CREATE) {
    create_exit(k, status);
    return;
  }
  if (effect == NG_EFFECT_EVENT_DESTROY || effect == NG_EFFECT_STREAM_DESTROY) {
    release_exit(k, status);
    return;
  }
  switch (effect) {
  case NG_EFFECT_EVENT_QUERY:
  case NG_EFFECT_EVENT_SYNC:
    if (k->mode == MODE_C) {
      /* a query's cudaErrorNotReady, like any error, changes nothing */
      if (status == 0) ng_event_seen_complete((ng_eslot *)k->slot, k->inc, k->token);
    } else if (k->mode == MODE_JAVA) {
      ng_up_hot_exit(k->fn, A(k, p->handle), 0, status, k->jtoken, &k->caller->site);
    }
    return;
  case NG_EFFECT_STREAM_SYNC:
  case NG_EFFECT_STREAM_QUERY:
    if (k->mode == MODE_C) {
      if (status == 0) ng_stream_seen_idle((ng_sslot *)k->slot, k->inc, k->token);
    } else if (k->mode == MODE_JAVA) {
      ng_up_hot_exit(k->fn, A(k, p->stream), A(k, p->stream), status, k->jtoken, &k->caller->site);
    }
    return;
  case NG_EFFECT_EVENT_RECORD:
  case NG_EFFECT_STREAM_WAIT_EVENT:
  case NG_EFFECT_COMM_ENQUEUE:
    work_exit(k, status);
    return;
  case NG_EFFECT_COMM_CREATE:
  case NG_EFFECT_COMM_CREATE_ALL:
  case NG_EFFECT_COMM_SPLIT:
  case NG_EFFECT_COMM_SHRINK: {
    ng_prof_take(&k->prof_first, &k->prof_count);
    int ok = status == ncclSuccess || status == ncclInProgress;
    if (ok && effect == NG_EFFECT_COMM_CREATE_ALL) {
      int ndev = (int)A(k, p->nranks);
      const int *devlist = (const int *)(uintptr_t)A(k, p->device);
      for (int i = 0; i < ndev && i < 4096; i++) comm_created(out_handle(A(k, p->handle), i), devlist != NULL ? devlist[i] : i);
    } else if (ok) {
      int device = k->device;
      if (p->parent >= 0) device = comm_device(A(k, p->parent));
      comm_created(out_handle(A(k, p->handle), 0), device);
    }
    if (ng_up_ready()) up_exit(k, status, ng_site_of(k->caller), -1);
    return;
  }
  case NG_EFFECT_COMM_DESTROY:
  case NG_EFFECT_COMM_ABORT:
    if (status == ncclSuccess) comm_released(A(k, p->handle), (uint64_t)k->token);
    if (ng_up_ready()) up_exit(k, status, &k->caller->site, -1);
    return;
  case NG_EFFECT_DEVICE_SYNC:
    if (status == 0) ng_api_device_sync_exit(k->device, k->token);
    if (ng_up_ready()) up_exit(k, status, &k->caller->site, -1);
    return;
  case NG_EFFECT_SET_DEVICE:
    if (status == 0) {
      int device = (int)A(k, p->device);
      if (!ng_self.told || ng_self.told_device != device) {
        if (ng_up_ready()) {
          k->device = device;
          up_exit(k, status, &k->caller->site, -1);
          ng_self.told = 1;
          ng_self.told_device = device;
        }
      }
    }
    return;
  case NG_EFFECT_GROUP_START:
    /* while no thread is inside a native group, hot enqueues skip the thread-local */
    if (status == 0 && ng_self.group_depth++ == 0) atomic_fetch_add_explicit(&ng_w.threads_in_groups, 1, NG_RELAXED);
    return;
  case NG_EFFECT_GROUP_END:
    /* the outermost ncclGroupEnd launches the group's work; a failed one launched nothing */
    if (ng_self.group_depth > 0 && --ng_self.group_depth == 0) {
      atomic_fetch_sub_explicit(&ng_w.threads_in_groups, 1, NG_RELAXED);
      grouped_flush(status == ncclSuccess || status == ncclInProgress);
    }
    return;
  default:
    if (ng_up_ready()) up_exit(k, status, &k->caller->site, -1);
    return;
  }
}

void ng_park(int fn) {
  ng_log("%s: the exit-time cleanup releases this handle; this thread waits for the process to end", ng_fn_name[fn]);
  while (1) pause();
}

/* ---------------------------------------------------------------- Java's view (the JNI natives) */
static ng_eslot *event_slot(int slot) { return (ng_eslot *)slot_of_id(&ng_epool, slot); }
static ng_sslot *stream_slot(int slot) { return (ng_sslot *)slot_of_id(&ng_spool, slot); }

static int live(ng_head *h) { return h != NULL && (atomic_load_explicit(&ng_cold_of(h)->refs, NG_ACQUIRE) & NG_REF_C) && !ng_ended(&h->lock); }

int64_t ng_api_slot_token(int fn, int slot) {
  switch (fn >= 0 && fn < NG_FN_COUNT ? ng_fn_effect[fn] : -1) {
  case NG_EFFECT_EVENT_QUERY:
  case NG_EFFECT_EVENT_SYNC: {
    ng_eslot *e = event_slot(slot);
    return live(e ? &e->h : NULL) ? ng_event_last_seq(e, atomic_load_explicit(&e->h.inc, NG_ACQUIRE)) : 0;
  }
  case NG_EFFECT_EVENT_RECORD:
  case NG_EFFECT_STREAM_SYNC:
  case NG_EFFECT_STREAM_QUERY: {
    ng_sslot *s = stream_slot(slot);
    return live(s ? &s->h : NULL) ? atomic_load_explicit(&s->enqueued, NG_ACQUIRE) : -1;
  }
  default:
    return 0;
  }
}

int64_t ng_api_slot_exit(int fn, int slot, uint64_t other, int status, int64_t token) {
  if (status != 0 || fn < 0 || fn >= NG_FN_COUNT) return -1;
  switch (ng_fn_effect[fn]) {
  case NG_EFFECT_EVENT_QUERY:
  case NG_EFFECT_EVENT_SYNC: {
    ng_eslot *e = event_slot(slot);
    if (live(e ? &e->h : NULL)) ng_event_completed(e, token);
    return -1;
  }
  case NG_EFFECT_STREAM_SYNC:
  case NG_EFFECT_STREAM_QUERY: {
    ng_sslot *s = stream_slot(slot);
    if (live(s ? &s->h : NULL)) ng_stream_mark_done(s, token);
    return -1;
  }
  case NG_EFFECT_COMM_ENQUEUE:
  case NG_EFFECT_STREAM_WAIT_EVENT: {
    ng_sslot *s = stream_slot(slot);
    if (live(s ? &s->h : NULL)) ng_stream_enqueue(s, atomic_load_explicit(&s->h.inc, NG_ACQUIRE));
    return -1;
  }
  case NG_EFFECT_EVENT_RECORD: {
    /* a Java record of event `other` on a C stream: the event's state is C's from now on */
    ng_sslot *s = stream_slot(slot);
    if (!live(s ? &s->h : NULL)) return -1;
    int64_t mine;
    uint32_t sinc = atomic_load_explicit(&s->h.inc, NG_ACQUIRE);
    int64_t op = ng_stream_enqueue_record(s, sinc, token, &mine);
    if (op < 0) return -1;
    int java;
    uint32_t inc;
    ng_eslot *e = (ng_eslot *)find(&ng_epool, other, &inc, &java);
    int32_t i;
    if (e == NULL) {
      ng_map_lock();
      i = event_slot_new(other, atomic_load_explicit(&s->cold.device, NG_RELAXED), &inc, -1);
      ng_map_unlock();
      if (i < 0) return -1;
      e = NG_ESLOT(i);
    } else {
      i = ng_slot_index(&e->h);
    }
    java_holds(&ng_epool, i, inc);
    ng_event_recorded(e, inc, s, sinc, op, mine);
    return slot_id(&ng_epool, i, inc);
  }
  default:
    return -1;
  }
}

/* A device synchronize covers what each of the device's streams had counted when it started: each
 * stream keeps the count the last one saw, with its token (never 0). A synchronize that finds
 * another's token on a stream at its end (two at once on one device) marks nothing there. A stream
 * with nothing pending at the start is passed without its lock (a framework's pool holds a hundred
 * streams, most of them idle): what it would keep is marked done already. */
static _Atomic int64_t device_syncs;

static int on_device(ng_sslot *s, int device) {
  return (atomic_load_explicit(&s->cold.refs, NG_ACQUIRE) & NG_REF_C) && atomic_load_explicit(&s->cold.device, NG_RELAXED) == device;
}

int64_t ng_api_device_sync_enter(int device) {
  int64_t token = atomic_fetch_add_explicit(&device_syncs, 1, NG_RELAXED) + 1;
  int32_t high = atomic_load_explicit(&ng_spool.high, NG_ACQUIRE);
  for (int32_t i = 0; i < high; i++) {
    ng_sslot *s = NG_SSLOT(i);
    if (!on_device(s, device) ||
        atomic_load_explicit(&s->enqueued, NG_ACQUIRE) <= atomic_load_explicit(&s->done, NG_ACQUIRE))
      continue;
    /* a count read now, of whichever incarnation, is of ops enqueued before the synchronize;
     * one of an earlier incarnation lies below the base of a later one */
    ng_word_lock(&s->h.lock);
    atomic_store_explicit(&s->sync_token, token, NG_RELAXED);
    s->sync_count = atomic_load_explicit(&s->enqueued, NG_ACQUIRE);
    ng_word_unlock(&s->h.lock);
  }
  return token;
}

void ng_api_device_sync_exit(int device, int64_t token) {
  int32_t high = atomic_load_explicit(&ng_spool.high, NG_ACQUIRE);
  for (int32_t i = 0; i < high; i++) {
    ng_sslot *s = NG_SSLOT(i);
    if (!on_device(s, device) || atomic_load_explicit(&s->sync_token, NG_RELAXED) != token) continue;
    ng_word_lock(&s->h.lock);
    int64_t n = atomic_load_explicit(&s->sync_token, NG_RELAXED) == token ? s->sync_count : 0;
    ng_word_unlock(&s->h.lock);
    if (n > 0) ng_stream_mark_done(s, n);
  }
}

void ng_api_events_pending(const int32_t *slots, int n, int64_t *out) {
  for (int i = 0; i < n; i++) {
    ng_eslot *e = event_slot(slots[i]);
    if (e == NULL || !(atomic_load_explicit(&e->cold.refs, NG_ACQUIRE) & NG_REF_C)) {
      out[3 * i] = -1;
      out[3 * i + 1] = -1;
      out[3 * i + 2] = 0;
      continue;
    }
    int32_t stream;
    uint64_t handle;
    out[3 * i] = event_pending(e, &stream, &handle);
    out[3 * i + 1] = stream >= 0 ? slot_id(&ng_spool, stream, atomic_load_explicit(&NG_SSLOT(stream)->h.inc, NG_ACQUIRE)) : -1;
    out[3 * i + 2] = (int64_t)handle;
  }
}

void ng_api_streams_pending(const int32_t *slots, int n, int64_t *out) {
  for (int i = 0; i < n; i++) {
    ng_sslot *s = stream_slot(slots[i]);
    out[i] = s != NULL && (atomic_load_explicit(&s->cold.refs, NG_ACQUIRE) & NG_REF_C) ? stream_pending_ops(s) : -1;
  }
}

void ng_api_release_slot(int slot) {
  ng_pool *p = slot >= 0 && (slot & NG_STREAM_SLOT_BIT) ? &ng_spool : &ng_epool;
  ng_head *h = slot_of_id(p, slot);
  if (h != NULL) slot_unref(p, ng_slot_index(h), NG_REF_J);
}

void ng_api_event_to_java(uint64_t handle) {
  int java;
  uint32_t inc;
  if (find(&ng_epool, handle, &inc, &java) != NULL) forget(&ng_epool, handle, 1);
}

int ng_api_call(int64_t caller, int fn, int64_t a0, int64_t a1, int64_t a2, int64_t a3) {
  if (fn < 0 || fn >= NG_FN_COUNT || !ng_fn_callable[fn]) return -1;
  ng_site *site = (ng_site *)(uintptr_t)caller;
  /* that caller's object's view, without touching the call site's own function cache */
  ng_object *o = site != NULL ? site->caller->obj : &ng_default_object;
  /* an object that reaches the driver itself (a static cudart) made its handles there: the driver
   * releases them; so does it where no runtime is loaded (CuPy). Neither: the agent's own failure,
   * never the application's call that no library defines (NG_NO_CUDA) */
  int driver = !ng_fn_nccl[fn] && site != NULL && ng_object_uses_driver(o);
  void *real = driver ? NULL : atomic_load_explicit(&o->real[fn], NG_ACQUIRE);
  if (real == NULL && !driver) real = ng_resolve(o, fn);
  if (real == NULL && !ng_fn_nccl[fn]) {
    int done;
    int r = ng_driver_call(fn, a0, &done);
    return done ? r : NG_NO_CUDA;
  }
  if (real == NULL) return ng_missing(fn);
  /* integers and pointers only (CHeader's callable): extra argument registers are ignored */
  return ((int (*)(int64_t, int64_t, int64_t, int64_t))real)(a0, a1, a2, a3);
}

/* Java takes over a lazy event: its record is made from what the slot says of its creation.
 * Under the map lock, so that the slot's incarnation cannot change meanwhile. */
static int adopt_locked(int32_t i, int64_t *out) {
  ng_eslot *e = NG_ESLOT(i);
  if (atomic_load_explicit(&e->cold.refs, NG_RELAXED) != (NG_REF_C | NG_REF_LAZY)) return 0;
  atomic_store_explicit(&e->cold.refs, NG_REF_C | NG_REF_J, NG_RELEASE);
  uint32_t inc = atomic_load_explicit(&e->h.inc, NG_ACQUIRE);
  out[0] = slot_id(&ng_epool, i, inc);
  out[1] = (int64_t)atomic_load_explicit(&e->h.handle, NG_RELAXED);
  out[2] = e->birth.fn;
  out[3] = e->birth.stack;
  out[4] = e->birth.thread;
  out[5] = e->birth.created_ms;
  out[6] = (int64_t)e->birth.site;
  out[7] = atomic_load_explicit(&e->cold.device, NG_RELAXED);
  locked_add(&ng_locked.lazy_adopted, 1);
  return 1;
}

int ng_api_adopt_events(int64_t *out, int n) {
  int done = 0;
  int32_t high = atomic_load_explicit(&ng_epool.high, NG_ACQUIRE);
  /* in pieces, so that creations wait for one piece at most */
  for (int32_t from = 0; from < high && done < n; from += 4096) {
    ng_map_lock();
    for (int32_t i = from; i < high && i < from + 4096 && done < n; i++) {
      if (atomic_load_explicit(&NG_ESLOT(i)->cold.refs, NG_RELAXED) & NG_REF_LAZY) done += adopt_locked(i, out + (size_t)done * 8);
    }
    ng_map_unlock();
  }
  return done;
}

int ng_api_adopt_event(int64_t handle, int64_t *out) {
  /* a Java call on a handle the tracker does not know: most are not lazy events, and need no lock */
  uint64_t seen = ng_map_get(&ng_events, (uint64_t)handle);
  if (seen < 2 || !(atomic_load_explicit(&NG_ESLOT((int32_t)(seen - 2))->cold.refs, NG_ACQUIRE) & NG_REF_LAZY)) return 0;
  ng_map_lock();
  uint64_t v = ng_map_get_locked(&ng_events, (uint64_t)handle);
  int done = 0;
  if (v >= 2 && atomic_load_explicit(&NG_ESLOT((int32_t)(v - 2))->h.key, NG_RELAXED) == (uint64_t)handle)
    done = adopt_locked((int32_t)(v - 2), out);
  ng_map_unlock();
  return done;
}

int64_t ng_api_lazy_live(void) {
  /* the ends first, the creations last: an event lazy all along counts in created and in neither
   * end, so the answer is never below what is lazy now (it may be above: a gauge's, harmless) */
  int64_t released = atomic_load_explicit(&ng_locked.lazy_released, NG_ACQUIRE);
  int64_t adopted = atomic_load_explicit(&ng_locked.lazy_adopted, NG_ACQUIRE);
  return atomic_load_explicit(&ng_locked.lazy_created, NG_ACQUIRE) - released - adopted;
}

/* NCCLGUARD_NATIVE_DEBUG set (not 0): one line at exit with the native part's counts, for finding
 * where a framework's loop pays (an upcall per operation shows in its function's count). */
void ng_track_debug_line(void) {
  const char *d = getenv("NCCLGUARD_NATIVE_DEBUG");
  if (d == NULL || *d == '\0' || strcmp(d, "0") == 0) return;
  int64_t v[NCCLGUARD_STATS];
  ng_track_stats(v, NCCLGUARD_STATS);
  char fns[1024];
  size_t at = 0;
  fns[0] = '\0';
  for (int fn = 0; fn < NG_FN_COUNT && at < sizeof(fns) - 64; fn++) {
    long c = atomic_load_explicit(&ng_upcalls_fn[fn], NG_RELAXED);
    if (c > 0) at += (size_t)snprintf(fns + at, sizeof(fns) - at, " %s %ld", ng_fn_name[fn], c);
  }
  ng_log("debug: at exit: upcalls %lld (%s), callers %lld, events live %lld (high %lld), streams live %lld (high %lld), "
         "events without an upcall: made %lld, released %lld, adopted %lld; stack memo hits %lld, takes %lld; "
         "stacks %lld (%lld bytes)",
         (long long)v[NCCLGUARD_STAT_UPCALLS], fns[0] != '\0' ? fns + 1 : "none", (long long)v[NCCLGUARD_STAT_CALLERS],
         (long long)v[NCCLGUARD_STAT_EVENTS_LIVE], (long long)v[NCCLGUARD_STAT_EVENT_SLOTS_MADE],
         (long long)v[NCCLGUARD_STAT_STREAMS_LIVE], (long long)v[NCCLGUARD_STAT_STREAM_SLOTS_MADE],
         (long long)v[NCCLGUARD_STAT_LAZY_CREATED], (long long)v[NCCLGUARD_STAT_LAZY_RELEASED],
         (long long)v[NCCLGUARD_STAT_LAZY_ADOPTED], (long long)v[NCCLGUARD_STAT_MEMO_HITS],
         (long long)v[NCCLGUARD_STAT_MEMO_TAKES], (long long)v[NCCLGUARD_STAT_DEPOT_STACKS],
         (long long)v[NCCLGUARD_STAT_DEPOT_BYTES]);
#ifdef NG_CALL_PROFILE
  for (int fn = 0; fn < NG_FN_COUNT; fn++) {
    long all = atomic_load_explicit(&ng_cp_calls[fn][0], NG_RELAXED);
    long gen = atomic_load_explicit(&ng_cp_calls[fn][3], NG_RELAXED);
    if (all == 0) continue;
    long cyc = atomic_load_explicit(&ng_cp_cycles_of(fn), NG_RELAXED);
    long look = atomic_load_explicit(&ng_cp_calls[fn][5], NG_RELAXED);
    long lcyc = atomic_load_explicit(&ng_cp_calls[fn][6], NG_RELAXED);
    ng_log("profile: %s calls %ld, slow %ld, miss %ld, generic %ld (own work %ld cycles, %ld a call)", ng_fn_name[fn], all,
           atomic_load_explicit(&ng_cp_calls[fn][1], NG_RELAXED), atomic_load_explicit(&ng_cp_calls[fn][2], NG_RELAXED),
           gen, cyc, gen > 0 ? cyc / gen : 0);
    /* the steps build: the lookups of this function's misses (an event's, a stream's: one or two a miss) */
    if (look > 0) ng_log("profile: step %s: lookups after a hint's miss: %ld times, %ld cycles, %ld a time", ng_fn_name[fn], look, lcyc, lcyc / look);
  }
#define NG_CP_STEP_NAME(step, name) [NG_CP_##step] = name,
  static const char *const steps[NG_CP_STEP_COUNT] = {NG_CP_STEPS(NG_CP_STEP_NAME)};
#undef NG_CP_STEP_NAME
  for (int i = 0; i < NG_CP_STEP_COUNT; i++) {
    long n = atomic_load_explicit(&ng_cp_step[i][0], NG_RELAXED);
    long cyc = atomic_load_explicit(&ng_cp_step[i][1], NG_RELAXED);
    if (n > 0) ng_log("profile: step %s: %ld times, %ld cycles, %ld a time", steps[i], n, cyc, cyc / n);
  }
#endif
}

void ng_track_stats(int64_t *out, int n) {
  int64_t v[NCCLGUARD_STATS] = {
      [NCCLGUARD_STAT_CALLERS] = ng_callers_known(),
      [NCCLGUARD_STAT_EVENTS_LIVE] = ng_pool_live(&ng_epool),
      [NCCLGUARD_STAT_STREAMS_LIVE] = ng_pool_live(&ng_spool),
      [NCCLGUARD_STAT_EXCEPTIONS] = atomic_load_explicit(&ng_exceptions_cleared, NG_RELAXED),
      [NCCLGUARD_STAT_MISSING_REAL] = atomic_load_explicit(&ng_missing_real, NG_RELAXED),
      [NCCLGUARD_STAT_UPCALLS] = atomic_load_explicit(&ng_upcalls, NG_RELAXED),
      [NCCLGUARD_STAT_OP_SEQ] = atomic_load_explicit(&ng_w.op_seq, NG_RELAXED),
      [NCCLGUARD_STAT_OWNERS] = atomic_load_explicit(&ng_owners, NG_RELAXED),
      [NCCLGUARD_STAT_DEPOT_STACKS] = ng_stack_count(),
      [NCCLGUARD_STAT_DEPOT_BYTES] = ng_stack_bytes(),
      [NCCLGUARD_STAT_EVENT_SLOTS_MADE] = atomic_load_explicit(&ng_epool.high, NG_RELAXED),
      [NCCLGUARD_STAT_STREAM_SLOTS_MADE] = atomic_load_explicit(&ng_spool.high, NG_RELAXED),
      [NCCLGUARD_STAT_LAZY_CREATED] = atomic_load_explicit(&ng_locked.lazy_created, NG_RELAXED),
      [NCCLGUARD_STAT_LAZY_RELEASED] = atomic_load_explicit(&ng_locked.lazy_released, NG_RELAXED),
      [NCCLGUARD_STAT_LAZY_ADOPTED] = atomic_load_explicit(&ng_locked.lazy_adopted, NG_RELAXED),
      [NCCLGUARD_STAT_MEMO_HITS] = ng_hs_memo_hits(),
      [NCCLGUARD_STAT_MEMO_TAKES] = ng_hs_memo_takes(),
  };
  for (int i = 0; i < n && i < NCCLGUARD_STATS; i++) out[i] = v[i];
}
