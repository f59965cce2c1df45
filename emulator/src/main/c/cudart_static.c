/* A stand-in for NVIDIA's static cudart (libcudart_static.a, what nvcc links by default), for the
 * agent's tests: the runtime's event and stream functions, each one call of a driver entry point
 * reached only as the real one reaches it (measured on CUDA 13.0: /work/shared/NATIVE.md):
 * dlopen("libcuda.so.1"), dlsym(its handle, "cuGetProcAddress_v2"), that function asked for
 * cuGetProcAddress itself (CUDA 12.0), then the function it returns asked for each entry point,
 * with flag CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for the _ptsz runtime variants. Every
 * runtime call of the program goes through the one call site of its entry point here, as in the
 * real static cudart. Built with hidden visibility (the Makefile): nothing here is exported. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#define NCCLGUARD_ABI_TYPES_ONLY
#include "cuda_driver_api.h"
#undef NCCLGUARD_ABI_TYPES_ONLY
#include "cuda_runtime_api.h"

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* the driver entry points, by name and the flags they were asked with */
#define ENTRIES(E)                                                                                 \
  E(event_create, "cuEventCreate", 0, (CUevent *, unsigned int))                                   \
  E(event_record, "cuEventRecord", 0, (CUevent, CUstream))                                         \
  E(event_record_pt, "cuEventRecord", 2, (CUevent, CUstream))                                      \
  E(event_query, "cuEventQuery", 0, (CUevent))                                                     \
  E(event_sync, "cuEventSynchronize", 0, (CUevent))                                                \
  E(event_destroy, "cuEventDestroy", 0, (CUevent))                                                 \
  E(stream_create, "cuStreamCreate", 0, (CUstream *, unsigned int))                                \
  E(stream_create_prio, "cuStreamCreateWithPriority", 0, (CUstream *, unsigned int, int))          \
  E(stream_query, "cuStreamQuery", 0, (CUstream))                                                  \
  E(stream_query_pt, "cuStreamQuery", 2, (CUstream))                                               \
  E(stream_sync, "cuStreamSynchronize", 0, (CUstream))                                             \
  E(stream_sync_pt, "cuStreamSynchronize", 2, (CUstream))                                          \
  E(stream_wait, "cuStreamWaitEvent", 0, (CUstream, CUevent, unsigned int))                        \
  E(stream_destroy, "cuStreamDestroy", 0, (CUstream))

static struct {
#define E(field, name, flags, params) CUresult(*field) params;
  ENTRIES(E)
#undef E
} drv;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  get_proc_t first = lib != NULL ? (get_proc_t)dlsym(lib, "cuGetProcAddress_v2") : NULL;
  get_proc_t get = NULL;
  CUdriverProcAddressQueryResult st;
  if (first == NULL || first("cuGetProcAddress", (void **)&get, 12000, 0, &st) != CUDA_SUCCESS || get == NULL) return;
#define E(field, name, flags, params)                                                             \
  if (get(name, (void **)&drv.field, 13000, flags, &st) != CUDA_SUCCESS) drv.field = NULL;
  ENTRIES(E)
#undef E
}

/* The driver's status as the runtime's: the same codes for these calls, but an uninitialized
 * driver is no device (a translation after the call, as the real runtime's: the call of the
 * driver's entry point stays a call, one site for every caller, not a jump). */
static cudaError_t runtime_error(CUresult r) {
  return r == CUDA_ERROR_NOT_INITIALIZED ? cudaErrorNoDevice : (cudaError_t)r;
}

/* the driver's entry point, or cudaErrorNoDevice (no driver) from the calling function */
#define DRV(field)                                                                                 \
  pthread_once(&once, load_driver);                                                                \
  if (drv.field == NULL) return cudaErrorNoDevice;                                                 \
  return runtime_error(drv.field

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) { DRV(event_create)((CUevent *)event, flags)); }
cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { DRV(event_record)((CUevent)event, (CUstream)stream)); }
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  DRV(event_record_pt)((CUevent)event, (CUstream)stream));
}
cudaError_t cudaEventQuery(cudaEvent_t event) { DRV(event_query)((CUevent)event)); }
cudaError_t cudaEventSynchronize(cudaEvent_t event) { DRV(event_sync)((CUevent)event)); }
cudaError_t cudaEventDestroy(cudaEvent_t event) { DRV(event_destroy)((CUevent)event)); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
  DRV(stream_create)((CUstream *)stream, flags));
}
cudaError_t cudaStreamCreate(cudaStream_t *stream) { return cudaStreamCreateWithFlags(stream, 0); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int priority) {
  DRV(stream_create_prio)((CUstream *)stream, flags, priority));
}
cudaError_t cudaStreamQuery(cudaStream_t stream) { DRV(stream_query)((CUstream)stream)); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { DRV(stream_query_pt)((CUstream)stream)); }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { DRV(stream_sync)((CUstream)stream)); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { DRV(stream_sync_pt)((CUstream)stream)); }
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  DRV(stream_wait)((CUstream)stream, (CUevent)event, flags));
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) { DRV(stream_destroy)((CUstream)stream)); }
