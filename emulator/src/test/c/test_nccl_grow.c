/* NCCL 2.29's ncclCommGetUniqueId / ncclCommGrow (a new communicator from a parent, new ranks
 * joining) and ncclCommRevoke (a communicator's work stops; it still has to be destroyed). */
#include "test.h"

static ncclComm_t parents[2];
static ncclUniqueId parent_id, grow_id;
static ncclComm_t grown[4];

static void make_parents(void) {
  REQUIRE_EQ(ncclGetUniqueId(&parent_id), ncclSuccess);
  REQUIRE_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    ncclCommInitRank(&parents[r], 2, parent_id, r);
  }
  REQUIRE_EQ(ncclGroupEnd(), ncclSuccess);
  cudaSetDevice(0);
}

/* rank 0 of the parent made the id and passes it, rank 1 passes none, ranks 2 and 3 are new */
static void *grow_rank(void *arg) {
  int r = (int)(intptr_t)arg;
  if (r < 2) {
    CHECK_EQ(ncclCommGrow(parents[r], 4, r == 0 ? &grow_id : NULL, -1, &grown[r], NULL),
             ncclSuccess);
  } else {
    cudaSetDevice(r + 2);
    CHECK_EQ(ncclCommGrow(NULL, 4, &grow_id, r, &grown[r], NULL), ncclSuccess);
  }
  return NULL;
}

static void allreduce_sums(ncclComm_t *c, int n) {
  static int v[8];
  cudaStream_t s[8];
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; r++) {
    int dev = -1;
    ncclCommCuDevice(c[r], &dev);
    cudaSetDevice(dev);
    cudaStreamCreate(&s[r]);
    v[r] = r + 1;
    CHECK_EQ(ncclAllReduce(&v[r], &v[r], 1, ncclInt32, ncclSum, c[r], s[r]), ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < n; r++) {
    cudaStreamSynchronize(s[r]);
    CHECK_EQ(v[r], n * (n + 1) / 2);
    cudaStreamDestroy(s[r]);
  }
  cudaSetDevice(0);
}

static void new_ranks_join_a_grown_communicator(void) {
  make_parents();
  REQUIRE_EQ(ncclCommGetUniqueId(parents[0], &grow_id), ncclSuccess);
  run_threads(4, grow_rank);
  int devices[4] = {0, 1, 4, 5};
  for (int r = 0; r < 4; r++) {
    int rank = -1, count = 0, dev = -1;
    CHECK_EQ(ncclCommUserRank(grown[r], &rank), ncclSuccess);
    CHECK_EQ(ncclCommCount(grown[r], &count), ncclSuccess);
    CHECK_EQ(ncclCommCuDevice(grown[r], &dev), ncclSuccess);
    CHECK_EQ(rank, r);
    CHECK_EQ(count, 4);
    CHECK_EQ(dev, devices[r]);
  }
  allreduce_sums(grown, 4);
  allreduce_sums(parents, 2); /* the parent is untouched */
  for (int r = 0; r < 4; r++)
    CHECK_EQ(ncclCommDestroy(grown[r]), ncclSuccess);
  for (int r = 0; r < 2; r++)
    CHECK_EQ(ncclCommDestroy(parents[r]), ncclSuccess);
}

/* One thread may grow every rank in a group, as it may init them. */
static void a_group_grows_every_rank_from_one_thread(void) {
  make_parents();
  REQUIRE_EQ(ncclCommGetUniqueId(parents[0], &grow_id), ncclSuccess);
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; r++)
    CHECK_EQ(ncclCommGrow(r < 2 ? parents[r] : NULL, 3, r == 1 ? NULL : &grow_id, r < 2 ? -1 : r,
                          &grown[r], NULL),
             ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  allreduce_sums(grown, 3);
  for (int r = 0; r < 3; r++)
    CHECK_EQ(ncclCommDestroy(grown[r]), ncclSuccess);
  for (int r = 0; r < 2; r++)
    ncclCommDestroy(parents[r]);
}

/* src/init.cc: commHash = hashCombine(the grow's magic, nRanks); the magic is hashCombine(the
 * parent's bootstrap magic, its childCount), and a parent from ncclCommInitRank has its id's
 * first 8 bytes as magic. The profiler plugin gets that commId on every rank. */
static void a_grown_comm_gets_nccls_commid(void) {
  make_parents();
  REQUIRE_EQ(ncclCommGetUniqueId(parents[0], &grow_id), ncclSuccess);
  run_threads(4, grow_rank);
  uint64_t magic;
  memcpy(&magic, parent_id.internal, sizeof(magic));
  uint64_t want = hash_combine(hash_combine(magic, 1), 4);
  char *log = read_file(test_path("plugin.log"));
  char needle[64];
  snprintf(needle, sizeof(needle), "commId=0x%llx ", (unsigned long long)want);
  CHECK_EQ(count_of(log, needle), 4);
  free(log);
  char *info = read_file(test_path("nccl.log"));
  snprintf(needle, sizeof(needle),
           "Generated commHash 0x%llx from baseMagic 0x%llx and newNRanks 4",
           (unsigned long long)want, (unsigned long long)hash_combine(magic, 1));
  CHECK_EQ(count_of(info, needle), 4);
  /* an existing rank's line names its parent, a new rank's its commId, as NCCL's */
  snprintf(needle, sizeof(needle), "ncclCommGrow comm %p rank 1 nranks 4 ", (void *)grown[1]);
  CHECK(strstr(line_with(info, needle, 0), " parent ") != NULL);
  snprintf(needle, sizeof(needle), "commId 0x%llx - Init COMPLETE", (unsigned long long)want);
  CHECK_EQ(count_of(info, needle), 2);
  free(info);
  for (int r = 0; r < 4; r++)
    ncclCommDestroy(grown[r]);
  for (int r = 0; r < 2; r++)
    ncclCommDestroy(parents[r]);
}

static void grow_arguments_are_checked_as_nccl_checks_them(void) {
  make_parents();
  ncclComm_t g;
  ncclUniqueId plain;
  REQUIRE_EQ(ncclGetUniqueId(&plain), ncclSuccess);
  REQUIRE_EQ(ncclCommGetUniqueId(parents[0], &grow_id), ncclSuccess);
  EXPECT_ONE_WARN(ncclCommGrow(parents[0], 4, &grow_id, -1, NULL, NULL), ncclInvalidArgument,
                  "ncclCommGrow : newcomm argument is NULL");
  EXPECT_ONE_WARN(ncclCommGrow(parents[0], 0, &grow_id, -1, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: total ranks must be positive, got 0");
  EXPECT_ONE_WARN(ncclCommGrow(parents[0], 2, &grow_id, -1, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: total ranks 2 is less than current ranks 2");
  EXPECT_ONE_WARN(ncclCommGrow(parents[0], 4, &grow_id, 0, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: existing ranks must pass rank=-1, got 0");
  EXPECT_ONE_WARN(ncclCommGrow(NULL, 4, &grow_id, -1, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: new ranks must pass valid rank >= 0, got -1");
  EXPECT_ONE_WARN(ncclCommGrow(NULL, 4, NULL, 2, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: new ranks must pass non-NULL uniqueId");
  EXPECT_ONE_WARN(ncclCommGrow(NULL, 4, &grow_id, 4, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: new rank 4 exceeds total ranks 4");
  EXPECT_ONE_WARN(ncclCommGrow(NULL, 4, &grow_id, 1, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: new rank 1 is one of the 2 existing ranks");
  EXPECT_ONE_WARN(ncclCommGrow(NULL, 4, &plain, 2, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: the unique id was not made by ncclCommGetUniqueId");
  /* another communicator's grow id does not fit this one */
  ncclComm_t other;
  ncclUniqueId other_id, other_grow;
  REQUIRE_EQ(ncclGetUniqueId(&other_id), ncclSuccess);
  REQUIRE_EQ(ncclCommInitRank(&other, 1, other_id, 0), ncclSuccess);
  REQUIRE_EQ(ncclCommGetUniqueId(other, &other_grow), ncclSuccess);
  EXPECT_ONE_WARN(ncclCommGrow(parents[0], 4, &other_grow, -1, &g, NULL), ncclInvalidArgument,
                  "ncclCommGrow: magic mismatch computed by the root");
  ncclCommDestroy(other);
  EXPECT_ONE_WARN(ncclCommGetUniqueId(parents[0], NULL), ncclInvalidArgument,
                  "CommGetUniqueId : uniqueId argument is NULL");
  for (int r = 0; r < 2; r++)
    ncclCommDestroy(parents[r]);
}

/* ---------------------------------------------------------------- revoke */

static ncclComm_t nonblocking_solo(void) {
  ncclUniqueId id;
  ncclComm_t c;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclResult_t r = ncclCommInitRankConfig(&c, 1, id, 0, &config);
  CHECK(r == ncclSuccess || r == ncclInProgress);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress)
    ncclCommGetAsyncError(c, &state);
  CHECK_EQ(state, ncclSuccess);
  return c;
}

/* Queued work does nothing when its stream gets there; the comm is in progress until then. */
static void revoke_stops_queued_work_and_is_in_progress_until_quiet(void) {
  ncclComm_t c = nonblocking_solo();
  cudaStream_t s;
  cudaStreamCreate(&s);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  static int in = 5, out = 0;
  CHECK_EQ(ncclAllReduce(&in, &out, 1, ncclInt32, ncclSum, c, s), ncclSuccess);
  CHECK_EQ(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT), ncclInProgress);
  ncclResult_t state = ncclSuccess;
  CHECK_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
  CHECK_EQ(state, ncclInProgress);
  gate_open(&g);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
  CHECK_EQ(state, ncclSuccess);
  CHECK_EQ(out, 0); /* it never ran */
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  cudaStreamDestroy(s);
}

static void a_revoked_comm_takes_no_work_and_no_finalize_but_is_destroyed(void) {
  ncclUniqueId id;
  ncclComm_t c, child = NULL;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  CHECK_EQ(ncclCommRevoke(NULL, 0), ncclSuccess);
  EXPECT_ONE_WARN(ncclCommRevoke(c, 1), ncclInvalidArgument,
                  "ncclCommRevoke: revokeFlags 1: must be NCCL_REVOKE_DEFAULT (0)");
  CHECK_EQ(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT), ncclSuccess); /* blocking: nothing queued */
  EXPECT_ONE_WARN(ncclCommRevoke(c, 0), ncclInvalidArgument,
                  "ncclCommRevoke: comm %p is being destroyed, finalized or revoked already",
                  (void *)c);
  int v = 1;
  EXPECT_ONE_WARN(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, c, 0), ncclInvalidUsage,
                  "ncclAllReduce: communicator was revoked");
  EXPECT_ONE_WARN(ncclSend(&v, 1, ncclInt32, 0, c, 0), ncclInvalidUsage,
                  "ncclSend: communicator was revoked");
  EXPECT_ONE_WARN(ncclCommFinalize(c), ncclInvalidArgument,
                  "ncclCommFinalize: comm %p was revoked", (void *)c);
  /* management goes on: a split of it works */
  CHECK_EQ(ncclCommSplit(c, 0, 0, &child, NULL), ncclSuccess);
  CHECK(child != NULL);
  CHECK_EQ(ncclCommDestroy(child), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

/* What a peer had in flight with the revoked rank fails, instead of waiting for it. */
static void the_peers_work_in_flight_with_a_revoked_rank_fails(void) {
  ncclComm_t c[2];
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  static int v = 1;
  cudaStream_t s;
  cudaStreamCreate(&s); /* device 0 */
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, c[0], s), ncclSuccess);
  cudaSetDevice(1);
  CHECK_EQ(ncclCommRevoke(c[1], 0), ncclSuccess);
  cudaSetDevice(0);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ncclResult_t async = ncclSuccess;
  CHECK_EQ(ncclCommGetAsyncError(c[0], &async), ncclSuccess);
  CHECK_EQ(async, ncclRemoteError);
  CHECK_EQ(ncclCommGetAsyncError(c[1], &async), ncclSuccess);
  CHECK_EQ(async, ncclSuccess);
  ncclCommDestroy(c[0]);
  ncclCommDestroy(c[1]);
  cudaStreamDestroy(s);
}

static void a_revoked_comm_left_alive_is_reported_as_revoked(void) {
  ncclUniqueId id;
  ncclComm_t c;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  CHECK_EQ(ncclCommRevoke(c, 0), ncclSuccess);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "comm %p rank 0 nranks 1 device 0 commId 0x%llx revoked\n", (void *)c,
          (unsigned long long)id_hash(&id));
  fclose(f);
}

static const struct test_case cases[] = {
    {"new_ranks_join_a_grown_communicator", new_ranks_join_a_grown_communicator, NULL, NULL},
    {"a_group_grows_every_rank_from_one_thread", a_group_grows_every_rank_from_one_thread, NULL,
     NULL},
    {"a_grown_comm_gets_nccls_commid", a_grown_comm_gets_nccls_commid,
     "NCCL_PROFILER_PLUGIN=testlog NCCLEMU_TESTLOG=@/plugin.log NCCL_DEBUG=INFO "
     "NCCL_DEBUG_FILE=@/nccl.log",
     NULL},
    {"grow_arguments_are_checked_as_nccl_checks_them",
     grow_arguments_are_checked_as_nccl_checks_them, NULL, NULL},
    {"revoke_stops_queued_work_and_is_in_progress_until_quiet",
     revoke_stops_queued_work_and_is_in_progress_until_quiet, NULL, NULL},
    {"a_revoked_comm_takes_no_work_and_no_finalize_but_is_destroyed",
     a_revoked_comm_takes_no_work_and_no_finalize_but_is_destroyed, NULL, NULL},
    {"the_peers_work_in_flight_with_a_revoked_rank_fails",
     the_peers_work_in_flight_with_a_revoked_rank_fails, NULL, NULL},
    {"a_revoked_comm_left_alive_is_reported_as_revoked",
     a_revoked_comm_left_alive_is_reported_as_revoked, "NCCLEMU_REPORT=@/report",
     exit_report_is_as_expected},
};

TEST_MAIN(cases)
