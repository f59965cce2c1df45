/* What every NCCL call leans on: warnings in NCCL's format, versions and error strings, unique
 * ids, and the life of communicators and of the cliques their ranks share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

static __thread char last_error[1024]; /* per thread: a caller reads it after its own failure */

/* One line, one write(2), so that lines of concurrent ranks never interleave:
 *   host:pid:tid [device] NCCL WARN message */
void emu_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  host[strcspn(host, ".")] = '\0';
  char line[1400];
  int n = snprintf(line, sizeof(line), "%s:%d:%d [%d] NCCL WARN %s\n", host, (int)getpid(),
                   (int)gettid(), emu_rt_current_device(), last_error);
  if (n > (int)sizeof(line) - 1) {
    n = (int)sizeof(line) - 1;
    line[n - 1] = '\n';
  }
  ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
  (void)ignored;
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

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  NCCL_KNOB("ncclGetUniqueId");
  if (!uniqueId) {
    emu_warn("ncclGetUniqueId : uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct {
    char magic[8];
    int32_t pid;
    uint64_t counter;
    int64_t sec;
    int64_t nsec;
  } fields;
  memcpy(fields.magic, id_magic, sizeof(id_magic));
  fields.pid = (int32_t)getpid();
  fields.counter = atomic_fetch_add(&id_counter, 1) + 1;
  fields.sec = now.tv_sec;
  fields.nsec = now.tv_nsec;
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

/* Cliques whose ranks are still arriving, found by unique id. Lock order: forming_mu, then a
 * clique's mu. */
static pthread_mutex_t forming_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_clique *forming; /* guarded by forming_mu */

struct emu_clique *emu_clique_new(int nranks) {
  struct emu_clique *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->comms = calloc((size_t)nranks, sizeof(*c->comms));
  c->gone = calloc((size_t)nranks, 1);
  if (!c->comms || !c->gone) {
    free(c->comms);
    free(c->gone);
    free(c);
    return NULL;
  }
  c->nranks = nranks;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  return c;
}

static void clique_free(struct emu_clique *c) {
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->comms);
  free(c->gone);
  free(c);
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
  bool last = false;
  if (c) {
    pthread_mutex_lock(&forming_mu);
    pthread_mutex_lock(&c->mu);
    c->comms[comm->rank] = NULL;
    if (!c->complete)
      c->joined--; /* it left before its peers came; the rank may join again */
    last = --c->refs == 0;
    if (last && c->forming) {
      struct emu_clique **pp = &forming;
      while (*pp != c)
        pp = &(*pp)->forming_next;
      *pp = c->forming_next;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&forming_mu);
  }
  if (last)
    clique_free(c);
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
  c->refs++;
  if (++c->joined == c->nranks)
    c->complete = true;
  pthread_mutex_unlock(&c->mu);
  comm_register(comm);
  return comm;
}

ncclResult_t emu_comm_join(const char *api, const ncclUniqueId *id, int nranks, int rank,
                           int device, int blocking, struct ncclComm **out) {
  struct ncclComm *comm = comm_alloc(rank, nranks, device, blocking);
  if (!comm) {
    emu_warn("%s: out of memory", api);
    return ncclSystemError;
  }
  ncclResult_t r = ncclSuccess;
  pthread_mutex_lock(&forming_mu);
  struct emu_clique *c = forming;
  while (c && memcmp(c->id, id->internal, NCCL_UNIQUE_ID_BYTES) != 0)
    c = c->forming_next;
  if (!c) {
    c = emu_clique_new(nranks);
    if (c) {
      memcpy(c->id, id->internal, NCCL_UNIQUE_ID_BYTES);
      c->forming = true;
      c->forming_next = forming;
      forming = c;
    } else {
      r = ncclSystemError;
      emu_warn("%s: out of memory", api);
    }
  }
  if (c) {
    pthread_mutex_lock(&c->mu);
    if (c->nranks != nranks) {
      emu_warn("%s: rank %d has nranks %d but the unique id was used with nranks %d", api, rank,
               nranks, c->nranks);
      r = ncclInvalidArgument;
    } else if (c->comms[rank]) {
      emu_warn("%s: rank %d joined this unique id twice", api, rank);
      r = ncclInvalidUsage;
    } else {
      comm->clique = c;
      c->comms[rank] = comm;
      c->gone[rank] = 0; /* a rank that left before its peers came may join again */
      c->refs++;
      if (++c->joined == nranks) {
        /* complete: the id leaves the table, a later init with it starts a new clique */
        c->complete = true;
        struct emu_clique **pp = &forming;
        while (*pp != c)
          pp = &(*pp)->forming_next;
        *pp = c->forming_next;
        c->forming = false;
        pthread_cond_broadcast(&c->cv);
      }
    }
    pthread_mutex_unlock(&c->mu);
  }
  pthread_mutex_unlock(&forming_mu);
  if (r != ncclSuccess) {
    comm_free(comm); /* never attached to the clique */
    return r;
  }
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

/* NCCLEMU_HANG: block like a call stuck on a peer until the comm is aborted (or released). Says so
 * first, so that a stuck program explains itself. Takes over the caller's reference. */
ncclResult_t emu_hang(struct ncclComm *comm, const char *api) {
  emu_warn("NCCLEMU: %s hangs until comm %p is aborted (NCCLEMU_HANG)", api, (void *)comm);
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  while (comm->state != COMM_ABORTED && comm->state != COMM_RELEASED)
    pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  emu_comm_release(comm);
  return ncclRemoteError;
}
