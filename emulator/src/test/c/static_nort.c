/* A library with the emulated NCCL linked in statically and no CUDA runtime at all: NCCL then
 * answers as on a machine without devices (test_cudart_pairing.c). */
#include "nccl_api.h"

__attribute__((visibility("default"))) ncclResult_t static_nort_init(void) {
  ncclUniqueId id;
  ncclComm_t comm;
  ncclResult_t r = ncclGetUniqueId(&id);
  return r != ncclSuccess ? r : ncclCommInitRank(&comm, 1, id, 0);
}
