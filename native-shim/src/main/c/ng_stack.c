/* The creating Java stack of an event made by native code on a Java thread, taken without a JVM
 * transition: AsyncGetCallTrace (HotSpot's, exported on 17, 21 and 25) walks the thread's Java
 * frames below its JNI call from their anchor and gives each frame's jmethodID and bytecode
 * index. The frames are hashed and stored once in a depot (LLVM's StackDepot): a creation keeps a
 * 32-bit id. Java learns an id's stack at its first sight: that creation takes the upcall as
 * before, its Java record's Throwable becomes the id's stack (Java resolves names only when a
 * report needs them), and once Java held it the id is confirmed; later creations with the same
 * frames on a confirmed thread make no upcall (ng_track.c). Equal frames (method and bytecode
 * index, each) are what makes two stacks equal: the Throwable of the first is the stack of every
 * later one. Java's answer at that upcall depends on the stack's first frame alone (whether its
 * method is a native a Java bridge wraps), so once Java held a creation under a first frame's
 * method, a new stack under the same method on a confirmed thread makes no upcall either: Java
 * names its frames when it adopts the event (ng_stack_frames: the depot's methods and bytecode
 * indexes). A frame with no jmethodID yet, a walk that failed or hit its depth, a full depot:
 * the creation takes the upcall, exact as before (docs/design.md, "Creations at hot-call cost"). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_hotspot.h"
#include "ng_log.h"
#include "ng_stack.h"
#include "ng_upcall.h"

#define BUCKET_BITS 16
#define BUCKETS (1u << BUCKET_BITS)
/* Throwable's default depth (MaxJavaStackTraceDepth); deeper stacks always take the upcall */
#define MAX_FRAMES 1024
/* ASGCT's bytecode index of a native method's frame */
#define NG_BCI_NATIVE (-3)

typedef struct entry {
  struct entry *next;
  uint64_t hash;
  uint32_t id;
  int32_t n;
  _Atomic uint32_t confirmed; /* the epoch Java confirmed it in, 0: not yet */
  int32_t vthread;            /* a virtual thread's frames, cut where its carrier's begin */
  ng_frame frames[];
} entry;

static _Atomic(entry *) buckets[BUCKETS];
/* entries by id, in chunks made as ids grow: id i is chunk (i - 1) / CHUNK, index (i - 1) % CHUNK */
#define CHUNK 4096
#define CHUNKS 4096
#define MAX_ID ((int64_t)CHUNK * CHUNKS)
static _Atomic(entry **) by_id[CHUNKS];
/* The first frames' methods Java held a creation under, with the epoch it did (open addressing;
 * a method is never removed, a full table leaves further ones to the per-stack confirmation). */
#define METHODS 1024
static _Atomic(uintptr_t) first_method[METHODS];
static _Atomic uint32_t first_epoch[METHODS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int64_t count, bytes;
static _Atomic int64_t max_stacks NG_READ_MOSTLY = 65536;
/* bumped when Java's wrapped natives change: a stack's owner (Java bridge or this one) may differ */
static _Atomic uint32_t epoch NG_READ_MOSTLY = 1;
static atomic_int full_logged;
static _Atomic(void *) vthread_entry;
static _Atomic uint32_t thread_ids;

/* this thread's id and the epoch Java confirmed it in; its frame buffer */
static __thread uint32_t self_id;
static __thread int self_confirmed; /* Java knows this thread's name by its id */
static __thread ng_frame *buf;
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_free(void *p) { free(p); }
static void buf_key_make(void) { pthread_key_create(&buf_key, buf_free); }

void ng_stack_set_vthread_entry(void *method) { atomic_store_explicit(&vthread_entry, method, NG_RELEASE); }
void ng_stack_set_max(int64_t max) { atomic_store(&max_stacks, max < 0 ? 0 : max); }
void ng_stack_invalidate(void) { atomic_fetch_add(&epoch, 1); }
int64_t ng_stack_count(void) { return atomic_load_explicit(&count, NG_RELAXED); }
int64_t ng_stack_bytes(void) { return atomic_load_explicit(&bytes, NG_RELAXED); }

static uint64_t hash_of(const ng_frame *f, int n) {
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
  for (int i = 0; i < n; i++) {
    h = (h ^ (uint64_t)(uintptr_t)f[i].method) * 0x100000001b3ull;
    h = (h ^ (uint64_t)(uint32_t)f[i].bci) * 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

/* A virtual thread's stack is never a platform thread's, whatever its frames */
static entry *find(uint64_t h, const ng_frame *f, int n, int vthread) {
  for (entry *e = atomic_load_explicit(&buckets[h & (BUCKETS - 1)], NG_ACQUIRE); e != NULL; e = e->next) {
    if (e->hash == h && e->n == n && e->vthread == vthread && memcmp(e->frames, f, sizeof(ng_frame) * (size_t)n) == 0) return e;
  }
  return NULL;
}

/* Stores the frames once; NULL when the depot is full (logged once) or memory ran out. */
static entry *insert(uint64_t h, const ng_frame *f, int n, int vthread) {
  pthread_mutex_lock(&lock);
  entry *e = find(h, f, n, vthread);
  if (e == NULL) {
    int64_t c = atomic_load_explicit(&count, NG_RELAXED);
    int64_t max = atomic_load_explicit(&max_stacks, NG_RELAXED);
    if (c >= max || c >= MAX_ID) {
      pthread_mutex_unlock(&lock);
      ng_log_once(&full_logged,
                  "the stack depot holds %lld distinct creating stacks (stack-depot=%lld): creations from native "
                  "code at further Java stacks each call into Java, as before; their stacks stay exact, at an "
                  "upcall's cost (a larger stack-depot= keeps more)",
                  (long long)c, (long long)max);
      return NULL;
    }
    size_t size = sizeof(entry) + sizeof(ng_frame) * (size_t)n;
    entry **chunk = atomic_load_explicit(&by_id[c / CHUNK], NG_RELAXED);
    if (chunk == NULL) {
      chunk = calloc(CHUNK, sizeof(entry *));
      if (chunk == NULL) {
        pthread_mutex_unlock(&lock);
        return NULL;
      }
      atomic_store_explicit(&by_id[c / CHUNK], chunk, NG_RELEASE);
    }
    e = malloc(size);
    if (e != NULL) {
      e->hash = h;
      e->n = n;
      e->id = (uint32_t)(c + 1);
      atomic_init(&e->confirmed, 0);
      e->vthread = vthread;
      memcpy(e->frames, f, sizeof(ng_frame) * (size_t)n);
      __atomic_store_n(&chunk[c % CHUNK], e, __ATOMIC_RELEASE);
      e->next = atomic_load_explicit(&buckets[h & (BUCKETS - 1)], NG_RELAXED);
      atomic_store_explicit(&buckets[h & (BUCKETS - 1)], e, NG_RELEASE);
      atomic_store_explicit(&count, c + 1, NG_RELAXED);
      atomic_fetch_add_explicit(&bytes, (int64_t)size, NG_RELAXED);
    }
  }
  pthread_mutex_unlock(&lock);
  return e;
}

/* The walk, retried once after the JVM made the jmethodIDs it lacked; frames or -1. *vthread: the
 * thread is a virtual one, its frames cut where its carrier's begin. */
static int walk(int *vthread) {
  if (buf == NULL) {
    pthread_once(&buf_once, buf_key_make);
    buf = malloc(sizeof(ng_frame) * (MAX_FRAMES + 1));
    if (buf == NULL) return -1;
    pthread_setspecific(buf_key, buf);
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    int n = ng_up_java_frames(buf, MAX_FRAMES + 1);
    if (n <= 0 || n > MAX_FRAMES) return -1;
    /* a virtual thread: the walk goes on through Continuation.enter into its carrier's frames;
     * its own end above it (VirtualThread.run, and the hidden frames between, which Java leaves
     * out when it names depot frames, as a Throwable does) */
    void *vt = atomic_load_explicit(&vthread_entry, NG_RELAXED);
    int missing = 0;
    *vthread = 0;
    for (int i = 0; i < n; i++) {
      if (vt != NULL && buf[i].method == vt) {
        n = i;
        *vthread = 1;
        break;
      }
      missing |= buf[i].method == NULL;
    }
    if (n <= 0) return -1;
    if (!missing) return n;
    /* methods never named by a jmethodID yet (a class's first use from here): a JVMTI stack
     * trace makes them, a JVM transition this once */
    if (attempt == 0 && !ng_up_make_method_ids(n)) return -1;
  }
  return -1;
}

static uint32_t method_slot(uintptr_t m) {
  uint64_t h = (uint64_t)m * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 40) & (METHODS - 1);
}

/* Whether Java held a creation under first-frame method m in epoch now. */
static int method_confirmed(void *m, uint32_t now) {
  uint32_t i = method_slot((uintptr_t)m);
  for (int probe = 0; probe < 16; probe++, i = (i + 1) & (METHODS - 1)) {
    uintptr_t at = atomic_load_explicit(&first_method[i], NG_ACQUIRE);
    if (at == 0) return 0;
    if (at == (uintptr_t)m) return atomic_load_explicit(&first_epoch[i], NG_ACQUIRE) == now;
  }
  return 0;
}

static void method_confirm(void *m, uint32_t now) {
  uint32_t i = method_slot((uintptr_t)m);
  for (int probe = 0; probe < 16; probe++, i = (i + 1) & (METHODS - 1)) {
    uintptr_t at = atomic_load_explicit(&first_method[i], NG_ACQUIRE);
    if (at == 0) {
      uintptr_t empty = 0;
      if (!atomic_compare_exchange_strong(&first_method[i], &empty, (uintptr_t)m) && empty != (uintptr_t)m) continue;
    } else if (at != (uintptr_t)m) {
      continue;
    }
    atomic_store_explicit(&first_epoch[i], now, NG_RELEASE);
    return;
  }
}

uint32_t ng_stack_thread(void) {
  if (self_id == 0) self_id = atomic_fetch_add_explicit(&thread_ids, 1, NG_RELAXED) + 1;
  return self_id;
}

int ng_stack_now(ng_stack_take *t) {
  t->id = 0;
  t->repeat = 0;
  t->entry = NULL;
  /* read before the walk: an upcall's answer confirms the stack for the epoch it was asked in */
  uint32_t now = atomic_load_explicit(&epoch, NG_ACQUIRE);
  t->epoch = now;
  t->thread = ng_stack_thread();
  if (atomic_load_explicit(&max_stacks, NG_RELAXED) == 0) return 0;
  /* the same JNI call as a walk before it: the same frames (ng_hotspot.c) */
  entry *e = ng_hs_memo_get();
  if (e == NULL) {
    int vthread;
    int n = walk(&vthread);
    if (n <= 0) return 0;
    uint64_t h = hash_of(buf, n);
    e = find(h, buf, n, vthread);
    if (e == NULL) e = insert(h, buf, n, vthread);
    if (e == NULL) return 0;
    /* a JNI method's frame first: its return resets the handle block the memo lives in (not so
     * for a downcall of java.lang.foreign, whose first frame is a Java method's) */
    if (buf[0].bci == NG_BCI_NATIVE) ng_hs_memo_put(e);
  }
  t->id = e->id;
  t->entry = e;
  /* a virtual thread's creation takes the upcall, which names the virtual thread (this thread is
   * its carrier, whose id and name are not its own); with the stack's id, which Java has learned
   * after the first: no walk of Java's own then (docs/design.md) */
  if (e->vthread) {
    t->thread = 0;
    return 0;
  }
  if (!self_confirmed) return 0;
  if (atomic_load_explicit(&e->confirmed, NG_ACQUIRE) != now) {
    /* a stack Java has not seen, under a first frame's method it has: Java names it at adoption */
    if (!method_confirmed(e->frames[0].method, now)) return 0;
    atomic_store_explicit(&e->confirmed, now, NG_RELEASE);
  }
  t->repeat = 1;
  return 1;
}

void ng_stack_confirm(const ng_stack_take *t) {
  if (t->entry == NULL) return;
  /* an epoch that moved on since the walk leaves the stack unconfirmed: the next creation asks again */
  entry *e = t->entry;
  atomic_store_explicit(&e->confirmed, t->epoch, NG_RELEASE);
  method_confirm(e->frames[0].method, t->epoch);
  if (t->thread != 0 && t->thread == self_id) self_confirmed = 1;
}

int ng_stack_frames(uint32_t id, ng_frame *out, int max) {
  if (id == 0 || (int64_t)id > MAX_ID) return -1;
  entry **chunk = atomic_load_explicit(&by_id[(id - 1) / CHUNK], NG_ACQUIRE);
  entry *e = chunk == NULL ? NULL : __atomic_load_n(&chunk[(id - 1) % CHUNK], __ATOMIC_ACQUIRE);
  if (e == NULL) return -1;
  if (out != NULL) memcpy(out, e->frames, sizeof(ng_frame) * (size_t)(e->n < max ? e->n : max));
  return e->n;
}
