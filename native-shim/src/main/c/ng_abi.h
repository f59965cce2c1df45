/* The part of NCCL's and the CUDA runtime's ABI the wrappers are declared with: handles are
 * opaque pointers, enums ints, ncclUniqueId 128 bytes by value. No nccl.h or cuda_runtime.h is
 * needed to build the library; a prototype that differs in ABI from the real one is a bug here. */
#ifndef NG_ABI_H
#define NG_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct ncclConfig_opaque ncclConfig_t;
typedef struct { char internal[128]; } ncclUniqueId;
/* NCCL 2.28's windows and device communicators (nccl.h, nccl_device/core.h): only pointers to them pass */
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevComm ncclDevComm_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef int ncclResult_t;
typedef int cudaError_t;

/* What a wrapper returns when it finds no real function to forward to (see ng_missing). */
#define NG_NCCL_SUCCESS 0
#define NG_NCCL_SYSTEM_ERROR 2
#define NG_NCCL_IN_PROGRESS 7
#define NG_CUDA_SUCCESS 0
#define NG_CUDA_ERROR_INITIALIZATION 3
#define NG_CUDA_ERROR_NOT_READY 600

/* cudaStreamLegacy and cudaStreamPerThread, the special handles of cuda_runtime_api.h */
#define NG_STREAM_LEGACY ((uint64_t)0x1)
#define NG_STREAM_PER_THREAD ((uint64_t)0x2)

#endif
