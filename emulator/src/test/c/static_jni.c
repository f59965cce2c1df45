/* A JNI-like library that carries NCCL inside it: linked with the emulator's libnccl_static.a
 * and the shared libcudart.so.13, as libtorch's C++ distributions link NCCL. test_nccl_static.c
 * loads it as a JVM loads a JNI library (dlopen, RTLD_LAZY, a local scope). */
#include "nccl_api.h"

/* One rank: an init, an allreduce that must sum right, a send to itself, and a destroy unless
 * asked to leak the communicator. Answers 0, or the first thing that went wrong (a line number). */
__attribute__((visibility("default"))) int static_jni_run(int destroy, ncclComm_t *out) {
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess)
    return __LINE__;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
    return __LINE__;
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess)
    return __LINE__;
  static float in[4] = {1, 2, 3, 4}, res[4];
  if (ncclAllReduce(in, res, 4, ncclFloat, ncclSum, comm, stream) != ncclSuccess)
    return __LINE__;
  if (cudaStreamSynchronize(stream) != cudaSuccess || res[3] != 4)
    return __LINE__;
  /* a send to itself: a task, with profiler events (a one-rank allreduce has none, in NCCL) */
  static float back[4];
  ncclGroupStart();
  ncclSend(in, 4, ncclFloat, 0, comm, stream);
  ncclRecv(back, 4, ncclFloat, 0, comm, stream);
  if (ncclGroupEnd() != ncclSuccess || cudaStreamSynchronize(stream) != cudaSuccess ||
      back[2] != 3)
    return __LINE__;
  cudaStreamDestroy(stream);
  if (out)
    *out = comm;
  if (destroy && ncclCommDestroy(comm) != ncclSuccess)
    return __LINE__;
  return 0;
}
