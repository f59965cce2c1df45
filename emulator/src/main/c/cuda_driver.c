/* libcuda.so.1, the CUDA driver API, as far as the emulator needs it: JNI libraries built
 * against the real CUDA (JavaCPP's libjnicudart.so) list libcuda.so.1 as a dependency and import
 * its entry points, and a statically linked cudart (nvcc's default) reaches the driver through
 * dlsym(libcuda, "cuGetProcAddress_v2") alone, so the emulator provides that soname. Implemented:
 * cuInit, cuDriverGetVersion, cuGetProcAddress(_v2), the event and stream functions (with their
 * _ptsz variants), and the primary context calls a device switch needs; every other entry point
 * returns CUDA_ERROR_NOT_SUPPORTED. The list is the driver functions JavaCPP's CUDA 13 presets
 * (org.bytedeco:cuda 13.1-9.19-1.5.13) import.
 * Events and streams are the runtime's objects (CUevent is cudaEvent_t, as on real CUDA): the
 * emulated libcudart.so.13 when one is loaded at the driver's first call, else a copy of the
 * runtime linked into this library, private to it (no libcudart in the process, as under a static
 * cudart or CuPy). A libcudart loaded after that first call keeps state of its own. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NCCLGUARD_ABI_TYPES_ONLY
#include "cuda_driver_api.h"
#undef NCCLGUARD_ABI_TYPES_ONLY
#include "cuda_runtime_api.h"

/* the CUDA version this emulator stands for, as cuDriverGetVersion encodes it (1000 * major + 10 * minor) */
#define EMU_DRIVER_VERSION 13000

CUresult cuInit(unsigned int flags) {
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDriverGetVersion(int *version) {
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = EMU_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- the runtime underneath */
/* The runtime functions the driver's are made of: the loaded libcudart.so.13's when it is the
 * emulator's (it has emu_rt_interface), else this library's own copy (its names are local here). */
#define RT_FUNCTIONS(F)                                                                             \
    F(cudaEventCreateWithFlags, (cudaEvent_t *, unsigned int))                                      \
    F(cudaEventRecord, (cudaEvent_t, cudaStream_t))                                                 \
    F(cudaEventRecord_ptsz, (cudaEvent_t, cudaStream_t))                                            \
    F(cudaEventRecordWithFlags, (cudaEvent_t, cudaStream_t, unsigned int))                          \
    F(cudaEventRecordWithFlags_ptsz, (cudaEvent_t, cudaStream_t, unsigned int))                     \
    F(cudaEventQuery, (cudaEvent_t))                                                                \
    F(cudaEventSynchronize, (cudaEvent_t))                                                          \
    F(cudaEventDestroy, (cudaEvent_t))                                                              \
    F(cudaStreamCreateWithFlags, (cudaStream_t *, unsigned int))                                    \
    F(cudaStreamCreateWithPriority, (cudaStream_t *, unsigned int, int))                            \
    F(cudaStreamQuery, (cudaStream_t))                                                              \
    F(cudaStreamQuery_ptsz, (cudaStream_t))                                                         \
    F(cudaStreamSynchronize, (cudaStream_t))                                                        \
    F(cudaStreamSynchronize_ptsz, (cudaStream_t))                                                   \
    F(cudaStreamWaitEvent, (cudaStream_t, cudaEvent_t, unsigned int))                               \
    F(cudaStreamWaitEvent_ptsz, (cudaStream_t, cudaEvent_t, unsigned int))                          \
    F(cudaStreamDestroy, (cudaStream_t))                                                            \
    F(cudaGetDeviceCount, (int *))                                                                  \
    F(cudaGetDevice, (int *))                                                                       \
    F(cudaSetDevice, (int))

cudaError_t cudaEventRecord_ptsz(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t, cudaStream_t, unsigned int);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t, cudaEvent_t, unsigned int);

static struct {
#define F(name, params) cudaError_t(*name) params;
    RT_FUNCTIONS(F)
#undef F
} rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

static void rt_choose(void) {
    void *loaded = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    int theirs = loaded != NULL && dlsym(loaded, "emu_rt_interface") != NULL;
#define F(name, params)                                                                             \
    rt.name = theirs ? (cudaError_t(*) params)dlsym(loaded, #name) : NULL;                          \
    if (rt.name == NULL) rt.name = name;
    RT_FUNCTIONS(F)
#undef F
    /* the runtime used is held for good (its handle is never closed): its functions are called
     * whoever closes it (JNA closes a library whose NativeLibrary is collected) */
    if (loaded != NULL && !theirs) {
        dlclose(loaded);
    }
}

#define RT(name) (pthread_once(&rt_once, rt_choose), rt.name)

/* ---------------------------------------------------------------- events and streams
 * CUresult and cudaError_t share the codes these return (0, 1, 400, 600, 801). */
CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    return (CUresult)RT(cudaEventCreateWithFlags)((cudaEvent_t *)phEvent, Flags);
}
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    return (CUresult)RT(cudaEventRecord)((cudaEvent_t)hEvent, (cudaStream_t)hStream);
}
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
    return (CUresult)RT(cudaEventRecord_ptsz)((cudaEvent_t)hEvent, (cudaStream_t)hStream);
}
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return (CUresult)RT(cudaEventRecordWithFlags)((cudaEvent_t)hEvent, (cudaStream_t)hStream, flags);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return (CUresult)RT(cudaEventRecordWithFlags_ptsz)((cudaEvent_t)hEvent, (cudaStream_t)hStream, flags);
}
CUresult cuEventQuery(CUevent hEvent) {
    return (CUresult)RT(cudaEventQuery)((cudaEvent_t)hEvent);
}
CUresult cuEventSynchronize(CUevent hEvent) {
    return (CUresult)RT(cudaEventSynchronize)((cudaEvent_t)hEvent);
}
CUresult cuEventDestroy_v2(CUevent hEvent) {
    return (CUresult)RT(cudaEventDestroy)((cudaEvent_t)hEvent);
}
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    return (CUresult)RT(cudaStreamCreateWithFlags)((cudaStream_t *)phStream, Flags);
}
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
    return (CUresult)RT(cudaStreamCreateWithPriority)((cudaStream_t *)phStream, flags, priority);
}
CUresult cuStreamQuery(CUstream hStream) {
    return (CUresult)RT(cudaStreamQuery)((cudaStream_t)hStream);
}
CUresult cuStreamQuery_ptsz(CUstream hStream) {
    return (CUresult)RT(cudaStreamQuery_ptsz)((cudaStream_t)hStream);
}
CUresult cuStreamSynchronize(CUstream hStream) {
    return (CUresult)RT(cudaStreamSynchronize)((cudaStream_t)hStream);
}
CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
    return (CUresult)RT(cudaStreamSynchronize_ptsz)((cudaStream_t)hStream);
}
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return (CUresult)RT(cudaStreamWaitEvent)((cudaStream_t)hStream, (cudaEvent_t)hEvent, Flags);
}
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return (CUresult)RT(cudaStreamWaitEvent_ptsz)((cudaStream_t)hStream, (cudaEvent_t)hEvent, Flags);
}
CUresult cuStreamDestroy_v2(CUstream hStream) {
    return (CUresult)RT(cudaStreamDestroy)((cudaStream_t)hStream);
}

/* ---------------------------------------------------------------- primary contexts
 * A device's primary context is the device number + 1 (never NULL); making it current is the
 * runtime's cudaSetDevice, as it is for a runtime that shares the primary context. */
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    int n = 0;
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (RT(cudaGetDeviceCount)(&n) != cudaSuccess || dev < 0 || dev >= n) {
        return 101; /* CUDA_ERROR_INVALID_DEVICE */
    }
    *pctx = (CUcontext)(uintptr_t)(dev + 1);
    return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (ctx == NULL) {
        return CUDA_SUCCESS;
    }
    return RT(cudaSetDevice)((int)((uintptr_t)ctx - 1)) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult cuCtxGetDevice(CUdevice *device) {
    return device == NULL ? CUDA_ERROR_INVALID_VALUE : (CUresult)RT(cudaGetDevice)(device);
}

/* ---------------------------------------------------------------- cuGetProcAddress
 * Answers the names implemented here, as the real driver does: the base name (no _v2), the
 * per-thread-default-stream variant (_ptsz) for flag CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * where one exists, and cuGetProcAddress itself as _v2 from CUDA 12.0 on. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);

static const struct proc {
    const char *name;
    void *fn, *ptsz;
} procs[] = {
    {"cuInit", (void *)cuInit, NULL},
    {"cuDriverGetVersion", (void *)cuDriverGetVersion, NULL},
    {"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain, NULL},
    {"cuCtxSetCurrent", (void *)cuCtxSetCurrent, NULL},
    {"cuCtxGetDevice", (void *)cuCtxGetDevice, NULL},
    {"cuEventCreate", (void *)cuEventCreate, NULL},
    {"cuEventRecord", (void *)cuEventRecord, (void *)cuEventRecord_ptsz},
    {"cuEventRecordWithFlags", (void *)cuEventRecordWithFlags, (void *)cuEventRecordWithFlags_ptsz},
    {"cuEventQuery", (void *)cuEventQuery, NULL},
    {"cuEventSynchronize", (void *)cuEventSynchronize, NULL},
    {"cuEventDestroy", (void *)cuEventDestroy_v2, NULL},
    {"cuStreamCreate", (void *)cuStreamCreate, NULL},
    {"cuStreamCreateWithPriority", (void *)cuStreamCreateWithPriority, NULL},
    {"cuStreamQuery", (void *)cuStreamQuery, (void *)cuStreamQuery_ptsz},
    {"cuStreamSynchronize", (void *)cuStreamSynchronize, (void *)cuStreamSynchronize_ptsz},
    {"cuStreamWaitEvent", (void *)cuStreamWaitEvent, (void *)cuStreamWaitEvent_ptsz},
    {"cuStreamDestroy", (void *)cuStreamDestroy_v2, NULL},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
    if (symbol == NULL || pfn == NULL || flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pfn = NULL;
    if (strcmp(symbol, "cuGetProcAddress") == 0) {
        *pfn = cudaVersion >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    }
    for (size_t i = 0; *pfn == NULL && i < sizeof(procs) / sizeof(procs[0]); i++) {
        if (strcmp(symbol, procs[i].name) == 0) {
            int per_thread = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && procs[i].ptsz != NULL;
            *pfn = per_thread ? procs[i].ptsz : procs[i].fn;
        }
    }
    if (symbolStatus != NULL) {
        *symbolStatus = *pfn != NULL ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return *pfn != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* Every other entry point: arguments are ignored (the x86-64 calling convention lets a caller pass
 * any arguments to a function that reads none), the result is CUresult CUDA_ERROR_NOT_SUPPORTED. */
int emu_driver_not_supported(void) {
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define X(name) int name(void) __attribute__((alias("emu_driver_not_supported")));
X(cuArray3DCreate_v2) X(cuArray3DGetDescriptor_v2) X(cuArrayCreate_v2)
X(cuArrayDestroy) X(cuArrayGetDescriptor_v2) X(cuArrayGetMemoryRequirements)
X(cuArrayGetPlane) X(cuArrayGetSparseProperties) X(cuCheckpointProcessCheckpoint)
X(cuCheckpointProcessGetRestoreThreadId) X(cuCheckpointProcessGetState)
X(cuCheckpointProcessLock) X(cuCheckpointProcessRestore) X(cuCheckpointProcessUnlock)
X(cuCoredumpGetAttribute) X(cuCoredumpGetAttributeGlobal) X(cuCoredumpSetAttribute)
X(cuCoredumpSetAttributeGlobal) X(cuCtxAttach) X(cuCtxCreate_v4) X(cuCtxDestroy_v2)
X(cuCtxDetach) X(cuCtxDisablePeerAccess) X(cuCtxEnablePeerAccess)
X(cuCtxFromGreenCtx) X(cuCtxGetApiVersion) X(cuCtxGetCacheConfig) X(cuCtxGetCurrent)
X(cuCtxGetDevResource) X(cuCtxGetDevice_v2) X(cuCtxGetExecAffinity)
X(cuCtxGetFlags) X(cuCtxGetId) X(cuCtxGetLimit) X(cuCtxGetSharedMemConfig)
X(cuCtxGetStreamPriorityRange) X(cuCtxPopCurrent_v2) X(cuCtxPushCurrent_v2)
X(cuCtxRecordEvent) X(cuCtxResetPersistingL2Cache) X(cuCtxSetCacheConfig)
X(cuCtxSetFlags) X(cuCtxSetLimit) X(cuCtxSetSharedMemConfig)
X(cuCtxSynchronize) X(cuCtxSynchronize_v2) X(cuCtxWaitEvent)
X(cuDestroyExternalMemory) X(cuDestroyExternalSemaphore) X(cuDevResourceGenerateDesc)
X(cuDevSmResourceSplit) X(cuDevSmResourceSplitByCount) X(cuDeviceCanAccessPeer)
X(cuDeviceComputeCapability) X(cuDeviceGet) X(cuDeviceGetAttribute)
X(cuDeviceGetByPCIBusId) X(cuDeviceGetCount) X(cuDeviceGetDefaultMemPool)
X(cuDeviceGetDevResource) X(cuDeviceGetExecAffinitySupport)
X(cuDeviceGetGraphMemAttribute) X(cuDeviceGetHostAtomicCapabilities)
X(cuDeviceGetMemPool) X(cuDeviceGetName) X(cuDeviceGetP2PAtomicCapabilities)
X(cuDeviceGetPCIBusId) X(cuDeviceGetProperties) X(cuDeviceGetTexture1DLinearMaxWidth)
X(cuDeviceGetUuid_v2) X(cuDeviceGraphMemTrim) X(cuDevicePrimaryCtxGetState)
X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxReset_v2)
X(cuDevicePrimaryCtxSetFlags_v2)
X(cuDeviceRegisterAsyncNotification) X(cuDeviceSetGraphMemAttribute)
X(cuDeviceSetMemPool) X(cuDeviceTotalMem_v2) X(cuDeviceUnregisterAsyncNotification)
X(cuEventElapsedTime_v2) 

X(cuExternalMemoryGetMappedBuffer) X(cuExternalMemoryGetMappedMipmappedArray)
X(cuFlushGPUDirectRDMAWrites) X(cuFuncGetAttribute) X(cuFuncGetModule)
X(cuFuncGetName) X(cuFuncGetParamInfo) X(cuFuncIsLoaded) X(cuFuncLoad)
X(cuFuncSetAttribute) X(cuFuncSetBlockShape) X(cuFuncSetCacheConfig)
X(cuFuncSetSharedMemConfig) X(cuFuncSetSharedSize) X(cuGLCtxCreate_v2)
X(cuGLGetDevices_v2) X(cuGLInit) X(cuGLMapBufferObjectAsync_v2)
X(cuGLMapBufferObject_v2) X(cuGLRegisterBufferObject) X(cuGLSetBufferObjectMapFlags)
X(cuGLUnmapBufferObject) X(cuGLUnmapBufferObjectAsync) X(cuGLUnregisterBufferObject)
X(cuGetErrorName) X(cuGetErrorString) X(cuGetExportTable) 
X(cuGraphAddBatchMemOpNode) X(cuGraphAddChildGraphNode) X(cuGraphAddDependencies_v2)
X(cuGraphAddEmptyNode) X(cuGraphAddEventRecordNode) X(cuGraphAddEventWaitNode)
X(cuGraphAddExternalSemaphoresSignalNode) X(cuGraphAddExternalSemaphoresWaitNode)
X(cuGraphAddHostNode) X(cuGraphAddKernelNode_v2) X(cuGraphAddMemAllocNode)
X(cuGraphAddMemFreeNode) X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode)
X(cuGraphAddNode_v2) X(cuGraphBatchMemOpNodeGetParams)
X(cuGraphBatchMemOpNodeSetParams) X(cuGraphChildGraphNodeGetGraph) X(cuGraphClone)
X(cuGraphConditionalHandleCreate) X(cuGraphCreate) X(cuGraphDebugDotPrint)
X(cuGraphDestroy) X(cuGraphDestroyNode) X(cuGraphEventRecordNodeGetEvent)
X(cuGraphEventRecordNodeSetEvent) X(cuGraphEventWaitNodeGetEvent)
X(cuGraphEventWaitNodeSetEvent) X(cuGraphExecBatchMemOpNodeSetParams)
X(cuGraphExecChildGraphNodeSetParams) X(cuGraphExecDestroy)
X(cuGraphExecEventRecordNodeSetEvent) X(cuGraphExecEventWaitNodeSetEvent)
X(cuGraphExecExternalSemaphoresSignalNodeSetParams)
X(cuGraphExecExternalSemaphoresWaitNodeSetParams) X(cuGraphExecGetFlags)
X(cuGraphExecGetId) X(cuGraphExecHostNodeSetParams)
X(cuGraphExecKernelNodeSetParams_v2) X(cuGraphExecMemcpyNodeSetParams)
X(cuGraphExecMemsetNodeSetParams) X(cuGraphExecNodeSetParams) X(cuGraphExecUpdate_v2)
X(cuGraphExternalSemaphoresSignalNodeGetParams)
X(cuGraphExternalSemaphoresSignalNodeSetParams)
X(cuGraphExternalSemaphoresWaitNodeGetParams)
X(cuGraphExternalSemaphoresWaitNodeSetParams) X(cuGraphGetEdges_v2) X(cuGraphGetId)
X(cuGraphGetNodes) X(cuGraphGetRootNodes) X(cuGraphHostNodeGetParams)
X(cuGraphHostNodeSetParams) X(cuGraphInstantiateWithFlags)
X(cuGraphInstantiateWithParams) X(cuGraphKernelNodeCopyAttributes)
X(cuGraphKernelNodeGetAttribute) X(cuGraphKernelNodeGetParams_v2)
X(cuGraphKernelNodeSetAttribute) X(cuGraphKernelNodeSetParams_v2) X(cuGraphLaunch)
X(cuGraphMemAllocNodeGetParams) X(cuGraphMemFreeNodeGetParams)
X(cuGraphMemcpyNodeGetParams) X(cuGraphMemcpyNodeSetParams)
X(cuGraphMemsetNodeGetParams) X(cuGraphMemsetNodeSetParams) X(cuGraphNodeFindInClone)
X(cuGraphNodeGetContainingGraph) X(cuGraphNodeGetDependencies_v2)
X(cuGraphNodeGetDependentNodes_v2) X(cuGraphNodeGetEnabled) X(cuGraphNodeGetLocalId)
X(cuGraphNodeGetToolsId) X(cuGraphNodeGetType) X(cuGraphNodeSetEnabled)
X(cuGraphNodeSetParams) X(cuGraphReleaseUserObject) X(cuGraphRemoveDependencies_v2)
X(cuGraphRetainUserObject) X(cuGraphUpload) X(cuGraphicsGLRegisterBuffer)
X(cuGraphicsGLRegisterImage) X(cuGraphicsMapResources)
X(cuGraphicsResourceGetMappedMipmappedArray) X(cuGraphicsResourceGetMappedPointer_v2)
X(cuGraphicsResourceSetMapFlags_v2) X(cuGraphicsSubResourceGetMappedArray)
X(cuGraphicsUnmapResources) X(cuGraphicsUnregisterResource) X(cuGreenCtxCreate)
X(cuGreenCtxDestroy) X(cuGreenCtxGetDevResource) X(cuGreenCtxGetId)
X(cuGreenCtxRecordEvent) X(cuGreenCtxStreamCreate) X(cuGreenCtxWaitEvent)
X(cuImportExternalMemory) X(cuImportExternalSemaphore) X(cuIpcCloseMemHandle)
X(cuIpcGetEventHandle) X(cuIpcGetMemHandle) X(cuIpcOpenEventHandle)
X(cuIpcOpenMemHandle_v2) X(cuKernelGetAttribute) X(cuKernelGetFunction)
X(cuKernelGetLibrary) X(cuKernelGetName) X(cuKernelGetParamInfo)
X(cuKernelSetAttribute) X(cuKernelSetCacheConfig) X(cuLaunch)
X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernelMultiDevice) X(cuLaunchGrid)
X(cuLaunchGridAsync) X(cuLaunchHostFunc) X(cuLaunchKernel) X(cuLaunchKernelEx)
X(cuLibraryEnumerateKernels) X(cuLibraryGetGlobal) X(cuLibraryGetKernel)
X(cuLibraryGetKernelCount) X(cuLibraryGetManaged) X(cuLibraryGetModule)
X(cuLibraryGetUnifiedFunction) X(cuLibraryLoadData) X(cuLibraryLoadFromFile)
X(cuLibraryUnload) X(cuLinkAddData_v2) X(cuLinkAddFile_v2) X(cuLinkComplete)
X(cuLinkCreate_v2) X(cuLinkDestroy) X(cuLogsCurrent) X(cuLogsDumpToFile)
X(cuLogsDumpToMemory) X(cuLogsRegisterCallback) X(cuLogsUnregisterCallback)
X(cuMemAddressFree) X(cuMemAddressReserve) X(cuMemAdvise_v2) X(cuMemAllocAsync)
X(cuMemAllocFromPoolAsync) X(cuMemAllocHost_v2) X(cuMemAllocManaged)
X(cuMemAllocPitch_v2) X(cuMemAlloc_v2) X(cuMemBatchDecompressAsync) X(cuMemCreate)
X(cuMemDiscardAndPrefetchBatchAsync) X(cuMemDiscardBatchAsync)
X(cuMemExportToShareableHandle) X(cuMemFreeAsync) X(cuMemFreeHost) X(cuMemFree_v2)
X(cuMemGetAccess) X(cuMemGetAddressRange_v2) X(cuMemGetAllocationGranularity)
X(cuMemGetAllocationPropertiesFromHandle) X(cuMemGetDefaultMemPool)
X(cuMemGetHandleForAddressRange) X(cuMemGetInfo_v2) X(cuMemGetMemPool)
X(cuMemHostAlloc) X(cuMemHostGetDevicePointer_v2) X(cuMemHostGetFlags)
X(cuMemHostRegister_v2) X(cuMemHostUnregister) X(cuMemImportFromShareableHandle)
X(cuMemMap) X(cuMemMapArrayAsync) X(cuMemPoolCreate) X(cuMemPoolDestroy)
X(cuMemPoolExportPointer) X(cuMemPoolExportToShareableHandle) X(cuMemPoolGetAccess)
X(cuMemPoolGetAttribute) X(cuMemPoolImportFromShareableHandle)
X(cuMemPoolImportPointer) X(cuMemPoolSetAccess) X(cuMemPoolSetAttribute)
X(cuMemPoolTrimTo) X(cuMemPrefetchAsync_v2) X(cuMemPrefetchBatchAsync)
X(cuMemRelease) X(cuMemSetAccess) X(cuMemSetMemPool) X(cuMemUnmap) X(cuMemcpy)
X(cuMemcpy2DAsync_v2) X(cuMemcpy2DUnaligned_v2) X(cuMemcpy2D_v2)
X(cuMemcpy3DAsync_v2) X(cuMemcpy3DBatchAsync_v2) X(cuMemcpy3DPeer)
X(cuMemcpy3DPeerAsync) X(cuMemcpy3D_v2) X(cuMemcpyAsync) X(cuMemcpyAtoA_v2)
X(cuMemcpyAtoD_v2) X(cuMemcpyAtoHAsync_v2) X(cuMemcpyAtoH_v2)
X(cuMemcpyBatchAsync_v2) X(cuMemcpyDtoA_v2) X(cuMemcpyDtoDAsync_v2)
X(cuMemcpyDtoD_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyHtoAAsync_v2)
X(cuMemcpyHtoA_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyPeer)
X(cuMemcpyPeerAsync) X(cuMemsetD16Async) X(cuMemsetD16_v2) X(cuMemsetD2D16Async)
X(cuMemsetD2D16_v2) X(cuMemsetD2D32Async) X(cuMemsetD2D32_v2) X(cuMemsetD2D8Async)
X(cuMemsetD2D8_v2) X(cuMemsetD32Async) X(cuMemsetD32_v2) X(cuMemsetD8Async)
X(cuMemsetD8_v2) X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy)
X(cuMipmappedArrayGetLevel) X(cuMipmappedArrayGetMemoryRequirements)
X(cuMipmappedArrayGetSparseProperties) X(cuModuleEnumerateFunctions)
X(cuModuleGetFunction) X(cuModuleGetFunctionCount) X(cuModuleGetGlobal_v2)
X(cuModuleGetLoadingMode) X(cuModuleGetSurfRef) X(cuModuleGetTexRef) X(cuModuleLoad)
X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleLoadFatBinary) X(cuModuleUnload)
X(cuMulticastAddDevice) X(cuMulticastBindAddr) X(cuMulticastBindAddr_v2)
X(cuMulticastBindMem) X(cuMulticastBindMem_v2) X(cuMulticastCreate)
X(cuMulticastGetGranularity) X(cuMulticastUnbind)
X(cuOccupancyAvailableDynamicSMemPerBlock)
X(cuOccupancyMaxActiveBlocksPerMultiprocessor)
X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) X(cuOccupancyMaxActiveClusters)
X(cuOccupancyMaxPotentialBlockSize) X(cuOccupancyMaxPotentialBlockSizeWithFlags)
X(cuOccupancyMaxPotentialClusterSize) X(cuParamSetSize) X(cuParamSetTexRef)
X(cuParamSetf) X(cuParamSeti) X(cuParamSetv) X(cuPointerGetAttribute)
X(cuPointerGetAttributes) X(cuPointerSetAttribute) X(cuSignalExternalSemaphoresAsync)
X(cuStreamAddCallback) X(cuStreamAttachMemAsync) X(cuStreamBatchMemOp_v2)
X(cuStreamBeginCaptureToGraph) X(cuStreamBeginCapture_v2) X(cuStreamCopyAttributes)

X(cuStreamEndCapture) X(cuStreamGetAttribute) X(cuStreamGetCaptureInfo_v3)
X(cuStreamGetCtx) X(cuStreamGetCtx_v2) X(cuStreamGetDevResource) X(cuStreamGetDevice)
X(cuStreamGetFlags) X(cuStreamGetGreenCtx) X(cuStreamGetId) X(cuStreamGetPriority)
X(cuStreamIsCapturing) X(cuStreamSetAttribute)
X(cuStreamUpdateCaptureDependencies_v2) 
X(cuStreamWaitValue32_v2) X(cuStreamWaitValue64_v2) X(cuStreamWriteValue32_v2)
X(cuStreamWriteValue64_v2) X(cuSurfObjectCreate) X(cuSurfObjectDestroy)
X(cuSurfObjectGetResourceDesc) X(cuSurfRefGetArray) X(cuSurfRefSetArray)
X(cuTensorMapEncodeIm2col) X(cuTensorMapEncodeIm2colWide) X(cuTensorMapEncodeTiled)
X(cuTensorMapReplaceAddress) X(cuTexObjectCreate) X(cuTexObjectDestroy)
X(cuTexObjectGetResourceDesc) X(cuTexObjectGetResourceViewDesc)
X(cuTexObjectGetTextureDesc) X(cuTexRefCreate) X(cuTexRefDestroy)
X(cuTexRefGetAddressMode) X(cuTexRefGetAddress_v2) X(cuTexRefGetArray)
X(cuTexRefGetBorderColor) X(cuTexRefGetFilterMode) X(cuTexRefGetFlags)
X(cuTexRefGetFormat) X(cuTexRefGetMaxAnisotropy) X(cuTexRefGetMipmapFilterMode)
X(cuTexRefGetMipmapLevelBias) X(cuTexRefGetMipmapLevelClamp)
X(cuTexRefGetMipmappedArray) X(cuTexRefSetAddress2D_v3) X(cuTexRefSetAddressMode)
X(cuTexRefSetAddress_v2) X(cuTexRefSetArray) X(cuTexRefSetBorderColor)
X(cuTexRefSetFilterMode) X(cuTexRefSetFlags) X(cuTexRefSetFormat)
X(cuTexRefSetMaxAnisotropy) X(cuTexRefSetMipmapFilterMode)
X(cuTexRefSetMipmapLevelBias) X(cuTexRefSetMipmapLevelClamp)
X(cuTexRefSetMipmappedArray) X(cuThreadExchangeStreamCaptureMode)
X(cuUserObjectCreate) X(cuUserObjectRelease) X(cuUserObjectRetain)
X(cuWaitExternalSemaphoresAsync)
#undef X
