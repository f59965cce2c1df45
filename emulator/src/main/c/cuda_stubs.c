/* CUDA runtime functions that bindings commonly link but the emulator does not emulate: exported
 * so that such a binding loads, and answering cudaErrorNotSupported (also as the last error),
 * never crashing. The arguments are ignored, so the parameter lists are left out: a callee that
 * reads no argument is called correctly whatever the caller passes. */
#include "emu.h"

#define NOT_SUPPORTED(fn)                                                                         \
  cudaError_t fn(void);                                                                           \
  cudaError_t fn(void) {                                                                          \
    CUDA_KNOB(#fn);                                                                               \
    return emu_cuda_result(cudaErrorNotSupported);                                                \
  }

NOT_SUPPORTED(cudaGetDeviceProperties)
NOT_SUPPORTED(cudaDeviceGetAttribute)
NOT_SUPPORTED(cudaDeviceReset)
NOT_SUPPORTED(cudaSetDeviceFlags)
NOT_SUPPORTED(cudaGetDeviceFlags)
NOT_SUPPORTED(cudaSetValidDevices)
NOT_SUPPORTED(cudaInitDevice)
NOT_SUPPORTED(cudaDeviceSetLimit)
NOT_SUPPORTED(cudaDeviceGetLimit)
NOT_SUPPORTED(cudaDeviceGetPCIBusId)
NOT_SUPPORTED(cudaDeviceGetByPCIBusId)
NOT_SUPPORTED(cudaDeviceCanAccessPeer)
NOT_SUPPORTED(cudaDeviceEnablePeerAccess)
NOT_SUPPORTED(cudaDeviceDisablePeerAccess)
NOT_SUPPORTED(cudaMemcpyPeer)
NOT_SUPPORTED(cudaMemcpyPeerAsync)
NOT_SUPPORTED(cudaMemcpy2D)
NOT_SUPPORTED(cudaMemcpy2DAsync)
NOT_SUPPORTED(cudaMemcpyToSymbol)
NOT_SUPPORTED(cudaMemcpyFromSymbol)
NOT_SUPPORTED(cudaMallocManaged)
NOT_SUPPORTED(cudaMemPrefetchAsync)
NOT_SUPPORTED(cudaPointerGetAttributes)
NOT_SUPPORTED(cudaHostRegister)
NOT_SUPPORTED(cudaHostUnregister)
NOT_SUPPORTED(cudaHostGetDevicePointer)
NOT_SUPPORTED(cudaIpcGetMemHandle)
NOT_SUPPORTED(cudaIpcOpenMemHandle)
NOT_SUPPORTED(cudaIpcCloseMemHandle)
NOT_SUPPORTED(cudaIpcGetEventHandle)
NOT_SUPPORTED(cudaIpcOpenEventHandle)
NOT_SUPPORTED(cudaLaunchKernel)
NOT_SUPPORTED(cudaFuncGetAttributes)
NOT_SUPPORTED(cudaStreamBeginCapture)
NOT_SUPPORTED(cudaStreamEndCapture)
NOT_SUPPORTED(cudaGraphInstantiate)
NOT_SUPPORTED(cudaGraphLaunch)
NOT_SUPPORTED(cudaGraphExecDestroy)
NOT_SUPPORTED(cudaGraphDestroy)
