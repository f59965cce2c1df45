/* Devices, errors and versions of the CUDA runtime. The current device and the last error are per
 * thread, as in CUDA. */
#include "emu.h"

static __thread int current_device;
static __thread cudaError_t last_error;

cudaError_t emu_cuda_result(cudaError_t e) {
  if (e != cudaSuccess)
    last_error = e;
  return e;
}

int emu_rt_current_device(void) { return current_device; }

cudaError_t cudaGetDeviceCount(int *count) {
  CUDA_KNOB("cudaGetDeviceCount");
  if (!count)
    return emu_cuda_result(cudaErrorInvalidValue);
  *count = emu_rt_device_count();
  return *count == 0 ? emu_cuda_result(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  CUDA_KNOB("cudaSetDevice");
  int n = emu_rt_device_count();
  if (n == 0)
    return emu_cuda_result(cudaErrorNoDevice);
  if (device < 0 || device >= n)
    return emu_cuda_result(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  CUDA_KNOB("cudaGetDevice");
  if (!device)
    return emu_cuda_result(cudaErrorInvalidValue);
  if (emu_rt_device_count() == 0)
    return emu_cuda_result(cudaErrorNoDevice);
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  CUDA_KNOB("cudaDeviceSynchronize");
  if (emu_rt_device_count() == 0)
    return emu_cuda_result(cudaErrorNoDevice);
  emu_device_synchronize(current_device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  CUDA_KNOB("cudaDeviceGetStreamPriorityRange");
  /* the range of current data-centre GPUs; a lower number is a higher priority */
  if (leastPriority)
    *leastPriority = 0;
  if (greatestPriority)
    *greatestPriority = -5;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

static const struct {
  cudaError_t code;
  const char *name;
  const char *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const char *cudaGetErrorString(cudaError_t error) {
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == error)
      return errors[i].text;
  return "unrecognized error code";
}

const char *cudaGetErrorName(cudaError_t error) {
  for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
    if (errors[i].code == error)
      return errors[i].name;
  return "cudaErrorUnknown";
}

cudaError_t cudaDriverGetVersion(int *driverVersion) {
  CUDA_KNOB("cudaDriverGetVersion");
  if (!driverVersion)
    return emu_cuda_result(cudaErrorInvalidValue);
  *driverVersion = 13000;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
  CUDA_KNOB("cudaRuntimeGetVersion");
  if (!runtimeVersion)
    return emu_cuda_result(cudaErrorInvalidValue);
  *runtimeVersion = 13000;
  return cudaSuccess;
}
