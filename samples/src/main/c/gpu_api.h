/* The part of nccl.h and cuda_runtime_api.h the JNI sample calls, declared here so that it builds
 * without the NCCL and CUDA headers. Enums are ints and handles opaque pointers, as in the ABI. */
#ifndef NCCLGUARD_SAMPLES_GPU_API_H
#define NCCLGUARD_SAMPLES_GPU_API_H

#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;

int ncclGetVersion(int *version);
const char *ncclGetErrorString(int result);
int ncclGetUniqueId(ncclUniqueId *uniqueId);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
int ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
int ncclCommDestroy(ncclComm_t comm);
int ncclCommAbort(ncclComm_t comm);
int ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op,
                  ncclComm_t comm, cudaStream_t stream);
int ncclGroupStart(void);
int ncclGroupEnd(void);

const char *cudaGetErrorString(int error);
int cudaGetDeviceCount(int *count);
int cudaSetDevice(int device);
int cudaMalloc(void **devPtr, size_t size);
int cudaFree(void *devPtr);
int cudaMemcpy(void *dst, const void *src, size_t count, int kind);
int cudaStreamCreate(cudaStream_t *stream);
int cudaStreamSynchronize(cudaStream_t stream);
int cudaStreamDestroy(cudaStream_t stream);
int cudaStreamQuery(cudaStream_t stream);
int cudaEventCreate(cudaEvent_t *event);
int cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
int cudaEventSynchronize(cudaEvent_t event);
int cudaEventQuery(cudaEvent_t event);
int cudaEventDestroy(cudaEvent_t event);

#endif
