/* Many threads and communicators at once: 8 ranks x 4 communicators on rank threads, one thread
 * driving 8 x 4 through groups while others churn streams and events, and an abort under load. */
#include "test.h"

#define RANKS 8
#define COMMS 4
#define ITERS 12

static ncclUniqueId ids[COMMS];
static int64_t results[RANKS][ITERS][COMMS];
static int64_t ring_in[RANKS][ITERS];

static int64_t contribution(int rank, int iter, int comm) {
  return (int64_t)(rank + 1) * (iter + 1) * (comm + 1);
}

static void *rank_main(void *arg) {
  int rank = (int)(intptr_t)arg;
  ncclComm_t comm[COMMS];
  cudaStream_t stream[COMMS];
  cudaEvent_t done;
  cudaSetDevice(rank);
  for (int k = 0; k < COMMS; k++) {
    REQUIRE_EQ(ncclCommInitRank(&comm[k], RANKS, ids[k], rank), ncclSuccess);
    REQUIRE_EQ(cudaStreamCreateWithFlags(&stream[k], cudaStreamNonBlocking), cudaSuccess);
  }
  REQUIRE_EQ(cudaEventCreate(&done), cudaSuccess);
  int64_t mine[ITERS][COMMS], ring_out[ITERS];
  for (int i = 0; i < ITERS; i++) {
    /* each rank visits the communicators in its own order: every comm keeps one order per
     * comm, which is all NCCL asks */
    for (int j = 0; j < COMMS; j++) {
      int k = (rank + i + j) % COMMS;
      mine[i][k] = contribution(rank, i, k);
      CHECK_EQ(ncclAllReduce(&mine[i][k], &results[rank][i][k], 1, ncclInt64, ncclSum, comm[k],
                             stream[k]),
               ncclSuccess);
    }
    ring_out[i] = contribution(rank, i, 0);
    CHECK_EQ(ncclGroupStart(), ncclSuccess);
    CHECK_EQ(ncclSend(&ring_out[i], 1, ncclInt64, (rank + 1) % RANKS, comm[0], stream[0]),
             ncclSuccess);
    CHECK_EQ(ncclRecv(&ring_in[rank][i], 1, ncclInt64, (rank + RANKS - 1) % RANKS, comm[0],
                      stream[0]),
             ncclSuccess);
    CHECK_EQ(ncclGroupEnd(), ncclSuccess);
    CHECK_EQ(cudaEventRecord(done, stream[i % COMMS]), cudaSuccess);
    cudaError_t q = cudaEventQuery(done);
    CHECK(q == cudaSuccess || q == cudaErrorNotReady);
  }
  /* a split of a busy communicator, on the same threads */
  ncclComm_t half;
  CHECK_EQ(ncclCommSplit(comm[1], rank % 2, rank, &half, NULL), ncclSuccess);
  int64_t one = 1, sum = 0;
  CHECK_EQ(ncclAllReduce(&one, &sum, 1, ncclInt64, ncclSum, half, stream[1]), ncclSuccess);
  for (int k = 0; k < COMMS; k++)
    CHECK_EQ(cudaStreamSynchronize(stream[k]), cudaSuccess);
  CHECK_EQ(sum, RANKS / 2);
  CHECK_EQ(ncclCommDestroy(half), ncclSuccess);
  for (int k = 0; k < COMMS; k++) {
    CHECK_EQ(ncclCommDestroy(comm[k]), ncclSuccess);
    CHECK_EQ(cudaStreamDestroy(stream[k]), cudaSuccess);
  }
  CHECK_EQ(cudaEventDestroy(done), cudaSuccess);
  return NULL;
}

static void eight_ranks_times_four_communicators_on_threads(void) {
  for (int k = 0; k < COMMS; k++)
    REQUIRE_EQ(ncclGetUniqueId(&ids[k]), ncclSuccess);
  run_threads(RANKS, rank_main);
  int64_t total = 0;
  for (int r = 0; r < RANKS; r++)
    total += r + 1;
  for (int r = 0; r < RANKS; r++)
    for (int i = 0; i < ITERS; i++) {
      for (int k = 0; k < COMMS; k++)
        CHECK_EQ(results[r][i][k], total * (i + 1) * (k + 1));
      CHECK_EQ(ring_in[r][i], contribution((r + RANKS - 1) % RANKS, i, 0));
    }
  fclose(fopen(test_path("expected"), "w"));
}

static int report_is_empty(int status, const char *dir) {
  (void)status;
  char path[512];
  snprintf(path, sizeof(path), "%s/report", dir);
  char *report = read_file(path);
  int failures = !report || *report;
  if (failures)
    fprintf(stderr, "report should be empty:\n%s\n", report ? report : "(none)");
  free(report);
  return failures;
}

/* ---------------------------------------------------------------- one driver, many churners */

static int churn_stop;

static void *churn(void *arg) {
  cudaSetDevice((int)(intptr_t)arg);
  while (!__atomic_load_n(&churn_stop, __ATOMIC_SEQ_CST)) {
    cudaStream_t s;
    cudaEvent_t e;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess) {
      CHECK(0);
      break;
    }
    char buf[32];
    cudaMemsetAsync(buf, 3, sizeof(buf), s);
    cudaEventRecord(e, s);
    cudaStreamWaitEvent(NULL, e, 0);
    cudaEventSynchronize(e);
    CHECK_EQ(buf[31], 3);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
  }
  return NULL;
}

static void one_thread_drives_eight_by_four_while_others_churn(void) {
  ncclComm_t comm[COMMS][RANKS];
  cudaStream_t stream[RANKS];
  float data[COMMS][RANKS][16];
  pthread_t churners[2];
  for (long i = 0; i < 2; i++)
    pthread_create(&churners[i], NULL, churn, (void *)i);
  for (int k = 0; k < COMMS; k++)
    REQUIRE_EQ(ncclCommInitAll(comm[k], RANKS, NULL), ncclSuccess);
  for (int r = 0; r < RANKS; r++) {
    cudaSetDevice(r);
    REQUIRE_EQ(cudaStreamCreate(&stream[r]), cudaSuccess);
  }
  for (int i = 0; i < ITERS; i++) {
    for (int k = 0; k < COMMS; k++)
      for (int r = 0; r < RANKS; r++)
        for (int e = 0; e < 16; e++)
          data[k][r][e] = (float)(r + e + k);
    CHECK_EQ(ncclGroupStart(), ncclSuccess);
    for (int k = 0; k < COMMS; k++)
      for (int r = 0; r < RANKS; r++)
        CHECK_EQ(ncclAllReduce(data[k][r], data[k][r], 16, ncclFloat, ncclMax, comm[k][r],
                               stream[r]),
                 ncclSuccess);
    CHECK_EQ(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < RANKS; r++)
      CHECK_EQ(cudaStreamSynchronize(stream[r]), cudaSuccess);
    for (int k = 0; k < COMMS; k++)
      for (int r = 0; r < RANKS; r++)
        CHECK(data[k][r][15] == (float)(RANKS - 1 + 15 + k));
  }
  __atomic_store_n(&churn_stop, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < 2; i++)
    pthread_join(churners[i], NULL);
  for (int k = 0; k < COMMS; k++)
    for (int r = 0; r < RANKS; r++)
      CHECK_EQ(ncclCommDestroy(comm[k][r]), ncclSuccess);
  for (int r = 0; r < RANKS; r++)
    cudaStreamDestroy(stream[r]);
}

/* ---------------------------------------------------------------- abort under load */

#define VICTIM 3
static ncclUniqueId abort_id;

static void *loaded_rank(void *arg) {
  int rank = (int)(intptr_t)arg;
  ncclComm_t comm;
  cudaStream_t s;
  cudaSetDevice(rank);
  REQUIRE_EQ(ncclCommInitRank(&comm, RANKS, abort_id, rank), ncclSuccess);
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  static double v[RANKS][30][64]; /* one buffer per op: earlier ops may still be in flight */
  for (int i = 0; i < 30; i++) {
    if (rank == VICTIM && i == 10) {
      CHECK_EQ(ncclCommAbort(comm), ncclSuccess);
      break;
    }
    for (int e = 0; e < 64; e++)
      v[rank][i][e] = rank;
    CHECK_EQ(ncclAllReduce(v[rank][i], v[rank][i], 64, ncclDouble, ncclSum, comm, s),
             ncclSuccess);
    if (i % 3 == 0)
      CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  /* nothing hangs: work that needed the victim failed */
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  if (rank != VICTIM) {
    ncclResult_t async = ncclSuccess;
    CHECK_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    CHECK_EQ(async, ncclRemoteError);
    CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
  }
  cudaStreamDestroy(s);
  return NULL;
}

static void abort_of_one_rank_under_load_fails_the_others_cleanly(void) {
  REQUIRE_EQ(ncclGetUniqueId(&abort_id), ncclSuccess);
  run_threads(RANKS, loaded_rank);
  fclose(fopen(test_path("expected"), "w"));
}

static const struct test_case cases[] = {
    {"eight_ranks_times_four_communicators_on_threads",
     eight_ranks_times_four_communicators_on_threads, "NCCLEMU_REPORT=@/report", report_is_empty},
    {"one_thread_drives_eight_by_four_while_others_churn",
     one_thread_drives_eight_by_four_while_others_churn, NULL, NULL},
    {"abort_of_one_rank_under_load_fails_the_others_cleanly",
     abort_of_one_rank_under_load_fails_the_others_cleanly, "NCCLEMU_REPORT=@/report",
     report_is_empty},
};

TEST_MAIN(cases)
