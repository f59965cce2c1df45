/* NCCL's profiler plugin: ncclProfiler_v6 (NCCL 2.29.2+), _v5 (2.28.3+), _v4 (2.27.3+), with the
 * layouts of NVIDIA/nccl src/include/plugin/profiler/profiler_v{4,5,6}.h.
 *
 * Per communicator (init .. finalize) a record: NCCL's commId, rank, nranks, nNodes, the initing
 * thread, whether it was a Java thread (then an upcall lets Java take its stack). Init without
 * finalize at exit is a communicator nobody released, even where no interposer saw it (NCCL
 * linked statically).
 *
 * In flight: NCCL 2.28 starts a collective's (and a p2p's) event when it launches the plan and
 * stops it right after posting its proxy ops, on the launching thread or the host stream's
 * callback: the stop says "enqueued", not "finished" (ext-profiler/README.md). With
 * ncclProfileKernelCh, NCCL adds a profiler proxy op per channel, and the proxy thread starts a
 * KernelCh event (parent: the collective's event) when the kernel begins that channel's work and
 * stops it when the kernel is done with it. So the smallest mask that tells started from finished
 * is ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh (0x46): an op is in flight from its
 * start until its own stop and the stops of its nChannels KernelCh events. A communicator's work
 * runs in order, so an op seen finished finishes every older op of its communicator too. Until the
 * first KernelCh event of the process, a stopped op counts as finished (a NCCL, or the emulator,
 * that sends none).
 *
 * Event records come from a pool (no malloc per event); every handle NCCL gets is ours, so that
 * the events we forward to the application's own plugin carry its handles and its parents. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nccl_profiler.h"
#include "ng.h"
#include "ng_log.h"
#include "ng_prof.h"
#include "ng_upcall.h"

/* A descriptor's union (anonymous in NCCL's headers) starts at one offset in every version, and a
 * version's members are the next one's first ones (v5's coll and p2p are v4's with parentGroup
 * after them): a descriptor changes version by copying the smaller union's bytes. */
#define DESCR_UNION_AT offsetof(ncclProfilerEventDescr_v6_t, coll)
#define DESCR_UNION_SIZE(type) (sizeof(type) - DESCR_UNION_AT)
#define descr_union(d) ((char *)(d) + DESCR_UNION_AT)
#define descr_union_of(d) ((const char *)(d) + DESCR_UNION_AT)
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll) == DESCR_UNION_AT &&
                   offsetof(ncclProfilerEventDescr_v4_t, coll) == DESCR_UNION_AT,
               "the descriptors' unions start at one offset");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) - DESCR_UNION_AT ==
                       sizeof(((ncclProfilerEventDescr_v4_t *)0)->coll) &&
                   offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup) - DESCR_UNION_AT ==
                       sizeof(((ncclProfilerEventDescr_v4_t *)0)->p2p),
               "v5's coll and p2p extend v4's");

#ifdef NG_CALL_PROFILE
/* the counting build (make prof, never shipped) takes its mask from NCCLGUARD_PROF_MASK where set:
 * what each event kind costs a framework's loop, measured on the GPU hosts */
static int our_mask(void) {
  const char *m = getenv("NCCLGUARD_PROF_MASK");
  return m != NULL && *m != 0 ? (int)strtol(m, NULL, 0) : (ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);
}
#define OUR_MASK our_mask()
#else
#define OUR_MASK (ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh)
#endif

/* ---------------------------------------------------------------- records */
typedef struct pcomm pcomm;

typedef struct pev {
  pcomm *comm;
  void *user;          /* the application's plugin's handle, or NULL */
  struct pev *parent;  /* a KernelCh event's collective or p2p */
  struct pev *prev, *next;
  const char *func, *datatype;
  size_t count;
  int64_t start_ns;
  uint64_t type;
  uint16_t nch, kch_stopped;
  uint8_t stopped, done, listed; /* listed: 1 in flight, 2 zombie (done, awaiting KernelCh stops) */
  int32_t free_next;
  /* last, out of pev_alloc's memset, and atomic: a KernelCh's start or stop reads them on its
   * parent, which another thread may be freeing (a collective freed at its stop before the first
   * KernelCh was seen; a freed parent is then ignored) */
  _Atomic uint8_t tracked; /* a collective or p2p we follow */
  _Atomic uint8_t in_use;
} pev;

struct pcomm {
  int64_t id;
  uint64_t comm_id;
  int rank, nranks, nnodes;
  char name[128];
  int has_name;
  int64_t init_seq, init_ms;
  long tid;
  int java;
  int mask;
  atomic_int finalized, claimed;
  /* the application's plugin for this communicator */
  int uver;
  const void *ufns;
  void *uctx;
  int user_held; /* took the application's plugin at init: lets go at finalize */
  /* in flight, oldest first; and done ops still awaiting KernelCh stops */
  pthread_spinlock_t lock;
  pev *head, *tail, *zombies;
  int ncoll, np2p;
  int64_t completed;
};

#define POOL_CHUNK 4096
#define POOL_CHUNKS 256
static _Atomic(pev *) pool_chunks[POOL_CHUNKS];
static atomic_int pool_nchunks;
/* the free list and its lock, which NCCL's threads write at every event, on a line of their own */
static struct {
  pthread_spinlock_t lock;
  int32_t free;
} __attribute__((aligned(64))) pool = {.free = -1};

static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;
static pcomm **comms;
static int ncomms, capcomms;
static atomic_llong init_seq;
static atomic_int kernel_seen; /* a KernelCh event arrived: NCCL tells finished work apart */

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The application's own plugin: configured by userPlugin (or, in a process the agent did not start,
 * NCCLGUARD_USER_PROFILER_PLUGIN), opened as NCCL opens it at a communicator's init, held by
 * every communicator inited since, closed after the last one's finalize; one that failed to load
 * is not tried again. Guarded by user_lock. */
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;
static int user_configured;
static char user_name[512]; /* empty: NCCL_PROFILER_PLUGIN unset, libnccl-profiler.so */
static int user_none, user_failed;
static void *user_lib;
static int user_refs;
static const ncclProfiler_v6_t *user_v6;
static const ncclProfiler_v5_t *user_v5;
static const ncclProfiler_v4_t *user_v4;
/* the application's plugin as its communicators took it (one NCCL, so one version): what the
 * events only it follows, unwrapped, are stopped and recorded through */
static _Atomic(const void *) user_fns;
static atomic_int user_version;
static int user_mask_store; /* what the user's plugin sets, as it would set NCCL's mask */
static _Atomic(int *) nccl_mask; /* NCCL's activation mask, as its last init passed it */
static atomic_int synced_mask = -1;

static void init_once(void) { pthread_spin_init(&pool.lock, PTHREAD_PROCESS_PRIVATE); }

/* A fork's child has the forking thread alone: a lock another thread of the parent held would stay
 * held there for good, and the child's NCCL (a communicator of its own) or the child's exit would
 * wait on it. Each is made anew, as ng_caller.c does with its own (not taken in a prepare handler:
 * a fork from inside the dynamic linker would wait on a holder that waits on the linker). What a
 * holder was changing may be half done; the child only adds records of its own. */
static void forked_child(void) {
  pthread_spin_init(&pool.lock, PTHREAD_PROCESS_PRIVATE);
  pthread_mutex_init(&comms_lock, NULL);
  pthread_mutex_init(&user_lock, NULL);
  for (int i = 0; i < ncomms; i++) {
    if (comms[i] != NULL) pthread_spin_init(&comms[i]->lock, PTHREAD_PROCESS_PRIVATE);
  }
}

void ng_prof_init(void) { pthread_atfork(NULL, NULL, forked_child); }

void ng_prof_hold_locks(int hold) {
  pthread_once(&once, init_once);
  if (hold) {
    pthread_mutex_lock(&user_lock);
    pthread_mutex_lock(&comms_lock);
    for (int i = 0; i < ncomms; i++) pthread_spin_lock(&comms[i]->lock);
    pthread_spin_lock(&pool.lock);
  } else {
    pthread_spin_unlock(&pool.lock);
    for (int i = 0; i < ncomms; i++) pthread_spin_unlock(&comms[i]->lock);
    pthread_mutex_unlock(&comms_lock);
    pthread_mutex_unlock(&user_lock);
  }
}

static inline pev *pool_at(int32_t i) {
  return atomic_load_explicit(&pool_chunks[i / POOL_CHUNK], NG_ACQUIRE) + i % POOL_CHUNK;
}

static pev *pev_alloc(pcomm *c, uint64_t type) {
  pthread_spin_lock(&pool.lock);
  int32_t i = pool.free;
  if (i < 0) {
    int n = atomic_load_explicit(&pool_nchunks, NG_RELAXED);
    pev *chunk = n < POOL_CHUNKS ? calloc(POOL_CHUNK, sizeof(pev)) : NULL;
    if (chunk == NULL) {
      pthread_spin_unlock(&pool.lock);
      return NULL;
    }
    for (int j = 0; j < POOL_CHUNK; j++) chunk[j].free_next = j + 1 < POOL_CHUNK ? n * POOL_CHUNK + j + 1 : -1;
    atomic_store_explicit(&pool_chunks[n], chunk, NG_RELEASE);
    atomic_store_explicit(&pool_nchunks, n + 1, NG_RELEASE);
    i = n * POOL_CHUNK;
  }
  pev *e = pool_at(i);
  pool.free = e->free_next;
  pthread_spin_unlock(&pool.lock);
  int32_t self = i;
  memset(e, 0, offsetof(pev, tracked));
  e->free_next = self;
  e->comm = c;
  e->type = type;
  atomic_store_explicit(&e->tracked, 0, NG_RELAXED);
  atomic_store_explicit(&e->in_use, 1, NG_RELAXED);
  return e;
}

static void pev_free(pev *e) {
  int32_t self = e->free_next;
  atomic_store_explicit(&e->in_use, 0, NG_RELAXED);
  pthread_spin_lock(&pool.lock);
  e->free_next = pool.free;
  pool.free = self;
  pthread_spin_unlock(&pool.lock);
}

/* Whether p is one of our event records (NCCL only hands back what we gave it, but a PXN proxy
 * op's parent lives in another process). */
static pev *ours(void *p) {
  int n = atomic_load_explicit(&pool_nchunks, NG_ACQUIRE);
  for (int i = 0; i < n; i++) {
    pev *c = atomic_load_explicit(&pool_chunks[i], NG_ACQUIRE);
    if ((pev *)p >= c && (pev *)p < c + POOL_CHUNK && ((uintptr_t)p - (uintptr_t)c) % sizeof(pev) == 0) return p;
  }
  return NULL;
}

/* ---------------------------------------------------------------- the application's plugin */
int ng_prof_user_plugin(const char *name) {
  pthread_once(&once, init_once);
  char err[sizeof(user_name) + 32];
  err[0] = '\0';
  pthread_mutex_lock(&user_lock);
  user_configured = 1;
  user_failed = 0;
  user_none = name != NULL && strcasecmp(name, "none") == 0;
  snprintf(user_name, sizeof(user_name), "%s", name != NULL && !user_none ? name : "");
  int ok = 1;
  /* a path must exist; a name is looked up as dlopen looks, at the first init */
  if (strchr(user_name, '/') != NULL && access(user_name, R_OK) != 0) {
    snprintf(err, sizeof(err), "%s: no such file", user_name);
    ok = 0;
  }
  pthread_mutex_unlock(&user_lock);
  if (!ok) ng_set_error("%s", err);
  return ok;
}

static void *try_open(const char *name) {
  if (strcmp(name, "STATIC_PLUGIN") == 0) return dlopen(NULL, RTLD_NOW | RTLD_LOCAL);
  return dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

/* As NCCL opens NCCL_PROFILER_PLUGIN (src/plugin/plugin_open.cc): the name itself, then
 * libnccl-profiler-<name>.so for a short name; unset means libnccl-profiler.so. Under user_lock. */
static void user_open_locked(void) {
  const char *name = user_name[0] != '\0' ? user_name : "libnccl-profiler.so";
  void *h = try_open(name);
  char other[600];
  size_t n = strlen(name);
  if (h == NULL && user_name[0] != '\0' && strchr(name, '/') == NULL &&
      (strncmp(name, "lib", 3) != 0 || n < 3 || strcmp(name + n - 3, ".so") != 0)) {
    snprintf(other, sizeof(other), "libnccl-profiler-%s.so", name);
    h = try_open(other);
  }
  if (h == NULL) {
    if (user_name[0] != '\0') ng_log("the application's profiler plugin %s could not be loaded: it sees nothing", name);
    user_failed = 1;
    return;
  }
  void *v6 = dlsym(h, "ncclProfiler_v6");
  void *v5 = dlsym(h, "ncclProfiler_v5");
  void *v4 = dlsym(h, "ncclProfiler_v4");
  Dl_info info;
  void *any = v6 != NULL ? v6 : v5 != NULL ? v5 : v4;
  if (any != NULL && dladdr(any, &info) != 0 && (uintptr_t)info.dli_fbase == ng_self_base) {
    /* it named ncclguard itself: the application has no plugin of its own */
    user_none = 1;
    dlclose(h);
    return;
  }
  if (any == NULL) {
    ng_log("the application's profiler plugin %s has no ncclProfiler_v6, _v5 or _v4: it sees nothing", name);
    user_failed = 1;
    dlclose(h);
    return;
  }
  user_lib = h;
  user_v6 = v6;
  user_v5 = v5;
  user_v4 = v4;
}

/* A communicator's init takes the application's plugin (opening it first if need be). */
static void user_acquire(const ncclProfiler_v6_t **u6, const ncclProfiler_v5_t **u5, const ncclProfiler_v4_t **u4, int *held) {
  pthread_mutex_lock(&user_lock);
  if (!user_configured) {
    /* loaded by NCCL in a process the agent did not start (a child that inherited
     * NCCL_PROFILER_PLUGIN): the application's own plugin is in this variable */
    const char *name = getenv("NCCLGUARD_USER_PROFILER_PLUGIN");
    user_configured = 1;
    user_none = name != NULL && strcasecmp(name, "none") == 0;
    snprintf(user_name, sizeof(user_name), "%s", name != NULL && !user_none ? name : "");
  }
  if (user_lib == NULL && !user_none && !user_failed) user_open_locked();
  *held = user_lib != NULL;
  if (*held) user_refs++;
  *u6 = user_v6;
  *u5 = user_v5;
  *u4 = user_v4;
  pthread_mutex_unlock(&user_lock);
}

/* ... and its finalize lets go of it: closed after the last, as NCCL closes it. */
static void user_release(void) {
  pthread_mutex_lock(&user_lock);
  if (user_refs > 0 && --user_refs == 0 && user_lib != NULL) {
    atomic_store_explicit(&user_fns, NULL, NG_RELEASE);
    dlclose(user_lib);
    user_lib = NULL;
    user_v6 = NULL;
    user_v5 = NULL;
    user_v4 = NULL;
  }
  pthread_mutex_unlock(&user_lock);
}

/* Which events NCCL 2.28 starts for a mask (src/plugin/profiler.cc): what the application's plugin
 * saw before us, and still sees. */
static int nccl_starts(uint64_t type, int mask) {
  int need;
  switch (type) {
  case ncclProfileGroup: need = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin; break;
  case ncclProfileColl: need = ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin; break;
  case ncclProfileP2p: need = ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin; break;
  case ncclProfileProxyOp: need = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin; break;
  case ncclProfileProxyStep: need = ncclProfileProxyStep | ncclProfileNetPlugin; break;
  case ncclProfileGroupApi:
    need = ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi | ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
           ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin;
    break;
  case ncclProfileCollApi: need = ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin; break;
  case ncclProfileP2pApi: need = ncclProfileP2pApi | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin; break;
  default: need = (int)type; break;
  }
  return (mask & need) != 0;
}

/* NCCL's mask is what the application's plugin asks for and what we need; the plugin may change
 * its part later, as it could change NCCL's mask before. */
static void sync_mask(void) {
  int m = __atomic_load_n(&user_mask_store, __ATOMIC_RELAXED);
  int *mask = atomic_load_explicit(&nccl_mask, NG_ACQUIRE);
  if (mask != NULL && atomic_exchange_explicit(&synced_mask, m, NG_RELAXED) != m)
    __atomic_store_n(mask, m | OUR_MASK, __ATOMIC_RELAXED);
}

/* A parent NCCL passes: one of our records stands for the application's handle in it; any other
 * handle is the application's own (the events only it follows are its handles, unwrapped). */
static void *user_handle(void *p) {
  pev *e = p != NULL ? ours(p) : NULL;
  return e != NULL ? e->user : p;
}

/* The application's plugin's startEvent, with the descriptor in its version and its handles;
 * returns its handle. */
static void *user_start(pcomm *c, const ncclProfilerEventDescr_v6_t *d) {
  if (c->ufns == NULL || c->uctx == NULL) return NULL;
  if (!nccl_starts(d->type, __atomic_load_n(&user_mask_store, __ATOMIC_RELAXED))) return NULL;
  void *parent = d->parentObj;
  /* a PXN proxy op's parent is an event of the originating process */
  if (!(d->type == ncclProfileProxyOp && d->proxyOp.pid != getpid())) parent = user_handle(parent);
  void *h = NULL;
  if (c->uver == 6) {
    ncclProfilerEventDescr_v6_t x = *d;
    x.parentObj = parent;
    if (d->type == ncclProfileColl) x.coll.parentGroup = user_handle(d->coll.parentGroup);
    if (d->type == ncclProfileP2p) x.p2p.parentGroup = user_handle(d->p2p.parentGroup);
    ((const ncclProfiler_v6_t *)c->ufns)->startEvent(c->uctx, &h, &x);
  } else if (c->uver == 5) {
    if (d->type & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)) return NULL;
    ncclProfilerEventDescr_v5_t x;
    memset(&x, 0, sizeof(x));
    x.type = d->type;
    x.parentObj = parent;
    x.rank = d->rank;
    memcpy(descr_union(&x), descr_union_of(d), DESCR_UNION_SIZE(ncclProfilerEventDescr_v5_t));
    if (d->type == ncclProfileColl) x.coll.parentGroup = user_handle(d->coll.parentGroup);
    if (d->type == ncclProfileP2p) x.p2p.parentGroup = user_handle(d->p2p.parentGroup);
    ((const ncclProfiler_v5_t *)c->ufns)->startEvent(c->uctx, &h, &x);
  } else {
    if (d->type & (ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch | ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)) return NULL;
    ncclProfilerEventDescr_v4_t x;
    memset(&x, 0, sizeof(x));
    x.type = (uint8_t)d->type;
    x.parentObj = parent;
    x.rank = d->rank;
    memcpy(descr_union(&x), descr_union_of(d), DESCR_UNION_SIZE(ncclProfilerEventDescr_v4_t));
    /* v4's collectives and p2p hang off the group */
    if (d->type == ncclProfileColl) x.parentObj = user_handle(d->coll.parentGroup);
    if (d->type == ncclProfileP2p) x.parentObj = user_handle(d->p2p.parentGroup);
    ((const ncclProfiler_v4_t *)c->ufns)->startEvent(c->uctx, &h, &x);
  }
  return h;
}

/* ---------------------------------------------------------------- communicators */
static void comm_add(pcomm *c) {
  pthread_mutex_lock(&comms_lock);
  if (ncomms == capcomms) {
    int cap = capcomms == 0 ? 64 : capcomms * 2;
    /* a copy published before the old array is freed: a fork's child caught here still reads a
     * whole array (forked_child walks it) */
    pcomm **a = malloc(sizeof(*a) * (size_t)cap), **old = comms;
    if (a == NULL) {
      pthread_mutex_unlock(&comms_lock);
      return;
    }
    if (ncomms > 0) memcpy(a, old, sizeof(*a) * (size_t)ncomms);
    comms = a;
    capcomms = cap;
    free(old);
  }
  c->id = ncomms + 1;
  c->init_seq = atomic_fetch_add(&init_seq, 1) + 1;
  comms[ncomms++] = c;
  pthread_mutex_unlock(&comms_lock);
}

static pcomm *comm_of(int64_t id) {
  pthread_mutex_lock(&comms_lock);
  pcomm *c = id >= 1 && id <= ncomms ? comms[id - 1] : NULL;
  pthread_mutex_unlock(&comms_lock);
  return c;
}

static __thread int mark_on, mark_first, mark_count;

void ng_prof_mark(void) {
  mark_on = 1;
  mark_first = mark_count = 0;
}

void ng_prof_take(int *first, int *count) {
  *first = mark_first;
  *count = mark_count;
  mark_on = 0;
}

static int init_common(int version, void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                       int nranks, int rank, ncclDebugLogger_t logfn) {
  pthread_once(&once, init_once);
  pcomm *c = calloc(1, sizeof(*c));
  if (c == NULL) return 2; /* ncclSystemError: NCCL goes on without the profiler for this comm */
  pthread_spin_init(&c->lock, PTHREAD_PROCESS_PRIVATE);
  c->comm_id = comm_id;
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  if (name != NULL) {
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->has_name = 1;
  }
  c->init_ms = ng_now_ms();
  c->tid = (long)syscall(SYS_gettid);
  c->java = ng_up_java_thread();
  const ncclProfiler_v6_t *u6;
  const ncclProfiler_v5_t *u5;
  const ncclProfiler_v4_t *u4;
  user_acquire(&u6, &u5, &u4, &c->user_held);
  /* the application's plugin in the highest version NCCL itself would have used */
  int ret = 0;
  void *uctx = NULL;
  if (version >= 6 && u6 != NULL) {
    c->uver = 6, c->ufns = u6;
    ret = u6->init(&uctx, comm_id, &user_mask_store, name, nnodes, nranks, rank, logfn);
  } else if (version >= 5 && u5 != NULL) {
    c->uver = 5, c->ufns = u5;
    ret = u5->init(&uctx, comm_id, &user_mask_store, name, nnodes, nranks, rank, logfn);
  } else if (u4 != NULL) {
    c->uver = 4, c->ufns = u4;
    ret = u4->init(&uctx, &user_mask_store, name, comm_id, nnodes, nranks, rank, logfn);
  }
  if (ret != 0) {
    /* NCCL goes on without that plugin for this communicator: so do we */
    c->ufns = NULL;
    uctx = NULL;
  } else if (c->ufns != NULL) {
    atomic_store_explicit(&user_version, c->uver, NG_RELAXED);
    atomic_store_explicit(&user_fns, c->ufns, NG_RELEASE);
  }
  c->uctx = uctx;
  if (mask != NULL) {
    /* this init's own mask, set here whatever other inits do meanwhile: real NCCL passes its one
     * global every time, but an NCCL that gives each init an int of its own (the emulator) lost
     * it when two inits ran at once and the other's pointer was the one synced */
    int m = __atomic_load_n(&user_mask_store, __ATOMIC_RELAXED);
    __atomic_store_n(mask, m | OUR_MASK, __ATOMIC_RELAXED);
    atomic_store_explicit(&nccl_mask, mask, NG_RELEASE);
    atomic_store_explicit(&synced_mask, m, NG_RELAXED);
  }
  c->mask = mask != NULL ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0;
  comm_add(c);
  if (mark_on) {
    if (mark_first == 0) mark_first = (int)c->id;
    mark_count++;
  }
  *context = c;
  if (c->java) ng_up_plugin_init(c->id);
  return 0;
}

static ncclResult_t init_v6(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes, int nranks, int rank,
                   ncclDebugLogger_t logfn) {
  return init_common(6, context, comm_id, mask, name, nnodes, nranks, rank, logfn);
}

static ncclResult_t init_v5(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes, int nranks, int rank,
                   ncclDebugLogger_t logfn) {
  return init_common(5, context, comm_id, mask, name, nnodes, nranks, rank, logfn);
}

static ncclResult_t init_v4(void **context, int *mask, const char *name, uint64_t comm_hash, int nnodes, int nranks, int rank,
                   ncclDebugLogger_t logfn) {
  return init_common(4, context, comm_hash, mask, name, nnodes, nranks, rank, logfn);
}

/* ---------------------------------------------------------------- in flight */
static void unlink_ev(pev **head, pev **tail, pev *e) {
  if (e->prev != NULL) e->prev->next = e->next;
  else *head = e->next;
  if (e->next != NULL) e->next->prev = e->prev;
  else if (tail != NULL) *tail = e->prev;
  e->prev = e->next = NULL;
}

/* Whether a done op's record may go: its stop and its KernelCh stops have all come. */
static int freeable(pev *e) { return e->stopped && (e->kch_stopped >= e->nch || !atomic_load(&kernel_seen)); }

/* e is finished, and with it every older op of the communicator; under c->lock. Records that
 * still expect events (their stop, KernelCh stops) stay allocated, as zombies. Returns how many
 * records can be freed (put on *freed). */
static void finished(pcomm *c, pev *e, pev **freed) {
  while (c->head != NULL) {
    pev *o = c->head;
    unlink_ev(&c->head, &c->tail, o);
    o->done = 1;
    if (o->type == ncclProfileP2p) c->np2p--;
    else c->ncoll--;
    c->completed++;
    if (freeable(o) && o->user == NULL) {
      o->listed = 0;
      o->next = *freed;
      *freed = o;
    } else {
      o->listed = 2;
      o->next = c->zombies;
      if (c->zombies != NULL) c->zombies->prev = o;
      c->zombies = o;
    }
    if (o == e) return;
  }
}

static void track_start(pcomm *c, pev *e, const ncclProfilerEventDescr_v6_t *d) {
  if (d->type == ncclProfileColl) {
    e->func = d->coll.func;
    e->datatype = d->coll.datatype;
    e->count = d->coll.count;
    e->nch = d->coll.nChannels;
  } else if (d->type == ncclProfileP2p) {
    e->func = d->p2p.func;
    e->datatype = d->p2p.datatype;
    e->count = d->p2p.count;
    e->nch = d->p2p.nChannels;
  } else { /* ncclProfileCeColl: no KernelCh children */
    e->func = d->ceColl.func;
    e->datatype = d->ceColl.datatype;
    e->count = d->ceColl.count;
    e->nch = 0;
  }
  atomic_store_explicit(&e->tracked, 1, NG_RELAXED);
  e->start_ns = ng_now_ns();
  pthread_spin_lock(&c->lock);
  e->listed = 1;
  e->prev = c->tail;
  e->next = NULL;
  if (c->tail != NULL) c->tail->next = e;
  else c->head = e;
  c->tail = e;
  if (d->type == ncclProfileP2p) c->np2p++;
  else c->ncoll++;
  pthread_spin_unlock(&c->lock);
}

static void free_list(pev *f) {
  while (f != NULL) {
    pev *n = f->next;
    pev_free(f);
    f = n;
  }
}

/* ---------------------------------------------------------------- the plugin's calls */
static int start_common(void *context, void **handle, const ncclProfilerEventDescr_v6_t *d) {
  *handle = NULL;
  pcomm *c = context;
  if (c == NULL) return 0;
  sync_mask();
  uint64_t type = d->type;
  int tracked = type == ncclProfileColl || type == ncclProfileP2p || type == ncclProfileCeColl;
  pev *parent = NULL;
  if (type == ncclProfileKernelCh) {
    atomic_store_explicit(&kernel_seen, 1, NG_RELAXED);
    parent = ours(d->parentObj);
    if (parent != NULL && (!atomic_load_explicit(&parent->in_use, NG_RELAXED) || !atomic_load_explicit(&parent->tracked, NG_RELAXED)))
      parent = NULL;
  }
  if (!tracked && parent == NULL) {
    /* only the application's plugin follows it: its own handle, unwrapped */
    *handle = user_start(c, d);
    return 0;
  }
  /* a record of ours: it outlives its stop while NCCL may still name it as a parent (a
   * collective's KernelCh and proxy events start after the collective's stop) */
  pev *e = pev_alloc(c, type);
  if (e == NULL) {
    *handle = user_start(c, d); /* out of records: the application's plugin still gets it */
    return 0;
  }
  e->parent = parent;
  e->user = user_start(c, d);
  if (tracked) track_start(c, e, d);
  *handle = e;
  return 0;
}

static ncclResult_t start_v6(void *context, void **handle, ncclProfilerEventDescr_v6_t *d) { return start_common(context, handle, d); }

static ncclResult_t start_v5(void *context, void **handle, ncclProfilerEventDescr_v5_t *d5) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = d5->type;
  d.parentObj = d5->parentObj;
  d.rank = d5->rank;
  memcpy(descr_union(&d), descr_union_of(d5), DESCR_UNION_SIZE(ncclProfilerEventDescr_v5_t));
  return start_common(context, handle, &d);
}

static ncclResult_t start_v4(void *context, void **handle, ncclProfilerEventDescr_v4_t *d4) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = d4->type;
  d.parentObj = d4->parentObj;
  d.rank = d4->rank;
  memcpy(descr_union(&d), descr_union_of(d4), DESCR_UNION_SIZE(ncclProfilerEventDescr_v4_t));
  if (d4->type == ncclProfileColl) {
    d.coll.parentGroup = d4->parentObj;
    d.parentObj = NULL;
  } else if (d4->type == ncclProfileP2p) {
    d.p2p.parentGroup = d4->parentObj;
    d.parentObj = NULL;
  }
  return start_common(context, handle, &d);
}

static int user_stop(pev *e) {
  pcomm *c = e->comm;
  if (e->user == NULL || c->ufns == NULL) return 0;
  void *h = e->user;
  e->user = NULL;
  if (c->uver == 6) return ((const ncclProfiler_v6_t *)c->ufns)->stopEvent(h);
  if (c->uver == 5) return ((const ncclProfiler_v5_t *)c->ufns)->stopEvent(h);
  return ((const ncclProfiler_v4_t *)c->ufns)->stopEvent(h);
}

static int user_stop_handle(void *h) {
  const void *f = atomic_load_explicit(&user_fns, NG_ACQUIRE);
  int v = atomic_load_explicit(&user_version, NG_RELAXED);
  if (f == NULL || h == NULL) return 0;
  if (v == 6) return ((const ncclProfiler_v6_t *)f)->stopEvent(h);
  if (v == 5) return ((const ncclProfiler_v5_t *)f)->stopEvent(h);
  return ((const ncclProfiler_v4_t *)f)->stopEvent(h);
}

static ncclResult_t stop_event(void *handle) {
  pev *e = ours(handle);
  if (e == NULL) return user_stop_handle(handle); /* the application's own handle */
  if (!atomic_load_explicit(&e->in_use, NG_RELAXED)) return 0;
  pcomm *c = e->comm;
  user_stop(e);
  pev *freed = NULL;
  if (atomic_load_explicit(&e->tracked, NG_RELAXED)) {
    pthread_spin_lock(&c->lock);
    e->stopped = 1;
    if (e->listed == 1) {
      if (e->kch_stopped >= e->nch || !atomic_load(&kernel_seen)) finished(c, e, &freed);
    } else if (e->listed == 2 && freeable(e)) {
      unlink_ev(&c->zombies, NULL, e);
      e->listed = 0;
      e->next = freed;
      freed = e;
    }
    pthread_spin_unlock(&c->lock);
    free_list(freed);
    return 0;
  }
  pev *p = e->parent;
  if (p != NULL) {
    pcomm *pc = p->comm;
    pthread_spin_lock(&pc->lock);
    if (atomic_load_explicit(&p->in_use, NG_RELAXED) && atomic_load_explicit(&p->tracked, NG_RELAXED)) {
      p->kch_stopped++;
      if (p->listed == 1 && p->stopped && p->kch_stopped >= p->nch) {
        finished(pc, p, &freed);
      } else if (p->listed == 2 && freeable(p)) {
        unlink_ev(&pc->zombies, NULL, p);
        p->listed = 0;
        p->next = freed;
        freed = p;
      }
    }
    pthread_spin_unlock(&pc->lock);
  }
  free_list(freed);
  pev_free(e);
  return 0;
}

static int record_common(void *handle, int state, ncclProfilerEventStateArgs_v6_t *args, int version) {
  (void)version;
  pev *e = ours(handle);
  void *h = e != NULL ? (atomic_load_explicit(&e->in_use, NG_RELAXED) ? e->user : NULL) : handle;
  const void *f = atomic_load_explicit(&user_fns, NG_ACQUIRE);
  int v = atomic_load_explicit(&user_version, NG_RELAXED);
  if (h == NULL || f == NULL) return 0;
  if (v == 6) return ((const ncclProfiler_v6_t *)f)->recordEventState(h, state, args);
  /* CE states are v6's only; v4 plugins get the states NCCL's own v4 adapter passes on */
  if (state >= 25 && state <= 30) return 0;
  if (v == 5) return ((const ncclProfiler_v5_t *)f)->recordEventState(h, state, args);
  if (!(state == 19 || (state >= 8 && state <= 18) || state == 20 || state == 21 || state == 22)) return 0;
  return ((const ncclProfiler_v4_t *)f)->recordEventState(h, state, args);
}

static ncclResult_t record_v6(void *handle, ncclProfilerEventState_v6_t state, ncclProfilerEventStateArgs_v6_t *args) {
  return record_common(handle, state, args, 6);
}
static ncclResult_t record_v5(void *handle, ncclProfilerEventState_v5_t state, ncclProfilerEventStateArgs_v5_t *args) {
  return record_common(handle, state, args, 5);
}
static ncclResult_t record_v4(void *handle, ncclProfilerEventState_v4_t state, ncclProfilerEventStateArgs_v4_t *args) {
  return record_common(handle, state, args, 4);
}

static ncclResult_t finalize(void *context) {
  pcomm *c = context;
  if (c == NULL) return 0;
  int ret = 0;
  if (c->ufns != NULL && c->uctx != NULL) {
    if (c->uver == 6) ret = ((const ncclProfiler_v6_t *)c->ufns)->finalize(c->uctx);
    else if (c->uver == 5) ret = ((const ncclProfiler_v5_t *)c->ufns)->finalize(c->uctx);
    else ret = ((const ncclProfiler_v4_t *)c->ufns)->finalize(c->uctx);
  }
  /* NCCL sends no more events for it: what is left in flight or waiting goes */
  pthread_spin_lock(&c->lock);
  pev *left = c->head;
  pev *zombies = c->zombies;
  c->head = c->tail = c->zombies = NULL;
  c->ncoll = c->np2p = 0;
  pthread_spin_unlock(&c->lock);
  free_list(left);
  free_list(zombies);
  atomic_store(&c->finalized, 1);
  if (c->user_held) {
    c->ufns = NULL;
    user_release();
  }
  return ret;
}

NG_EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {"ncclguard", init_v6, start_v6, stop_event, record_v6, finalize};
NG_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {"ncclguard", init_v5, start_v5, stop_event, record_v5, finalize};
NG_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {"ncclguard", init_v4, start_v4, stop_event, record_v4, finalize};

/* ---------------------------------------------------------------- what Java reads */
static void record_longs(const pcomm *c, int64_t *o) {
  o[0] = c->id;
  o[1] = (int64_t)c->comm_id;
  o[2] = c->rank;
  o[3] = c->nranks;
  o[4] = c->nnodes;
  o[5] = c->init_seq;
  o[6] = c->init_ms;
  o[7] = (atomic_load(&c->finalized) ? 1 : 0) | (atomic_load(&c->claimed) ? 2 : 0) | (c->java ? 4 : 0);
  o[8] = c->tid;
  o[9] = c->mask;
}

int ng_prof_inits_since(int64_t seq, int64_t *out, int n) {
  pthread_mutex_lock(&comms_lock);
  int first = ncomms;
  while (first > 0 && comms[first - 1]->init_seq > seq) first--;
  int total = ncomms - first;
  for (int i = 0; i < total && i < n; i++) record_longs(comms[first + i], out + (size_t)i * NG_PROF_RECORD_LONGS);
  pthread_mutex_unlock(&comms_lock);
  return total;
}

int ng_prof_comms(int64_t *out, int n) {
  pthread_mutex_lock(&comms_lock);
  int total = 0;
  for (int i = 0; i < ncomms; i++) {
    if (atomic_load(&comms[i]->finalized)) continue;
    if (total < n) record_longs(comms[i], out + (size_t)total * NG_PROF_RECORD_LONGS);
    total++;
  }
  pthread_mutex_unlock(&comms_lock);
  return total;
}

void ng_prof_claim(int64_t record) {
  pcomm *c = comm_of(record);
  if (c != NULL) atomic_store(&c->claimed, 1);
}

const char *ng_prof_comm_name(int64_t record) {
  pcomm *c = comm_of(record);
  return c != NULL && c->has_name ? c->name : NULL;
}

int ng_prof_in_flight(int64_t record, int64_t *out, int n) {
  pcomm *c = comm_of(record);
  int64_t o[6] = {0};
  if (c != NULL) {
    pthread_spin_lock(&c->lock);
    o[0] = c->ncoll;
    o[1] = c->np2p;
    if (c->head != NULL) {
      o[2] = c->head->type == ncclProfileP2p ? 2 : 1;
      o[3] = (int64_t)c->head->count;
      o[4] = ng_now_ns() - c->head->start_ns;
    }
    o[5] = c->completed;
    pthread_spin_unlock(&c->lock);
  }
  for (int i = 0; i < n && i < 6; i++) out[i] = o[i];
  return (int)(o[0] + o[1]);
}

int ng_prof_in_flight_names(int64_t record, const char **func, const char **datatype) {
  pcomm *c = comm_of(record);
  if (c == NULL) return 0;
  pthread_spin_lock(&c->lock);
  int any = c->head != NULL;
  if (any) {
    /* NCCL's names are static strings of libnccl (ncclFuncToString, ncclDatatypeToString) */
    *func = c->head->func;
    *datatype = c->head->datatype;
  }
  pthread_spin_unlock(&c->lock);
  return any;
}
