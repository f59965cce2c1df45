/* The rest of the NCCL 2.29 API: exported, so that bindings generated from the full header (JNI
 * libraries that link every function) load, and answering ncclInvalidUsage, never crashing. */
#include "emu.h"

#define NOT_EMULATED(fn)                                                                          \
  NCCL_KNOB(#fn);                                                                                 \
  emu_warn("NCCLEMU: %s is not emulated", #fn);                                                   \
  return ncclInvalidUsage

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  (void)op, (void)scalar, (void)datatype, (void)residence, (void)comm;
  NOT_EMULATED(ncclRedOpCreatePreMulSum);
}
NCCL_ALIAS(ncclRedOpCreatePreMulSum);

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  (void)op, (void)comm;
  NOT_EMULATED(ncclRedOpDestroy);
}
NCCL_ALIAS(ncclRedOpDestroy);

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  (void)simInfo;
  NOT_EMULATED(ncclGroupSimulateEnd);
}
NCCL_ALIAS(ncclGroupSimulateEnd);
