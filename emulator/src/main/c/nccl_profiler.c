/* NCCL's profiler plugin, loaded and called as NCCL 2.29.3 does (NVIDIA/nccl src/plugin/
 * profiler.cc, plugin_open.cc, profiler/profiler_v4.cc .. v6.cc, and the event points of
 * src/enqueue.cc and src/group.cc):
 *
 * - NCCL_PROFILER_PLUGIN is a path or a library name, or a short name that becomes
 *   libnccl-profiler-<name>.so; unset, libnccl-profiler.so is tried; "none" loads nothing. The
 *   library is opened RTLD_NOW | RTLD_LOCAL at the first init, ncclProfiler_v6 then _v5 then _v4
 *   looked up in it, kept while a communicator uses it and closed after the last one's finalize.
 *   A library that failed to load is not tried again.
 * - init runs once per communicator when its init completes; its activation mask is the
 *   process-wide mask every later operation reads (NCCL passes its global); finalize at the
 *   communicator's destroy or abort, never for one left alive.
 * - Per operation: GroupApi, CollApi / P2pApi inside the API call; at launch (the calling
 *   thread, as NCCL's launch of a plan without proxy work) KernelLaunch, then Group with the
 *   Coll / P2p events of its tasks, started and stopped: NCCL's stopEvent of a collective says
 *   it was enqueued, not that it finished. KernelCh events (a channel of the kernel) start when
 *   the stream reaches the work and stop when it is done: the only events that tell a finished
 *   operation from one still in flight. ncclAlltoAll, ncclGather and ncclScatter are Send and
 *   Recv tasks, as NCCL runs them.
 * - Not emitted: ProxyOp, ProxyStep, ProxyCtrl, NetPlugin (there is no proxy or network work)
 *   and the CE events of v6. Each event type is gated on the mask bits NCCL gates it on. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "emu.h"

enum { LOAD_READY = 0, LOAD_SUCCESS = 1, LOAD_FAILED = -1 };

/* The loaded plugin. Written under plugin_mu; a communicator copies what it needs at its init,
 * so events never read this. */
static pthread_mutex_t plugin_mu = PTHREAD_MUTEX_INITIALIZER;
static int plugin_status = LOAD_READY;
static int plugin_refs;
static void *plugin_lib;
static int plugin_version;
static const void *plugin_api;
static const char *plugin_name;

/* NCCL's ncclProfilerEventMask: one for the process, written by every init */
static atomic_int event_mask;
/* whether any communicator has an active plugin: the fast path of every operation */
static atomic_int active_comms;

#define MAX_STR_LEN 255
#define PLUGIN_PREFIX "libnccl-profiler"

/* ---------------------------------------------------------------- loading (plugin_open.cc) */

static void *try_open(const char *name, bool *enoent) {
  *enoent = false;
  if (!name || !*name)
    return NULL;
  const char *open_name = name;
  if (strncasecmp(name, "STATIC_PLUGIN", strlen(name)) == 0)
    open_name = NULL; /* the program itself */
  void *h = dlopen(open_name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *err = dlerror();
    if (err && strstr(err, name) && strstr(err, "No such file or directory"))
      *enoent = true;
    else
      emu_info(NCCL_INIT, "PROFILER/Plugin: %s: %s", name, err ? err : "unknown error");
  }
  return h;
}

static char *lib_path(void *h) {
  struct link_map *lm;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm->l_name)
    return NULL;
  return strdup(lm->l_name);
}

/* openPluginLib: the name as given, then libnccl-profiler-<name>.so for a short name. */
static void *open_plugin(const char *name, char **path) {
  char lib_name[MAX_STR_LEN + 1], not_found[2 * (MAX_STR_LEN + 2)] = "";
  bool enoent;
  snprintf(lib_name, sizeof(lib_name), "%s", name && *name ? name : PLUGIN_PREFIX ".so");
  void *h = try_open(lib_name, &enoent);
  if (!h && enoent)
    snprintf(not_found + strlen(not_found), sizeof(not_found) - strlen(not_found), " %s",
             lib_name);
  size_t len = name ? strlen(name) : 0;
  bool short_name = len > 0 && !strchr(name, '/') &&
                    (strncmp(name, "lib", 3) != 0 || len < 3 || strcmp(name + len - 3, ".so") != 0);
  if (!h && short_name) {
    snprintf(lib_name, sizeof(lib_name), "%s-%s.so", PLUGIN_PREFIX, name);
    h = try_open(lib_name, &enoent);
    if (!h && enoent)
      snprintf(not_found + strlen(not_found), sizeof(not_found) - strlen(not_found), " %s",
               lib_name);
  }
  if (h) {
    *path = lib_path(h);
    return h;
  }
  if (*not_found)
    emu_info(NCCL_INIT, "PROFILER/Plugin: Could not find:%s", not_found);
  return NULL;
}

/* ncclProfilerPluginLoad; answers whether the caller now holds a reference to the plugin. */
static bool plugin_load(void) {
  pthread_mutex_lock(&plugin_mu);
  if (plugin_status == LOAD_FAILED) {
    pthread_mutex_unlock(&plugin_mu);
    return false;
  }
  if (plugin_status == LOAD_SUCCESS) {
    plugin_refs++;
    pthread_mutex_unlock(&plugin_mu);
    return true;
  }
  const char *name = getenv("NCCL_PROFILER_PLUGIN");
  char *path = NULL;
  void *lib = NULL;
  if (name)
    emu_info(NCCL_ENV, "NCCL_PROFILER_PLUGIN set by environment to %s", name);
  if (!name || strcasecmp(name, "none") != 0)
    lib = open_plugin(name, &path);
  const void *api = NULL;
  int version = 0;
  static const struct {
    const char *symbol;
    int version;
  } versions[] = {{"ncclProfiler_v6", 6}, {"ncclProfiler_v5", 5}, {"ncclProfiler_v4", 4}};
  for (size_t i = 0; lib && !api && i < sizeof(versions) / sizeof(versions[0]); i++) {
    api = dlsym(lib, versions[i].symbol);
    version = versions[i].version;
  }
  const char *shown = path ? path : name;
  if (lib && !api) {
    /* v1 to v3 (NCCL 2.23 to 2.26) are not emulated: such a plugin is unsupported here */
    if (shown)
      emu_info(NCCL_INIT, "External profiler plugin %s is unsupported", shown);
  } else if (api) {
    /* every version's name is the struct's first field */
    const char *pname = *(const char *const *)api;
    emu_info(NCCL_INIT, "PROFILER/Plugin: Loaded %s (v%d)", pname ? pname : "(null)", version);
    if (shown)
      emu_info(NCCL_INIT, "Successfully loaded external profiler plugin %s", shown);
  }
  bool ok = api != NULL;
  if (ok) {
    plugin_lib = lib;
    plugin_api = api;
    plugin_version = version;
    plugin_name = *(const char *const *)api;
    plugin_refs++;
    plugin_status = LOAD_SUCCESS;
  } else {
    if (lib)
      dlclose(lib);
    plugin_status = LOAD_FAILED;
  }
  pthread_mutex_unlock(&plugin_mu);
  free(path);
  return ok;
}

/* ncclProfilerPluginUnload: the last communicator's finalize closes the library. */
static void plugin_unload(void) {
  pthread_mutex_lock(&plugin_mu);
  if (--plugin_refs == 0) {
    emu_info(NCCL_INIT, "PROFILER/Plugin: Closing profiler plugin %s",
             plugin_name ? plugin_name : "(null)");
    dlclose(plugin_lib);
    plugin_lib = NULL;
    plugin_api = NULL;
    plugin_name = NULL;
    plugin_status = LOAD_READY;
  }
  pthread_mutex_unlock(&plugin_mu);
}

/* ---------------------------------------------------------------- calls into the plugin */

/* The event as NCCL builds it (its ncclProfilerEventDescr_t is v6's), handed on in the
 * plugin's version as NCCL's adaptors do. */
typedef ncclProfilerEventDescr_v6_t descr_t;

static void start_event(const struct emu_prof_comm *pc, void **handle, const descr_t *d) {
  *handle = NULL;
  if (pc->version == 6) {
    descr_t copy = *d;
    ((const ncclProfiler_v6_t *)pc->api)->startEvent(pc->context, handle, &copy);
  } else if (pc->version == 5) {
    ncclProfilerEventDescr_v5_t v5;
    memset(&v5, 0, sizeof(v5));
    v5.type = d->type;
    v5.parentObj = d->parentObj;
    v5.rank = d->rank;
    switch (d->type) {
    case ncclProfileGroup:
      break;
    case ncclProfileGroupApi:
      v5.groupApi.graphCaptured = d->groupApi.graphCaptured;
      v5.groupApi.groupDepth = d->groupApi.groupDepth;
      break;
    case ncclProfileCollApi:
      v5.collApi.func = d->collApi.func;
      v5.collApi.count = d->collApi.count;
      v5.collApi.datatype = d->collApi.datatype;
      v5.collApi.root = d->collApi.root;
      v5.collApi.stream = d->collApi.stream;
      v5.collApi.graphCaptured = d->collApi.graphCaptured;
      break;
    case ncclProfileP2pApi:
      v5.p2pApi.func = d->p2pApi.func;
      v5.p2pApi.count = d->p2pApi.count;
      v5.p2pApi.datatype = d->p2pApi.datatype;
      v5.p2pApi.stream = d->p2pApi.stream;
      v5.p2pApi.graphCaptured = d->p2pApi.graphCaptured;
      break;
    case ncclProfileKernelLaunch:
      v5.kernelLaunch.stream = d->kernelLaunch.stream;
      break;
    case ncclProfileColl:
      v5.coll.seqNumber = d->coll.seqNumber;
      v5.coll.func = d->coll.func;
      v5.coll.sendBuff = d->coll.sendBuff;
      v5.coll.recvBuff = d->coll.recvBuff;
      v5.coll.count = d->coll.count;
      v5.coll.root = d->coll.root;
      v5.coll.datatype = d->coll.datatype;
      v5.coll.nChannels = d->coll.nChannels;
      v5.coll.nWarps = d->coll.nWarps;
      v5.coll.algo = d->coll.algo;
      v5.coll.proto = d->coll.proto;
      v5.coll.parentGroup = d->coll.parentGroup;
      break;
    case ncclProfileP2p:
      v5.p2p.func = d->p2p.func;
      v5.p2p.buff = d->p2p.buff;
      v5.p2p.datatype = d->p2p.datatype;
      v5.p2p.count = d->p2p.count;
      v5.p2p.peer = d->p2p.peer;
      v5.p2p.nChannels = d->p2p.nChannels;
      v5.p2p.parentGroup = d->p2p.parentGroup;
      break;
    case ncclProfileKernelCh:
      v5.kernelCh.channelId = d->kernelCh.channelId;
      v5.kernelCh.pTimer = d->kernelCh.pTimer;
      break;
    default:
      return;
    }
    ((const ncclProfiler_v5_t *)pc->api)->startEvent(pc->context, handle, &v5);
  } else {
    ncclProfilerEventDescr_v4_t v4;
    memset(&v4, 0, sizeof(v4));
    v4.type = (uint8_t)d->type;
    v4.parentObj = d->parentObj;
    v4.rank = d->rank;
    switch (d->type) {
    case ncclProfileGroup:
      break;
    case ncclProfileColl:
      v4.coll.seqNumber = d->coll.seqNumber;
      v4.coll.func = d->coll.func;
      v4.coll.sendBuff = d->coll.sendBuff;
      v4.coll.recvBuff = d->coll.recvBuff;
      v4.coll.count = d->coll.count;
      v4.coll.root = d->coll.root;
      v4.coll.datatype = d->coll.datatype;
      v4.coll.nChannels = d->coll.nChannels;
      v4.coll.nWarps = d->coll.nWarps;
      v4.coll.algo = d->coll.algo;
      v4.coll.proto = d->coll.proto;
      v4.parentObj = d->coll.parentGroup; /* v4 has no API events: its parent is the group */
      break;
    case ncclProfileP2p:
      v4.p2p.func = d->p2p.func;
      v4.p2p.buff = d->p2p.buff;
      v4.p2p.count = d->p2p.count;
      v4.p2p.datatype = d->p2p.datatype;
      v4.p2p.peer = d->p2p.peer;
      v4.parentObj = d->p2p.parentGroup;
      break;
    case ncclProfileKernelCh:
      v4.kernelCh.channelId = d->kernelCh.channelId;
      v4.kernelCh.pTimer = d->kernelCh.pTimer;
      break;
    default:
      return; /* API and launch events are v5's */
    }
    ((const ncclProfiler_v4_t *)pc->api)->startEvent(pc->context, handle, &v4);
  }
}

/* stopEvent and recordEventState are the same function type in every version */
static void stop_event(const struct emu_prof_comm *pc, void *handle) {
  ((const ncclProfiler_v5_t *)pc->api)->stopEvent(handle);
}

static void record_state(const struct emu_prof_comm *pc, void *handle,
                         ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t *args) {
  ((const ncclProfiler_v5_t *)pc->api)->recordEventState(handle, state, args);
}

/* Holds the comm's plugin state for one or more event calls; false when it has none. */
static bool prof_enter(struct ncclComm *comm) {
  pthread_rwlock_rdlock(&comm->prof.lock);
  if (comm->prof.active)
    return true;
  pthread_rwlock_unlock(&comm->prof.lock);
  return false;
}

static void prof_leave(struct ncclComm *comm) { pthread_rwlock_unlock(&comm->prof.lock); }

/* ---------------------------------------------------------------- a communicator's life */

void emu_prof_comm_setup(struct ncclComm *comm) { pthread_rwlock_init(&comm->prof.lock, NULL); }

void emu_prof_comm_teardown(struct ncclComm *comm) { pthread_rwlock_destroy(&comm->prof.lock); }

static void print_mask(int mask) {
  static const char *names[] = {"Group",   "Coll",      "P2p",      "ProxyOp",  "ProxyStep",
                                "ProxyCtrl", "KernelCh", "NetPlugin", "GroupApi", "CollApi",
                                "P2pApi",  "KernelLaunch", "CeColl", "CeSync",   "CeBatch"};
  if (!mask)
    return;
  char enabled[512] = "";
  size_t n = 0;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (mask & (1 << i))
      n += (size_t)snprintf(enabled + n, sizeof(enabled) - n, "%s ", names[i]);
  emu_info(NCCL_INIT, "Profiler event mask: 0x%x (%d) - Enabled: %s", mask, mask, enabled);
}

bool emu_prof_comm_attach(struct ncclComm *comm) {
  pthread_rwlock_rdlock(&comm->prof.lock);
  bool holds = comm->prof.holds_plugin, ended = comm->prof.ended;
  pthread_rwlock_unlock(&comm->prof.lock);
  if (holds || ended)
    return holds;
  if (!plugin_load())
    return false;
  pthread_mutex_lock(&plugin_mu);
  int version = plugin_version;
  const void *api = plugin_api;
  pthread_mutex_unlock(&plugin_mu);
  pthread_rwlock_wrlock(&comm->prof.lock);
  ended = comm->prof.ended;
  if (!ended) {
    comm->prof.holds_plugin = true;
    comm->prof.version = version;
    comm->prof.api = api;
  }
  pthread_rwlock_unlock(&comm->prof.lock);
  if (ended)
    plugin_unload();
  return !ended;
}

void emu_prof_comm_init(struct ncclComm *comm) {
  if (!emu_prof_comm_attach(comm))
    return;
  /* under the lock: a destroy or abort meanwhile finalizes after this init, or prevents it */
  pthread_rwlock_wrlock(&comm->prof.lock);
  if (comm->prof.ended || comm->prof.active || comm->prof.context) {
    pthread_rwlock_unlock(&comm->prof.lock);
    return;
  }
  int version = comm->prof.version;
  const void *api = comm->prof.api;
  int mask = atomic_load(&event_mask); /* the plugin sees the mask as the last init left it */
  void *context = NULL;
  ncclResult_t r;
  /* commName NULL, nNodes 1: one host, and no config.commName read (the measured plugin saw
   * NULL with NCCL 2.28.3 too) */
  if (version == 4)
    r = ((const ncclProfiler_v4_t *)api)
            ->init(&context, &mask, NULL, comm->ident.comm_hash, 1, comm->nranks, comm->rank,
                   (ncclDebugLogger_t)emu_debug_log);
  else
    r = ((const ncclProfiler_v5_t *)api)
            ->init(&context, comm->ident.comm_hash, &mask, NULL, 1, comm->nranks, comm->rank,
                   (ncclDebugLogger_t)emu_debug_log);
  if (version == 5 && r == ncclSuccess)
    mask &= ~(ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch);
  comm->prof.context = context;
  /* as NCCL's: a plugin whose init failed sees no events of the comm, and a finalize only if it
   * gave a context */
  comm->prof.active = r == ncclSuccess;
  if (comm->prof.active)
    atomic_fetch_add(&active_comms, 1);
  pthread_rwlock_unlock(&comm->prof.lock);
  if (r != ncclSuccess) {
    emu_info(NCCL_INIT, "Profiler init failed with error '%d': %s. Continue without profiler.",
             (int)r, strerror(errno));
  } else {
    atomic_store(&event_mask, mask);
    print_mask(mask);
  }
}

void emu_prof_comm_finalize(struct ncclComm *comm) {
  pthread_rwlock_wrlock(&comm->prof.lock);
  bool holds = comm->prof.holds_plugin, active = comm->prof.active;
  void *context = comm->prof.context;
  const void *api = comm->prof.api;
  comm->prof.holds_plugin = comm->prof.active = false;
  comm->prof.ended = true;
  if (active)
    atomic_fetch_sub(&active_comms, 1);
  /* under the lock: an event of this comm on another thread finishes before, none comes after */
  if (holds && context)
    ((const ncclProfiler_v5_t *)api)->finalize(context);
  pthread_rwlock_unlock(&comm->prof.lock);
  if (holds)
    plugin_unload();
}

/* ---------------------------------------------------------------- events */

static const char *func_name(enum emu_func f) {
  switch (f) {
  case F_ALLREDUCE:
    return "AllReduce";
  case F_BROADCAST:
    return "Broadcast";
  case F_REDUCE:
    return "Reduce";
  case F_ALLGATHER:
    return "AllGather";
  case F_REDUCESCATTER:
    return "ReduceScatter";
  case F_ALLTOALL:
    return "AlltoAll";
  case F_GATHER:
    return "Gather";
  case F_SCATTER:
    return "Scatter";
  case F_SEND:
    return "Send";
  case F_RECV:
    return "Recv";
  default:
    return "Invalid";
  }
}

/* ncclDatatypeToString, ncclUint8 and all: NCCL 2.29.3 names it "Unknown" too */
static const char *type_name(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
    return "ncclInt8";
  case ncclInt32:
    return "ncclInt32";
  case ncclUint32:
    return "ncclUint32";
  case ncclInt64:
    return "ncclInt64";
  case ncclUint64:
    return "ncclUint64";
  case ncclFloat16:
    return "ncclFloat16";
  case ncclFloat32:
    return "ncclFloat32";
  case ncclFloat64:
    return "ncclFloat64";
  case ncclBfloat16:
    return "ncclBfloat16";
  case ncclFloat8e4m3:
    return "ncclFloat8e4m3";
  case ncclFloat8e5m2:
    return "ncclFloat8e5m2";
  default:
    return "Unknown";
  }
}

#define GROUP_API_MASK                                                                            \
  (ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi | ncclProfileKernelLaunch |       \
   ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |                    \
   ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin | ncclProfileCeColl |        \
   ncclProfileCeSync | ncclProfileCeBatch)
#define COLL_API_MASK                                                                             \
  (ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep |             \
   ncclProfileKernelCh | ncclProfileNetPlugin | ncclProfileCeColl | ncclProfileCeSync |           \
   ncclProfileCeBatch)
#define P2P_API_MASK                                                                              \
  (ncclProfileP2pApi | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |               \
   ncclProfileKernelCh | ncclProfileNetPlugin)
#define GROUP_MASK                                                                                \
  (ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |                     \
   ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin)
#define COLL_MASK                                                                                 \
  (ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh |            \
   ncclProfileNetPlugin)
#define P2P_MASK                                                                                  \
  (ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh |             \
   ncclProfileNetPlugin)

enum { GROUP_API_RESET = 0, GROUP_API_STARTED, GROUP_API_STOPPED };

/* NCCL's thread-local ncclProfilerApiState: the GroupApi event of the thread's group */
static __thread struct {
  int mask;
  int depth; /* profilerGroupDepth */
  int state;
  void *handle;
  struct ncclComm *comm; /* a reference while handle is set */
} api_state;

static bool any_active(void) { return atomic_load_explicit(&active_comms, memory_order_relaxed); }

void emu_prof_enqueue_enter(void) {
  if (api_state.depth > 0)
    api_state.depth++;
}

static void record_group_api(ncclProfilerEventState_t state) {
  bool record = false;
  if (state == ncclProfilerGroupStartApiStop && api_state.state == GROUP_API_STARTED) {
    api_state.state = GROUP_API_STOPPED;
    record = true;
  } else if (state == ncclProfilerGroupEndApiStart && api_state.state == GROUP_API_STOPPED) {
    api_state.state = GROUP_API_RESET;
    record = true;
  }
  if (record && api_state.handle && prof_enter(api_state.comm)) {
    record_state(&api_state.comm->prof, api_state.handle, state, NULL);
    prof_leave(api_state.comm);
  }
}

/* What NCCL appends for one call: a collective task, a Send or Recv task, or for ncclAlltoAll,
 * ncclGather and ncclScatter the Send and Recv tasks NCCL turns them into (src/enqueue.cc). */
static int build_tasks(struct emu_part *p, struct emu_prof_task *t) {
  int nranks = p->comm->nranks, rank = p->comm->rank, n = 0;
  size_t block = p->count * emu_type_size(p->dtype);
  /* NCCL's taskAppend drops an empty collective, and runs one of a single rank as a copy
   * (ncclLaunchOneRank): no task, no event (as seen with NCCL 2.28.3 on an H200); sends and
   * receives are tasks always */
  if (p->func != F_SEND && p->func != F_RECV && (p->count == 0 || nranks == 1))
    return 0;
#define P2P(f, b, peer_)                                                                          \
  do {                                                                                            \
    if (t)                                                                                        \
      t[n] = (struct emu_prof_task){.p2p = true, .func = f, .buff = (void *)(b),                  \
                                    .count = p->count, .peer = peer_};                            \
    n++;                                                                                          \
  } while (0)
  switch (p->func) {
  case F_SEND:
    P2P(F_SEND, p->sendbuff, p->root);
    break;
  case F_RECV:
    P2P(F_RECV, p->recvbuff, p->root);
    break;
  case F_ALLTOALL:
    for (int r = 0; r < nranks; r++) {
      P2P(F_SEND, (const char *)p->sendbuff + (size_t)r * block, r);
      P2P(F_RECV, (char *)p->recvbuff + (size_t)r * block, r);
    }
    break;
  case F_GATHER:
    P2P(F_SEND, p->sendbuff, p->root);
    if (rank == p->root)
      for (int r = 0; r < nranks; r++)
        P2P(F_RECV, (char *)p->recvbuff + (size_t)r * block, r);
    break;
  case F_SCATTER:
    if (rank == p->root)
      for (int r = 0; r < nranks; r++)
        P2P(F_SEND, (const char *)p->sendbuff + (size_t)r * block, r);
    P2P(F_RECV, p->recvbuff, p->root);
    break;
  default:
    if (t)
      t[n] = (struct emu_prof_task){.func = p->func, .count = p->count, .peer = p->root};
    n++;
  }
#undef P2P
  return n;
}

void emu_prof_task_append(struct emu_part *p, int group_depth) {
  cudaStream_t stream = p->user_stream;
  if (!any_active())
    return;
  struct ncclComm *comm = p->comm;
  int ntasks = build_tasks(p, NULL);
  if (ntasks == 0)
    return;
  p->tasks = calloc((size_t)ntasks, sizeof(*p->tasks));
  if (!p->tasks)
    return; /* no memory: this call goes unprofiled */
  p->ntasks = build_tasks(p, p->tasks);
  if (!prof_enter(comm))
    return;
  struct emu_prof_comm *pc = &comm->prof;
  for (int i = 0; i < p->ntasks; i++) {
    struct emu_prof_task *t = &p->tasks[i];
    /* ncclProfilerStartGroupApiEvent, once per task as NCCL calls it */
    api_state.mask = atomic_load(&event_mask);
    if ((api_state.mask & GROUP_API_MASK) && api_state.depth == 0) {
      descr_t d;
      memset(&d, 0, sizeof(d));
      d.type = ncclProfileGroupApi;
      d.groupApi.groupDepth = group_depth;
      start_event(pc, &api_state.handle, &d);
      if (api_state.handle) {
        emu_obj_ref(&comm->obj);
        api_state.comm = comm;
      }
      api_state.depth = group_depth;
      api_state.state = GROUP_API_STARTED;
    }
    if (api_state.state == GROUP_API_STARTED) {
      api_state.state = GROUP_API_STOPPED;
      if (api_state.handle)
        record_state(pc, api_state.handle, ncclProfilerGroupStartApiStop, NULL);
    }
    p->prof_mask = api_state.mask;
    descr_t d;
    memset(&d, 0, sizeof(d));
    d.parentObj = api_state.handle;
    if (t->p2p && (api_state.mask & P2P_API_MASK)) {
      d.type = ncclProfileP2pApi;
      d.p2pApi.func = func_name(t->func);
      d.p2pApi.count = t->count;
      d.p2pApi.datatype = type_name(p->dtype);
      d.p2pApi.stream = (void *)stream;
      start_event(pc, &t->api_handle, &d);
    } else if (!t->p2p && (api_state.mask & COLL_API_MASK)) {
      d.type = ncclProfileCollApi;
      d.collApi.func = func_name(t->func);
      d.collApi.count = t->count;
      d.collApi.datatype = type_name(p->dtype);
      d.collApi.root = t->peer;
      d.collApi.stream = (void *)stream;
      start_event(pc, &t->api_handle, &d);
    }
    if (t->api_handle)
      stop_event(pc, t->api_handle);
  }
  prof_leave(comm);
}

void emu_prof_group_end_enter(void) {
  if (api_state.depth > 0)
    api_state.depth--;
  if (api_state.depth == 0 && api_state.comm)
    record_group_api(ncclProfilerGroupEndApiStart);
}

void emu_prof_group_end_exit(void) {
  if (!api_state.comm || api_state.depth != 0)
    return;
  struct ncclComm *comm = api_state.comm;
  if (api_state.handle && prof_enter(comm)) {
    stop_event(&comm->prof, api_state.handle);
    prof_leave(comm);
  }
  api_state.handle = NULL;
  api_state.comm = NULL;
  emu_comm_release(comm);
}

/* One comm's plan: KernelLaunch, Group, then its tasks (hostStreamPlanTask). */
static void launch_plan(struct ncclComm *comm, struct emu_part *parts) {
  if (!prof_enter(comm))
    return; /* no plugin for this comm: nothing to tell, nothing to number */
  int mask = 0;
  cudaStream_t stream = NULL;
  for (struct emu_part *p = parts; p && !mask; p = p->next)
    if (p->comm == comm && p->prof_mask) {
      mask = p->prof_mask;
      stream = p->user_stream;
    }
  struct emu_prof_comm *pc = &comm->prof;
  descr_t d;
  void *kernel_launch = NULL, *group = NULL;
  if (mask & ncclProfileKernelLaunch) {
    memset(&d, 0, sizeof(d));
    d.type = ncclProfileKernelLaunch;
    d.parentObj = api_state.handle;
    d.kernelLaunch.stream = (void *)stream;
    start_event(pc, &kernel_launch, &d);
    if (kernel_launch)
      stop_event(pc, kernel_launch);
  }
  if (mask & GROUP_MASK) {
    memset(&d, 0, sizeof(d));
    d.type = ncclProfileGroup;
    start_event(pc, &group, &d);
  }
  for (struct emu_part *p = parts; p; p = p->next) {
    if (p->comm != comm)
      continue;
    for (int i = 0; i < p->ntasks; i++) {
      struct emu_prof_task *t = &p->tasks[i];
      memset(&d, 0, sizeof(d));
      d.parentObj = t->api_handle;
      d.rank = comm->rank;
      if (!t->p2p) {
        /* counted whether or not the event is wanted, as NCCL's comm->seqNumber */
        uint64_t seq = atomic_fetch_add(&comm->seq_number[t->func], 1);
        if (!(p->prof_mask & COLL_MASK))
          continue;
        d.type = ncclProfileColl;
        d.coll.parentGroup = group;
        d.coll.seqNumber = seq;
        d.coll.func = func_name(t->func);
        d.coll.sendBuff = p->sendbuff;
        d.coll.recvBuff = p->recvbuff;
        d.coll.count = t->count;
        d.coll.root = t->peer;
        d.coll.datatype = type_name(p->dtype);
        d.coll.nChannels = 1;
        d.coll.nWarps = 16;
        d.coll.algo = "RING";
        d.coll.proto = "SIMPLE";
      } else {
        if (!(p->prof_mask & P2P_MASK))
          continue;
        d.type = ncclProfileP2p;
        d.p2p.parentGroup = group;
        d.p2p.func = func_name(t->func);
        d.p2p.buff = t->buff;
        d.p2p.count = t->count;
        d.p2p.datatype = type_name(p->dtype);
        d.p2p.peer = t->peer;
        d.p2p.nChannels = 1;
      }
      start_event(pc, &t->handle, &d);
    }
  }
  for (struct emu_part *p = parts; p; p = p->next)
    if (p->comm == comm)
      for (int i = 0; i < p->ntasks; i++)
        if (p->tasks[i].handle)
          stop_event(pc, p->tasks[i].handle);
  if (group)
    stop_event(pc, group);
  prof_leave(comm);
}

void emu_prof_launch(struct emu_part *parts) {
  if (!any_active())
    return;
  for (struct emu_part *p = parts; p; p = p->next) {
    bool first = true; /* the first part of its comm in the list: the comm's plan */
    for (struct emu_part *q = parts; q != p && first; q = q->next)
      first = q->comm != p->comm;
    if (first)
      launch_plan(p->comm, parts);
  }
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void emu_prof_kernel_start(struct emu_part *p) {
  if (!(p->prof_mask & ncclProfileKernelCh) || !prof_enter(p->comm))
    return;
  for (int i = 0; i < p->ntasks; i++) {
    descr_t d;
    memset(&d, 0, sizeof(d));
    d.type = ncclProfileKernelCh;
    d.parentObj = p->tasks[i].handle;
    d.kernelCh.channelId = 0;
    d.kernelCh.pTimer = now_ns();
    start_event(&p->comm->prof, &p->tasks[i].kernel, &d);
  }
  prof_leave(p->comm);
}

void emu_prof_kernel_stop(struct emu_part *p) {
  bool any = false;
  for (int i = 0; i < p->ntasks; i++)
    any |= p->tasks[i].kernel != NULL;
  if (!any || !prof_enter(p->comm))
    return;
  for (int i = 0; i < p->ntasks; i++) {
    if (!p->tasks[i].kernel)
      continue;
    ncclProfilerEventStateArgs_v5_t args;
    memset(&args, 0, sizeof(args));
    args.kernelCh.pTimer = now_ns();
    record_state(&p->comm->prof, p->tasks[i].kernel, ncclProfilerKernelChStop, &args);
    stop_event(&p->comm->prof, p->tasks[i].kernel);
    p->tasks[i].kernel = NULL;
  }
  prof_leave(p->comm);
}

void emu_prof_part_free(struct emu_part *p) {
  free(p->tasks);
  p->tasks = NULL;
  p->ntasks = 0;
}
