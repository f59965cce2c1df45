/* What NCCL hands out besides communicators: ncclMemAlloc memory, registrations, windows and
 * device communicators (each in the exit report while alive, gone with its comm), the device
 * API's host queries, and the one-sided calls of NCCL 2.29. */
#include "test.h"

static ncclComm_t solo(void) {
  ncclUniqueId id;
  ncclComm_t c;
  ncclGetUniqueId(&id);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  return c;
}

/* ---------------------------------------------------------------- ncclMemAlloc */

static void nccl_memory_is_listed_until_freed(void) {
  void *a = NULL, *b = NULL, *plain = NULL;
  CHECK_EQ(ncclMemAlloc(&a, 1024), ncclSuccess);
  CHECK_EQ(ncclMemAlloc(&b, 4096), ncclSuccess);
  CHECK_EQ(ncclMemFree(a), ncclSuccess);
  /* memory NCCL did not allocate goes to cudaFree, as NCCL's fallback does */
  CHECK_EQ(cudaMalloc(&plain, 64), cudaSuccess);
  CHECK_EQ(ncclMemFree(plain), ncclSuccess);
  static int junk;
  EXPECT_ONE_WARN(ncclMemFree(&junk), ncclUnhandledCudaError, "Cuda failure 'invalid argument'");
  CHECK_EQ(ncclMemFree(NULL), ncclSuccess);
  /* usable as device memory */
  ncclComm_t c = solo();
  ((int *)b)[0] = 7;
  CHECK_EQ(ncclAllReduce(b, b, 1, ncclInt32, ncclSum, c, 0), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
  CHECK_EQ(((int *)b)[0], 7);
  ncclCommDestroy(c);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "memory %p device 0 bytes 4096\n", b);
  fclose(f);
}

/* ---------------------------------------------------------------- registrations */

static char buffer[8192];

/* A range inside a registered one is the same handle, counted again (NCCL's cache). */
static void registrations_count_and_stay_with_a_leaked_comm(void) {
  ncclComm_t c = solo();
  void *h1 = NULL, *h2 = NULL, *h3 = NULL;
  CHECK_EQ(ncclCommRegister(c, buffer, 4096, &h1), ncclSuccess);
  CHECK_EQ(ncclCommRegister(c, buffer + 100, 200, &h2), ncclSuccess);
  CHECK(h1 == h2 && h1 != NULL);
  CHECK_EQ(ncclCommRegister(c, buffer + 4096, 4096, &h3), ncclSuccess);
  CHECK(h3 != h1);
  CHECK_EQ(ncclCommDeregister(c, h3), ncclSuccess);
  CHECK_EQ(ncclCommDeregister(c, h1), ncclSuccess); /* once of twice */
  static int junk;
  EXPECT_ONE_WARN(ncclCommDeregister(c, &junk), ncclInvalidUsage,
                  "Deregister: Could not find handle");
  EXPECT_ONE_WARN(ncclCommDeregister(c, h3), ncclInvalidUsage,
                  "Deregister: Could not find handle");
  CHECK_EQ(ncclCommDeregister(c, NULL), ncclSuccess);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "comm %p rank 0 nranks 1 device 0 commId *\n"
             "registration %p comm %p buff %p bytes 4096 refs 1\n",
          (void *)c, h1, (void *)c, (void *)buffer);
  fclose(f);
}

/* NCCL frees a comm's registrations, windows and device comms at its destroy. */
static void a_comms_resources_go_with_it(void) {
  ncclComm_t c = solo(), d = solo();
  void *h;
  ncclWindow_t w;
  ncclDevComm_t dev;
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  CHECK_EQ(ncclCommRegister(c, buffer, 64, &h), ncclSuccess);
  CHECK_EQ(ncclCommWindowRegister(c, buffer, 4096, &w, NCCL_WIN_COLL_SYMMETRIC), ncclSuccess);
  CHECK_EQ(ncclDevCommCreate(c, &reqs, &dev), ncclSuccess);
  CHECK_EQ(ncclCommRegister(d, buffer, 64, &h), ncclSuccess);
  CHECK_EQ(ncclCommWindowRegister(d, buffer, 64, &w, 0), ncclSuccess);
  CHECK_EQ(ncclDevCommCreate(d, &reqs, &dev), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  CHECK_EQ(ncclCommAbort(d), ncclSuccess);
  EXPECT_ONE_WARN(ncclWinGetUserPtr(d, w, &h), ncclInvalidArgument,
                  "ncclWinGetUserPtr: comm %p is not a live communicator", (void *)d);
  FILE *f = fopen(test_path("expected"), "w");
  fclose(f);
}

/* ---------------------------------------------------------------- windows */

static int win_buf[2][16];

static void windows_reach_every_ranks_buffer(void) {
  ncclComm_t c[2];
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  ncclWindow_t w[2];
  for (int r = 0; r < 2; r++)
    CHECK_EQ(ncclCommWindowRegister(c[r], win_buf[r], sizeof(win_buf[r]), &w[r],
                                    NCCL_WIN_COLL_SYMMETRIC),
             ncclSuccess);
  void *p = NULL;
  CHECK_EQ(ncclWinGetUserPtr(c[1], w[1], &p), ncclSuccess);
  CHECK(p == win_buf[1]);
  CHECK_EQ(ncclGetPeerDevicePointer(w[0], 8, 1, &p), ncclSuccess);
  CHECK(p == (char *)win_buf[1] + 8);
  CHECK_EQ(ncclGetLsaDevicePointer(w[1], 0, 0, &p), ncclSuccess);
  CHECK(p == win_buf[0]);
  EXPECT_ONE_WARN(ncclGetPeerDevicePointer(w[0], 64, 1, &p), ncclInvalidArgument,
                  "ncclGetPeerDevicePointer: offset 64 is past rank 1's 64 bytes of window");
  EXPECT_ONE_WARN(ncclWinGetUserPtr(c[0], w[1], &p), ncclInvalidArgument,
                  "ncclWinGetUserPtr: window %p is not a window of comm %p", (void *)w[1],
                  (void *)c[0]);
  ncclWindow_t bad;
  EXPECT_ONE_WARN(ncclCommWindowRegister(c[0], NULL, 16, &bad, 0), ncclInvalidArgument,
                  "ncclCommWindowRegister: invalid pointer (nil) / size 16");
  CHECK(bad == NULL);
  CHECK_EQ(ncclCommWindowDeregister(c[1], w[1]), ncclSuccess);
  EXPECT_ONE_WARN(ncclGetPeerDevicePointer(w[0], 0, 1, &p), ncclInvalidArgument,
                  "ncclGetPeerDevicePointer: rank 1 has no part of window %p", (void *)w[0]);
  EXPECT_ONE_WARN(ncclCommWindowDeregister(c[1], w[1]), ncclInvalidArgument,
                  "ncclCommWindowDeregister: window %p is not a window of comm %p", (void *)w[1],
                  (void *)c[1]);
  CHECK_EQ(ncclCommWindowDeregister(c[0], NULL), ncclSuccess);
  CHECK_EQ(ncclCommWindowDeregister(c[0], w[0]), ncclSuccess);
  ncclCommDestroy(c[0]);
  ncclCommDestroy(c[1]);
}

static void windows_and_device_comms_of_a_leaked_comm_are_listed(void) {
  ncclComm_t c = solo();
  ncclWindow_t w;
  ncclDevComm_t dev;
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  CHECK_EQ(ncclCommWindowRegister(c, buffer, 4096, &w, NCCL_WIN_COLL_SYMMETRIC), ncclSuccess);
  CHECK_EQ(ncclDevCommCreate(c, &reqs, &dev), ncclSuccess);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "comm %p rank 0 nranks 1 device 0 commId *\n"
             "window %p comm %p buff %p bytes 4096 flags 1\n"
             "devcomm %p comm %p rank 0\n",
          (void *)c, (void *)w, (void *)c, (void *)buffer, (void *)dev.resourceWindow,
          (void *)c);
  fclose(f);
}

/* ---------------------------------------------------------------- device communicators */

static void device_comms_are_created_and_destroyed_as_nccls(void) {
  ncclComm_t c[3];
  REQUIRE_EQ(ncclCommInitAll(c, 3, NULL), ncclSuccess);
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  ncclDevComm_t dev;
  memset(&dev, 0xff, sizeof(dev));
  CHECK_EQ(ncclDevCommCreate(c[2], &reqs, &dev), ncclSuccess);
  CHECK_EQ(dev.rank, 2);
  CHECK_EQ(dev.nRanks, 3);
  CHECK_EQ(dev.lsaRank, 2);
  CHECK_EQ(dev.lsaSize, 3);
  CHECK(dev.resourceWindow != NULL);
  CHECK(dev.windowTable == NULL);
  /* NCCL finds the device comm by its resourceWindow: a copy of the struct works as well */
  ncclDevComm_t copy = dev;
  CHECK_EQ(ncclDevCommDestroy(c[2], &copy), ncclSuccess);
  EXPECT_ONE_WARN(ncclDevCommDestroy(c[2], &dev), ncclInvalidArgument,
                  "ncclDevCommDestroy: %p is not a device communicator of comm %p",
                  (void *)&dev, (void *)c[2]);
  ncclDevCommRequirements_t raw;
  memset(&raw, 0, sizeof(raw));
  EXPECT_ONE_WARN(ncclDevCommCreate(c[0], &raw, &dev), ncclInvalidUsage,
                  "Cannot create device communicator: ncclDevCommRequirements_t argument must be "
                  "initialized via NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER");
  reqs.version = NCCL_VERSION(2, 30, 3);
  EXPECT_ONE_WARN(ncclDevCommCreate(c[0], &reqs, &dev), ncclInvalidUsage,
                  "NCCL library version is too old.");
  for (int r = 0; r < 3; r++)
    ncclCommDestroy(c[r]);
}

static void teams_and_properties(void) {
  ncclComm_t c[4];
  REQUIRE_EQ(ncclCommInitAll(c, 4, NULL), ncclSuccess);
  ncclTeam_t world = ncclTeamWorld(c[1]);
  CHECK_EQ(world.nRanks, 4);
  CHECK_EQ(world.rank, 1);
  CHECK_EQ(world.stride, 1);
  ncclTeam_t lsa = ncclTeamLsa(c[1]);
  CHECK_EQ(lsa.nRanks, 4);
  CHECK_EQ(ncclTeamRankToWorld(c[1], world, 3), 3);
  CHECK_EQ(ncclTeamRankToLsa(c[1], lsa, 0), 0);
  ncclTeam_t rail = ncclTeamRail(c[1]);
  CHECK_EQ(rail.nRanks, 1);
  CHECK_EQ(ncclLLA2ACalcSlots(10, 12), 20);
/* NCCL's initializer names the first three fields only, as users of its header write it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
#pragma GCC diagnostic pop
  cudaSetDevice(2);
  CHECK_EQ(ncclCommQueryProperties(c[2], &props), ncclSuccess);
  CHECK_EQ(props.rank, 2);
  CHECK_EQ(props.nRanks, 4);
  CHECK_EQ(props.cudaDev, 2);
  CHECK_EQ(props.deviceApiSupport, 1);
  CHECK_EQ(props.multimemSupport, 0);
  ncclCommProperties_t raw;
  memset(&raw, 0, sizeof(raw));
  EXPECT_ONE_WARN(ncclCommQueryProperties(c[2], &raw), ncclInvalidUsage,
                  "Cannot get communicator properties");
  for (int r = 0; r < 4; r++)
    ncclCommDestroy(c[r]);
}

/* ---------------------------------------------------------------- one-sided */

struct rma {
  ncclComm_t c[2];
  ncclWindow_t w[2];
  cudaStream_t s[2];
};

static void rma_setup(struct rma *m) {
  REQUIRE_EQ(ncclCommInitAll(m->c, 2, NULL), ncclSuccess);
  memset(win_buf, 0, sizeof(win_buf));
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&m->s[r]);
    REQUIRE_EQ(ncclCommWindowRegister(m->c[r], win_buf[r], sizeof(win_buf[r]), &m->w[r],
                                      NCCL_WIN_COLL_SYMMETRIC),
               ncclSuccess);
  }
  cudaSetDevice(0);
}

static void rma_teardown(struct rma *m) {
  for (int r = 0; r < 2; r++) {
    ncclCommWindowDeregister(m->c[r], m->w[r]);
    ncclCommDestroy(m->c[r]);
    cudaStreamDestroy(m->s[r]);
  }
}

/* The wait holds rank 1's stream (work in flight) until rank 0's put signalled; then the data
 * is in rank 1's part of the window. */
static void a_put_lands_in_the_peers_window_and_releases_its_wait(void) {
  struct rma m;
  rma_setup(&m);
  ncclWaitSignalDesc_t desc = {.opCnt = 1, .peer = 0, .sigIdx = 0, .ctx = 0};
  CHECK_EQ(ncclWaitSignal(1, &desc, m.c[1], m.s[1]), ncclSuccess);
  sleep_ms(20);
  CHECK_EQ(cudaStreamQuery(m.s[1]), cudaErrorNotReady);
  for (int i = 0; i < 4; i++)
    win_buf[0][i] = 10 + i;
  CHECK_EQ(ncclPutSignal(win_buf[0], 4, ncclInt32, 1, m.w[0], 4 * sizeof(int), 0, 0, 0, m.c[0],
                         m.s[0]),
           ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(m.s[1]), cudaSuccess);
  CHECK_EQ(win_buf[1][4], 10);
  CHECK_EQ(win_buf[1][7], 13);
  CHECK_EQ(win_buf[1][0], 0);
  /* a signal without data, waited for by opCnt */
  CHECK_EQ(ncclSignal(0, 0, 0, 0, m.c[1], m.s[1]), ncclSuccess);
  CHECK_EQ(ncclSignal(0, 0, 0, 0, m.c[1], m.s[1]), ncclSuccess);
  desc = (ncclWaitSignalDesc_t){.opCnt = 2, .peer = 1};
  CHECK_EQ(ncclWaitSignal(1, &desc, m.c[0], m.s[0]), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(m.s[0]), cudaSuccess);
  ncclResult_t async = ncclInProgress;
  CHECK_EQ(ncclCommGetAsyncError(m.c[0], &async), ncclSuccess);
  CHECK_EQ(async, ncclSuccess);
  rma_teardown(&m);
}

static void one_sided_arguments_are_checked_as_nccl_checks_them(void) {
  struct rma m;
  rma_setup(&m);
  static int outside[4];
  ncclWaitSignalDesc_t desc = {.opCnt = 0, .peer = 1};
  EXPECT_ONE_WARN(ncclPutSignal(win_buf[0], 1, ncclInt32, 1, m.w[0], 0, 0, 1, 0, m.c[0], m.s[0]),
                  ncclInvalidArgument, "Context 1 is invalid (must be 0)");
  EXPECT_ONE_WARN(ncclSignal(1, 2, 0, 0, m.c[0], m.s[0]), ncclInvalidArgument,
                  "Signal index 2 is invalid (must be 0)");
  EXPECT_ONE_WARN(ncclSignal(1, 0, 0, 4, m.c[0], m.s[0]), ncclInvalidArgument,
                  "Flags 4 is invalid (must be 0)");
  EXPECT_ONE_WARN(ncclPutSignal(win_buf[0], 1, ncclInt32, 1, NULL, 0, 0, 0, 0, m.c[0], m.s[0]),
                  ncclInvalidArgument, "ncclPutSignal: peerWin is NULL");
  EXPECT_ONE_WARN(ncclPutSignal(outside, 1, ncclInt32, 1, m.w[0], 0, 0, 0, 0, m.c[0], m.s[0]),
                  ncclInvalidArgument,
                  "ncclPutSignal: srcWinHost is not in a valid symmetric window");
  EXPECT_ONE_WARN(ncclWaitSignal(1, &desc, m.c[0], m.s[0]), ncclInvalidArgument,
                  "ncclWaitSignal: descriptor 0 has invalid opCnt 0");
  EXPECT_ONE_WARN(ncclWaitSignal(0, NULL, m.c[0], m.s[0]), ncclInvalidArgument,
                  "ncclWaitSignal: invalid arguments");
  /* past the peer's part of the window: an async error when it runs */
  capture_stderr();
  CHECK_EQ(ncclPutSignal(win_buf[0], 4, ncclInt32, 1, m.w[0], 60, 0, 0, 0, m.c[0], m.s[0]),
           ncclSuccess);
  cudaStreamSynchronize(m.s[0]);
  char *err = captured_stderr();
  CHECK(is_one_warn_line(err, "NCCLEMU: ncclPutSignal to rank 1 failed"));
  free(err);
  ncclResult_t async = ncclSuccess;
  CHECK_EQ(ncclCommGetAsyncError(m.c[0], &async), ncclSuccess);
  CHECK_EQ(async, ncclInvalidUsage);
  rma_teardown(&m);
}

/* A wait that never gets its signal holds its stream until the comm is aborted. */
static void abort_releases_a_stuck_wait(void) {
  struct rma m;
  rma_setup(&m);
  ncclWaitSignalDesc_t desc = {.opCnt = 1, .peer = 0};
  CHECK_EQ(ncclWaitSignal(1, &desc, m.c[1], m.s[1]), ncclSuccess);
  sleep_ms(20);
  CHECK_EQ(cudaStreamQuery(m.s[1]), cudaErrorNotReady);
  CHECK_EQ(ncclCommAbort(m.c[1]), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(m.s[1]), cudaSuccess);
  ncclCommDestroy(m.c[0]);
  cudaStreamDestroy(m.s[0]);
  cudaStreamDestroy(m.s[1]);
}

#define REPORT "NCCLEMU_REPORT=@/report"

static const struct test_case cases[] = {
    {"nccl_memory_is_listed_until_freed", nccl_memory_is_listed_until_freed, REPORT,
     exit_report_is_as_expected},
    {"registrations_count_and_stay_with_a_leaked_comm",
     registrations_count_and_stay_with_a_leaked_comm, REPORT, exit_report_is_as_expected},
    {"a_comms_resources_go_with_it", a_comms_resources_go_with_it, REPORT,
     exit_report_is_as_expected},
    {"windows_reach_every_ranks_buffer", windows_reach_every_ranks_buffer, NULL, NULL},
    {"windows_and_device_comms_of_a_leaked_comm_are_listed",
     windows_and_device_comms_of_a_leaked_comm_are_listed, REPORT, exit_report_is_as_expected},
    {"device_comms_are_created_and_destroyed_as_nccls",
     device_comms_are_created_and_destroyed_as_nccls, NULL, NULL},
    {"teams_and_properties", teams_and_properties, NULL, NULL},
    {"a_put_lands_in_the_peers_window_and_releases_its_wait",
     a_put_lands_in_the_peers_window_and_releases_its_wait, NULL, NULL},
    {"one_sided_arguments_are_checked_as_nccl_checks_them",
     one_sided_arguments_are_checked_as_nccl_checks_them, NULL, NULL},
    {"abort_releases_a_stuck_wait", abort_releases_a_stuck_wait, NULL, NULL},
};

TEST_MAIN(cases)
