/* A stand-in for a JNI library that uses NCCL and CUDA in C (as DeepEP's runtime does): linked
 * by soname against libnccl.so.2 and libcudart.so.13, loaded by the tests after promotion, so
 * that its calls reach libncclguard.so's wrappers. The tests reach these through dlsym. */
#ifndef NG_FAKE_JNI_H
#define NG_FAKE_JNI_H

#include "nccl_api.h"

typedef struct {
  int (*unique_id)(ncclUniqueId *id);
  int (*comm_init)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
  int (*comm_init_all)(ncclComm_t *comms, int n, const int *devlist);
  int (*comm_split)(ncclComm_t comm, int color, int key, ncclComm_t *child);
  int (*comm_destroy)(ncclComm_t comm);
  int (*comm_abort)(ncclComm_t comm);
  int (*allreduce)(float *buf, size_t n, ncclComm_t comm, cudaStream_t s);
  int (*group_start)(void);
  int (*group_end)(void);
  int (*event_create)(cudaEvent_t *e);
  int (*event_record)(cudaEvent_t e, cudaStream_t s);
  int (*event_query)(cudaEvent_t e);
  int (*event_sync)(cudaEvent_t e);
  int (*event_destroy)(cudaEvent_t e);
  int (*stream_create)(cudaStream_t *s);
  int (*stream_sync)(cudaStream_t s);
  int (*stream_query)(cudaStream_t s);
  int (*stream_wait)(cudaStream_t s, cudaEvent_t e);
  int (*stream_destroy)(cudaStream_t s);
  int (*set_device)(int device);
  int (*device_sync)(void);
  int (*malloc_device)(void **p, size_t n);
  int (*free_device)(void *p);
  /* cudaLaunchHostFunc: not a catalog function, so never wrapped */
  int (*host_func)(cudaStream_t s, void (*fn)(void *), void *arg);
  /* runs fn(arg) on a pthread of this library and joins it */
  void (*on_thread)(void (*fn)(void *), void *arg);
  /* a function named as a JNI entry point a Java bridge wraps: creates an event */
  int (*jni_event_create)(cudaEvent_t *e);
  int (*jni_event_create_long)(cudaEvent_t *e);
  /* a catalog function the emulator does not define */
  int (*allreduce_config)(float *buf, size_t n, ncclComm_t comm, cudaStream_t s);
  /* an exported function: the caller dladdr names */
  int (*exported_stream_create)(cudaStream_t *s);
  /* not a catalog function: never wrapped */
  int (*get_device)(int *device);
  /* an allreduce of n floats out of place */
  int (*allreduce2)(const float *send, float *recv, size_t n, ncclComm_t comm, cudaStream_t s);
  /* fn(arg) from one call site, whatever fn is: a call through a pointer */
  int (*call_through)(int (*fn)(void *), void *arg);
} fake_jni;

#endif
