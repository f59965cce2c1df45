/* The maps from handles to C slots (ng_map.c). */
#ifndef NG_MAP_H
#define NG_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "ng.h"

#pragma GCC visibility push(hidden)

typedef struct ng_map ng_map;
struct ng_map_table;
/* What the writers' lock guards, which every creation and release writes, in the lock word's own
 * cache line: a writer has that line once it holds the lock, so the counts under it cost no line
 * more (a framework's loop on one thread, whose lines the work between its operations evicts),
 * and nothing a lock-free reader reads lies in it (a loop that releases on another thread than it
 * creates moves that line alone between the cores). The lock word once shared a line with the
 * wrappers' gate words, read by every wrapped call. */
typedef struct {
  _Atomic uint32_t word; /* ng_map_lock */
  uint32_t used[3];      /* the maps' entries, as their `used` point at them */
  int32_t free_head[2];  /* the pools' free lists (ng_slots.h) */
  _Atomic int32_t taken[2], given_back[2]; /* the pools' slots handed out and given back */
  /* events made with no upcall (NG_REF_LAZY), those released with none, those Java adopted */
  _Atomic int64_t lazy_created, lazy_released, lazy_adopted;
} __attribute__((aligned(64))) ng_locked_words;
_Static_assert(sizeof(ng_locked_words) == 64, "what the map lock guards fills its one line");
extern ng_locked_words ng_locked;

/* The table, which every lookup reads, on a line no written variable shares; its count in ng_locked. */
struct ng_map {
  _Atomic(struct ng_map_table *) table;
  uint32_t *used; /* guarded by the writers' lock */
} __attribute__((aligned(64)));
void ng_map_init(ng_map *m, uint32_t capacity);
typedef struct {
  _Atomic uint64_t key;
  _Atomic uint64_t value;
} ng_map_entry;

/* The mask on a line of its own (the table is 64-byte aligned): entries written by inserts and
 * removals never share the line every lookup reads first. */
struct ng_map_table {
  uint32_t mask;
  ng_map_entry e[] __attribute__((aligned(64)));
};

static inline uint32_t ng_map_slot(uint64_t key, uint32_t mask) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (uint32_t)key & mask;
}

_Static_assert(sizeof(struct ng_map) == 64, "a map on a line of its own");
_Static_assert(offsetof(struct ng_map_table, e) == 64, "a table's mask on a line of its own");

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
/* One probe each, for creations and releases: put, returning the value it replaced (0: none);
 * remove if the key's value is value (0: any), returning the value found (0: none). */
uint64_t ng_map_swap(ng_map *m, uint64_t key, uint64_t value);
uint64_t ng_map_remove_if(ng_map *m, uint64_t key, uint64_t value);
void ng_map_lock(void);
void ng_map_unlock(void);

#pragma GCC visibility pop

#endif
