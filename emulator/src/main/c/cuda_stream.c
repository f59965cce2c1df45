/* Streams: each has one worker thread that runs its ops in order, so work really is pending until
 * the worker gets to it. The legacy default stream (handle 0 or cudaStreamLegacy) synchronizes
 * with every blocking stream of its device, as in CUDA; cudaStreamPerThread is one blocking stream
 * per thread and device. */
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"

struct emu_stream {
  struct emu_obj obj;
  int device;
  unsigned flags;
  int priority;
  bool legacy;
  /* guarded by mu */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* an op completed, or work arrived for the worker */
  struct emu_op *head, *tail;
  uint64_t enqueued, completed;
  bool worker;   /* a worker thread is running */
  bool released; /* the handle is gone: the worker drains the queue and exits */
  /* guarded by the device's mu */
  struct emu_stream *dev_prev, *dev_next;
};

struct emu_device {
  pthread_mutex_t mu;
  struct emu_stream *streams; /* every stream object of the device, until freed */
  struct emu_stream *legacy;
};

static pthread_once_t devices_once = PTHREAD_ONCE_INIT;
static struct emu_device *devices; /* written once under devices_once */
static int ndevices;

static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;
static pthread_key_t ptds_key;
static __thread struct emu_stream **ptds; /* this thread's per-thread default streams */

static void devices_init(void) {
  ndevices = emu_rt_device_count();
  if (ndevices < 1)
    ndevices = 1;
  devices = calloc((size_t)ndevices, sizeof(*devices));
  if (!devices)
    abort();
  for (int i = 0; i < ndevices; i++)
    pthread_mutex_init(&devices[i].mu, NULL);
}

static struct emu_device *device_at(int device) {
  pthread_once(&devices_once, devices_init);
  if (device < 0 || device >= ndevices)
    device = 0;
  return &devices[device];
}

static struct emu_stream *stream_alloc(int device, unsigned flags, int priority) {
  struct emu_stream *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  atomic_init(&s->obj.refs, 1);
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  return s;
}

static void link_locked(struct emu_device *d, struct emu_stream *s) {
  s->dev_prev = NULL;
  s->dev_next = d->streams;
  if (d->streams)
    d->streams->dev_prev = s;
  d->streams = s;
}

static void stream_free(struct emu_stream *s) {
  struct emu_device *d = device_at(s->device);
  pthread_mutex_lock(&d->mu);
  if (s->dev_prev)
    s->dev_prev->dev_next = s->dev_next;
  else
    d->streams = s->dev_next;
  if (s->dev_next)
    s->dev_next->dev_prev = s->dev_prev;
  pthread_mutex_unlock(&d->mu);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

void emu_rt_stream_release(struct emu_stream *s) {
  if (emu_obj_unref(&s->obj))
    stream_free(s);
}

/* A reference on a stream found through its device's list, unless it is already being freed. */
static bool try_ref(struct emu_stream *s) {
  int n = atomic_load(&s->obj.refs);
  while (n > 0)
    if (atomic_compare_exchange_weak(&s->obj.refs, &n, n + 1))
      return true;
  return false;
}

static void release_handle(struct emu_stream *s) {
  pthread_mutex_lock(&s->mu);
  s->released = true;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  emu_rt_stream_release(s);
}

static void ptds_exit(void *arg) {
  struct emu_stream **streams = arg;
  for (int i = 0; i < ndevices; i++)
    if (streams[i])
      release_handle(streams[i]);
  free(streams);
}

static void ptds_init(void) { pthread_key_create(&ptds_key, ptds_exit); }

static struct emu_stream *legacy_of(int device) {
  struct emu_device *d = device_at(device);
  pthread_mutex_lock(&d->mu);
  if (!d->legacy) {
    d->legacy = stream_alloc(device, cudaStreamDefault, 0);
    if (!d->legacy)
      abort();
    d->legacy->legacy = true;
    link_locked(d, d->legacy);
  }
  struct emu_stream *s = d->legacy;
  pthread_mutex_unlock(&d->mu);
  return s;
}

static struct emu_stream *per_thread_of(int device) {
  struct emu_device *d = device_at(device);
  if (!ptds) {
    pthread_once(&ptds_once, ptds_init);
    ptds = calloc((size_t)ndevices, sizeof(*ptds));
    if (!ptds)
      abort();
    pthread_setspecific(ptds_key, ptds);
  }
  int i = (int)(d - devices);
  if (!ptds[i]) {
    struct emu_stream *s = stream_alloc(i, cudaStreamDefault, 0);
    if (!s)
      abort();
    pthread_mutex_lock(&d->mu);
    link_locked(d, s);
    pthread_mutex_unlock(&d->mu);
    ptds[i] = s;
  }
  return ptds[i];
}

cudaError_t emu_rt_stream_acquire(cudaStream_t handle, bool per_thread, int device,
                                  struct emu_stream **out) {
  if (handle == NULL)
    handle = per_thread ? cudaStreamPerThread : cudaStreamLegacy;
  if (device < 0)
    device = emu_rt_current_device();
  struct emu_stream *s;
  if (handle == cudaStreamLegacy)
    s = legacy_of(device);
  else if (handle == cudaStreamPerThread)
    s = per_thread_of(device);
  else if (emu_rt_live_acquire(handle, EMU_STREAM)) {
    *out = (struct emu_stream *)handle;
    return cudaSuccess;
  } else
    return cudaErrorInvalidResourceHandle;
  emu_obj_ref(&s->obj);
  *out = s;
  return cudaSuccess;
}

int emu_rt_stream_device(const struct emu_stream *s) { return s->device; }

/* ---------------------------------------------------------------- the worker */

static void *worker_main(void *arg) {
  struct emu_stream *s = arg;
  unsigned delay = emu_rt_op_delay_us();
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->released)
      pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head)
      break;
    struct emu_op *op = s->head;
    s->head = op->next;
    if (!s->head)
      s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    if (op->timed && delay)
      emu_nanosleep_us(delay);
    if (op->run)
      op->run(op);
    pthread_mutex_lock(&s->mu);
    s->completed++;
    if (op->complete_locked)
      op->complete_locked(op); /* lock order: a stream's mu, then an event's or a clique's */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    op->release(op);
    pthread_mutex_lock(&s->mu);
  }
  s->worker = false;
  pthread_mutex_unlock(&s->mu);
  emu_rt_stream_release(s);
  return NULL;
}

static uint64_t push(struct emu_stream *s, struct emu_op *op) {
  op->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
  uint64_t seq = ++s->enqueued;
  if (!s->worker) {
    /* detached: process exit never waits for a worker, even one blocked for good */
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    emu_obj_ref(&s->obj);
    if (pthread_create(&t, &attr, worker_main, s) != 0) {
      fprintf(stderr, "NCCLEMU: cannot start a stream worker thread\n");
      abort();
    }
    pthread_attr_destroy(&attr);
    s->worker = true;
  } else {
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return seq;
}

struct wait_stream_op {
  struct emu_op op;
  struct emu_stream *target;
  uint64_t upto;
};

static void run_wait_stream(struct emu_op *op) {
  struct wait_stream_op *w = (struct wait_stream_op *)op;
  emu_stream_wait(w->target, w->upto);
}

static void release_wait_stream(struct emu_op *op) {
  struct wait_stream_op *w = (struct wait_stream_op *)op;
  emu_rt_stream_release(w->target);
  free(w);
}

/* Makes s wait for target's ops up to now, if target has work in flight. Caller holds device mu. */
static void push_dependency(struct emu_stream *s, struct emu_stream *target) {
  pthread_mutex_lock(&target->mu);
  uint64_t upto = target->enqueued;
  bool pending = target->completed < upto;
  pthread_mutex_unlock(&target->mu);
  if (!pending || !try_ref(target))
    return;
  struct wait_stream_op *w = calloc(1, sizeof(*w));
  if (!w) {
    emu_rt_stream_release(target);
    return;
  }
  w->op.run = run_wait_stream;
  w->op.release = release_wait_stream;
  w->target = target;
  w->upto = upto;
  push(s, &w->op);
}

uint64_t emu_rt_stream_enqueue(struct emu_stream *s, struct emu_op *op) {
  if (s->flags & cudaStreamNonBlocking)
    return push(s, op);
  /* the device lock makes the snapshot of the other streams and the push one step, so the
   * implicit dependencies always point backwards in time and never form a cycle */
  struct emu_device *d = device_at(s->device);
  pthread_mutex_lock(&d->mu);
  if (s->legacy) {
    for (struct emu_stream *t = d->streams; t; t = t->dev_next)
      if (t != s && !(t->flags & cudaStreamNonBlocking))
        push_dependency(s, t);
  } else if (d->legacy) {
    push_dependency(s, d->legacy);
  }
  uint64_t seq = push(s, op);
  pthread_mutex_unlock(&d->mu);
  return seq;
}

void emu_stream_wait(struct emu_stream *s, uint64_t upto) {
  pthread_mutex_lock(&s->mu);
  while (s->completed < upto)
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

uint64_t emu_stream_pending(struct emu_stream *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t n = s->enqueued - s->completed;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void emu_device_synchronize(int device) {
  struct emu_device *d = device_at(device);
  size_t n = 0, cap = 16;
  struct {
    struct emu_stream *s;
    uint64_t upto;
  } *snap = malloc(cap * sizeof(*snap));
  if (!snap)
    abort();
  pthread_mutex_lock(&d->mu);
  for (struct emu_stream *s = d->streams; s; s = s->dev_next) {
    if (!try_ref(s))
      continue;
    if (n == cap) {
      void *grown = realloc(snap, 2 * cap * sizeof(*snap));
      if (!grown)
        abort();
      snap = grown;
      cap *= 2;
    }
    pthread_mutex_lock(&s->mu);
    snap[n].upto = s->enqueued;
    pthread_mutex_unlock(&s->mu);
    snap[n++].s = s;
  }
  pthread_mutex_unlock(&d->mu);
  for (size_t i = 0; i < n; i++) {
    emu_stream_wait(snap[i].s, snap[i].upto);
    emu_rt_stream_release(snap[i].s);
  }
  free(snap);
}

/* ---------------------------------------------------------------- the API */

static cudaError_t stream_create(cudaStream_t *pStream, unsigned int flags, int priority) {
  if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
    return emu_cuda_result(cudaErrorInvalidValue);
  if (emu_rt_device_count() == 0)
    return emu_cuda_result(cudaErrorNoDevice);
  /* out-of-range priorities are clamped, as CUDA does */
  priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
  int device = emu_rt_current_device();
  struct emu_stream *s = stream_alloc(device, flags, priority);
  if (!s)
    return emu_cuda_result(cudaErrorMemoryAllocation);
  struct emu_device *d = device_at(device);
  pthread_mutex_lock(&d->mu);
  link_locked(d, s);
  pthread_mutex_unlock(&d->mu);
  struct emu_live_info info = {.device = device};
  emu_rt_live_add(s, EMU_STREAM, &info);
  *pStream = (cudaStream_t)s;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority) {
  CUDA_KNOB("cudaStreamCreateWithPriority");
  return stream_create(pStream, flags, priority);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  CUDA_KNOB("cudaStreamCreateWithFlags");
  return stream_create(pStream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
  CUDA_KNOB("cudaStreamCreate");
  return stream_create(pStream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  CUDA_KNOB("cudaStreamDestroy");
  if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  if (!emu_rt_live_remove(stream, EMU_STREAM, NULL))
    return emu_cuda_result(cudaErrorInvalidResourceHandle);
  /* work already enqueued still runs; the object goes when the worker has drained it */
  release_handle((struct emu_stream *)stream);
  return cudaSuccess;
}

static cudaError_t stream_get(cudaStream_t h, bool per_thread, unsigned *flags, int *priority,
                              int *device) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(h, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  if (flags)
    *flags = s->flags;
  if (priority)
    *priority = s->priority;
  if (device)
    *device = s->device;
  emu_rt_stream_release(s);
  return cudaSuccess;
}

static cudaError_t stream_query(cudaStream_t h, bool per_thread) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(h, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  bool busy = emu_stream_pending(s) > 0;
  emu_rt_stream_release(s);
  /* not ready is a state, not an error: it does not become the last error */
  return busy ? cudaErrorNotReady : cudaSuccess;
}

static cudaError_t stream_synchronize(cudaStream_t h, bool per_thread) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(h, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  pthread_mutex_lock(&s->mu);
  uint64_t upto = s->enqueued;
  pthread_mutex_unlock(&s->mu);
  emu_stream_wait(s, upto);
  emu_rt_stream_release(s);
  return cudaSuccess;
}

struct host_fn_op {
  struct emu_op op;
  cudaHostFn_t fn;
  cudaStreamCallback_t callback;
  cudaStream_t handle;
  void *user;
};

static void run_host_fn(struct emu_op *op) {
  struct host_fn_op *h = (struct host_fn_op *)op;
  if (h->fn)
    h->fn(h->user);
  else
    h->callback(h->handle, cudaSuccess, h->user);
}

static void free_op(struct emu_op *op) { free(op); }

static cudaError_t enqueue_host_fn(cudaStream_t handle, bool per_thread, cudaHostFn_t fn,
                                   cudaStreamCallback_t callback, void *user) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(handle, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  struct host_fn_op *h = calloc(1, sizeof(*h));
  if (!h) {
    emu_rt_stream_release(s);
    return emu_cuda_result(cudaErrorMemoryAllocation);
  }
  h->op.run = run_host_fn;
  h->op.release = free_op;
  h->op.timed = true;
  h->fn = fn;
  h->callback = callback;
  h->handle = handle;
  h->user = user;
  emu_rt_stream_enqueue(s, &h->op);
  emu_rt_stream_release(s);
  return cudaSuccess;
}

static cudaError_t launch_host_func(cudaStream_t stream, bool per_thread, cudaHostFn_t fn,
                                    void *userData) {
  if (!fn)
    return emu_cuda_result(cudaErrorInvalidValue);
  return enqueue_host_fn(stream, per_thread, fn, NULL, userData);
}

static cudaError_t add_callback(cudaStream_t stream, bool per_thread,
                                cudaStreamCallback_t callback, void *userData,
                                unsigned int flags) {
  if (!callback || flags != 0)
    return emu_cuda_result(cudaErrorInvalidValue);
  return enqueue_host_fn(stream, per_thread, NULL, callback, userData);
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags) {
  CUDA_KNOB("cudaStreamGetFlags");
  if (!flags)
    return emu_cuda_result(cudaErrorInvalidValue);
  return stream_get(hStream, false, flags, NULL, NULL);
}

cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags) {
  CUDA_KNOB("cudaStreamGetFlags");
  if (!flags)
    return emu_cuda_result(cudaErrorInvalidValue);
  return stream_get(hStream, true, flags, NULL, NULL);
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority) {
  CUDA_KNOB("cudaStreamGetPriority");
  if (!priority)
    return emu_cuda_result(cudaErrorInvalidValue);
  return stream_get(hStream, false, NULL, priority, NULL);
}

cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority) {
  CUDA_KNOB("cudaStreamGetPriority");
  if (!priority)
    return emu_cuda_result(cudaErrorInvalidValue);
  return stream_get(hStream, true, NULL, priority, NULL);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device) {
  CUDA_KNOB("cudaStreamGetDevice");
  if (!device)
    return emu_cuda_result(cudaErrorInvalidValue);
  return stream_get(hStream, false, NULL, NULL, device);
}

cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device) {
  CUDA_KNOB("cudaStreamGetDevice");
  if (!device)
    return emu_cuda_result(cudaErrorInvalidValue);
  return stream_get(hStream, true, NULL, NULL, device);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  CUDA_KNOB("cudaStreamQuery");
  return stream_query(stream, false);
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  CUDA_KNOB("cudaStreamQuery");
  return stream_query(stream, true);
}

/* Graph capture is not emulated: a stream is never capturing. */
static cudaError_t is_capturing(cudaStream_t h, bool per_thread,
                                enum cudaStreamCaptureStatus *status) {
  if (!status)
    return emu_cuda_result(cudaErrorInvalidValue);
  cudaError_t e = stream_get(h, per_thread, NULL, NULL, NULL);
  if (e == cudaSuccess)
    *status = cudaStreamCaptureStatusNone;
  return e;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
  CUDA_KNOB("cudaStreamIsCapturing");
  return is_capturing(stream, false, status);
}

cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
  CUDA_KNOB("cudaStreamIsCapturing");
  return is_capturing(stream, true, status);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  CUDA_KNOB("cudaStreamSynchronize");
  return stream_synchronize(stream, false);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  CUDA_KNOB("cudaStreamSynchronize");
  return stream_synchronize(stream, true);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  CUDA_KNOB("cudaLaunchHostFunc");
  return launch_host_func(stream, false, fn, userData);
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  CUDA_KNOB("cudaLaunchHostFunc");
  return launch_host_func(stream, true, fn, userData);
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void *userData, unsigned int flags) {
  CUDA_KNOB("cudaStreamAddCallback");
  return add_callback(stream, false, callback, userData, flags);
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                       void *userData, unsigned int flags) {
  CUDA_KNOB("cudaStreamAddCallback");
  return add_callback(stream, true, callback, userData, flags);
}
