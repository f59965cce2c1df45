/* libjvmtest.so: the JNI library of the JVM test (JvmTest.java), linked by soname against
 * libnccl.so.2 and libcudart.so.13, loaded after the promotion. */
#include <jni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "nccl_api.h"

#define NATIVE(name) JNIEXPORT jlong JNICALL Java_nativetest_JvmNatives_##name

NATIVE(createEvent)(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  cudaEvent_t e = NULL;
  return cudaEventCreate(&e) == cudaSuccess ? (jlong)(intptr_t)e : 0;
}

static void *create_on_thread(void *p) {
  cudaEventCreateWithFlags((cudaEvent_t *)p, cudaEventDisableTiming);
  return NULL;
}

NATIVE(createEventOnPthread)(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  cudaEvent_t e = NULL;
  pthread_t t;
  pthread_create(&t, NULL, create_on_thread, &e);
  pthread_join(t, NULL);
  return (jlong)(intptr_t)e;
}

NATIVE(createStream)(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  cudaStream_t s = NULL;
  return cudaStreamCreate(&s) == cudaSuccess ? (jlong)(intptr_t)s : 0;
}

JNIEXPORT jint JNICALL Java_nativetest_JvmNatives_recordAndQuery(JNIEnv *env, jclass c, jlong event, jlong stream,
                                                                 jint times) {
  (void)env, (void)c;
  cudaEvent_t e = (cudaEvent_t)(intptr_t)event;
  cudaStream_t s = (cudaStream_t)(intptr_t)stream;
  for (int i = 0; i < times; i++) {
    if (cudaEventRecord(e, s) != cudaSuccess) return 1;
    cudaEventQuery(e);
  }
  return cudaEventSynchronize(e);
}

NATIVE(initComm)(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 0;
  return (jlong)(intptr_t)comm;
}

JNIEXPORT jint JNICALL Java_nativetest_JvmNatives_destroyComm(JNIEnv *env, jclass c, jlong comm) {
  (void)env, (void)c;
  return ncclCommDestroy((ncclComm_t)(intptr_t)comm);
}

JNIEXPORT jint JNICALL Java_nativetest_JvmNatives_destroyEvent(JNIEnv *env, jclass c, jlong event) {
  (void)env, (void)c;
  return cudaEventDestroy((cudaEvent_t)(intptr_t)event);
}

/* At exit(3), after the JVM died: a wrapped call that must forward and stay silent. */
static void at_exit(void) {
  cudaEvent_t e;
  if (cudaEventCreate(&e) != cudaSuccess || cudaEventDestroy(e) != cudaSuccess) _exit(7);
}

JNIEXPORT void JNICALL Java_nativetest_JvmNatives_exitHandlerUsesCudart(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  atexit(at_exit);
}

/* n cudaEventCreate + cudaEventDestroy pairs through the PLT (the wrappers, upcalls included) or
 * through the real functions; the elapsed ns. */
#include <dlfcn.h>
#include <time.h>
JNIEXPORT jlong JNICALL Java_nativetest_JvmNatives_createDestroy(JNIEnv *env, jclass c, jint n, jboolean real) {
  (void)env, (void)c;
  static int (*rc)(cudaEvent_t *), (*rd)(cudaEvent_t);
  if (rc == NULL) {
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    rc = (int (*)(cudaEvent_t *))dlsym(h, "cudaEventCreate");
    rd = (int (*)(cudaEvent_t))dlsym(h, "cudaEventDestroy");
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  cudaEvent_t e;
  for (int i = 0; i < n; i++) {
    if (real) {
      rc(&e);
      rd(e);
    } else {
      cudaEventCreate(&e);
      cudaEventDestroy(e);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (jlong)(b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
}

/* The memo test (MemoTest.java): n events made in one JNI call, MemoTest.gc() called back half way. */
JNIEXPORT jlongArray JNICALL Java_nativetest_MemoNatives_create(JNIEnv *env, jclass c, jint n, jboolean gc) {
  jlong *h = calloc((size_t)n, sizeof(jlong));
  jclass test = gc ? (*env)->FindClass(env, "nativetest/MemoTest") : NULL;
  jmethodID m = test != NULL ? (*env)->GetStaticMethodID(env, test, "gc", "()V") : NULL;
  (void)c;
  for (jint i = 0; i < n; i++) {
    cudaEvent_t e = NULL;
    if (m != NULL && i == n / 2) (*env)->CallStaticVoidMethod(env, test, m);
    cudaEventCreate(&e);
    h[i] = (jlong)(intptr_t)e;
  }
  jlongArray a = (*env)->NewLongArray(env, n);
  if (a != NULL) (*env)->SetLongArrayRegion(env, a, 0, n, h);
  free(h);
  return a;
}

/* n events made in one JNI call after refs local references made and deleted one by one in it (an
 * embedded interpreter's call after the agent's upcalls): the call's block is full, its new
 * references land in freed slots. */
JNIEXPORT jlongArray JNICALL Java_nativetest_MemoNatives_createAfterRefs(JNIEnv *env, jclass c, jint refs, jint n) {
  for (jint i = 0; i < refs; i++) {
    jobject r = (*env)->NewLocalRef(env, c);
    if (r != NULL) (*env)->DeleteLocalRef(env, r);
  }
  jlong *h = calloc((size_t)n, sizeof(jlong));
  for (jint i = 0; i < n; i++) {
    cudaEvent_t e = NULL;
    cudaEventCreate(&e);
    h[i] = (jlong)(intptr_t)e;
  }
  jlongArray a = (*env)->NewLongArray(env, n);
  if (a != NULL) (*env)->SetLongArrayRegion(env, a, 0, n, h);
  free(h);
  return a;
}

JNIEXPORT jlong JNICALL Java_nativetest_MemoNatives_innerCreate(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  cudaEvent_t e = NULL;
  return cudaEventCreate(&e) == cudaSuccess ? (jlong)(intptr_t)e : 0;
}

/* n times: an event made here, then MemoTest.inner() (a creation in another native method). */
JNIEXPORT jlongArray JNICALL Java_nativetest_MemoNatives_outer(JNIEnv *env, jclass c, jint n) {
  (void)c;
  jclass test = (*env)->FindClass(env, "nativetest/MemoTest");
  jmethodID inner = test != NULL ? (*env)->GetStaticMethodID(env, test, "inner", "()J") : NULL;
  if (inner == NULL) return NULL;
  jlong *h = calloc((size_t)n * 2, sizeof(jlong));
  for (jint i = 0; i < n; i++) {
    cudaEvent_t e = NULL;
    cudaEventCreate(&e);
    h[2 * i] = (jlong)(intptr_t)e;
    h[2 * i + 1] = (*env)->CallStaticLongMethod(env, test, inner);
  }
  jlongArray a = (*env)->NewLongArray(env, 2 * n);
  if (a != NULL) (*env)->SetLongArrayRegion(env, a, 0, 2 * n, h);
  free(h);
  return a;
}
