/* Maps from a handle (or a special stream's key) to a value, read without a lock on the hot path.
 * Linear probing; a removal shifts the entries after it back (no tombstones, so a map whose
 * handles churn never fills up); writers take one lock shared by every map (creations and
 * releases only). A reader racing a writer may miss a key or read the value of a key being
 * moved: what it found is validated by the caller (a C slot carries its key), and a miss is
 * retried under the lock. A grown table replaces the old one, which stays allocated (readers
 * may still be in it): the tables left behind add up to less than the newest. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_arch.h"
#include "ng_map.h"

/* A word, not a mutex: taken with one compare-and-swap, freed with a plain release store (a mutex's
 * unlock is a second locked instruction, and creations and releases take this lock on a
 * framework's hot path: docs/design.md, "Creations at hot-call cost"). Held for a few dozen
 * instructions; a waiter pauses, then yields. What it guards shares its line (ng_map.h). */
ng_locked_words ng_locked = {.free_head = {-1, -1}};

void ng_map_lock(void) {
  int spins = 0;
  while (1) {
    uint32_t free = 0;
    if (atomic_load_explicit(&ng_locked.word, NG_RELAXED) == 0 &&
        atomic_compare_exchange_weak_explicit(&ng_locked.word, &free, 1, memory_order_acquire, NG_RELAXED))
      return;
    if (spins++ < 64) {
      ng_pause();
    } else {
      sched_yield();
      spins = 0;
    }
  }
}

void ng_map_unlock(void) { atomic_store_explicit(&ng_locked.word, 0, NG_RELEASE); }

static struct ng_map_table *table_new(uint32_t capacity) {
  size_t bytes = sizeof(struct ng_map_table) + (size_t)capacity * sizeof(ng_map_entry);
  struct ng_map_table *t = aligned_alloc(64, bytes);
  if (t == NULL) abort(); /* a few KiB at start, then doubling: nothing sensible to do without it */
  memset(t, 0, bytes);
  t->mask = capacity - 1;
  return t;
}

void ng_map_init(ng_map *m, uint32_t capacity) {
  atomic_store_explicit(&m->table, table_new(capacity), NG_RELEASE);
  *m->used = 0;
}

uint64_t ng_map_get_locked(ng_map *m, uint64_t key) { return ng_map_get(m, key); }

static void grow(ng_map *m) {
  struct ng_map_table *old = atomic_load_explicit(&m->table, NG_RELAXED);
  uint32_t capacity = (old->mask + 1) * 2;
  struct ng_map_table *t = table_new(capacity);
  for (uint32_t j = 0; j <= old->mask; j++) {
    uint64_t k = atomic_load_explicit(&old->e[j].key, NG_RELAXED);
    if (k == 0) continue;
    uint32_t i = ng_map_slot(k, t->mask);
    while (atomic_load_explicit(&t->e[i].key, NG_RELAXED) != 0) i = (i + 1) & t->mask;
    atomic_store_explicit(&t->e[i].value, atomic_load_explicit(&old->e[j].value, NG_RELAXED), NG_RELAXED);
    atomic_store_explicit(&t->e[i].key, k, NG_RELAXED);
  }
  atomic_store_explicit(&m->table, t, NG_RELEASE);
}

uint64_t ng_map_swap(ng_map *m, uint64_t key, uint64_t value) {
  struct ng_map_table *t = atomic_load_explicit(&m->table, NG_RELAXED);
  uint32_t i = ng_map_slot(key, t->mask);
  while (1) {
    uint64_t k = atomic_load_explicit(&t->e[i].key, NG_RELAXED);
    if (k == key) {
      uint64_t old = atomic_load_explicit(&t->e[i].value, NG_RELAXED);
      atomic_store_explicit(&t->e[i].value, value, NG_RELEASE);
      return old;
    }
    if (k == 0) break;
    i = (i + 1) & t->mask;
  }
  if ((*m->used + 1) * 2 > t->mask + 1) {
    grow(m);
    return ng_map_swap(m, key, value);
  }
  (*m->used)++;
  /* the value first: a reader that sees the key sees its value */
  atomic_store_explicit(&t->e[i].value, value, NG_RELAXED);
  atomic_store_explicit(&t->e[i].key, key, NG_RELEASE);
  return 0;
}

void ng_map_put(ng_map *m, uint64_t key, uint64_t value) { (void)ng_map_swap(m, key, value); }

void ng_map_remove(ng_map *m, uint64_t key) { (void)ng_map_remove_if(m, key, 0); }

uint64_t ng_map_remove_if(ng_map *m, uint64_t key, uint64_t value) {
  struct ng_map_table *t = atomic_load_explicit(&m->table, NG_RELAXED);
  uint32_t mask = t->mask;
  uint32_t i = ng_map_slot(key, mask);
  while (1) {
    uint64_t k = atomic_load_explicit(&t->e[i].key, NG_RELAXED);
    if (k == 0) return 0;
    if (k == key) break;
    i = (i + 1) & mask;
  }
  uint64_t old = atomic_load_explicit(&t->e[i].value, NG_RELAXED);
  if (value != 0 && old != value) return old;
  (*m->used)--;
  /* Knuth's algorithm R: move back every later entry of the run whose home is not after the hole */
  uint32_t hole = i;
  uint32_t j = i;
  while (1) {
    j = (j + 1) & mask;
    uint64_t k = atomic_load_explicit(&t->e[j].key, NG_RELAXED);
    if (k == 0) break;
    uint32_t home = ng_map_slot(k, mask);
    int between = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (between) continue;
    atomic_store_explicit(&t->e[hole].value, atomic_load_explicit(&t->e[j].value, NG_RELAXED), NG_RELAXED);
    atomic_store_explicit(&t->e[hole].key, k, NG_RELEASE);
    hole = j;
  }
  atomic_store_explicit(&t->e[hole].key, 0, NG_RELEASE);
  atomic_store_explicit(&t->e[hole].value, 0, NG_RELAXED);
  return old;
}
