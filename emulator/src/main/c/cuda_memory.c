/* Device memory is host memory. Allocations are registered so that a bad free is an error code,
 * not a crash. Synchronous copies and sets go through the legacy default stream, as in CUDA. */
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define TOTAL_BYTES (80ULL << 30) /* what cudaMemGetInfo reports: an 80 GiB device */
#define ALIGNMENT 256

static pthread_mutex_t used_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t used_bytes[1024]; /* per device; guarded by used_mu */

static void account(int device, size_t bytes, bool add) {
  if (device < 0 || device >= 1024)
    return;
  pthread_mutex_lock(&used_mu);
  used_bytes[device] = add ? used_bytes[device] + bytes : used_bytes[device] - bytes;
  pthread_mutex_unlock(&used_mu);
}

static cudaError_t allocate(void **ptr, size_t size, enum emu_kind kind) {
  if (!ptr)
    return emu_cuda_result(cudaErrorInvalidValue);
  if (emu_rt_device_count() == 0)
    return emu_cuda_result(cudaErrorNoDevice);
  if (size == 0) {
    *ptr = NULL;
    return cudaSuccess;
  }
  void *p = NULL;
  if (size > TOTAL_BYTES || posix_memalign(&p, ALIGNMENT, size) != 0)
    return emu_cuda_result(cudaErrorMemoryAllocation);
  struct emu_live_info info = {.device = emu_rt_current_device(), .bytes = size};
  emu_rt_live_add(p, kind, &info);
  if (kind == EMU_ALLOC)
    account(info.device, size, true);
  *ptr = p;
  return cudaSuccess;
}

/* Frees after the device's work is done, as cudaFree synchronizes in CUDA: an op still reading
 * the buffer must not see it freed. */
static cudaError_t release_quietly(void *ptr, enum emu_kind kind) {
  if (!ptr)
    return cudaSuccess;
  struct emu_live_info info;
  if (!emu_rt_live_remove(ptr, kind, &info))
    return cudaErrorInvalidValue;
  emu_device_synchronize(info.device);
  if (kind == EMU_ALLOC)
    account(info.device, info.bytes, false);
  free(ptr);
  return cudaSuccess;
}

static cudaError_t release(void *ptr, enum emu_kind kind) {
  return emu_cuda_result(release_quietly(ptr, kind));
}

cudaError_t emu_rt_mem_alloc(void **ptr, size_t size, enum emu_kind kind) {
  return allocate(ptr, size, kind);
}

/* not the thread's last error: the caller (ncclMemFree) tries kinds in turn */
cudaError_t emu_rt_mem_free(void *ptr, enum emu_kind kind) { return release_quietly(ptr, kind); }

cudaError_t cudaMalloc(void **devPtr, size_t size) {
  CUDA_KNOB("cudaMalloc");
  return allocate(devPtr, size, EMU_ALLOC);
}

cudaError_t cudaFree(void *devPtr) {
  CUDA_KNOB("cudaFree");
  return release(devPtr, EMU_ALLOC);
}

cudaError_t cudaMallocHost(void **ptr, size_t size) {
  CUDA_KNOB("cudaMallocHost");
  return allocate(ptr, size, EMU_HOSTALLOC);
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
  CUDA_KNOB("cudaHostAlloc");
  if (flags & ~0xfu)
    return emu_cuda_result(cudaErrorInvalidValue);
  return allocate(pHost, size, EMU_HOSTALLOC);
}

cudaError_t cudaFreeHost(void *ptr) {
  CUDA_KNOB("cudaFreeHost");
  return release(ptr, EMU_HOSTALLOC);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  CUDA_KNOB("cudaMemGetInfo");
  if (!free_bytes || !total)
    return emu_cuda_result(cudaErrorInvalidValue);
  int device = emu_rt_current_device();
  pthread_mutex_lock(&used_mu);
  size_t used = device < 1024 ? used_bytes[device] : 0;
  pthread_mutex_unlock(&used_mu);
  *total = TOTAL_BYTES;
  *free_bytes = TOTAL_BYTES - used;
  return cudaSuccess;
}

/* ---------------------------------------------------------------- stream-ordered work */

struct mem_op {
  struct emu_op op;
  enum { MEM_COPY, MEM_SET, MEM_FREE } what;
  void *dst;
  const void *src;
  int value;
  size_t count;
};

static void run_mem(struct emu_op *op) {
  struct mem_op *m = (struct mem_op *)op;
  switch (m->what) {
  case MEM_COPY:
    memmove(m->dst, m->src, m->count);
    break;
  case MEM_SET:
    memset(m->dst, m->value, m->count);
    break;
  case MEM_FREE:
    free(m->dst);
    break;
  }
}

static void free_mem_op(struct emu_op *op) { free(op); }

/* Enqueues a copy, set or free on the stream; with wait, returns once it has run (the
 * synchronous forms). */
static cudaError_t enqueue_mem(struct mem_op *proto, cudaStream_t stream, bool per_thread,
                               bool wait) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(stream, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  struct mem_op *m = malloc(sizeof(*m));
  if (!m) {
    emu_rt_stream_release(s);
    return emu_cuda_result(cudaErrorMemoryAllocation);
  }
  *m = *proto;
  m->op.run = run_mem;
  m->op.release = free_mem_op;
  m->op.timed = m->what != MEM_FREE;
  uint64_t seq = emu_rt_stream_enqueue(s, &m->op);
  if (wait)
    emu_stream_wait(s, seq);
  emu_rt_stream_release(s);
  return cudaSuccess;
}

static cudaError_t memcpy_on(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                             cudaStream_t stream, bool per_thread, bool wait) {
  if ((unsigned)kind > cudaMemcpyDefault)
    return emu_cuda_result(cudaErrorInvalidMemcpyDirection);
  if (count && (!dst || !src))
    return emu_cuda_result(cudaErrorInvalidValue);
  struct mem_op m = {.what = MEM_COPY, .dst = dst, .src = src, .count = count};
  return enqueue_mem(&m, stream, per_thread, wait);
}

static cudaError_t memset_on(void *dst, int value, size_t count, cudaStream_t stream,
                             bool per_thread, bool wait) {
  if (count && !dst)
    return emu_cuda_result(cudaErrorInvalidValue);
  struct mem_op m = {.what = MEM_SET, .dst = dst, .value = value, .count = count};
  return enqueue_mem(&m, stream, per_thread, wait);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  CUDA_KNOB("cudaMemcpy");
  return memcpy_on(dst, src, count, kind, NULL, false, true);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  CUDA_KNOB("cudaMemcpy");
  return memcpy_on(dst, src, count, kind, NULL, true, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  CUDA_KNOB("cudaMemcpyAsync");
  return memcpy_on(dst, src, count, kind, stream, false, false);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream) {
  CUDA_KNOB("cudaMemcpyAsync");
  return memcpy_on(dst, src, count, kind, stream, true, false);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
  CUDA_KNOB("cudaMemset");
  return memset_on(devPtr, value, count, NULL, false, true);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count) {
  CUDA_KNOB("cudaMemset");
  return memset_on(devPtr, value, count, NULL, true, true);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
  CUDA_KNOB("cudaMemsetAsync");
  return memset_on(devPtr, value, count, stream, false, false);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream) {
  CUDA_KNOB("cudaMemsetAsync");
  return memset_on(devPtr, value, count, stream, true, false);
}

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t stream, bool per_thread) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(stream, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  emu_rt_stream_release(s);
  /* allocating early is allowed: the memory is only promised from this point of the stream on */
  return allocate(devPtr, size, EMU_ALLOC);
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream, bool per_thread) {
  struct emu_stream *s;
  cudaError_t e = emu_rt_stream_acquire(stream, per_thread, -1, &s);
  if (e != cudaSuccess)
    return emu_cuda_result(e);
  struct mem_op *m = devPtr ? calloc(1, sizeof(*m)) : NULL;
  struct emu_live_info info;
  if (devPtr && (!m || !emu_rt_live_remove(devPtr, EMU_ALLOC, &info))) {
    emu_rt_stream_release(s);
    free(m);
    return emu_cuda_result(m ? cudaErrorInvalidValue : cudaErrorMemoryAllocation);
  }
  if (m) {
    account(info.device, info.bytes, false);
    m->what = MEM_FREE;
    m->dst = devPtr;
    m->op.run = run_mem;
    m->op.release = free_mem_op;
    emu_rt_stream_enqueue(s, &m->op);
  }
  emu_rt_stream_release(s);
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  CUDA_KNOB("cudaMallocAsync");
  return malloc_async(devPtr, size, hStream, false);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
  CUDA_KNOB("cudaMallocAsync");
  return malloc_async(devPtr, size, hStream, true);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  CUDA_KNOB("cudaFreeAsync");
  return free_async(devPtr, hStream, false);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
  CUDA_KNOB("cudaFreeAsync");
  return free_async(devPtr, hStream, true);
}
