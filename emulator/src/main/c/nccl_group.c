/* ncclGroupStart/End, and launching parts onto streams. The group is per thread, as in NCCL. */
#include <stdlib.h>

#include "emu.h"

static __thread int group_depth;
static __thread struct emu_part *group_head, *group_tail;

bool emu_group_active(void) { return group_depth > 0; }

int emu_group_depth(void) { return group_depth; }

void emu_group_add(struct emu_part *p) {
  p->next = NULL;
  if (group_tail)
    group_tail->next = p;
  else
    group_head = p;
  group_tail = p;
}

/* The parts of one stream run as one op: all arrive, then all wait, then all complete, so the
 * sends and receives (or several ranks' parts) of one group on one stream never wait on each
 * other. */
struct fused_op {
  struct emu_op op;
  struct emu_part *parts;
};

static void run_fused(struct emu_op *op) {
  struct fused_op *f = (struct fused_op *)op;
  for (struct emu_part *p = f->parts; p; p = p->next)
    emu_prof_kernel_start(p);
  for (struct emu_part *p = f->parts; p; p = p->next)
    emu_part_arrive(p);
  for (struct emu_part *p = f->parts; p; p = p->next)
    emu_part_await(p);
  for (struct emu_part *p = f->parts; p; p = p->next)
    emu_part_complete(p);
  /* before the stream counts the work done: whoever saw the stream get past it saw this too */
  for (struct emu_part *p = f->parts; p; p = p->next)
    emu_prof_kernel_stop(p);
}

/* The comms' pending counts drop in the same instant the stream counts the op, so that a destroy
 * or finalize that waited for them finds the stream past it, and a synchronized stream means a
 * finished comm. */
static void complete_fused(struct emu_op *op) {
  struct fused_op *f = (struct fused_op *)op;
  for (struct emu_part *p = f->parts; p; p = p->next) {
    struct emu_clique *c = p->comm->clique;
    pthread_mutex_lock(&c->mu);
    p->comm->pending--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
}

static void release_fused(struct emu_op *op) {
  struct fused_op *f = (struct fused_op *)op;
  for (struct emu_part *p = f->parts, *next; p; p = next) {
    next = p->next;
    emu_part_finish(p);
    emu_part_free(p);
  }
  free(f);
}

void emu_launch(struct emu_part *parts) {
  emu_prof_launch(parts);
  while (parts) {
    struct emu_stream *s = parts->stream;
    struct fused_op *f = calloc(1, sizeof(*f));
    if (!f)
      abort(); /* the parts are counted as pending on their comms: they cannot be dropped */
    f->op.run = run_fused;
    f->op.complete_locked = complete_fused;
    f->op.release = release_fused;
    f->op.timed = true;
    struct emu_part **tail = &f->parts, **rest = &parts;
    while (*rest) {
      struct emu_part *p = *rest;
      if (p->stream == s) {
        *rest = p->next;
        p->next = NULL;
        *tail = p;
        tail = &p->next;
      } else {
        rest = &p->next;
      }
    }
    int refs = 0;
    for (struct emu_part *p = f->parts; p; p = p->next)
      refs++;
    emu_rt_stream_enqueue(s, &f->op);
    /* each part held the stream; the queued op keeps it busy until it has run */
    while (refs--)
      emu_rt_stream_release(s);
  }
}

ncclResult_t ncclGroupStart(void) {
  NCCL_KNOB("ncclGroupStart");
  group_depth++;
  return ncclSuccess;
}
NCCL_ALIAS(ncclGroupStart);

/* Drops parts never launched: an injected failure or hang of ncclGroupEnd. */
static void discard(struct emu_part *parts) {
  for (struct emu_part *p = parts, *next; p; p = next) {
    next = p->next;
    struct ncclComm *comm = p->comm;
    if (p->stream) {
      pthread_mutex_lock(&comm->clique->mu);
      comm->pending--;
      pthread_cond_broadcast(&comm->clique->cv);
      pthread_mutex_unlock(&comm->clique->mu);
      emu_rt_stream_release(p->stream);
    }
    emu_comm_release(comm);
    emu_part_free(p);
  }
}

static ncclResult_t group_end(void) {
  int code;
  enum emu_knob knob = emu_rt_knob("ncclGroupEnd", &code);
  if (group_depth == 0) {
    emu_warn("ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  emu_prof_group_end_enter();
  if (--group_depth > 0)
    return ncclSuccess;
  struct emu_part *parts = group_head;
  group_head = group_tail = NULL;
  if (knob == EMU_KNOB_FAIL) {
    discard(parts);
    emu_warn("NCCLEMU: injected failure of ncclGroupEnd: %s",
             ncclGetErrorString((ncclResult_t)code));
    return (ncclResult_t)code;
  }
  if (knob == EMU_KNOB_HANG && parts) {
    struct ncclComm *comm = parts->comm;
    emu_obj_ref(&comm->obj);
    discard(parts);
    return emu_hang(comm, "ncclGroupEnd");
  }
  /* stream work first (never blocks), then the host side: splits arrive together, then wait */
  struct emu_part *stream_parts = NULL, **stail = &stream_parts;
  struct emu_part *host_parts = NULL, **htail = &host_parts;
  int nhost = 0;
  for (struct emu_part *p = parts, *next; p; p = next) {
    next = p->next;
    p->next = NULL;
    if (p->stream) {
      *stail = p;
      stail = &p->next;
    } else {
      *htail = p;
      htail = &p->next;
      nhost++;
    }
  }
  if (stream_parts)
    emu_launch(stream_parts);
  for (struct emu_part *p = host_parts; p; p = p->next)
    if (p->func != F_INIT)
      emu_part_arrive(p);
  ncclResult_t result = ncclSuccess;
  /* the communicators this group made: NCCL's init jobs, told to the profiler together */
  struct ncclComm **ready = calloc((size_t)(nhost ? nhost : 1), sizeof(*ready));
  int nready = 0;
  for (struct emu_part *p = host_parts, *next; p; p = next) {
    next = p->next;
    ncclResult_t r;
    if (p->func == F_INIT) {
      struct emu_clique *c = p->comm->clique;
      pthread_mutex_lock(&c->mu);
      while (p->blocking && !c->complete && !c->init_error && p->comm->state == COMM_LIVE)
        pthread_cond_wait(&c->cv, &c->mu);
      r = c->complete      ? ncclSuccess
          : c->init_error  ? c->init_error
          : p->blocking    ? ncclRemoteError
                           : ncclInProgress;
      pthread_mutex_unlock(&c->mu);
      if (r == ncclInProgress)
        emu_comm_ready_async(p->comm);
      else if (r == ncclSuccess && ready)
        ready[nready++] = p->comm; /* the part's reference travels with it */
      else if (r == ncclSuccess)
        emu_comms_ready(&p->comm, 1);
      if (r != ncclSuccess || !ready)
        emu_comm_release(p->comm);
    } else {
      emu_part_await(p);
      emu_part_complete(p);
      emu_part_finish(p);
      r = p->result;
      if (r == ncclSuccess && *p->newcomm && ready) {
        emu_obj_ref(&(*p->newcomm)->obj);
        ready[nready++] = *p->newcomm;
      } else if (r == ncclSuccess && *p->newcomm) {
        emu_comms_ready(p->newcomm, 1);
      }
    }
    if (result == ncclSuccess)
      result = r;
    emu_part_free(p);
  }
  if (nready)
    emu_comms_ready(ready, nready);
  for (int i = 0; i < nready; i++)
    emu_comm_release(ready[i]);
  free(ready);
  return result;
}

ncclResult_t ncclGroupEnd(void) {
  ncclResult_t r = group_end();
  emu_prof_group_end_exit();
  return r;
}
NCCL_ALIAS(ncclGroupEnd);
