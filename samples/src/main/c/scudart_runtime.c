/* A JNI library built as nvcc builds one by default: the CUDA runtime linked in statically (the
 * emulator's libcudart_static.a stand-in, hidden), so that its stream and event reach the driver
 * (libcuda.so.1) only through cuGetProcAddress, and no libcudart is a dependency of it. Behind
 * dev.ncclguard.samples.ep.ScudartRuntime: open makes a stream and an event, step records the
 * event on the stream, close waits for both and releases them. */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_api.h"

#define SC_JNI(name) Java_dev_ncclguard_samples_ep_ScudartRuntime_##name

int cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
int cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
int cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
int cudaEventSynchronize(cudaEvent_t event);
int cudaStreamSynchronize(cudaStream_t stream);
int cudaEventDestroy(cudaEvent_t event);
int cudaStreamDestroy(cudaStream_t stream);

struct sc_runtime {
  cudaStream_t stream;
  cudaEvent_t done;
};

static void throw_failure(JNIEnv *env, const char *call, int status) {
  char message[128];
  snprintf(message, sizeof(message), "%s failed: CUDA error %d", call, status);
  jclass c = (*env)->FindClass(env, "java/lang/IllegalStateException");
  if (c != NULL) (*env)->ThrowNew(env, c, message);
}

JNIEXPORT jlong JNICALL SC_JNI(open)(JNIEnv *env, jclass c) {
  (void)c;
  struct sc_runtime *r = calloc(1, sizeof(*r));
  if (r == NULL) return 0;
  int s = cudaStreamCreateWithFlags(&r->stream, 1 /* cudaStreamNonBlocking */);
  if (s == 0) s = cudaEventCreateWithFlags(&r->done, 2 /* cudaEventDisableTiming */);
  if (s != 0) {
    throw_failure(env, "open", s);
    free(r);
    return 0;
  }
  return (jlong)(uintptr_t)r;
}

JNIEXPORT jint JNICALL SC_JNI(step)(JNIEnv *env, jclass c, jlong h) {
  (void)c;
  struct sc_runtime *r = (struct sc_runtime *)(uintptr_t)h;
  int s = cudaEventRecord(r->done, r->stream);
  if (s != 0) throw_failure(env, "cudaEventRecord", s);
  return s;
}

JNIEXPORT jint JNICALL SC_JNI(close)(JNIEnv *env, jclass c, jlong h) {
  (void)c;
  struct sc_runtime *r = (struct sc_runtime *)(uintptr_t)h;
  int s = cudaEventSynchronize(r->done);
  if (s == 0) s = cudaStreamSynchronize(r->stream);
  if (s == 0) s = cudaEventDestroy(r->done);
  if (s == 0) s = cudaStreamDestroy(r->stream);
  if (s != 0) throw_failure(env, "close", s);
  else free(r);
  return s;
}
