/* What NCCL hands out besides communicators (NCCL 2.28/2.29): ncclMemAlloc memory, buffer
 * registrations (ncclCommRegister) and windows (ncclCommWindowRegister), with the queries of a
 * window. Registrations and windows belong to their comm and go when it goes, as NCCL frees
 * them at destroy; each is a live handle of the exit report until then. Checks and WARN lines
 * follow NVIDIA/nccl v2.29.3-1 src/allocator.cc, src/register/register.cc, src/dev_runtime.cc. */
#include <stdlib.h>

#include "emu.h"

/* ---------------------------------------------------------------- ncclMemAlloc */

ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  NCCL_KNOB("ncclMemAlloc");
  if (!ptr) {
    emu_warn("ncclMemAlloc : ptr argument is NULL");
    return ncclInvalidArgument;
  }
  cudaError_t e = emu_rt_mem_alloc(ptr, size, EMU_NCCLMEM);
  if (e != cudaSuccess) {
    emu_warn("Cuda failure '%s'", emu_rt_error_string(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
NCCL_ALIAS(ncclMemAlloc);

/* ncclMemAlloc's memory, or (as NCCL's fallback to cudaFree) cudaMalloc's. */
ncclResult_t ncclMemFree(void *ptr) {
  NCCL_KNOB("ncclMemFree");
  cudaError_t e = emu_rt_mem_free(ptr, EMU_NCCLMEM);
  if (e == cudaErrorInvalidValue)
    e = emu_rt_mem_free(ptr, EMU_ALLOC);
  if (e != cudaSuccess) {
    emu_warn("Cuda failure '%s'", emu_rt_error_string(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
NCCL_ALIAS(ncclMemFree);

/* ---------------------------------------------------------------- a comm's resources */

static void res_info(const struct emu_res *r, const struct ncclComm *comm,
                     struct emu_live_info *info) {
  *info = (struct emu_live_info){.device = comm->device,
                                 .rank = comm->rank,
                                 .nranks = comm->nranks,
                                 .bytes = r->size,
                                 .comm_id = comm->ident.comm_hash,
                                 .comm = comm,
                                 .buff = r->buff,
                                 .flags = r->flags,
                                 .refs = r->refs};
}

/* A new resource of comm, registered and listed. Under the clique's mu. */
struct emu_res *emu_res_new_locked(struct ncclComm *comm, enum emu_kind kind, void *buff,
                                   size_t size, int flags) {
  struct emu_res *r = calloc(1, sizeof(*r));
  if (!r)
    return NULL;
  atomic_init(&r->obj.refs, 1); /* the live handle's reference */
  r->kind = kind;
  r->comm = comm;
  r->clique = comm->clique;
  r->clique->refs++; /* the resource's own: its queries lock the clique */
  r->buff = buff;
  r->size = size;
  r->flags = flags;
  r->refs = 1;
  if (kind == EMU_WINDOW)
    r->seq = comm->win_seq++;
  r->next = comm->resources;
  comm->resources = r;
  struct emu_live_info info;
  res_info(r, comm, &info);
  emu_rt_live_add(r, kind, &info);
  return r;
}

/* Not under the clique's mu: the last reference frees the resource and drops its clique's. */
void emu_res_release(struct emu_res *r) {
  if (emu_obj_unref(&r->obj)) {
    emu_clique_unref(r->clique);
    free(r);
  }
}

/* Takes r off its comm's list and out of the live handles, under the clique's mu; answers
 * whether the caller now holds the live handle's reference, to release after unlocking. */
static bool res_end_locked(struct emu_res *r) {
  struct emu_res **pp = &r->comm->resources;
  while (*pp && *pp != r)
    pp = &(*pp)->next;
  if (*pp)
    *pp = r->next;
  r->comm = NULL;
  return emu_rt_live_remove(r, r->kind, NULL);
}

void emu_comm_release_resources(struct ncclComm *comm) {
  struct emu_clique *c = comm->clique;
  struct emu_res *ended = NULL;
  pthread_mutex_lock(&c->mu);
  while (comm->resources) {
    struct emu_res *r = comm->resources;
    if (res_end_locked(r)) {
      r->next = ended;
      ended = r;
    }
  }
  pthread_mutex_unlock(&c->mu);
  for (struct emu_res *r = ended, *next; r; r = next) {
    next = r->next;
    emu_res_release(r);
  }
}

struct emu_res *emu_res_acquire(void *handle, enum emu_kind kind, const char *api) {
  if (!handle || !emu_rt_live_acquire(handle, kind)) {
    emu_warn("%s: %p is not a live %s", api, handle,
             kind == EMU_WINDOW ? "window" : kind == EMU_REG ? "registration" : "device comm");
    return NULL;
  }
  return handle;
}

/* found in the comm's list */
struct emu_res *emu_res_own_locked(struct ncclComm *comm, void *handle, enum emu_kind kind) {
  struct emu_res *r = comm->resources;
  while (r && !(r == handle && r->kind == kind))
    r = r->next;
  return r;
}

bool emu_res_end(struct ncclComm *comm, void *handle, enum emu_kind kind) {
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  struct emu_res *r = emu_res_own_locked(comm, handle, kind);
  bool release = r && res_end_locked(r);
  pthread_mutex_unlock(&c->mu);
  if (release)
    emu_res_release(r);
  return r != NULL;
}

struct emu_res *emu_window_of_locked(struct emu_clique *c, const struct emu_res *win, int peer) {
  struct ncclComm *comm = peer >= 0 && peer < c->nranks ? c->comms[peer] : NULL;
  struct emu_res *r = comm ? comm->resources : NULL;
  while (r && !(r->kind == EMU_WINDOW && r->seq == win->seq))
    r = r->next;
  return r;
}

/* ---------------------------------------------------------------- registrations */

/* As NCCL's register cache: a range inside one already registered on the comm is the same
 * handle, counted once more; each deregister counts it down. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  NCCL_KNOB("ncclCommRegister");
  const char *api = "ncclCommRegister";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!handle) {
    emu_warn("%s : handle argument is NULL", api);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  struct emu_res *reg = NULL;
  for (struct emu_res *x = comm->resources; x && !reg; x = x->next)
    if (x->kind == EMU_REG && (char *)x->buff <= (char *)buff &&
        (char *)buff + size <= (char *)x->buff + x->size)
      reg = x;
  if (reg) {
    reg->refs++;
    struct emu_live_info info;
    res_info(reg, comm, &info);
    emu_rt_live_update(reg, EMU_REG, &info);
  } else if (comm->state >= COMM_DESTROYING) {
    r = ncclInvalidUsage;
  } else {
    reg = emu_res_new_locked(comm, EMU_REG, buff, size, 0);
    r = reg ? ncclSuccess : ncclSystemError;
  }
  pthread_mutex_unlock(&c->mu);
  if (r == ncclInvalidUsage)
    emu_warn("%s: comm %p is being destroyed", api, (void *)comm);
  *handle = r == ncclSuccess ? reg : NULL;
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommRegister);

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
  NCCL_KNOB("ncclCommDeregister");
  ncclResult_t r = emu_comm_acquire(comm, "ncclCommDeregister");
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (handle) {
    struct emu_clique *c = comm->clique;
    pthread_mutex_lock(&c->mu);
    struct emu_res *reg = emu_res_own_locked(comm, handle, EMU_REG), *ended = NULL;
    if (!reg) {
      r = ncclInvalidUsage;
    } else if (--reg->refs == 0) {
      ended = res_end_locked(reg) ? reg : NULL;
    } else {
      struct emu_live_info info;
      res_info(reg, comm, &info);
      emu_rt_live_update(reg, EMU_REG, &info);
    }
    pthread_mutex_unlock(&c->mu);
    if (ended)
      emu_res_release(ended);
    if (r != ncclSuccess)
      emu_warn("Deregister: Could not find handle");
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommDeregister);

/* ---------------------------------------------------------------- windows */

/* Collective in NCCL: the nth window of each rank of a comm is one window, whose peers'
 * buffers the device pointer queries and ncclPutSignal reach. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                    int winFlags) {
  NCCL_KNOB("ncclCommWindowRegister");
  const char *api = "ncclCommWindowRegister";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!win) {
    emu_warn("%s : win argument is NULL", api);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  *win = NULL;
  if (!buff || size == 0) {
    emu_warn("%s: invalid pointer %p / size %zu", api, buff, size);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  struct emu_res *w = NULL;
  if (comm->state >= COMM_DESTROYING)
    r = ncclInvalidUsage;
  else if (!(w = emu_res_new_locked(comm, EMU_WINDOW, buff, size, winFlags)))
    r = ncclSystemError;
  pthread_mutex_unlock(&c->mu);
  if (r == ncclInvalidUsage)
    emu_warn("%s: comm %p is being destroyed", api, (void *)comm);
  *win = (ncclWindow_t)w;
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommWindowRegister);

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  NCCL_KNOB("ncclCommWindowDeregister");
  ncclResult_t r = emu_comm_acquire(comm, "ncclCommWindowDeregister");
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (win && !emu_res_end(comm, win, EMU_WINDOW)) {
    emu_warn("ncclCommWindowDeregister: window %p is not a window of comm %p", (void *)win,
             (void *)comm);
    r = ncclInvalidArgument;
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommWindowDeregister);

ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr) {
  NCCL_KNOB("ncclWinGetUserPtr");
  const char *api = "ncclWinGetUserPtr";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!win || !outUserPtr) {
    emu_warn("%s : %s argument is NULL", api, win ? "outUserPtr" : "win");
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  struct emu_res *w = emu_res_own_locked(comm, win, EMU_WINDOW);
  if (w)
    *outUserPtr = w->buff;
  pthread_mutex_unlock(&c->mu);
  if (!w) {
    emu_warn("%s: window %p is not a window of comm %p", api, (void *)win, (void *)comm);
    r = ncclInvalidArgument;
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclWinGetUserPtr);

/* Where a peer's part of the window is: its buffer (host memory here), at offset. */
static ncclResult_t peer_pointer(const char *api, ncclWindow_t window, size_t offset, int peer,
                                 void **outPtr) {
  if (!outPtr) {
    emu_warn("%s : outPtr argument is NULL", api);
    return ncclInvalidArgument;
  }
  struct emu_res *w = emu_res_acquire(window, EMU_WINDOW, api);
  if (!w)
    return ncclInvalidArgument;
  ncclResult_t r = ncclSuccess;
  struct emu_clique *c = w->clique;
  pthread_mutex_lock(&c->mu);
  if (!w->comm) {
    emu_warn("%s: the communicator of window %p is gone", api, (void *)window);
    r = ncclInvalidArgument;
  } else {
    struct emu_res *p = emu_window_of_locked(c, w, peer);
    if (!p) {
      emu_warn("%s: rank %d has no part of window %p", api, peer, (void *)window);
      r = ncclInvalidArgument;
    } else if (offset >= p->size) {
      emu_warn("%s: offset %zu is past rank %d's %zu bytes of window %p", api, offset, peer,
               p->size, (void *)window);
      r = ncclInvalidArgument;
    } else {
      *outPtr = (char *)p->buff + offset;
    }
  }
  pthread_mutex_unlock(&c->mu);
  emu_res_release(w);
  return r;
}

/* All ranks of the emulator share one host: the LSA team is the world. */
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void **outPtr) {
  NCCL_KNOB("ncclGetLsaDevicePointer");
  return peer_pointer("ncclGetLsaDevicePointer", window, offset, lsaRank, outPtr);
}
NCCL_ALIAS(ncclGetLsaDevicePointer);

ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer,
                                      void **outPtr) {
  NCCL_KNOB("ncclGetPeerDevicePointer");
  return peer_pointer("ncclGetPeerDevicePointer", window, offset, peer, outPtr);
}
NCCL_ALIAS(ncclGetPeerDevicePointer);

ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr) {
  (void)window, (void)offset, (void)outPtr;
  NCCL_KNOB("ncclGetLsaMultimemDevicePointer");
  emu_warn("NCCLEMU: ncclGetLsaMultimemDevicePointer is not emulated (no multicast memory)");
  return ncclInvalidUsage;
}
NCCL_ALIAS(ncclGetLsaMultimemDevicePointer);

ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void **outPtr) {
  (void)window, (void)offset, (void)multimem, (void)outPtr;
  NCCL_KNOB("ncclGetMultimemDevicePointer");
  emu_warn("NCCLEMU: ncclGetMultimemDevicePointer is not emulated (no multicast memory)");
  return ncclInvalidUsage;
}
NCCL_ALIAS(ncclGetMultimemDevicePointer);
