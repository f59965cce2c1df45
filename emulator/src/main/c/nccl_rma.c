/* NCCL 2.29's one-sided operations: ncclPutSignal, ncclSignal, ncclWaitSignal. Enqueued on the
 * caller's stream and done when the stream gets there: a put copies into the peer's part of a
 * window and then signals it; a wait holds its stream until the signals it waits for came (a
 * stream stuck in a wait is work in flight, as on a GPU). The argument checks and their WARN
 * lines are NCCL's (NVIDIA/nccl v2.29.3-1 src/enqueue.cc, rmaTaskAppend): context, signal index
 * and flags 0, the source inside a symmetric window of the comm. Ranks in other processes are
 * not emulated (ncclInvalidUsage and a line). Unlike NCCL, a call inside a group is enqueued at
 * once, not at ncclGroupEnd. */
#include <stdlib.h>
#include <string.h>

#include "emu.h"

enum rma_kind { RMA_PUT, RMA_SIGNAL, RMA_WAIT };

struct rma_op {
  struct emu_op op;
  enum rma_kind kind;
  const char *api;
  struct ncclComm *comm; /* a reference */
  struct emu_res *win;   /* a reference: the comm's window a put names */
  const void *src;
  size_t bytes;
  size_t offset;
  int peer;
  int *needed; /* a wait's signals per peer */
};

static void fail_locked(struct rma_op *o, ncclResult_t r) {
  if (o->comm->async_error == ncclSuccess && o->comm->state != COMM_ABORTED && !o->comm->revoked)
    o->comm->async_error = r;
}

static bool wait_done_locked(const struct emu_clique *c, const struct rma_op *o) {
  int n = c->nranks, me = o->comm->rank;
  for (int p = 0; p < n; p++)
    if (o->needed[p] && c->signals[me * n + p] - c->consumed[me * n + p] < (uint64_t)o->needed[p])
      return false;
  return true;
}

static void run_rma(struct emu_op *op) {
  struct rma_op *o = (struct rma_op *)op;
  struct ncclComm *comm = o->comm;
  struct emu_clique *c = comm->clique;
  int n = c->nranks, me = comm->rank;
  const char *problem = NULL;
  pthread_mutex_lock(&c->mu);
  if (comm->state == COMM_ABORTED || comm->revoked) {
    pthread_mutex_unlock(&c->mu);
    return; /* stopped: nothing of it happens */
  }
  if (o->kind == RMA_PUT) {
    struct emu_res *dst = o->win->comm ? emu_window_of_locked(c, o->win, o->peer) : NULL;
    if (!dst)
      problem = "the peer has no part of the window (deregistered?)";
    else if (o->offset > dst->size || o->bytes > dst->size - o->offset)
      problem = "the put runs past the peer's part of the window";
    else
      memmove((char *)dst->buff + o->offset, o->src, o->bytes);
  }
  if (problem) {
    fail_locked(o, ncclInvalidUsage);
  } else if (o->kind != RMA_WAIT) {
    c->signals[o->peer * n + me]++;
    pthread_cond_broadcast(&c->cv);
  } else {
    bool gone = false;
    while (!wait_done_locked(c, o) && comm->state != COMM_ABORTED && !comm->revoked && !gone) {
      for (int p = 0; p < n; p++)
        gone |= o->needed[p] && c->gone[p];
      if (!gone)
        pthread_cond_wait(&c->cv, &c->mu);
    }
    if (wait_done_locked(c, o)) {
      for (int p = 0; p < n; p++)
        c->consumed[me * n + p] += (uint64_t)o->needed[p];
    } else if (gone) {
      fail_locked(o, ncclRemoteError);
    }
  }
  pthread_mutex_unlock(&c->mu);
  if (problem)
    emu_warn_dev(comm->device, "NCCLEMU: %s to rank %d failed: %s", o->api, o->peer, problem);
}

static void complete_rma(struct emu_op *op) {
  struct rma_op *o = (struct rma_op *)op;
  struct emu_clique *c = o->comm->clique;
  pthread_mutex_lock(&c->mu);
  o->comm->pending--;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void release_rma(struct emu_op *op) {
  struct rma_op *o = (struct rma_op *)op;
  if (o->win)
    emu_res_release(o->win);
  emu_comm_release(o->comm);
  free(o->needed);
  free(o);
}

/* The checks NCCL makes of every one-sided call. */
static ncclResult_t check_common(const char *api, struct ncclComm *comm, int peer, int sigIdx,
                                 int ctx, unsigned int flags) {
  if (emu_clique_spans_processes(comm->clique)) {
    emu_warn("NCCLEMU: %s on a communicator whose ranks are in several processes is not "
             "emulated",
             api);
    return ncclInvalidUsage;
  }
  if (ctx != 0) {
    emu_warn("Context %d is invalid (must be 0)", ctx);
    return ncclInvalidArgument;
  }
  if (sigIdx != 0) {
    emu_warn("Signal index %d is invalid (must be 0)", sigIdx);
    return ncclInvalidArgument;
  }
  if (flags != 0) {
    emu_warn("Flags %u is invalid (must be 0)", flags);
    return ncclInvalidArgument;
  }
  if (peer < 0 || peer >= comm->nranks) {
    emu_warn("%s : invalid peer %d (should be in the 0..%d range)", api, peer, comm->nranks - 1);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* Checks the comm's state and the stream, counts the op pending on the comm, enqueues it.
 * Takes over o (and the comm reference in it) whatever the outcome. */
static ncclResult_t enqueue(struct rma_op *o, cudaStream_t stream) {
  struct ncclComm *comm = o->comm;
  struct emu_clique *c = comm->clique;
  struct emu_stream *s = NULL;
  cudaError_t e = emu_rt_stream_acquire(stream, false, comm->device, &s);
  if (e == cudaSuccess && emu_rt_stream_device(s) != comm->device) {
    emu_rt_stream_release(s);
    e = cudaErrorInvalidResourceHandle;
  }
  if (e != cudaSuccess) {
    emu_warn("%s: Cuda failure '%s' (stream %p, comm device %d)", o->api, emu_rt_error_string(e),
             (void *)stream, comm->device);
    release_rma(&o->op);
    return ncclUnhandledCudaError;
  }
  pthread_mutex_lock(&c->mu);
  bool revoked = comm->revoked, live = comm->state == COMM_LIVE;
  size_t cells = (size_t)c->nranks * (size_t)c->nranks;
  if (live && !revoked && !c->signals) { /* a clique's first one-sided call */
    c->signals = calloc(cells, sizeof(uint64_t));
    c->consumed = calloc(cells, sizeof(uint64_t));
  }
  bool memory = c->signals && c->consumed;
  if (live && !revoked && memory)
    comm->pending++;
  pthread_mutex_unlock(&c->mu);
  if (!live || revoked || !memory) {
    if (revoked)
      emu_warn("%s: communicator was revoked", o->api);
    else if (!live)
      emu_warn("%s: comm %p has been finalized or is being destroyed", o->api, (void *)comm);
    else
      emu_warn("%s: out of memory", o->api);
    emu_rt_stream_release(s);
    release_rma(&o->op);
    return memory ? ncclInvalidUsage : ncclSystemError;
  }
  o->op.run = run_rma;
  o->op.complete_locked = complete_rma;
  o->op.release = release_rma;
  o->op.timed = o->kind != RMA_WAIT;
  emu_rt_stream_enqueue(s, &o->op);
  emu_rt_stream_release(s);
  return ncclSuccess;
}

static struct rma_op *new_op(const char *api, enum rma_kind kind, struct ncclComm *comm) {
  struct rma_op *o = calloc(1, sizeof(*o));
  if (!o) {
    emu_warn("%s: out of memory", api);
    return NULL;
  }
  o->api = api;
  o->kind = kind;
  o->comm = comm;
  return o;
}

ncclResult_t ncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  NCCL_KNOB("ncclPutSignal");
  const char *api = "ncclPutSignal";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  size_t bytes = count * emu_type_size(datatype);
  if ((int)datatype < 0 || datatype >= ncclNumTypes) {
    emu_warn("%s : invalid type %d", api, (int)datatype);
    r = ncclInvalidArgument;
  } else {
    r = check_common(api, comm, peer, sigIdx, ctx, flags);
  }
  struct emu_res *win = NULL;
  if (r == ncclSuccess && !peerWin) {
    emu_warn("ncclPutSignal: peerWin is NULL");
    r = ncclInvalidArgument;
  } else if (r == ncclSuccess && !localbuff && bytes > 0) {
    emu_warn("ncclPutSignal: srcBuff is NULL");
    r = ncclInvalidArgument;
  } else if (r == ncclSuccess) {
    struct emu_clique *c = comm->clique;
    pthread_mutex_lock(&c->mu);
    win = emu_res_own_locked(comm, peerWin, EMU_WINDOW);
    if (win)
      emu_obj_ref(&win->obj);
    bool symmetric = false;
    for (struct emu_res *w = comm->resources; w && !symmetric; w = w->next)
      symmetric = w->kind == EMU_WINDOW && (w->flags & NCCL_WIN_COLL_SYMMETRIC) &&
                  (const char *)w->buff <= (const char *)localbuff &&
                  (const char *)localbuff + bytes <= (const char *)w->buff + w->size;
    pthread_mutex_unlock(&c->mu);
    if (!win) {
      emu_warn("ncclPutSignal: peerWin %p is not a window of comm %p", (void *)peerWin,
               (void *)comm);
      r = ncclInvalidArgument;
    } else if (!symmetric) {
      emu_warn("ncclPutSignal: srcWinHost is not in a valid symmetric window");
      r = ncclInvalidArgument;
    }
  }
  struct rma_op *o = r == ncclSuccess ? new_op(api, RMA_PUT, comm) : NULL;
  if (!o) {
    if (win)
      emu_res_release(win);
    emu_comm_release(comm);
    return r == ncclSuccess ? ncclSystemError : r;
  }
  o->win = win;
  o->src = localbuff;
  o->bytes = bytes;
  o->offset = peerWinOffset;
  o->peer = peer;
  return enqueue(o, stream);
}
NCCL_ALIAS(ncclPutSignal);

ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream) {
  NCCL_KNOB("ncclSignal");
  const char *api = "ncclSignal";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  r = check_common(api, comm, peer, sigIdx, ctx, flags);
  struct rma_op *o = r == ncclSuccess ? new_op(api, RMA_SIGNAL, comm) : NULL;
  if (!o) {
    emu_comm_release(comm);
    return r == ncclSuccess ? ncclSystemError : r;
  }
  o->peer = peer;
  return enqueue(o, stream);
}
NCCL_ALIAS(ncclSignal);

ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                            cudaStream_t stream) {
  NCCL_KNOB("ncclWaitSignal");
  const char *api = "ncclWaitSignal";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!signalDescs || nDesc <= 0) {
    emu_warn("ncclWaitSignal: invalid arguments");
    r = ncclInvalidArgument;
  } else {
    r = check_common(api, comm, 0, 0, 0, 0);
  }
  for (int i = 0; r == ncclSuccess && i < nDesc; i++) {
    const ncclWaitSignalDesc_t *d = &signalDescs[i];
    if (d->opCnt <= 0) {
      emu_warn("ncclWaitSignal: descriptor %d has invalid opCnt %d", i, d->opCnt);
      r = ncclInvalidArgument;
    } else if (d->sigIdx != 0) {
      emu_warn("ncclWaitSignal: descriptor %d has invalid sigIdx %d (must be 0)", i, d->sigIdx);
      r = ncclInvalidArgument;
    } else if (d->ctx != 0) {
      emu_warn("ncclWaitSignal: descriptor %d has invalid context %d (must be 0)", i, d->ctx);
      r = ncclInvalidArgument;
    } else if (d->peer < 0 || d->peer >= comm->nranks) {
      emu_warn("ncclWaitSignal: descriptor %d has invalid peer %d", i, d->peer);
      r = ncclInvalidArgument;
    }
  }
  struct rma_op *o = r == ncclSuccess ? new_op(api, RMA_WAIT, comm) : NULL;
  if (o && !(o->needed = calloc((size_t)comm->nranks, sizeof(int)))) {
    free(o);
    o = NULL;
  }
  if (!o) {
    emu_comm_release(comm);
    return r == ncclSuccess ? ncclSystemError : r;
  }
  for (int i = 0; i < nDesc; i++)
    o->needed[signalDescs[i].peer] += signalDescs[i].opCnt;
  return enqueue(o, stream);
}
NCCL_ALIAS(ncclWaitSignal);
