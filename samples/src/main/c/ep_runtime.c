/* A DeepEP-style runtime: a JNI library that uses NCCL and the CUDA runtime from C, behind Java
 * methods named open, dispatch and close (dev.ncclguard.samples.ep.EpRuntime), nothing on the
 * Java side named after an NCCL function. Linked by soname against libnccl.so.2 and
 * libcudart.so.13, as DeepEP's setup.py links NCCL. open creates a communicator (on the calling
 * thread, or on a pthread of this library), a stream, an event and buffers; dispatch enqueues an
 * allreduce and records the event after it; close waits for the event, checks the result and
 * releases everything. */
#include <jni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_api.h"

/* The JNI class: EpRuntime, or EpStaticRuntime for the build that carries NCCL inside it
 * (libnccl_static.a linked in, its symbols hidden, as libtorch's C++ distributions carry NCCL). */
#ifdef EP_STATIC
#define EP_JNI(name) Java_dev_ncclguard_samples_ep_EpStaticRuntime_##name
#else
#define EP_JNI(name) Java_dev_ncclguard_samples_ep_EpRuntime_##name
#endif


#define CUDA_MEMCPY_HOST_TO_DEVICE 1
#define CUDA_MEMCPY_DEVICE_TO_HOST 2
#define NCCL_FLOAT32 7
#define NCCL_SUM 0

int cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
int cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);

struct ep_runtime {
  ncclComm_t comm;
  cudaStream_t stream;
  cudaEvent_t done;
  float *send, *recv;
  int count, rank, nranks, device, dispatched;
};

static void throw_failure(JNIEnv *env, const char *fmt, const char *call, int status) {
  char message[256];
  snprintf(message, sizeof(message), fmt, call, status);
  jclass c = (*env)->FindClass(env, "java/lang/IllegalStateException");
  if (c != NULL) (*env)->ThrowNew(env, c, message);
}

#define CUDA(env, call)                                                     \
  do {                                                                      \
    int s_ = (call);                                                        \
    if (s_ != 0) {                                                          \
      throw_failure(env, "%s failed: CUDA error %d", #call, s_);           \
      return 0;                                                             \
    }                                                                       \
  } while (0)
#define NCCL(env, call)                                                     \
  do {                                                                      \
    int s_ = (call);                                                        \
    if (s_ != 0) {                                                          \
      throw_failure(env, "%s failed: NCCL error %d", #call, s_);           \
      return 0;                                                             \
    }                                                                       \
  } while (0)

/* The group id ranks meet through (an ncclUniqueId, 128 bytes). */
JNIEXPORT jbyteArray JNICALL EP_JNI(newGroupId)(JNIEnv *env, jclass c) {
  (void)c;
  ncclUniqueId id;
  int s = ncclGetUniqueId(&id);
  if (s != 0) {
    throw_failure(env, "%s failed: NCCL error %d", "ncclGetUniqueId", s);
    return NULL;
  }
  jbyteArray out = (*env)->NewByteArray(env, sizeof(id.internal));
  if (out != NULL) (*env)->SetByteArrayRegion(env, out, 0, sizeof(id.internal), (const jbyte *)id.internal);
  return out;
}

struct join {
  struct ep_runtime *rt;
  ncclUniqueId id;
  int status;
};

/* The communicator made on a thread of the library's own, as runtimes that start a proxy or
 * progress thread do: no Java frames there. */
static void *join_on_library_thread(void *p) {
  struct join *j = p;
  j->status = cudaSetDevice(j->rt->device);
  if (j->status == 0) j->status = ncclCommInitRank(&j->rt->comm, j->rt->nranks, j->id, j->rt->rank);
  return NULL;
}

JNIEXPORT jlong JNICALL EP_JNI(open)(JNIEnv *env, jclass c, jbyteArray groupId,
                                                                   jint nranks, jint rank, jint device, jint count,
                                                                   jboolean onLibraryThread) {
  (void)c;
  if ((*env)->GetArrayLength(env, groupId) != 128) {
    throw_failure(env, "%s must be 128 bytes (%d)", "the group id", (*env)->GetArrayLength(env, groupId));
    return 0;
  }
  struct ep_runtime *rt = calloc(1, sizeof(*rt));
  if (rt == NULL) return 0;
  rt->count = count;
  rt->rank = rank;
  rt->nranks = nranks;
  rt->device = device;
  struct join j = {rt, {{0}}, 0};
  (*env)->GetByteArrayRegion(env, groupId, 0, 128, (jbyte *)j.id.internal);
  CUDA(env, cudaSetDevice(device));
  CUDA(env, cudaStreamCreateWithFlags(&rt->stream, 1 /* cudaStreamNonBlocking */));
  CUDA(env, cudaEventCreateWithFlags(&rt->done, 2 /* cudaEventDisableTiming */));
  CUDA(env, cudaMalloc((void **)&rt->send, (size_t)count * sizeof(float)));
  CUDA(env, cudaMalloc((void **)&rt->recv, (size_t)count * sizeof(float)));
  float *host = malloc((size_t)count * sizeof(float));
  for (int i = 0; i < count; i++) host[i] = (float)((rank + 1) * (1 + i % 100));
  int s = cudaMemcpy(rt->send, host, (size_t)count * sizeof(float), CUDA_MEMCPY_HOST_TO_DEVICE);
  free(host);
  CUDA(env, s);
  if (onLibraryThread) {
    pthread_t t;
    pthread_create(&t, NULL, join_on_library_thread, &j);
    pthread_join(t, NULL);
    NCCL(env, j.status);
  } else {
    NCCL(env, ncclCommInitRank(&rt->comm, nranks, j.id, rank));
  }
  return (jlong)(intptr_t)rt;
}

JNIEXPORT jint JNICALL EP_JNI(dispatch)(JNIEnv *env, jclass c, jlong handle) {
  (void)c;
  struct ep_runtime *rt = (struct ep_runtime *)(intptr_t)handle;
  NCCL(env, ncclAllReduce(rt->send, rt->recv, (size_t)rt->count, NCCL_FLOAT32, NCCL_SUM, rt->comm, rt->stream));
  CUDA(env, cudaEventRecord(rt->done, rt->stream));
  return ++rt->dispatched;
}

/* Waits for the last dispatch, checks its result, releases everything; the result's first wrong
 * element, or -1 when all are right. */
JNIEXPORT jint JNICALL EP_JNI(close)(JNIEnv *env, jclass c, jlong handle) {
  (void)c;
  struct ep_runtime *rt = (struct ep_runtime *)(intptr_t)handle;
  CUDA(env, cudaEventSynchronize(rt->done));
  float *host = malloc((size_t)rt->count * sizeof(float));
  int s = cudaMemcpy(host, rt->recv, (size_t)rt->count * sizeof(float), CUDA_MEMCPY_DEVICE_TO_HOST);
  int wrong = -1;
  float ranks = (float)(rt->nranks * (rt->nranks + 1) / 2);
  for (int i = 0; s == 0 && rt->dispatched > 0 && i < rt->count && wrong < 0; i++) {
    if (host[i] != ranks * (float)(1 + i % 100)) wrong = i;
  }
  free(host);
  CUDA(env, s);
  CUDA(env, cudaStreamSynchronize(rt->stream));
  CUDA(env, cudaEventDestroy(rt->done));
  NCCL(env, ncclCommDestroy(rt->comm));
  CUDA(env, cudaStreamDestroy(rt->stream));
  CUDA(env, cudaFree(rt->send));
  CUDA(env, cudaFree(rt->recv));
  free(rt);
  return wrong;
}

/* Whether the last dispatch is done: cudaEventQuery on the runtime's event (0 done, 600 not yet). */
JNIEXPORT jint JNICALL EP_JNI(poll)(JNIEnv *env, jclass c, jlong handle) {
  (void)env, (void)c;
  struct ep_runtime *rt = (struct ep_runtime *)(intptr_t)handle;
  return cudaEventQuery(rt->done);
}

/* n timing events made in this one call, each recorded on the runtime's stream and the one before
 * it destroyed (as a framework times its steps): the last is left to process exit. */
JNIEXPORT jint JNICALL EP_JNI(timed)(JNIEnv *env, jclass c, jlong handle, jint n) {
  (void)c;
  struct ep_runtime *rt = (struct ep_runtime *)(intptr_t)handle;
  cudaEvent_t last = NULL;
  for (jint i = 0; i < n; i++) {
    cudaEvent_t e = NULL;
    CUDA(env, cudaEventCreateWithFlags(&e, 2 /* cudaEventDisableTiming */));
    CUDA(env, cudaEventRecord(e, rt->stream));
    if (last != NULL) CUDA(env, cudaEventDestroy(last));
    last = e;
  }
  return n;
}
