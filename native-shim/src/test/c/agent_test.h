/* What the agent's C tests share: loading libncclguard.so as the JVM does (dlopen, local scope),
 * its test mode with recording callbacks in place of the Java upcalls, and the fake JNI library.
 * Cases run in forked children (the emulator's test.h). */
#ifndef NG_AGENT_TEST_H
#define NG_AGENT_TEST_H

#include <dlfcn.h>

#include "fake_jni.h"
#include "ncclguard_test.h"
#include "test.h"

static void *agent;
static pthread_t main_thread;
static const ncclguard_api *ng;
static const fake_jni *fj;

static inline void *open_or_die(const char *path, int flags) {
  void *h = dlopen(path, flags);
  if (h == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    exit(2);
  }
  return h;
}

static inline const char *bin_path(const char *name) {
  static __thread char buf[1024];
  snprintf(buf, sizeof(buf), "%s/%s", getenv("NG_TEST_BIN"), name);
  return buf;
}

/* System.load: RTLD_LAZY, local scope; then the test mode, then (if asked) the promotion. */
static inline void load_agent(const ncclguard_hooks *hooks, int promote) {
  main_thread = pthread_self();
  agent = open_or_die(getenv("NG_LIB"), RTLD_LAZY);
  const ncclguard_api *(*test)(const ncclguard_hooks *) = (const ncclguard_api *(*)(const ncclguard_hooks *))dlsym(agent, "ncclguard_test");
  REQUIRE_EQ(test != NULL, 1);
  ng = test(hooks);
  if (promote) REQUIRE_EQ(ng->promote(), 1);
}

static inline void load_fake(void) {
  void *h = open_or_die(bin_path("libfakejni.so"), RTLD_NOW);
  fj = (const fake_jni *)dlsym(h, "fake_jni_functions");
  REQUIRE_EQ(fj != NULL, 1);
}

/* The emulator's own functions, reached through dlsym as JNA and FFM reach them: never wrapped. */
static inline void *real_fn(const char *lib, const char *name) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", getenv("NG_EMU"), lib);
  void *h = open_or_die(path, RTLD_NOW);
  void *p = dlsym(h, name);
  if (p == NULL) {
    fprintf(stderr, "no %s in %s\n", name, path);
    exit(2);
  }
  return p;
}

/* ---------------------------------------------------------------- recorded upcalls */
enum { UP_ENTER = 1, UP_EXIT, UP_HOT_ENTER, UP_HOT_EXIT, UP_SEEN, UP_PLUGIN_INIT };

typedef struct {
  int kind, fn, n, status, slot, device;
  int64_t slots[16], token, caller, handle, stream;
} upcall;

#define MAX_UPCALLS 4096
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;
static upcall ups[MAX_UPCALLS];
static int nups;
/* handles the pretend Java side follows (hot calls on them go to "Java") */
static int64_t java_handles[64];
static int njava;
/* a release the pretend cleanup claimed */
static int64_t claimed_handle;
/* whether the pretend Java takes the slots it is given */
static int java_holds = 1;
/* when set, only the thread that loaded the agent counts as a Java thread */
static int only_main_is_java;

static inline int recorded(int kind, int fn) {
  pthread_mutex_lock(&up_lock);
  int n = 0;
  for (int i = 0; i < nups; i++) n += ups[i].kind == kind && (fn < 0 || ups[i].fn == fn);
  pthread_mutex_unlock(&up_lock);
  return n;
}

/* The last upcall of a kind (and function, if fn >= 0), copied; false if none. */
static inline int last_upcall(int kind, int fn, upcall *out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&up_lock);
  int found = 0;
  for (int i = nups - 1; i >= 0 && !found; i--) {
    if (ups[i].kind == kind && (fn < 0 || ups[i].fn == fn)) {
      *out = ups[i];
      found = 1;
    }
  }
  pthread_mutex_unlock(&up_lock);
  return found;
}

static inline int total_upcalls(void) {
  pthread_mutex_lock(&up_lock);
  int n = nups;
  pthread_mutex_unlock(&up_lock);
  return n;
}

static inline upcall *add(int kind, int fn) {
  pthread_mutex_lock(&up_lock);
  upcall *u = nups < MAX_UPCALLS ? &ups[nups++] : &ups[MAX_UPCALLS - 1];
  memset(u, 0, sizeof(*u));
  u->kind = kind;
  u->fn = fn;
  return u; /* the caller fills it and unlocks */
}

static const char *ng_fn_name_of(int fn);

static inline int is_java_handle(int64_t h) {
  for (int i = 0; i < njava; i++) {
    if (java_handles[i] == h) return 1;
  }
  return 0;
}

static int64_t h_enter(int fn, const int64_t *slots, int n, int64_t caller) {
  upcall *u = add(UP_ENTER, fn);
  u->n = n;
  memcpy(u->slots, slots, sizeof(int64_t) * (size_t)(n < 16 ? n : 16));
  u->caller = caller;
  int64_t r = claimed_handle != 0 && slots[0] == claimed_handle ? NCCLGUARD_CLAIMED : 42;
  pthread_mutex_unlock(&up_lock);
  return r;
}

/* what a test runs inside an exit upcall, as Java would meanwhile (NULL: nothing) */
static void (*in_exit_fn)(void);

static int h_exit(int fn, const int64_t *slots, int n, int status, int64_t token, int64_t caller, int slot) {
  upcall *u = add(UP_EXIT, fn);
  u->n = n;
  memcpy(u->slots, slots, sizeof(int64_t) * (size_t)(n < 16 ? n : 16));
  u->status = status;
  u->token = token;
  u->caller = caller;
  u->slot = slot;
  pthread_mutex_unlock(&up_lock);
  if (in_exit_fn != NULL) in_exit_fn();
  return slot >= 0 && java_holds;
}

static int64_t h_hot_enter(int fn, int64_t handle, int64_t stream, int64_t caller) {
  upcall *u = add(UP_HOT_ENTER, fn);
  u->handle = handle;
  u->stream = stream;
  u->caller = caller;
  int java = is_java_handle(stream) || is_java_handle(handle);
  pthread_mutex_unlock(&up_lock);
  return java ? 7 : NCCLGUARD_NOT_JAVAS;
}

static void h_hot_exit(int fn, int64_t handle, int64_t stream, int status, int64_t token, int64_t caller) {
  upcall *u = add(UP_HOT_EXIT, fn);
  u->handle = handle;
  u->stream = stream;
  u->status = status;
  u->token = token;
  u->caller = caller;
  /* as Java does: an event recorded on its stream is its own from now on */
  if (status == 0 && strcmp(ng_fn_name_of(fn), "cudaEventRecord") == 0 && !is_java_handle(handle) && njava < 64)
    java_handles[njava++] = handle;
  pthread_mutex_unlock(&up_lock);
}

static int h_seen(int fn, int64_t handle, int device, int slot, int64_t caller) {
  upcall *u = add(UP_SEEN, fn);
  u->handle = handle;
  u->device = device;
  u->slot = slot;
  u->caller = caller;
  pthread_mutex_unlock(&up_lock);
  return java_holds;
}

static void h_plugin_init(int64_t record) {
  upcall *u = add(UP_PLUGIN_INIT, -1);
  u->handle = record;
  pthread_mutex_unlock(&up_lock);
}

static int h_java_thread(void) { return !only_main_is_java || pthread_equal(pthread_self(), main_thread); }

/* The Java stack the test says the calling thread has: (method, bci) pairs; none (-1) unless a
 * test sets one (then creations whose stack Java confirmed make no upcall). Per thread. */
static __thread int64_t java_stack_frames[2 * 64];
static __thread int java_stack_n = -1;

static int h_java_stack(int64_t *frames, int max) {
  if (java_stack_n < 0 || !h_java_thread()) return -1;
  int n = java_stack_n < max ? java_stack_n : max;
  memcpy(frames, java_stack_frames, sizeof(int64_t) * 2 * (size_t)n);
  return n;
}

static inline void set_java_stack(const int64_t *pairs, int n) {
  java_stack_n = n;
  if (n > 0) memcpy(java_stack_frames, pairs, sizeof(int64_t) * 2 * (size_t)n);
}

/* what a test runs once a slow path of the library holds its caller lock (NULL: nothing) */
static void (*caller_locked_fn)(int where);
static void h_caller_locked(int where) {
  if (caller_locked_fn != NULL) caller_locked_fn(where);
}

static const ncclguard_hooks recording = {h_enter, h_exit, h_hot_enter, h_hot_exit, h_seen, h_plugin_init, h_java_thread,
                                          h_java_stack, h_caller_locked};

static const char *ng_fn_name_of(int fn) {
  static const char *names[256];
  if (names[fn] == NULL) {
    /* function ids are the catalog's; the test knows the names it asks for */
    static const char *known[] = {"cudaEventRecord", "cudaEventRecordWithFlags", "cudaEventQuery", NULL};
    for (int i = 0; known[i] != NULL; i++) {
      if (ng->function_id(known[i]) == fn) names[fn] = known[i];
    }
    if (names[fn] == NULL) names[fn] = "";
  }
  return names[fn];
}

static inline int fn_id(const char *name) {
  int id = ng->function_id(name);
  if (id < 0) {
    fprintf(stderr, "no catalog function %s\n", name);
    exit(2);
  }
  return id;
}

static inline int64_t event_pending(int slot) {
  int32_t s = slot;
  int64_t out[3];
  ng->events_pending(&s, 1, out);
  return out[0];
}

static inline int64_t stream_pending(int slot) {
  int32_t s = slot;
  int64_t out[1];
  ng->streams_pending(&s, 1, out);
  return out[0];
}

/* One rank's communicator of its own. */
static inline ncclComm_t one_rank_comm(void) {
  ncclUniqueId id;
  REQUIRE_EQ(fj->unique_id(&id), 0);
  ncclComm_t comm = NULL;
  REQUIRE_EQ(fj->comm_init(&comm, 1, id, 0), 0);
  return comm;
}

/* Two ranks of one clique, on devices 0 and 1, and a stream on each device: NCCL (and so the
 * emulator) gives a one-rank communicator's collectives no profiler events. */
static inline void two_rank_comms(ncclComm_t comms[2], cudaStream_t streams[2]) {
  int devs[2] = {0, 1};
  REQUIRE_EQ(fj->comm_init_all(comms, 2, devs), 0);
  for (int d = 1; d >= 0; d--) {
    REQUIRE_EQ(fj->set_device(d), 0);
    REQUIRE_EQ(fj->stream_create(&streams[d]), 0);
  }
}

/* One allreduce of n floats over both ranks, as one thread drives a clique: in a group. */
static inline void allreduce_both(float *buf, size_t n, ncclComm_t comms[2], cudaStream_t streams[2]) {
  REQUIRE_EQ(fj->group_start(), 0);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->allreduce(buf + r * n, n, comms[r], streams[r]), 0);
  REQUIRE_EQ(fj->group_end(), 0);
}

#endif
