/* A stand-in for a real libcudart.so.13 on a machine without a GPU driver: the soname and the
 * version node of the real one, a few of its functions answering what the real runtime answers
 * there (cudaErrorInsufficientDriver, 35), and none of the emulator's symbols. Built into
 * target/emu-test/fake-cudart/ for the tests that load it before the emulated NCCL, as JavaCPP
 * loads the CUDA toolkit's runtime before NCCL. */
#include <stddef.h>

typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;

enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorInsufficientDriver = 35 };

static __thread cudaError_t last_error;

static cudaError_t no_driver(void) { return last_error = cudaErrorInsufficientDriver; }

cudaError_t cudaGetDeviceCount(int *count) {
  if (count)
    *count = 0;
  return no_driver();
}
cudaError_t cudaSetDevice(int device) {
  (void)device;
  return no_driver();
}
cudaError_t cudaGetDevice(int *device) {
  (void)device;
  return no_driver();
}
cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  (void)stream;
  return no_driver();
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  (void)stream;
  return no_driver();
}
cudaError_t cudaMalloc(void **ptr, size_t size) {
  (void)ptr, (void)size;
  return no_driver();
}
cudaError_t cudaFree(void *ptr) {
  (void)ptr;
  return no_driver();
}
cudaError_t cudaDriverGetVersion(int *version) {
  if (!version)
    return cudaErrorInvalidValue;
  *version = 0; /* no driver */
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *version) {
  if (!version)
    return cudaErrorInvalidValue;
  *version = 13000;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
const char *cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess                   ? "no error"
         : e == cudaErrorInsufficientDriver ? "CUDA driver version is insufficient for CUDA "
                                              "runtime version"
                                            : "unknown error";
}
