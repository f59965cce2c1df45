/* Misuse is answered as NCCL answers it: an error code and one warning line in NCCL's format,
 * never a crash; handles are checked before they are touched. */
#include <dlfcn.h>

#include "test.h"

static ncclComm_t solo(void) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  ncclGetUniqueId(&id);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  return c;
}

static void destroy_twice_is_one_warning_and_an_error(void) {
  ncclComm_t c = solo();
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  EXPECT_ONE_WARN(ncclCommDestroy(c), ncclInvalidArgument,
                  "ncclCommDestroy: comm %p is not a live communicator", (void *)c);
}

static void abort_twice_and_across_destroy_and_abort(void) {
  ncclComm_t a = solo();
  CHECK_EQ(ncclCommAbort(a), ncclSuccess);
  EXPECT_ONE_WARN(ncclCommAbort(a), ncclInvalidArgument,
                  "ncclCommAbort: comm %p is not a live communicator", (void *)a);
  EXPECT_ONE_WARN(ncclCommDestroy(a), ncclInvalidArgument,
                  "ncclCommDestroy: comm %p is not a live communicator", (void *)a);
  ncclComm_t d = solo();
  CHECK_EQ(ncclCommDestroy(d), ncclSuccess);
  EXPECT_ONE_WARN(ncclCommAbort(d), ncclInvalidArgument,
                  "ncclCommAbort: comm %p is not a live communicator", (void *)d);
}

static void use_after_destroy_is_refused(void) {
  ncclComm_t c = solo();
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  int out;
  ncclResult_t async;
  ncclComm_t child;
  float v = 1;
  EXPECT_ONE_WARN(ncclCommCount(c, &out), ncclInvalidArgument,
                  "ncclCommCount: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclCommUserRank(c, &out), ncclInvalidArgument,
                  "ncclCommUserRank: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclCommCuDevice(c, &out), ncclInvalidArgument,
                  "ncclCommCuDevice: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclCommGetAsyncError(c, &async), ncclInvalidArgument,
                  "ncclCommGetAsyncError: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclCommFinalize(c), ncclInvalidArgument,
                  "ncclCommFinalize: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclCommSplit(c, 0, 0, &child, NULL), ncclInvalidArgument,
                  "ncclCommSplit: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, NULL), ncclInvalidArgument,
                  "ncclAllReduce: comm %p is not a live communicator", (void *)c);
  EXPECT_ONE_WARN(ncclSend(&v, 1, ncclFloat, 0, c, NULL), ncclInvalidArgument,
                  "ncclSend: comm %p is not a live communicator", (void *)c);
}

static void collective_on_an_aborted_comm_is_refused(void) {
  ncclComm_t c = solo();
  CHECK_EQ(ncclCommAbort(c), ncclSuccess);
  double v = 1;
  EXPECT_ONE_WARN(ncclBroadcast(&v, &v, 1, ncclDouble, 0, c, NULL), ncclInvalidArgument,
                  "ncclBroadcast: comm %p is not a live communicator", (void *)c);
}

static void null_and_foreign_handles(void) {
  float v = 1;
  int out;
  EXPECT_ONE_WARN(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, NULL, NULL), ncclInvalidArgument,
                  "ncclAllReduce : comm argument is NULL");
  EXPECT_ONE_WARN(ncclCommCount(NULL, &out), ncclInvalidArgument,
                  "ncclCommCount : comm argument is NULL");
  /* as NCCL: destroying or aborting NULL is a silent no-op */
  capture_stderr();
  CHECK_EQ(ncclCommDestroy(NULL), ncclSuccess);
  CHECK_EQ(ncclCommAbort(NULL), ncclSuccess);
  char *err = captured_stderr();
  CHECK(err && !*err);
  free(err);
  /* addresses that were never communicators are never dereferenced */
  long on_stack[4] = {0};
  void *heap = malloc(64);
  volatile uintptr_t dangling = (uintptr_t)heap; /* a freed heap address, as a caller may hold */
  free(heap);
  void *freed = (void *)dangling;
  EXPECT_ONE_WARN(ncclCommDestroy((ncclComm_t)on_stack), ncclInvalidArgument,
                  "ncclCommDestroy: comm %p is not a live communicator", (void *)on_stack);
  EXPECT_ONE_WARN(ncclCommAbort((ncclComm_t)0x10), ncclInvalidArgument,
                  "ncclCommAbort: comm %p is not a live communicator", (void *)0x10);
  EXPECT_ONE_WARN(ncclCommCount((ncclComm_t)freed, &out), ncclInvalidArgument,
                  "ncclCommCount: comm %p is not a live communicator", freed);
  ncclComm_t c = solo();
  EXPECT_ONE_WARN(ncclCommCount(c, NULL), ncclInvalidArgument,
                  "ncclCommCount : count argument is NULL");
  ncclCommDestroy(c);
}

static void bad_collective_arguments(void) {
  ncclComm_t c = solo();
  float v[4] = {0};
  EXPECT_ONE_WARN(ncclAllReduce(v, v, 1, (ncclDataType_t)12, ncclSum, c, NULL),
                  ncclInvalidArgument, "ncclAllReduce : invalid type 12");
  EXPECT_ONE_WARN(ncclAllReduce(v, v, 1, ncclFloat, (ncclRedOp_t)5, c, NULL), ncclInvalidArgument,
                  "ncclAllReduce : invalid reduction operation 5");
  EXPECT_ONE_WARN(ncclReduce(v, v, 1, ncclFloat, ncclSum, 1, c, NULL), ncclInvalidArgument,
                  "ncclReduce : invalid root 1");
  EXPECT_ONE_WARN(ncclSend(v, 1, ncclFloat, -1, c, NULL), ncclInvalidArgument,
                  "ncclSend : invalid peer -1");
  EXPECT_ONE_WARN(ncclAllGather(NULL, v, 1, ncclFloat, c, NULL), ncclInvalidArgument,
                  "ncclAllGather : sendbuff argument is NULL");
  EXPECT_ONE_WARN(ncclAllReduce(v, v, 1, ncclFloat8e4m3, ncclSum, c, NULL), ncclInvalidArgument,
                  "ncclAllReduce : reductions on fp8 types are not emulated");
  /* fp8 data that is only moved is fine */
  CHECK_EQ(ncclAllGather(v, v, 4, ncclFloat8e5m2, c, NULL), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

static void bad_streams_are_cuda_failures(void) {
  ncclComm_t c = solo(); /* on device 0 */
  float v = 1;
  cudaStream_t dead, other_device;
  cudaStreamCreate(&dead);
  cudaStreamDestroy(dead);
  cudaSetDevice(1);
  cudaStreamCreate(&other_device);
  EXPECT_ONE_WARN(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, dead), ncclUnhandledCudaError,
                  "ncclAllReduce: Cuda failure 'invalid resource handle'");
  EXPECT_ONE_WARN(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, other_device),
                  ncclUnhandledCudaError, "ncclAllReduce: Cuda failure 'invalid resource handle'");
  /* stream 0 is the comm's device's legacy stream, whatever device is current */
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, NULL), ncclSuccess);
  cudaSetDevice(0);
  CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
  cudaStreamDestroy(other_device);
  ncclCommDestroy(c);
}

static void group_end_without_start(void) {
  EXPECT_ONE_WARN(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd: not in a group call.");
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
}

static void ranks_that_disagree_get_an_async_error(void) {
  ncclComm_t c[2];
  cudaStream_t s[2];
  int a[4] = {0}, b[4] = {0};
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  for (int i = 0; i < 2; i++) {
    cudaSetDevice(i);
    cudaStreamCreate(&s[i]);
  }
  capture_stderr();
  ncclGroupStart();
  ncclAllReduce(a, a, 4, ncclInt32, ncclSum, c[0], s[0]);
  ncclAllReduce(b, b, 3, ncclInt32, ncclSum, c[1], s[1]);
  ncclGroupEnd();
  cudaStreamSynchronize(s[0]);
  cudaStreamSynchronize(s[1]);
  char *err = captured_stderr();
  CHECK(is_one_warn_line(err, "NCCLEMU: ranks 0 and 1 disagree on collective #0"));
  free(err);
  for (int i = 0; i < 2; i++) {
    ncclResult_t async = ncclSuccess;
    CHECK_EQ(ncclCommGetAsyncError(c[i], &async), ncclSuccess);
    CHECK_EQ(async, ncclInvalidUsage);
    ncclCommDestroy(c[i]);
    cudaStreamDestroy(s[i]);
  }
}

/* Every function of the NCCL 2.29.3 API is exported with its p-alias; those not emulated answer
 * ncclInvalidUsage with one line. */
static void not_emulated_functions_answer_invalid_usage(void) {
  ncclComm_t c = solo();
  ncclRedOp_t op;
  float scalar = 2;
  ncclSimInfo_t info;
  void *ptr = NULL;
  ncclMultimemHandle_t mm = {NULL};
  ncclLsaBarrierHandle_t lsa;
  ncclDevResourceRequirements_t req;
  EXPECT_ONE_WARN(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, c),
                  ncclInvalidUsage, "NCCLEMU: ncclRedOpCreatePreMulSum is not emulated");
  EXPECT_ONE_WARN(ncclRedOpDestroy((ncclRedOp_t)5, c), ncclInvalidUsage,
                  "NCCLEMU: ncclRedOpDestroy is not emulated");
  EXPECT_ONE_WARN(ncclGroupSimulateEnd(&info), ncclInvalidUsage,
                  "NCCLEMU: ncclGroupSimulateEnd is not emulated");
  EXPECT_ONE_WARN(ncclGetMultimemDevicePointer(NULL, 0, mm, &ptr), ncclInvalidUsage,
                  "NCCLEMU: ncclGetMultimemDevicePointer is not emulated");
  EXPECT_ONE_WARN(ncclGetLsaMultimemDevicePointer(NULL, 0, &ptr), ncclInvalidUsage,
                  "NCCLEMU: ncclGetLsaMultimemDevicePointer is not emulated");
  EXPECT_ONE_WARN(ncclLsaBarrierCreateRequirement(ncclTeamWorld(c), 1, &lsa, &req),
                  ncclInvalidUsage, "NCCLEMU: ncclLsaBarrierCreateRequirement is not emulated");
  EXPECT_ONE_WARN(ncclLLA2ACreateRequirement(1, 1, NULL, &req), ncclInvalidUsage,
                  "NCCLEMU: ncclLLA2ACreateRequirement is not emulated");
  typedef ncclResult_t (*simulate_fn)(ncclSimInfo_t *);
  simulate_fn p = (simulate_fn)dlsym(RTLD_DEFAULT, "pncclGroupSimulateEnd");
  CHECK(p != NULL);
  if (p)
    EXPECT_ONE_WARN(p(&info), ncclInvalidUsage, "NCCLEMU: ncclGroupSimulateEnd is not emulated");
  ncclCommDestroy(c);
}

static void profiling_aliases_are_the_same_functions(void) {
  static const char *names[] = {"ncclAllReduce", "ncclCommInitRank", "ncclCommDestroy",
                                "ncclGroupEnd",  "ncclAlltoAll",     "ncclGather",
                                "ncclScatter",   "ncclMemAlloc",     "ncclCommShrink"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char p[64];
    snprintf(p, sizeof(p), "p%s", names[i]);
    void *f = dlsym(RTLD_DEFAULT, names[i]), *pf = dlsym(RTLD_DEFAULT, p);
    CHECK(f != NULL);
    CHECK(f == pf);
  }
  void *mem = NULL;
  CHECK_EQ(ncclMemAlloc(&mem, 1024), ncclSuccess);
  CHECK(mem != NULL);
  CHECK_EQ(ncclMemFree(mem), ncclSuccess);
}

static void last_error_holds_the_last_warning(void) {
  CHECK_EQ(ncclCommCount(NULL, NULL), ncclInvalidArgument);
  CHECK(strcmp(ncclGetLastError(NULL), "ncclCommCount : comm argument is NULL") == 0);
}

/* Handles are heap addresses, and the heap reuses them: a new comm may get a destroyed one's
 * address, and is then a live communicator like any other. */
static void a_reused_address_is_a_new_live_communicator(void) {
  ncclComm_t first = solo();
  CHECK_EQ(ncclCommDestroy(first), ncclSuccess);
  bool reused = false;
  ncclComm_t keep[64];
  int n = 0;
  for (; n < 64 && !reused; n++) {
    keep[n] = solo();
    reused = keep[n] == first;
  }
  int count = 0;
  CHECK_EQ(ncclCommCount(first, &count), reused ? ncclSuccess : ncclInvalidArgument);
  for (int i = 0; i < n; i++)
    CHECK_EQ(ncclCommDestroy(keep[i]), ncclSuccess);
}

static const struct test_case cases[] = {
    {"destroy_twice_is_one_warning_and_an_error", destroy_twice_is_one_warning_and_an_error, NULL,
     NULL},
    {"abort_twice_and_across_destroy_and_abort", abort_twice_and_across_destroy_and_abort, NULL,
     NULL},
    {"use_after_destroy_is_refused", use_after_destroy_is_refused, NULL, NULL},
    {"collective_on_an_aborted_comm_is_refused", collective_on_an_aborted_comm_is_refused, NULL,
     NULL},
    {"null_and_foreign_handles", null_and_foreign_handles, NULL, NULL},
    {"bad_collective_arguments", bad_collective_arguments, NULL, NULL},
    {"bad_streams_are_cuda_failures", bad_streams_are_cuda_failures, NULL, NULL},
    {"group_end_without_start", group_end_without_start, NULL, NULL},
    {"ranks_that_disagree_get_an_async_error", ranks_that_disagree_get_an_async_error, NULL, NULL},
    {"not_emulated_functions_answer_invalid_usage", not_emulated_functions_answer_invalid_usage,
     NULL, NULL},
    {"profiling_aliases_are_the_same_functions", profiling_aliases_are_the_same_functions, NULL,
     NULL},
    {"last_error_holds_the_last_warning", last_error_holds_the_last_warning, NULL, NULL},
    {"a_reused_address_is_a_new_live_communicator", a_reused_address_is_a_new_live_communicator,
     NULL, NULL},
};

TEST_MAIN(cases)
