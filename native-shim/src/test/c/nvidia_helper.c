/* Built as libnccl-ngtest.so: a library whose name says it is NCCL's, so its cudart calls are
 * NCCL's own (as the real libnccl creates events for itself) and are left out. */
#include "nccl_api.h"

__attribute__((visibility("default"))) int ngtest_event_create(cudaEvent_t *e) { return cudaEventCreate(e); }
