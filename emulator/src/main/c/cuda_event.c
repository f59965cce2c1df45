/* Events. A record enqueues a marker on the stream; the event is complete once the marker of its
 * latest record has run, which is when the work before it on that stream is done. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu.h"

struct emu_event {
  struct emu_obj obj;
  unsigned flags;
  int device;
  /* guarded by mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t recorded; /* records made */
  uint64_t done;     /* latest record whose marker has run */
  struct timespec stamp;
};

/* Released events' blocks, handed out again most recent first, as the CUDA runtime hands a
 * destroyed event's handle to a later creation: a tool that keys events by handle meets the same
 * handle for another event. Bounded; freed at unload. */
#define SPARE_EVENTS 64
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_event *spare[SPARE_EVENTS];
static int nspare;

static void event_release(struct emu_event *e) {
  if (emu_obj_unref(&e->obj)) {
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_lock(&spare_mu);
    if (nspare < SPARE_EVENTS) {
      spare[nspare++] = e;
      e = NULL;
    }
    pthread_mutex_unlock(&spare_mu);
    free(e);
  }
}

static struct emu_event *event_block(void) {
  pthread_mutex_lock(&spare_mu);
  struct emu_event *e = nspare > 0 ? spare[--nspare] : NULL;
  pthread_mutex_unlock(&spare_mu);
  if (e == NULL)
    return calloc(1, sizeof(*e));
  memset(e, 0, sizeof(*e));
  return e;
}

__attribute__((destructor)) static void spare_events_freed_at_unload(void) {
  pthread_mutex_lock(&spare_mu);
  while (nspare > 0)
    free(spare[--nspare]);
  pthread_mutex_unlock(&spare_mu);
}

static bool event_acquire(cudaEvent_t h, struct emu_event **out) {
  if (!emu_rt_live_acquire(h, EMU_EVENT))
    return false;
  *out = (struct emu_event *)h;
  return true;
}

bool emu_event_pending(void *handle) {
  struct emu_event *e = handle;
  pthread_mutex_lock(&e->mu);
  bool pending = e->done < e->recorded;
  pthread_mutex_unlock(&e->mu);
  return pending;
}

static cudaError_t event_create(cudaEvent_t *event, unsigned int flags) {
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (!event || (flags & ~known))
    return emu_cuda_result(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
    return emu_cuda_result(cudaErrorInvalidValue);
  if (emu_rt_device_count() == 0)
    return emu_cuda_result(cudaErrorNoDevice);
  struct emu_event *e = event_block();
  if (!e)
    return emu_cuda_result(cudaErrorMemoryAllocation);
  atomic_init(&e->obj.refs, 1);
  e->flags = flags;
  e->device = emu_rt_current_device();
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  struct emu_live_info info = {.device = e->device};
  emu_rt_live_add(e, EMU_EVENT, &info);
  *event = (cudaEvent_t)e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  CUDA_KNOB("cudaEventCreate");
  return event_create(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  CUDA_KNOB("cudaEventCreateWithFlags");
  return event_create(event, flags);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  CUDA_KNOB("cudaEventDestroy");
  if (!emu_rt_live_remove(event, EMU_EVENT, NULL))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  /* a pending marker keeps the object until it has run */
  event_release((struct emu_event *)event);
  return cudaSuccess;
}

struct marker_op {
  struct emu_op op;
  struct emu_event *event;
  uint64_t generation;
};

/* The event completes in the same instant its stream counts the marker: as in CUDA, a complete
 * event means its stream got that far, and a synchronized stream means its events completed. */
static void complete_marker(struct emu_op *op) {
  struct marker_op *m = (struct marker_op *)op;
  struct emu_event *e = m->event;
  pthread_mutex_lock(&e->mu);
  if (m->generation > e->done) {
    e->done = m->generation;
    clock_gettime(CLOCK_MONOTONIC, &e->stamp);
  }
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  /* The marker's reference goes in the same instant: once the stream is seen past the marker, a
   * destroyed event's block is back among the spares, as CUDA has the handle back by then. */
  event_release(e);
}

static void release_marker(struct emu_op *op) { free(op); }

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, bool per_thread,
                                unsigned int flags) {
  if (flags & ~(unsigned)cudaEventRecordExternal)
    return emu_cuda_result(cudaErrorInvalidValue);
  struct emu_event *e;
  if (!event_acquire(event, &e))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  struct emu_stream *s;
  cudaError_t err = emu_rt_stream_acquire(stream, per_thread, -1, &s);
  if (err != cudaSuccess) {
    event_release(e);
    return emu_cuda_result(err);
  }
  /* as CUDA: "event and stream must be on the same device" (the driver's CUDA_ERROR_INVALID_HANDLE) */
  if (emu_rt_stream_device(s) != e->device) {
    emu_rt_stream_release(s);
    event_release(e);
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  }
  struct marker_op *m = calloc(1, sizeof(*m));
  if (!m) {
    emu_rt_stream_release(s);
    event_release(e);
    return emu_cuda_result(cudaErrorMemoryAllocation);
  }
  m->op.complete_locked = complete_marker;
  m->op.release = release_marker;
  m->event = e; /* the marker keeps the acquired reference until it completes */
  pthread_mutex_lock(&e->mu);
  m->generation = ++e->recorded;
  pthread_mutex_unlock(&e->mu);
  emu_rt_stream_enqueue(s, &m->op);
  emu_rt_stream_release(s);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  CUDA_KNOB("cudaEventRecord");
  return event_record(event, stream, false, 0);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  CUDA_KNOB("cudaEventRecord");
  return event_record(event, stream, true, 0);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  CUDA_KNOB("cudaEventRecordWithFlags");
  return event_record(event, stream, false, flags);
}

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                          unsigned int flags) {
  CUDA_KNOB("cudaEventRecordWithFlags");
  return event_record(event, stream, true, flags);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  CUDA_KNOB("cudaEventQuery");
  struct emu_event *e;
  if (!event_acquire(event, &e))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  bool pending = emu_event_pending(e);
  event_release(e);
  /* not ready is a state, not an error: it does not become the last error */
  return pending ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  CUDA_KNOB("cudaEventSynchronize");
  struct emu_event *e;
  if (!event_acquire(event, &e))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  pthread_mutex_lock(&e->mu);
  uint64_t upto = e->recorded;
  while (e->done < upto)
    pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  event_release(e);
  return cudaSuccess;
}

/* Reads the time of the latest record, or says why there is none. */
static cudaError_t event_stamp(struct emu_event *e, struct timespec *out) {
  cudaError_t r = cudaSuccess;
  pthread_mutex_lock(&e->mu);
  if ((e->flags & cudaEventDisableTiming) || e->recorded == 0)
    r = cudaErrorInvalidResourceHandle;
  else if (e->done < e->recorded)
    r = cudaErrorNotReady;
  else
    *out = e->stamp;
  pthread_mutex_unlock(&e->mu);
  return r;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  CUDA_KNOB("cudaEventElapsedTime");
  if (!ms)
    return emu_cuda_result(cudaErrorInvalidValue);
  struct emu_event *a, *b;
  if (!event_acquire(start, &a))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  if (!event_acquire(end, &b)) {
    event_release(a);
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  }
  struct timespec ta, tb;
  cudaError_t r = event_stamp(a, &ta);
  if (r == cudaSuccess)
    r = event_stamp(b, &tb);
  if (r == cudaSuccess)
    *ms = (float)((double)(tb.tv_sec - ta.tv_sec) * 1e3 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e6);
  event_release(a);
  event_release(b);
  return r == cudaErrorNotReady ? r : emu_cuda_result(r);
}

struct wait_event_op {
  struct emu_op op;
  struct emu_event *event;
  uint64_t generation;
};

static void run_wait_event(struct emu_op *op) {
  struct wait_event_op *w = (struct wait_event_op *)op;
  struct emu_event *e = w->event;
  pthread_mutex_lock(&e->mu);
  while (e->done < w->generation)
    pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
}

static void release_wait_event(struct emu_op *op) {
  struct wait_event_op *w = (struct wait_event_op *)op;
  event_release(w->event);
  free(w);
}

static cudaError_t stream_wait_event(cudaStream_t stream, bool per_thread, cudaEvent_t event,
                                     unsigned int flags) {
  if (flags & ~1u) /* cudaEventWaitDefault, cudaEventWaitExternal */
    return emu_cuda_result(cudaErrorInvalidValue);
  struct emu_event *e;
  if (!event_acquire(event, &e))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  struct emu_stream *s;
  cudaError_t err = emu_rt_stream_acquire(stream, per_thread, -1, &s);
  if (err != cudaSuccess) {
    event_release(e);
    return emu_cuda_result(err);
  }
  pthread_mutex_lock(&e->mu);
  uint64_t generation = e->recorded;
  pthread_mutex_unlock(&e->mu);
  /* waiting for an event never recorded is a no-op, as in CUDA */
  struct wait_event_op *w = generation ? calloc(1, sizeof(*w)) : NULL;
  if (w) {
    w->op.run = run_wait_event;
    w->op.release = release_wait_event;
    w->event = e;
    w->generation = generation;
    emu_rt_stream_enqueue(s, &w->op);
  } else {
    event_release(e);
  }
  emu_rt_stream_release(s);
  return generation && !w ? emu_cuda_result(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  CUDA_KNOB("cudaStreamWaitEvent");
  return stream_wait_event(stream, false, event, flags);
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  CUDA_KNOB("cudaStreamWaitEvent");
  return stream_wait_event(stream, true, event, flags);
}
