/* A JNI-style library built as nvcc builds one by default: the CUDA runtime linked in statically
 * (the emulator's libcudart_static.a stand-in, hidden), so that its event and stream calls reach
 * libcuda.so.1 only through cuGetProcAddress. No libcudart.so is loaded by it. The same source is
 * built under an NVIDIA library's name too (its calls are NVIDIA's own). */
#include "cuda_runtime_api.h"

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);

#define API __attribute__((visibility("default")))

API int sa_stream_create(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
API int sa_stream_sync(cudaStream_t s) { return cudaStreamSynchronize(s); }
API int sa_stream_query(cudaStream_t s) { return cudaStreamQuery(s); }
API int sa_stream_destroy(cudaStream_t s) { return cudaStreamDestroy(s); }
API int sa_event_create(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDisableTiming); }
API int sa_event_record(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); }
/* as compiled with --default-stream per-thread */
API int sa_event_record_pt(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord_ptsz(e, s); }
API int sa_event_query(cudaEvent_t e) { return cudaEventQuery(e); }
API int sa_event_sync(cudaEvent_t e) { return cudaEventSynchronize(e); }
API int sa_event_destroy(cudaEvent_t e) { return cudaEventDestroy(e); }
API int sa_stream_wait(cudaStream_t s, cudaEvent_t e) { return cudaStreamWaitEvent(s, e, 0); }
