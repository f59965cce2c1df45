/* A JNI-like library that carries NCCL inside it (the emulator's libnccl_static.a, cudart shared),
 * as libtorch's C++ distributions link NCCL. Built twice: with NCCL's API exported (as NCCL's
 * archive leaves it: an interposer in the global scope sees its calls) and with
 * -Wl,--exclude-libs,ALL (hidden: only NCCL's profiler plugin sees it). */
#include "nccl_api.h"

#define EXPORT __attribute__((visibility("default")))

/* One rank: init, an allreduce, destroy unless asked to leak. 0, or the line that failed. */
EXPORT int sf_run(int destroy, ncclComm_t *out) {
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess) return __LINE__;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return __LINE__;
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) return __LINE__;
  static float buf[4] = {1, 2, 3, 4};
  if (ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, comm, stream) != ncclSuccess) return __LINE__;
  if (cudaStreamSynchronize(stream) != cudaSuccess || buf[3] != 4) return __LINE__;
  if (cudaStreamDestroy(stream) != cudaSuccess) return __LINE__;
  if (out != NULL) *out = comm;
  if (destroy && ncclCommDestroy(comm) != ncclSuccess) return __LINE__;
  return 0;
}
