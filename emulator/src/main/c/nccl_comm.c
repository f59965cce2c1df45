/* Communicator management: init (ranks on threads meet through the unique id), split, shrink,
 * finalize, destroy, abort and the queries. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

/* The blocking mode a config asks for; inherit when it does not say. */
static ncclResult_t config_blocking(const char *api, const ncclConfig_t *config, int inherit,
                                    int *blocking) {
  *blocking = inherit;
  if (!config)
    return ncclSuccess;
  if (config->magic != NCCL_API_MAGIC ||
      config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
    emu_warn("%s: config is not initialized: use NCCL_CONFIG_INITIALIZER", api);
    return ncclInvalidArgument;
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT)
    *blocking = config->blocking != 0;
  return ncclSuccess;
}

static ncclResult_t current_device(const char *api, int *device) {
  if (emu_rt_device_count() == 0) {
    emu_warn("%s: Cuda failure 'no CUDA-capable device is detected'", api);
    return ncclUnhandledCudaError;
  }
  *device = emu_rt_current_device();
  return ncclSuccess;
}

/* Waits until every rank joined, or the comm is aborted, or the root of a foreign id failed it. */
static ncclResult_t await_init(struct ncclComm *comm) {
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  while (!c->complete && !c->init_error && comm->state == COMM_LIVE)
    pthread_cond_wait(&c->cv, &c->mu);
  ncclResult_t r = c->complete ? ncclSuccess : c->init_error ? c->init_error : ncclRemoteError;
  pthread_mutex_unlock(&c->mu);
  return r;
}

/* ---------------------------------------------------------------- a communicator is ready */

/* A bus id for the INFO lines: the emulated devices sit on buses 0x1000, 0x2000, ... */
static unsigned long bus_id(int device) { return 0x1000UL * (unsigned long)(device + 1); }

/* What ncclCommInitRankFunc does once the ranks met: the profiler plugin's init, the INFO line
 * (of an init with its commId, of a split with its parent), and the comm is ready. */
static void comm_ready(struct ncclComm *comm) {
  emu_prof_comm_init(comm);
  const struct emu_comm_ident *id = &comm->ident;
  if (id->parent)
    emu_info_dev(comm->device, NCCL_INIT,
                 "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx parent %p "
                 "childCount %d color %d key %d - Init COMPLETE",
                 id->api, (void *)comm, comm->rank, comm->nranks, comm->device, comm->device,
                 bus_id(comm->device), (const void *)id->parent, id->split_count, id->color,
                 id->key);
  else
    emu_info_dev(comm->device, NCCL_INIT,
                 "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - "
                 "Init COMPLETE",
                 id->api, (void *)comm, comm->rank, comm->nranks, comm->device, comm->device,
                 bus_id(comm->device), (unsigned long long)id->comm_hash);
  pthread_mutex_lock(&comm->clique->mu);
  comm->ready = true;
  pthread_mutex_unlock(&comm->clique->mu);
}

static void *comm_ready_main(void *arg) {
  comm_ready(arg);
  return NULL;
}

void emu_comms_ready(struct ncclComm **comms, int n) {
  if (n == 1) {
    comm_ready(comms[0]);
    return;
  }
  pthread_t *threads = calloc((size_t)n, sizeof(*threads));
  bool *started = calloc((size_t)n, sizeof(*started));
  for (int i = 0; i < n; i++)
    started[i] = threads && started &&
                 pthread_create(&threads[i], NULL, comm_ready_main, comms[i]) == 0;
  for (int i = 0; i < n; i++) {
    if (started && started[i])
      pthread_join(threads[i], NULL);
    else
      comm_ready(comms[i]); /* no thread: here, then */
  }
  free(threads);
  free(started);
}

/* The job thread of a non-blocking init; holds a reference on the comm. */
static void *ready_async_main(void *arg) {
  struct ncclComm *comm = arg;
  if (await_init(comm) == ncclSuccess)
    comm_ready(comm);
  emu_comm_release(comm);
  return NULL;
}

void emu_comm_ready_async(struct ncclComm *comm) {
  /* nothing to tell: ready as soon as its peers came (the plugin is looked for here, not on
   * the job thread as NCCL does, to know) */
  if (!emu_prof_comm_attach(comm) && !emu_info_enabled(NCCL_INIT)) {
    pthread_mutex_lock(&comm->clique->mu);
    comm->ready = true;
    pthread_mutex_unlock(&comm->clique->mu);
    return;
  }
  emu_obj_ref(&comm->obj);
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int e = pthread_create(&t, &attr, ready_async_main, comm);
  pthread_attr_destroy(&attr);
  if (e != 0) {
    emu_warn("NCCLEMU: cannot start the init thread of comm %p: %s", (void *)comm, strerror(e));
    emu_comm_release(comm);
  }
}

static ncclResult_t joined(const char *api, enum emu_knob knob, struct ncclComm *comm,
                           int blocking, ncclComm_t *newcomm);

static ncclResult_t init_rank(const char *api, enum emu_knob knob, ncclComm_t *newcomm,
                              int nranks, const ncclUniqueId *id, int rank,
                              ncclConfig_t *config) {
  if (!newcomm) {
    emu_warn("%s : newcomm argument is NULL", api);
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    emu_warn("%s: invalid rank %d for nranks %d", api, rank, nranks);
    return ncclInvalidArgument;
  }
  if (!emu_unique_id_valid(id)) {
    emu_warn("%s: the unique id was not made by ncclGetUniqueId", api);
    return ncclInvalidArgument;
  }
  int blocking, device;
  ncclResult_t r = config_blocking(api, config, 1, &blocking);
  if (r == ncclSuccess)
    r = current_device(api, &device);
  struct ncclComm *comm = NULL;
  if (r == ncclSuccess) {
    emu_show_version(rank);
    r = emu_comm_join(api, id, nranks, rank, device, blocking, NULL, &comm);
  }
  if (r != ncclSuccess)
    return r;
  return joined(api, knob, comm, blocking, newcomm);
}

/* A registered comm that joined its clique: published, then (in a group: at its end) waited for
 * until every rank came, or, non-blocking, left to a thread. */
static ncclResult_t joined(const char *api, enum emu_knob knob, struct ncclComm *comm,
                           int blocking, ncclComm_t *newcomm) {
  ncclResult_t r;
  /* published before the wait, as NCCL does, so another thread can abort a stuck init */
  *newcomm = comm;
  if (knob == EMU_KNOB_HANG) {
    emu_obj_ref(&comm->obj);
    return emu_hang(comm, api);
  }
  if (emu_group_active()) {
    struct emu_part *p = calloc(1, sizeof(*p));
    if (!p) {
      r = await_init(comm);
      if (r == ncclSuccess)
        emu_comms_ready(&comm, 1);
      return r;
    }
    p->func = F_INIT;
    p->api = api;
    p->comm = comm;
    p->blocking = blocking;
    emu_obj_ref(&comm->obj);
    emu_group_add(p);
    return ncclSuccess;
  }
  if (!blocking) {
    emu_comm_ready_async(comm);
    return ncclInProgress;
  }
  r = await_init(comm);
  if (r == ncclSuccess)
    emu_comms_ready(&comm, 1);
  return r;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t *config) {
  NCCL_KNOB("ncclCommInitRankConfig");
  return init_rank("ncclCommInitRankConfig", knob_, comm, nranks, &commId, rank, config);
}
NCCL_ALIAS(ncclCommInitRankConfig);

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  NCCL_KNOB("ncclCommInitRank");
  return init_rank("ncclCommInitRank", knob_, comm, nranks, &commId, rank, NULL);
}
NCCL_ALIAS(ncclCommInitRank);

ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId *commIds, ncclConfig_t *config) {
  NCCL_KNOB("ncclCommInitRankScalable");
  if (nId < 1 || !commIds) {
    emu_warn("ncclCommInitRankScalable: invalid unique id list (nId %d)", nId);
    return ncclInvalidArgument;
  }
  /* every rank passes the same ids in the same order: the first one names the clique */
  return init_rank("ncclCommInitRankScalable", knob_, newcomm, nranks, &commIds[0], myrank,
                   config);
}
NCCL_ALIAS(ncclCommInitRankScalable);

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  NCCL_KNOB("ncclCommInitAll");
  if (!comms) {
    emu_warn("ncclCommInitAll : comms argument is NULL");
    return ncclInvalidArgument;
  }
  if (ndev < 1) {
    emu_warn("ncclCommInitAll: invalid ndev %d", ndev);
    return ncclInvalidArgument;
  }
  int count = emu_rt_device_count();
  for (int i = 0; i < ndev; i++) {
    int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= count) {
      emu_warn("ncclCommInitAll: Cuda failure 'invalid device ordinal' (device %d)", d);
      return ncclUnhandledCudaError;
    }
    for (int j = 0; j < i; j++)
      if (devlist && devlist[j] == d) {
        emu_warn("ncclCommInitAll: duplicate GPU detected: device %d appears twice", d);
        return ncclInvalidUsage;
      }
  }
  struct emu_clique *c = emu_clique_new(ndev);
  if (!c) {
    emu_warn("ncclCommInitAll: out of memory");
    return ncclSystemError;
  }
  /* NCCL makes a unique id and inits every rank with it: their commHash is that id's */
  ncclUniqueId id;
  emu_make_unique_id(&id, 0);
  struct emu_comm_ident ident;
  emu_ident_from_id(&ident, &id, "ncclCommInitAll");
  emu_show_version(0);
  for (int i = 0; i < ndev; i++) {
    comms[i] = emu_comm_new(c, i, devlist ? devlist[i] : i, 1, &ident);
    if (!comms[i]) {
      emu_warn("ncclCommInitAll: out of memory");
      for (int j = 0; j < i; j++)
        if (emu_rt_live_remove(comms[j], EMU_COMM, NULL))
          emu_comm_release(comms[j]);
      return ncclSystemError;
    }
  }
  emu_comms_ready(comms, ndev);
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommInitAll);

/* ---------------------------------------------------------------- split and shrink */

/* Arrives now; outside a group also waits for the peers and hands out the new comm. Inside a
 * group the arrival and the wait happen at ncclGroupEnd, so one thread can split every rank. */
static ncclResult_t run_host_part(struct emu_part *p) {
  if (emu_group_active()) {
    *p->newcomm = NULL;
    emu_group_add(p);
    return ncclSuccess;
  }
  emu_part_arrive(p);
  emu_part_await(p);
  emu_part_complete(p);
  emu_part_finish(p);
  ncclResult_t r = p->result;
  if (r == ncclSuccess && *p->newcomm)
    emu_comms_ready(p->newcomm, 1);
  emu_part_free(p);
  return r;
}

/* Checks the parent, and numbers the host-side operation in the parent's order. */
static ncclResult_t host_part(const char *api, struct ncclComm *comm, bool split,
                              struct emu_part **out) {
  struct emu_clique *c = comm->clique;
  if (emu_clique_spans_processes(c)) {
    emu_warn("NCCLEMU: %s of a communicator whose ranks are in several processes is not emulated",
             api);
    return ncclInvalidUsage;
  }
  pthread_mutex_lock(&c->mu);
  enum emu_comm_state state = comm->state;
  uint64_t seq = comm->host_seq++;
  /* ncclCommInitChildComm: each split counts (a shrink does not), so its child's hash differs */
  int child_count = split && state == COMM_LIVE ? ++comm->child_count : 0;
  pthread_mutex_unlock(&c->mu);
  if (state != COMM_LIVE) {
    emu_warn("%s: comm %p has been finalized or is being destroyed", api, (void *)comm);
    return ncclInvalidUsage;
  }
  struct emu_part *p = calloc(1, sizeof(*p));
  if (!p) {
    emu_warn("%s: out of memory", api);
    return ncclSystemError;
  }
  p->api = api;
  p->comm = comm;
  p->seq = seq;
  p->child_count = child_count;
  *out = p;
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
  NCCL_KNOB("ncclCommSplit");
  const char *api = "ncclCommSplit";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  int blocking = 1;
  if (!newcomm) {
    emu_warn("%s : newcomm argument is NULL", api);
    r = ncclInvalidArgument;
  } else if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    emu_warn("%s: invalid color %d", api, color);
    r = ncclInvalidArgument;
  } else {
    r = config_blocking(api, config, comm->blocking, &blocking);
  }
  struct emu_part *p = NULL;
  if (r == ncclSuccess)
    r = host_part(api, comm, true, &p);
  if (r != ncclSuccess) {
    emu_comm_release(comm);
    return r;
  }
  p->func = F_SPLIT;
  p->color = color;
  p->key = key;
  p->blocking = blocking;
  p->newcomm = newcomm;
  return run_host_part(p);
}
NCCL_ALIAS(ncclCommSplit);

ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                            ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  NCCL_KNOB("ncclCommShrink");
  const char *api = "ncclCommShrink";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  int blocking = 1;
  if (!newcomm) {
    emu_warn("%s : newcomm argument is NULL", api);
    r = ncclInvalidArgument;
  } else if (excludeRanksCount < 0 || excludeRanksCount >= comm->nranks ||
             (excludeRanksCount > 0 && !excludeRanksList) ||
             (shrinkFlags & ~NCCL_SHRINK_ABORT)) {
    emu_warn("%s: invalid exclude list or flags (count %d, flags %d)", api, excludeRanksCount,
             shrinkFlags);
    r = ncclInvalidArgument;
  } else {
    for (int i = 0; i < excludeRanksCount && r == ncclSuccess; i++) {
      int x = excludeRanksList[i];
      bool dup = false;
      for (int j = 0; j < i; j++)
        dup |= excludeRanksList[j] == x;
      if (x < 0 || x >= comm->nranks || x == comm->rank || dup) {
        emu_warn("%s: invalid excluded rank %d (own rank %d, nranks %d)", api, x, comm->rank,
                 comm->nranks);
        r = ncclInvalidArgument;
      }
    }
    if (r == ncclSuccess)
      r = config_blocking(api, config, comm->blocking, &blocking);
  }
  struct emu_part *p = NULL;
  if (r == ncclSuccess)
    r = host_part(api, comm, false, &p);
  if (r == ncclSuccess && excludeRanksCount > 0) {
    p->exclude = malloc((size_t)excludeRanksCount * sizeof(int));
    if (p->exclude) {
      memcpy(p->exclude, excludeRanksList, (size_t)excludeRanksCount * sizeof(int));
    } else {
      emu_part_free(p);
      r = ncclSystemError;
    }
  }
  if (r != ncclSuccess) {
    emu_comm_release(comm);
    return r;
  }
  if (shrinkFlags & NCCL_SHRINK_ABORT) {
    /* the excluded ranks are dead to the parent: work waiting for them fails now */
    struct emu_clique *c = comm->clique;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < excludeRanksCount; i++) {
      c->gone[excludeRanksList[i]] = 1;
      emu_fail_slots_locked(c, excludeRanksList[i]);
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
  p->func = F_SHRINK;
  p->nexclude = excludeRanksCount;
  p->blocking = blocking;
  p->newcomm = newcomm;
  return run_host_part(p);
}
NCCL_ALIAS(ncclCommShrink);

/* ---------------------------------------------------------------- grow (NCCL 2.29) */

/* A grow's id: NCCL's bootstrap handle has the grow's magic first (hashCombine of the parent's
 * magic and its next childCount, src/bootstrap.cc bootstrapGetUniqueId); here the marker
 * NCCLEMUG, the process and the parent's size follow. The existing ranks that get no id build
 * the same bytes from their comm, so every rank meets in the same clique. */
static const char grow_marker[8] = {'N', 'C', 'C', 'L', 'E', 'M', 'U', 'G'};

static void grow_id(ncclUniqueId *id, uint64_t magic, int32_t pid, int old_nranks) {
  struct emu_id_fields f;
  memset(&f, 0, sizeof(f));
  f.magic = magic;
  memcpy(f.marker, grow_marker, sizeof(grow_marker));
  f.pid = pid;
  f.counter = (uint64_t)old_nranks;
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &f, sizeof(f));
}

static bool is_grow_id(const ncclUniqueId *id, struct emu_id_fields *f) {
  emu_id_fields(id, f);
  return memcmp(f->marker, grow_marker, sizeof(grow_marker)) == 0;
}

ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId) {
  NCCL_KNOB("ncclCommGetUniqueId");
  const char *api = "ncclCommGetUniqueId";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!uniqueId) {
    emu_warn("CommGetUniqueId : uniqueId argument is NULL");
    r = ncclInvalidArgument;
  } else if (emu_clique_spans_processes(comm->clique)) {
    emu_warn("NCCLEMU: %s of a communicator whose ranks are in several processes is not "
             "emulated",
             api);
    r = ncclInvalidUsage;
  } else {
    pthread_mutex_lock(&comm->clique->mu);
    uint64_t magic = emu_hash_combine(comm->ident.magic, (uint64_t)(comm->child_count + 1));
    pthread_mutex_unlock(&comm->clique->mu);
    grow_id(uniqueId, magic, (int32_t)getpid(), comm->nranks);
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommGetUniqueId);

/* The existing ranks pass their comm and rank -1 (the one that made the id passes it too), the
 * new ranks NULL, the id and their rank. Each existing rank counts a child, as a split does.
 * The new comm's commHash is hashCombine(the grow's magic, nRanks) (src/init.cc). */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                          ncclComm_t *newcomm, ncclConfig_t *config) {
  NCCL_KNOB("ncclCommGrow");
  const char *api = "ncclCommGrow";
  if (!newcomm) {
    emu_warn("%s : newcomm argument is NULL", api);
    return ncclInvalidArgument;
  }
  if (nRanks <= 0) {
    emu_warn("ncclCommGrow: total ranks must be positive, got %d", nRanks);
    return ncclInvalidArgument;
  }
  ncclResult_t r = ncclSuccess;
  if (comm && (r = emu_comm_acquire(comm, api)) != ncclSuccess)
    return r;
  if (comm && knob_ == EMU_KNOB_HANG)
    return emu_hang(comm, api);
  *newcomm = NULL;
  int blocking = 1, device = 0, old_nranks = 0;
  uint64_t magic = 0;
  struct emu_id_fields f;
  if (uniqueId && !is_grow_id(uniqueId, &f)) {
    emu_warn("%s: the unique id was not made by ncclCommGetUniqueId", api);
    r = ncclInvalidArgument;
  } else if (uniqueId && f.pid != (int32_t)getpid()) {
    emu_warn("NCCLEMU: %s with ranks in several processes is not emulated", api);
    r = ncclInvalidUsage;
  } else if (comm) {
    struct emu_clique *c = comm->clique;
    if (nRanks <= comm->nranks) {
      emu_warn("ncclCommGrow: total ranks %d is less than current ranks %d", nRanks,
               comm->nranks);
      r = ncclInvalidArgument;
    } else if (rank != -1) {
      emu_warn("ncclCommGrow: existing ranks must pass rank=-1, got %d", rank);
      r = ncclInvalidArgument;
    } else if (emu_clique_spans_processes(c)) {
      emu_warn("NCCLEMU: %s of a communicator whose ranks are in several processes is not "
               "emulated",
               api);
      r = ncclInvalidUsage;
    } else {
      pthread_mutex_lock(&c->mu);
      bool live = comm->state == COMM_LIVE;
      int count = live ? ++comm->child_count : 0;
      pthread_mutex_unlock(&c->mu);
      magic = emu_hash_combine(comm->ident.magic, (uint64_t)count);
      if (!live) {
        emu_warn("%s: comm %p has been finalized or is being destroyed", api, (void *)comm);
        r = ncclInvalidUsage;
      } else if (uniqueId && f.magic != magic) {
        emu_warn("ncclCommGrow: magic mismatch computed by the root, got %lx expected %lx",
                 (unsigned long)f.magic, (unsigned long)magic);
        r = ncclInvalidArgument;
      }
      rank = comm->rank;
      device = comm->device;
      old_nranks = comm->nranks;
      if (r == ncclSuccess)
        r = config_blocking(api, config, comm->blocking, &blocking);
    }
  } else if (rank < 0) {
    emu_warn("ncclCommGrow: new ranks must pass valid rank >= 0, got %d", rank);
    r = ncclInvalidArgument;
  } else if (!uniqueId) {
    emu_warn("ncclCommGrow: new ranks must pass non-NULL uniqueId");
    r = ncclInvalidArgument;
  } else if (rank >= nRanks) {
    emu_warn("ncclCommGrow: new rank %d exceeds total ranks %d", rank, nRanks);
    r = ncclInvalidArgument;
  } else if (rank < (int)f.counter) {
    emu_warn("ncclCommGrow: new rank %d is one of the %d existing ranks", rank, (int)f.counter);
    r = ncclInvalidArgument;
  } else {
    magic = f.magic;
    old_nranks = (int)f.counter;
    r = config_blocking(api, config, 1, &blocking);
    if (r == ncclSuccess)
      r = current_device(api, &device);
    if (r == ncclSuccess)
      emu_show_version(rank);
  }
  struct ncclComm *grown = NULL;
  if (r == ncclSuccess) {
    ncclUniqueId key;
    grow_id(&key, magic, (int32_t)getpid(), old_nranks);
    struct emu_comm_ident ident = {.comm_hash = emu_hash_combine(magic, (uint64_t)nRanks),
                                   .magic = magic,
                                   .api = api,
                                   .parent = comm,
                                   .key = rank};
    emu_info_dev(device, NCCL_INIT, "Rank %d: Generated commHash 0x%lx from baseMagic 0x%lx and "
                                    "newNRanks %d",
                 rank, (unsigned long)ident.comm_hash, (unsigned long)magic, nRanks);
    r = emu_comm_join(api, &key, nRanks, rank, device, blocking, &ident, &grown);
  }
  if (comm)
    emu_comm_release(comm);
  if (r != ncclSuccess)
    return r;
  return joined(api, knob_, grown, blocking, newcomm);
}
NCCL_ALIAS(ncclCommGrow);

/* ---------------------------------------------------------------- revoke (NCCL 2.29) */

/* Stops the comm's work: what is in flight fails for its peers, what is queued does nothing when
 * its stream gets there, and no new work is taken; the comm stays until destroyed or aborted
 * (split and shrink still work). Blocking, it returns once the comm's queued work is past;
 * non-blocking, ncclCommGetAsyncError answers ncclInProgress until then (src/init.cc). */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  NCCL_KNOB("ncclCommRevoke");
  const char *api = "ncclCommRevoke";
  if (!comm)
    return ncclSuccess; /* as NCCL */
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  struct emu_clique *c = comm->clique;
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    emu_warn("%s: revokeFlags %d: must be NCCL_REVOKE_DEFAULT (0)", api, revokeFlags);
    r = ncclInvalidArgument;
  } else if (emu_clique_spans_processes(c)) {
    emu_warn("NCCLEMU: %s of a communicator whose ranks are in several processes is not "
             "emulated",
             api);
    r = ncclInvalidUsage;
  }
  pthread_mutex_lock(&c->mu);
  if (r == ncclSuccess && (comm->state != COMM_LIVE || comm->revoked)) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("%s: comm %p is being destroyed, finalized or revoked already", api, (void *)comm);
    r = ncclInvalidArgument;
  } else if (r == ncclSuccess) {
    comm->revoked = true;
    emu_fail_slots_locked(c, comm->rank);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  } else {
    pthread_mutex_unlock(&c->mu);
  }
  if (r != ncclSuccess) {
    emu_comm_release(comm);
    return r;
  }
  emu_comm_update_report(comm);
  emu_info_dev(comm->device, NCCL_INIT,
               "comm %p rank %d nRanks %d cudaDev %d busId %lx - Revoke START", (void *)comm,
               comm->rank, comm->nranks, comm->device, bus_id(comm->device));
  if (comm->blocking) {
    pthread_mutex_lock(&c->mu);
    while (comm->pending > 0 && comm->state == COMM_LIVE)
      pthread_cond_wait(&c->cv, &c->mu);
    comm->async_error = ncclSuccess; /* quiescent: NCCL's revoke job sets its result */
    pthread_mutex_unlock(&c->mu);
  } else {
    r = ncclInProgress;
  }
  emu_info_dev(comm->device, NCCL_INIT,
               "comm %p rank %d nRanks %d cudaDev %d busId %lx - Revoke COMPLETE, result %d",
               (void *)comm, comm->rank, comm->nranks, comm->device, bus_id(comm->device), (int)r);
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommRevoke);

/* ---------------------------------------------------------------- the end of a communicator */

/* The rank leaves its clique: work of its peers that needs it fails instead of waiting. Answers
 * whether it was the last rank of the clique in this process (its service thread then ends). */
static bool leave_locked(struct ncclComm *comm, enum emu_comm_state state) {
  struct emu_clique *c = comm->clique;
  comm->state = state;
  c->gone[comm->rank] = 1;
  emu_fail_slots_locked(c, comm->rank);
  pthread_cond_broadcast(&c->cv);
  if (comm->left)
    return false;
  comm->left = true;
  return --c->local_live == 0;
}

static bool remote_ranks_left_locked(const struct emu_clique *c) {
  for (int r = 0; r < c->nranks; r++)
    if (c->members[r].where == WHERE_THERE && c->left[r] == LEFT_NOT)
      return false;
  return true;
}

/* As in NCCL, destroy is a collective of the ranks on the node: the ranks of other processes must
 * reach their destroy (or abort) too. A lone rank waits for them, for ever unless
 * NCCLEMU_DESTROY_TIMEOUT_MS says otherwise or another thread aborts the comm. */
static void destroy_barrier_locked(struct ncclComm *comm) {
  struct emu_clique *c = comm->clique;
  if (!c->net || !c->tabled)
    return;
  comm->announced = true;
  pthread_mutex_unlock(&c->mu);
  emu_proxy_left(c, comm->rank, LEFT_DESTROYED);
  pthread_mutex_lock(&c->mu);
  unsigned timeout_ms = emu_rt_destroy_timeout_ms();
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  while (comm->state == COMM_DESTROYING && !remote_ranks_left_locked(c)) {
    if (timeout_ms == 0) {
      pthread_cond_wait(&c->cv, &c->mu);
    } else if (pthread_cond_timedwait(&c->cv, &c->mu, &deadline) == ETIMEDOUT &&
               !remote_ranks_left_locked(c)) {
      emu_warn("NCCLEMU: ncclCommDestroy of rank %d stopped waiting for the ranks of other "
               "processes after %u ms (NCCLEMU_DESTROY_TIMEOUT_MS)",
               comm->rank, timeout_ms);
      break;
    }
  }
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  NCCL_KNOB("ncclCommFinalize");
  ncclResult_t r = emu_comm_acquire(comm, "ncclCommFinalize");
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  if (comm->revoked) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("ncclCommFinalize: comm %p was revoked: destroy or abort it instead", (void *)comm);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  if (comm->state != COMM_LIVE) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("ncclCommFinalize: comm %p has already been finalized", (void *)comm);
    emu_comm_release(comm);
    return ncclInvalidUsage;
  }
  comm->state = COMM_FINALIZING;
  if (comm->blocking) {
    /* flushes: every op enqueued on this comm has run */
    while (comm->pending > 0 && comm->state == COMM_FINALIZING)
      pthread_cond_wait(&c->cv, &c->mu);
    if (comm->state == COMM_FINALIZING)
      comm->state = COMM_FINALIZED;
    else
      r = ncclRemoteError;
  } else {
    r = ncclInProgress;
  }
  pthread_mutex_unlock(&c->mu);
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommFinalize);

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NCCL_KNOB("ncclCommDestroy");
  if (!comm)
    return ncclSuccess; /* as NCCL: destroying NULL is a no-op */
  ncclResult_t r = emu_comm_acquire(comm, "ncclCommDestroy");
  if (r != ncclSuccess)
    return r;
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  if (comm->state >= COMM_DESTROYING) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("ncclCommDestroy: comm %p is not a live communicator", (void *)comm);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  /* Destroy finalizes first: it waits for the comm's enqueued work, which may wait for peers.
   * The comm stays registered meanwhile, so another thread can still abort it; a second destroy
   * of it is misuse, hung (NCCLEMU_HANG) or not. */
  comm->state = COMM_DESTROYING;
  pthread_mutex_unlock(&c->mu);
  NCCL_HANG(comm);
  pthread_mutex_lock(&c->mu);
  while (comm->pending > 0 && comm->state == COMM_DESTROYING)
    pthread_cond_wait(&c->cv, &c->mu);
  if (comm->state == COMM_DESTROYING)
    destroy_barrier_locked(comm);
  bool aborted = comm->state == COMM_ABORTED, last = false;
  if (!aborted)
    last = leave_locked(comm, COMM_RELEASED);
  pthread_mutex_unlock(&c->mu);
  /* commFree: registrations, windows and device comms go, then the profiler plugin's
   * finalize, inside the call (an abort meanwhile did both) */
  if (!aborted) {
    emu_comm_release_resources(comm);
    emu_prof_comm_finalize(comm);
  }
  if (last)
    emu_proxy_stop(c);
  /* when an abort came meanwhile, it ended the handle */
  if (!aborted && emu_rt_live_remove(comm, EMU_COMM, NULL))
    emu_comm_release(comm);
  emu_comm_release(comm);
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommDestroy);

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NCCL_KNOB("ncclCommAbort");
  if (!comm)
    return ncclSuccess; /* as NCCL: aborting NULL is a no-op */
  ncclResult_t r = emu_comm_acquire(comm, "ncclCommAbort");
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  if (comm->state == COMM_ABORTED || comm->state == COMM_RELEASED) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("ncclCommAbort: comm %p is not a live communicator", (void *)comm);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  /* never waits: work of this comm still queued on streams fails when it runs */
  bool announce = !comm->announced; /* a destroy in its barrier said goodbye already */
  comm->announced = true;
  bool last = leave_locked(comm, COMM_ABORTED);
  pthread_mutex_unlock(&c->mu);
  emu_comm_release_resources(comm);
  emu_prof_comm_finalize(comm);
  if (announce)
    emu_proxy_left(c, comm->rank, LEFT_ABORTED);
  if (last)
    emu_proxy_stop(c);
  if (emu_rt_live_remove(comm, EMU_COMM, NULL))
    emu_comm_release(comm);
  emu_comm_release(comm);
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommAbort);

/* ---------------------------------------------------------------- queries */

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  NCCL_KNOB("ncclCommGetAsyncError");
  if (!asyncError) {
    emu_warn("ncclCommGetAsyncError : asyncError argument is NULL");
    return ncclInvalidArgument;
  }
  ncclResult_t r = emu_comm_acquire(comm, "ncclCommGetAsyncError");
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  if (c->init_error) {
    *asyncError = c->init_error;
  } else if (!c->complete || !comm->ready) {
    *asyncError = ncclInProgress;
  } else if (comm->revoked) {
    if (comm->pending == 0)
      comm->async_error = ncclSuccess;
    *asyncError = comm->pending == 0 ? ncclSuccess : ncclInProgress;
  } else if (comm->state == COMM_FINALIZING) {
    if (comm->pending == 0)
      comm->state = COMM_FINALIZED;
    *asyncError = comm->pending == 0 ? comm->async_error : ncclInProgress;
  } else {
    *asyncError = comm->async_error;
  }
  pthread_mutex_unlock(&c->mu);
  emu_comm_release(comm);
  return ncclSuccess;
}
NCCL_ALIAS(ncclCommGetAsyncError);

enum comm_field { FIELD_COUNT, FIELD_DEVICE, FIELD_RANK };

static ncclResult_t comm_query(const char *api, enum emu_knob knob, ncclComm_t comm, int *out,
                               const char *outname, enum comm_field field) {
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  if (knob == EMU_KNOB_HANG)
    return emu_hang(comm, api);
  if (!out) {
    emu_warn("%s : %s argument is NULL", api, outname);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  *out = field == FIELD_COUNT ? comm->nranks : field == FIELD_DEVICE ? comm->device : comm->rank;
  emu_comm_release(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  NCCL_KNOB("ncclCommCount");
  return comm_query("ncclCommCount", knob_, comm, count, "count", FIELD_COUNT);
}
NCCL_ALIAS(ncclCommCount);

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  NCCL_KNOB("ncclCommCuDevice");
  return comm_query("ncclCommCuDevice", knob_, comm, device, "device", FIELD_DEVICE);
}
NCCL_ALIAS(ncclCommCuDevice);

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  NCCL_KNOB("ncclCommUserRank");
  return comm_query("ncclCommUserRank", knob_, comm, rank, "rank", FIELD_RANK);
}
NCCL_ALIAS(ncclCommUserRank);
