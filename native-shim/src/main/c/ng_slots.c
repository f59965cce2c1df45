/* The C slots' own functions (ng_slots.h): their pools and maps, the hint every call site starts
 * with, the stream owners (membarrier), and the parts of the hot paths that run out of line. What
 * the slots are, and what each call does to them, is ng_track.c's. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* linux/membarrier.h's commands, named here: that header is not on every build machine */
#define MEMBARRIER_PRIVATE_EXPEDITED (1 << 3)
#define MEMBARRIER_REGISTER_PRIVATE_EXPEDITED (1 << 4)

#include "ng.h"
#include "ng_arch.h"
#include "ng_caller.h"
#include "ng_log.h"
#include "ng_map.h"
#include "ng_slots.h"

ng_map ng_events = {.used = &ng_locked.used[0]};
ng_map ng_streams = {.used = &ng_locked.used[1]};
ng_map ng_comms = {.used = &ng_locked.used[2]};
ng_pool ng_epool = {.kind = 0, .size = sizeof(ng_eslot), .map = &ng_events};
ng_pool ng_spool = {.kind = 1, .size = sizeof(ng_sslot), .map = &ng_streams};

ng_head ng_no_slot = {.key = NG_DEAD_KEY, .lock = NG_ENDED};

__thread ng_head *ng_made[NG_MADE];
_Atomic uint64_t ng_legacy_key NG_READ_MOSTLY; /* set by ng_track.c's learn_devices */

/* A call site's hint becomes h where it holds none or an ended slot, or where take_over says so:
 * the first slot a site found stays its hint while it lives (threads that share a site with other
 * handles would otherwise rewrite the line every call reads). */
static void hint_renew(_Atomic(void *) *hint, ng_head *h, int take_over) {
  ng_head *old = atomic_load_explicit(hint, NG_ACQUIRE);
  if (old == NULL || ng_ended(&old->lock) || take_over)
    atomic_compare_exchange_strong_explicit(hint, (void **)&old, h, NG_RELEASE, NG_RELAXED);
}

ng_head *ng_hot_find_map(int events, ng_caller *c, uint64_t key, uint32_t *inc) {
  ng_head *h = events ? ng_hot_made(key, inc) : NULL;
  if (h == NULL) {
    uint64_t v = ng_map_get(events ? &ng_events : &ng_streams, key);
    if (v < 2) return NULL;
    h = ng_hot_slot(events, (int32_t)(v - 2));
    if (!ng_hot_valid(h, key, inc)) return NULL;
  }
  /* the legacy stream's slot where the process sees one device takes a site's hint over: a site
   * whose first stream was another (a framework's set-up) and whose collectives then run on the
   * current stream stops missing */
  hint_renew(&c->hint[events], h, !events && key == atomic_load_explicit(&ng_legacy_key, NG_RELAXED));
  return h;
}

/* Whether streams get owners: once membarrier's private expedited command is registered (see
 * ng_owners_start); until then, and without it, every count is an add. */
atomic_int ng_owners;
static atomic_int owners_started;

/* Makes this thread free to add to the count: the stream has no owner other than this thread. */
static void stream_take(ng_sslot *s, uintptr_t me) {
  uintptr_t o = atomic_load_explicit(&s->owner, NG_ACQUIRE);
  while (o != me && o != NG_SHARED) {
    if (o == 0 && !atomic_load_explicit(&ng_owners, NG_ACQUIRE)) return; /* no owners (yet): adds only */
    if (atomic_compare_exchange_weak_explicit(&s->owner, &o, o == 0 ? me : NG_SHARED, memory_order_acq_rel, NG_ACQUIRE)) {
      if (o == 0) return; /* this thread owns it now, and an owner may add too */
      /* the owner either sees NG_SHARED at its check or its busy word is seen here. A busy word
       * that stays set is an owner that is gone (a fork's child has only the forking thread):
       * after 100 ms this thread goes on rather than hang */
      syscall(SYS_membarrier, MEMBARRIER_PRIVATE_EXPEDITED, 0, 0);
      int spins = 0;
      int64_t until = 0;
      while (atomic_load_explicit(&s->h.busy, NG_ACQUIRE) != 0) {
        ng_back_off(&spins);
        if (spins == 0) {
          int64_t now = ng_now_ns();
          if (until == 0) until = now + 100000000;
          else if (now > until) break;
        }
      }
      return;
    }
  }
}

int64_t ng_stream_count_shared(ng_sslot *s) {
  stream_take(s, ng_me());
  return atomic_fetch_add_explicit(&s->enqueued, 1, memory_order_acq_rel) + 1;
}

void ng_stream_uncount(ng_sslot *s) {
  stream_take(s, ng_me());
  atomic_fetch_sub_explicit(&s->enqueued, 1, memory_order_acq_rel);
}

void ng_stream_reserve(ng_sslot *s, int64_t n) {
  ng_word_lock(&s->h.lock);
  if (n > atomic_load_explicit(&s->reserved, NG_RELAXED)) atomic_store_explicit(&s->reserved, ng_reserve(n + NG_RESERVED), NG_RELEASE);
  ng_word_unlock(&s->h.lock);
}

/* MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (Linux 4.14); refused (seccomp, an older kernel): no owners. */
static void register_membarrier(void) {
  atomic_store_explicit(&ng_owners, syscall(SYS_membarrier, MEMBARRIER_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0,
                        NG_RELEASE);
}

static void *register_in_background(void *p) {
  (void)p;
  register_membarrier();
  return NULL;
}

/* A fork's child is another process with one thread: registered again at once, if the parent was. */
static void register_in_child(void) {
  if (atomic_load_explicit(&owners_started, NG_ACQUIRE)) register_membarrier();
}

void ng_owners_start(void) {
  /* in a process with threads the kernel waits out an RCU grace period to register (12-17 ms
   * measured with 20 threads): on a thread of its own, never in the promotion's or a call's path */
  int expected = 0;
  if (atomic_compare_exchange_strong(&owners_started, &expected, 1)) ng_start_plain_thread(register_in_background, NULL);
}

void ng_slots_init(void) {
#if NG_REC_WHOLE_POSSIBLE
  /* tests only: "locked" takes the lock's path on any CPU; "whole" the one store where the CPU
   * does not promise it is atomic (qemu 7.2 reports no LSE2), which would fault without AVX */
  const char *force = getenv("NCCLGUARD_TEST_RECORD_STORE");
  if (force != NULL && strcmp(force, "locked") == 0) ng_w.rec_whole = 0;
  else if (force != NULL && strcmp(force, "whole") == 0) ng_w.rec_whole = 1;
  else ng_w.rec_whole = ng_arch_pair_atomic();
#endif
  pthread_atfork(NULL, NULL, register_in_child);
  ng_map_init(&ng_events, 1024);
  ng_map_init(&ng_streams, 256);
  ng_map_init(&ng_comms, 256);
  ng_hint_none = &ng_no_slot;
}

/* ---------------------------------------------------------------- the hot paths' out-of-line parts */
static int same_incarnation(ng_head *h, uint32_t inc) {
  return atomic_load_explicit(&h->inc, NG_ACQUIRE) == inc && !ng_ended(&h->lock);
}

int64_t ng_count_slow(ng_sslot *s, uint32_t inc) { return ng_count_fixup(s, inc, ng_stream_count_shared(s)); }

int64_t ng_count_fixup(ng_sslot *s, uint32_t inc, int64_t mine) {
  if (mine > atomic_load_explicit(&s->reserved, NG_RELAXED)) ng_stream_reserve(s, mine);
  if (atomic_load_explicit(&s->h.inc, NG_ACQUIRE) != inc) {
    ng_stream_uncount(s);
    return -1;
  }
  return mine;
}

void ng_record_slow(ng_eslot *e, uint32_t einc, ng_sslot *s, uint32_t sinc, int64_t at_enter, int64_t mine) {
  ng_event_recorded(e, einc, s, sinc, ng_record_covers(at_enter, mine), mine);
}

void ng_event_seen_complete(ng_eslot *e, uint32_t inc, int64_t seq) {
  if (same_incarnation(&e->h, inc)) ng_event_completed(e, seq);
}

void ng_stream_seen_idle(ng_sslot *s, uint32_t inc, int64_t n) {
  if (same_incarnation(&s->h, inc)) ng_stream_mark_done(s, n);
}
