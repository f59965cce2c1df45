/* What every NCCL call leans on: warnings in NCCL's format, versions and error strings, unique
 * ids, and the life of communicators and of the cliques their ranks share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include "emu.h"

static __thread char last_error[1024]; /* per thread: a caller reads it after its own failure */

/* One line, one write(2), so that lines of concurrent ranks never interleave:
 *   host:pid:tid [device] NCCL WARN message */
static void warn_line(int device, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  host[strcspn(host, ".")] = '\0';
  char line[1400];
  int n = snprintf(line, sizeof(line), "%s:%d:%d [%d] NCCL WARN %s\n", host, (int)getpid(),
                   (int)gettid(), device, last_error);
  if (n > (int)sizeof(line) - 1) {
    n = (int)sizeof(line) - 1;
    line[n - 1] = '\n';
  }
  ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
  (void)ignored;
}

void emu_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  warn_line(emu_rt_current_device(), fmt, ap);
  va_end(ap);
}

void emu_warn_dev(int device, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  warn_line(device, fmt, ap);
  va_end(ap);
}

ncclResult_t ncclGetVersion(int *version) {
  NCCL_KNOB("ncclGetVersion");
  if (!version) {
    emu_warn("ncclGetVersion : version argument is NULL");
    return ncclInvalidArgument;
  }
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
NCCL_ALIAS(ncclGetVersion);

const char *ncclGetErrorString(ncclResult_t code) {
  switch (code) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}
NCCL_ALIAS(ncclGetErrorString);

const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm; /* NCCL ignores it too */
  return last_error;
}
NCCL_ALIAS(ncclGetLastError);

void ncclResetDebugInit(void) {}
NCCL_ALIAS(ncclResetDebugInit);

/* ---------------------------------------------------------------- unique ids */

static const char id_magic[8] = {'N', 'C', 'C', 'L', 'E', 'M', 'U', '1'};
static atomic_ulong id_counter;

bool emu_unique_id_valid(const ncclUniqueId *id) {
  return memcmp(id->internal, id_magic, sizeof(id_magic)) == 0;
}

void emu_id_fields(const ncclUniqueId *id, struct emu_id_fields *out) {
  memcpy(out, id->internal, sizeof(*out));
}

bool emu_id_foreign(const ncclUniqueId *id) {
  struct emu_id_fields f;
  emu_id_fields(id, &f);
  return f.pid != (int32_t)getpid();
}

/* Like NCCL's, the id names the process that made it and where its root listens, so ranks in
 * other processes can join; ranks in this process meet without the network. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  NCCL_KNOB("ncclGetUniqueId");
  if (!uniqueId) {
    emu_warn("ncclGetUniqueId : uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct emu_id_fields fields;
  memset(&fields, 0, sizeof(fields));
  memcpy(fields.magic, id_magic, sizeof(id_magic));
  fields.pid = (int32_t)getpid();
  fields.port = emu_root_port();
  fields.counter = atomic_fetch_add(&id_counter, 1) + 1;
  fields.sec = now.tv_sec;
  fields.nsec = now.tv_nsec;
  if (getrandom(&fields.tag, sizeof(fields.tag), 0) != (ssize_t)sizeof(fields.tag))
    fields.tag = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ULL ^ fields.counter;
  memset(uniqueId, 0, sizeof(*uniqueId));
  memcpy(uniqueId->internal, &fields, sizeof(fields));
  return ncclSuccess;
}
NCCL_ALIAS(ncclGetUniqueId);

/* ---------------------------------------------------------------- memory */

ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  NCCL_KNOB("ncclMemAlloc");
  if (!ptr) {
    emu_warn("ncclMemAlloc : ptr argument is NULL");
    return ncclInvalidArgument;
  }
  cudaError_t e = cudaMalloc(ptr, size);
  if (e != cudaSuccess) {
    emu_warn("Cuda failure '%s'", cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
NCCL_ALIAS(ncclMemAlloc);

ncclResult_t ncclMemFree(void *ptr) {
  NCCL_KNOB("ncclMemFree");
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) {
    emu_warn("Cuda failure '%s'", cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
NCCL_ALIAS(ncclMemFree);

/* ---------------------------------------------------------------- cliques and communicators */

/* Cliques whose ranks are still arriving, found by unique id. Lock order: emu_forming_mu, then a
 * clique's mu. */
pthread_mutex_t emu_forming_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_clique *forming; /* guarded by emu_forming_mu */

struct emu_clique *emu_clique_new(int nranks) {
  struct emu_clique *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->comms = calloc((size_t)nranks, sizeof(*c->comms));
  c->gone = calloc((size_t)nranks, 1);
  c->left = calloc((size_t)nranks, 1);
  c->members = calloc((size_t)nranks, sizeof(*c->members));
  if (!c->comms || !c->gone || !c->left || !c->members) {
    free(c->comms);
    free(c->gone);
    free(c->left);
    free(c->members);
    free(c);
    return NULL;
  }
  c->nranks = nranks;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  return c;
}

static void clique_free(struct emu_clique *c) {
  emu_slots_free(c);
  emu_net_free(c->net);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->comms);
  free(c->gone);
  free(c->left);
  free(c->members);
  free(c);
}

struct emu_clique *emu_forming_find_locked(const unsigned char *id, int nranks, bool create) {
  struct emu_clique *c = forming;
  while (c && memcmp(c->id, id, NCCL_UNIQUE_ID_BYTES) != 0)
    c = c->forming_next;
  if (c || !create)
    return c;
  c = emu_clique_new(nranks);
  if (c) {
    memcpy(c->id, id, NCCL_UNIQUE_ID_BYTES);
    c->forming = true;
    c->forming_next = forming;
    forming = c;
  }
  return c;
}

void emu_forming_remove_locked(struct emu_clique *c) {
  if (!c->forming)
    return;
  struct emu_clique **pp = &forming;
  while (*pp != c)
    pp = &(*pp)->forming_next;
  *pp = c->forming_next;
  c->forming = false;
}

void emu_clique_ref(struct emu_clique *c) {
  pthread_mutex_lock(&c->mu);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
}

void emu_clique_unref(struct emu_clique *c) {
  pthread_mutex_lock(&emu_forming_mu);
  pthread_mutex_lock(&c->mu);
  bool last = --c->refs == 0;
  if (last)
    emu_forming_remove_locked(c);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&emu_forming_mu);
  if (last)
    clique_free(c);
}

bool emu_clique_spans_processes(struct emu_clique *c) {
  pthread_mutex_lock(&c->mu);
  bool spans = c->foreign || c->net || c->remote_joined > 0;
  pthread_mutex_unlock(&c->mu);
  return spans;
}

static struct ncclComm *comm_alloc(int rank, int nranks, int device, int blocking) {
  struct ncclComm *comm = calloc(1, sizeof(*comm));
  if (!comm)
    return NULL;
  comm->send_seq = calloc((size_t)nranks, sizeof(uint64_t));
  comm->recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
  if (!comm->send_seq || !comm->recv_seq) {
    free(comm->send_seq);
    free(comm->recv_seq);
    free(comm);
    return NULL;
  }
  atomic_init(&comm->obj.refs, 1);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->blocking = blocking;
  comm->state = COMM_LIVE;
  return comm;
}

static void comm_register(struct ncclComm *comm) {
  struct emu_live_info info = {.device = comm->device, .rank = comm->rank, .nranks = comm->nranks};
  emu_rt_live_add(comm, EMU_COMM, &info);
}

static void comm_free(struct ncclComm *comm) {
  struct emu_clique *c = comm->clique;
  if (c) {
    bool unregister = false, stop = false;
    pthread_mutex_lock(&emu_forming_mu);
    pthread_mutex_lock(&c->mu);
    c->comms[comm->rank] = NULL;
    if (!comm->left)
      stop = --c->local_live == 0;
    if (!c->complete)
      c->joined--; /* it left before its peers came; the rank may join again */
    if (!c->tabled) {
      c->members[comm->rank].where = WHERE_UNKNOWN;
      unregister = c->foreign;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&emu_forming_mu);
    if (unregister)
      emu_proxy_unregister(c, comm->rank);
    if (stop)
      emu_proxy_stop(c);
    emu_clique_unref(c);
  }
  free(comm->send_seq);
  free(comm->recv_seq);
  free(comm);
}

void emu_comm_release(struct ncclComm *comm) {
  if (emu_obj_unref(&comm->obj))
    comm_free(comm);
}

struct ncclComm *emu_comm_new(struct emu_clique *c, int rank, int device, int blocking) {
  struct ncclComm *comm = comm_alloc(rank, c->nranks, device, blocking);
  if (!comm)
    return NULL;
  comm->clique = c;
  pthread_mutex_lock(&c->mu);
  c->comms[rank] = comm;
  c->members[rank].where = WHERE_HERE;
  c->refs++;
  c->local_live++;
  if (++c->joined == c->nranks)
    c->complete = c->tabled = true;
  pthread_mutex_unlock(&c->mu);
  comm_register(comm);
  return comm;
}

/* Ranks in this process meet in the forming table. With a foreign id, the id's root says when
 * every rank (in whichever process) has joined; with one of ours, the last local rank completes
 * the clique unless other processes registered ranks with our root, which then completes it. */
ncclResult_t emu_comm_join(const char *api, const ncclUniqueId *id, int nranks, int rank,
                           int device, int blocking, struct ncclComm **out) {
  struct ncclComm *comm = comm_alloc(rank, nranks, device, blocking);
  if (!comm) {
    emu_warn("%s: out of memory", api);
    return ncclSystemError;
  }
  bool foreign = emu_id_foreign(id), wake_root = false;
  ncclResult_t r = ncclSuccess;
  pthread_mutex_lock(&emu_forming_mu);
  struct emu_clique *c = emu_forming_find_locked((const unsigned char *)id->internal, nranks, true);
  if (!c) {
    r = ncclSystemError;
    emu_warn("%s: out of memory", api);
  }
  if (c) {
    pthread_mutex_lock(&c->mu);
    if (c->joined == 0 && c->remote_joined == 0)
      c->foreign = foreign;
    if (foreign && !c->net && !(c->net = emu_net_new())) {
      emu_warn("%s: out of memory", api);
      r = ncclSystemError;
    } else if (c->nranks != nranks) {
      emu_warn("%s: rank %d has nranks %d but the unique id was used with nranks %d", api, rank,
               nranks, c->nranks);
      r = ncclInvalidArgument;
    } else if (c->comms[rank] || c->members[rank].where == WHERE_THERE) {
      emu_warn("%s: rank %d joined this unique id twice", api, rank);
      r = ncclInvalidUsage;
    } else {
      comm->clique = c;
      c->comms[rank] = comm;
      c->members[rank].where = WHERE_HERE;
      c->gone[rank] = 0; /* a rank that left before its peers came may join again */
      c->refs++;
      c->local_live++;
      if (++c->joined + c->remote_joined == nranks && !c->foreign) {
        if (c->remote_joined == 0) {
          /* complete: the id leaves the table, a later init with it starts a new clique */
          c->complete = c->tabled = true;
          emu_forming_remove_locked(c);
          pthread_cond_broadcast(&c->cv);
        } else {
          wake_root = true;
        }
      }
    }
    pthread_mutex_unlock(&c->mu);
  }
  pthread_mutex_unlock(&emu_forming_mu);
  if (r != ncclSuccess) {
    comm_free(comm); /* never attached to the clique */
    return r;
  }
  if (foreign && (r = emu_proxy_register(c, id, rank)) != ncclSuccess) {
    comm_free(comm); /* detaches it again */
    return r;
  }
  if (wake_root)
    emu_root_wake();
  comm_register(comm);
  *out = comm;
  return ncclSuccess;
}

ncclResult_t emu_comm_acquire(ncclComm_t comm, const char *api) {
  if (!comm) {
    emu_warn("%s : comm argument is NULL", api);
    return ncclInvalidArgument;
  }
  if (!emu_rt_live_acquire(comm, EMU_COMM)) {
    emu_warn("%s: comm %p is not a live communicator", api, (void *)comm);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static atomic_int hung_calls; /* calls inside emu_hang now */

/* NCCLEMU_HANG: block like a call stuck on a peer until the comm is aborted (or released). Says so
 * first, so that a stuck program explains itself. Takes over the caller's reference. */
ncclResult_t emu_hang(struct ncclComm *comm, const char *api) {
  emu_warn("NCCLEMU: %s hangs until comm %p is aborted (NCCLEMU_HANG)", api, (void *)comm);
  atomic_fetch_add(&hung_calls, 1);
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  while (comm->state != COMM_ABORTED && comm->state != COMM_RELEASED)
    pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  atomic_fetch_sub(&hung_calls, 1);
  emu_comm_release(comm);
  return ncclRemoteError;
}

/* NCCLEMU_EXIT_WAITS=1: the library's teardown at process exit waits for the calls stuck inside
 * it, as a real library's teardown can (CUDA's, on work a stuck thread holds): such a process
 * never finishes exit(3). Only _exit(2) ends it. */
__attribute__((destructor)) static void exit_waits_for_hung_calls(void) {
  if (!emu_rt_exit_waits() || atomic_load(&hung_calls) == 0)
    return;
  emu_warn("NCCLEMU: exit waits for %d hung call(s) (NCCLEMU_EXIT_WAITS)", atomic_load(&hung_calls));
  while (atomic_load(&hung_calls) > 0)
    usleep(10000);
}
