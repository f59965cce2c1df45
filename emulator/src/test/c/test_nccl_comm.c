/* Communicators: init in all its forms, split, shrink, finalize, destroy, abort, queries. */
#include "test.h"

extern ncclResult_t pncclGetVersion(int *version);

static void version_is_2_29_3(void) {
  int v = 0;
  CHECK_EQ(ncclGetVersion(&v), ncclSuccess);
  CHECK_EQ(v, 22903);
  v = 0;
  CHECK_EQ(pncclGetVersion(&v), ncclSuccess);
  CHECK_EQ(v, 22903);
}

static void error_strings_are_nccls(void) {
  CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  CHECK(strstr(ncclGetErrorString(ncclInvalidUsage), "invalid usage") != NULL);
  CHECK(strstr(ncclGetErrorString(ncclRemoteError), "remote process exited") != NULL);
  CHECK(strcmp(ncclGetErrorString((ncclResult_t)42), "unknown result code") == 0);
  CHECK_EQ(sizeof(ncclUniqueId), 128);
}

static void unique_ids_differ(void) {
  ncclUniqueId a, b;
  CHECK_EQ(ncclGetUniqueId(&a), ncclSuccess);
  CHECK_EQ(ncclGetUniqueId(&b), ncclSuccess);
  CHECK(memcmp(&a, &b, sizeof(a)) != 0);
}

/* ---------------------------------------------------------------- init on threads */

#define N 4
static ncclUniqueId shared_id;
static ncclComm_t comms[N];

static void *init_rank_on_device(void *arg) {
  int r = (int)(intptr_t)arg;
  cudaSetDevice(N - 1 - r);
  CHECK_EQ(ncclCommInitRank(&comms[r], N, shared_id, r), ncclSuccess);
  return NULL;
}

static void ranks_on_threads_meet_through_the_unique_id(void) {
  REQUIRE_EQ(ncclGetUniqueId(&shared_id), ncclSuccess);
  run_threads(N, init_rank_on_device);
  for (int r = 0; r < N; r++) {
    int count = 0, rank = -1, dev = -1;
    CHECK_EQ(ncclCommCount(comms[r], &count), ncclSuccess);
    CHECK_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    CHECK_EQ(ncclCommCuDevice(comms[r], &dev), ncclSuccess);
    CHECK_EQ(count, N);
    CHECK_EQ(rank, r);
    CHECK_EQ(dev, N - 1 - r); /* the device current on the thread at init */
    ncclResult_t async = ncclInProgress;
    CHECK_EQ(ncclCommGetAsyncError(comms[r], &async), ncclSuccess);
    CHECK_EQ(async, ncclSuccess);
  }
  for (int r = 0; r < N; r++)
    CHECK_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
}

static ncclUniqueId scalable_ids[2];

static void *init_scalable(void *arg) {
  int r = (int)(intptr_t)arg;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  CHECK_EQ(ncclCommInitRankScalable(&comms[r], N, r, 2, scalable_ids, &config), ncclSuccess);
  return NULL;
}

static void init_rank_scalable_takes_several_ids(void) {
  REQUIRE_EQ(ncclGetUniqueId(&scalable_ids[0]), ncclSuccess);
  REQUIRE_EQ(ncclGetUniqueId(&scalable_ids[1]), ncclSuccess);
  run_threads(N, init_scalable);
  for (int r = 0; r < N; r++) {
    int rank = -1, count = 0;
    CHECK_EQ(ncclCommUserRank(comms[r], &rank), ncclSuccess);
    CHECK_EQ(ncclCommCount(comms[r], &count), ncclSuccess);
    CHECK_EQ(rank, r);
    CHECK_EQ(count, N);
    CHECK_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  }
}

/* ---------------------------------------------------------------- init from one thread */

static void init_rank_in_a_group_from_one_thread(void) {
  ncclUniqueId id;
  ncclComm_t c[N];
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++) {
    cudaSetDevice(r);
    CHECK_EQ(ncclCommInitRank(&c[r], N, id, r), ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < N; r++) {
    int dev = -1;
    CHECK_EQ(ncclCommCuDevice(c[r], &dev), ncclSuccess);
    CHECK_EQ(dev, r);
    CHECK_EQ(ncclCommDestroy(c[r]), ncclSuccess);
  }
}

static void init_all_follows_the_device_list(void) {
  ncclComm_t c[3];
  int devlist[3] = {5, 2, 7};
  REQUIRE_EQ(ncclCommInitAll(c, 3, devlist), ncclSuccess);
  for (int r = 0; r < 3; r++) {
    int dev = -1, rank = -1, count = 0;
    ncclCommCuDevice(c[r], &dev);
    ncclCommUserRank(c[r], &rank);
    ncclCommCount(c[r], &count);
    CHECK_EQ(dev, devlist[r]);
    CHECK_EQ(rank, r);
    CHECK_EQ(count, 3);
    CHECK_EQ(ncclCommDestroy(c[r]), ncclSuccess);
  }
  int dup[2] = {1, 1}, bad[2] = {0, 8};
  CHECK_EQ(ncclCommInitAll(c, 2, dup), ncclInvalidUsage);
  CHECK_EQ(ncclCommInitAll(c, 2, bad), ncclUnhandledCudaError);
  CHECK_EQ(ncclCommInitAll(c, 9, NULL), ncclUnhandledCudaError);
  CHECK_EQ(ncclCommInitAll(c, 0, NULL), ncclInvalidArgument);
}

static void nonblocking_init_is_in_progress_until_every_rank_joined(void) {
  ncclUniqueId id;
  ncclComm_t c0, c1;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  CHECK_EQ(ncclCommInitRankConfig(&c0, 2, id, 0, &config), ncclInProgress);
  ncclResult_t async = ncclSuccess;
  CHECK_EQ(ncclCommGetAsyncError(c0, &async), ncclSuccess);
  CHECK_EQ(async, ncclInProgress);
  cudaSetDevice(1);
  CHECK_EQ(ncclCommInitRankConfig(&c1, 2, id, 1, &config), ncclInProgress);
  CHECK_EQ(ncclCommGetAsyncError(c0, &async), ncclSuccess);
  CHECK_EQ(async, ncclSuccess);
  CHECK_EQ(ncclCommGetAsyncError(c1, &async), ncclSuccess);
  CHECK_EQ(async, ncclSuccess);
  /* a blocking config blocks again */
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  ncclComm_t solo;
  ncclGetUniqueId(&id);
  CHECK_EQ(ncclCommInitRankConfig(&solo, 1, id, 0, &blocking), ncclSuccess);
  ncclCommDestroy(solo);
  ncclCommDestroy(c0);
  ncclCommDestroy(c1);
}

static void a_rank_that_left_before_its_peers_came_can_join_again(void) {
  ncclUniqueId id;
  ncclComm_t c[3], left;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  cudaSetDevice(1);
  CHECK_EQ(ncclCommInitRankConfig(&c[1], 3, id, 1, &config), ncclInProgress);
  cudaSetDevice(0);
  CHECK_EQ(ncclCommInitRankConfig(&left, 3, id, 0, &config), ncclInProgress);
  CHECK_EQ(ncclCommDestroy(left), ncclSuccess);
  CHECK_EQ(ncclCommInitRankConfig(&c[0], 3, id, 0, &config), ncclInProgress);
  cudaSetDevice(2);
  CHECK_EQ(ncclCommInitRankConfig(&c[2], 3, id, 2, &config), ncclInProgress);
  int v[3] = {1, 2, 3};
  cudaStream_t s[3];
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
    CHECK_EQ(ncclAllReduce(&v[r], &v[r], 1, ncclInt32, ncclSum, c[r], s[r]), ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; r++) {
    cudaStreamSynchronize(s[r]);
    CHECK_EQ(v[r], 6);
    ncclResult_t async = ncclInProgress;
    CHECK_EQ(ncclCommGetAsyncError(c[r], &async), ncclSuccess);
    CHECK_EQ(async, ncclSuccess);
    ncclCommDestroy(c[r]);
    cudaStreamDestroy(s[r]);
  }
}

static void bad_init_arguments_are_rejected(void) {
  ncclUniqueId id, zero;
  ncclComm_t c;
  memset(&zero, 0, sizeof(zero));
  ncclGetUniqueId(&id);
  CHECK_EQ(ncclCommInitRank(&c, 2, zero, 0), ncclInvalidArgument);
  CHECK_EQ(ncclCommInitRank(&c, 2, id, 2), ncclInvalidArgument);
  CHECK_EQ(ncclCommInitRank(&c, 0, id, 0), ncclInvalidArgument);
  CHECK_EQ(ncclCommInitRank(NULL, 1, id, 0), ncclInvalidArgument);
  ncclConfig_t garbage;
  memset(&garbage, 0, sizeof(garbage));
  CHECK_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &garbage), ncclInvalidArgument);
  /* ranks that disagree on nranks */
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  ncclComm_t first;
  CHECK_EQ(ncclCommInitRankConfig(&first, 2, id, 0, &nb), ncclInProgress);
  CHECK_EQ(ncclCommInitRankConfig(&c, 3, id, 1, &nb), ncclInvalidArgument);
  CHECK_EQ(ncclCommInitRankConfig(&c, 2, id, 0, &nb), ncclInvalidUsage); /* rank 0 twice */
  CHECK_EQ(ncclCommAbort(first), ncclSuccess);
}

/* ---------------------------------------------------------------- split and shrink */

static void split_groups_by_color_and_orders_by_key(void) {
  enum { M = 6 };
  ncclComm_t parent[M], child[M];
  REQUIRE_EQ(ncclCommInitAll(parent, M, NULL), ncclSuccess);
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < M; r++) {
    int color = r == 5 ? NCCL_SPLIT_NOCOLOR : r % 2;
    CHECK_EQ(ncclCommSplit(parent[r], color, -r, &child[r], NULL), ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  CHECK(child[5] == NULL);
  /* color 0: ranks 0, 2, 4 with keys 0, -2, -4: new order 4, 2, 0 */
  int expect_rank[5] = {2, 1, 1, 0, 0}, expect_count[5] = {3, 2, 3, 2, 3};
  for (int r = 0; r < 5; r++) {
    int rank = -1, count = -1, dev = -1;
    REQUIRE_EQ(ncclCommUserRank(child[r], &rank), ncclSuccess);
    ncclCommCount(child[r], &count);
    ncclCommCuDevice(child[r], &dev);
    CHECK_EQ(rank, expect_rank[r]);
    CHECK_EQ(count, expect_count[r]);
    CHECK_EQ(dev, r); /* the parent's device */
  }
  /* the children work on their own, and the parent still works */
  cudaStream_t s[M];
  int v[M], w[M];
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < M; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
    v[r] = r;
    w[r] = 1;
    if (child[r])
      CHECK_EQ(ncclAllReduce(&v[r], &v[r], 1, ncclInt32, ncclSum, child[r], s[r]), ncclSuccess);
    CHECK_EQ(ncclAllReduce(&w[r], &w[r], 1, ncclInt32, ncclSum, parent[r], s[r]), ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < M; r++) {
    cudaStreamSynchronize(s[r]);
    if (r < 5)
      CHECK_EQ(v[r], r % 2 ? 1 + 3 : 0 + 2 + 4);
    CHECK_EQ(w[r], M);
    cudaStreamDestroy(s[r]);
  }
  for (int r = 0; r < M; r++) {
    if (child[r])
      CHECK_EQ(ncclCommDestroy(child[r]), ncclSuccess);
    CHECK_EQ(ncclCommDestroy(parent[r]), ncclSuccess);
  }
}

static ncclComm_t split_parent[N], split_child[N];

static void *split_on_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  CHECK_EQ(ncclCommSplit(split_parent[r], 0, r, &split_child[r], NULL), ncclSuccess);
  return NULL;
}

static void split_blocks_until_every_rank_calls_it(void) {
  REQUIRE_EQ(ncclCommInitAll(split_parent, N, NULL), ncclSuccess);
  run_threads(N, split_on_thread);
  for (int r = 0; r < N; r++) {
    int rank = -1;
    CHECK_EQ(ncclCommUserRank(split_child[r], &rank), ncclSuccess);
    CHECK_EQ(rank, r);
    ncclCommDestroy(split_child[r]);
    ncclCommDestroy(split_parent[r]);
  }
}

static void shrink_excludes_ranks(void) {
  ncclComm_t parent[N], child[N];
  REQUIRE_EQ(ncclCommInitAll(parent, N, NULL), ncclSuccess);
  int exclude[1] = {1};
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < N; r++)
    if (r != 1)
      CHECK_EQ(ncclCommShrink(parent[r], exclude, 1, &child[r], NULL, NCCL_SHRINK_DEFAULT),
               ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  int expect[N] = {0, -1, 1, 2};
  for (int r = 0; r < N; r++) {
    if (r == 1)
      continue;
    int rank = -1, count = 0;
    ncclCommUserRank(child[r], &rank);
    ncclCommCount(child[r], &count);
    CHECK_EQ(rank, expect[r]);
    CHECK_EQ(count, N - 1);
    ncclCommDestroy(child[r]);
  }
  /* an excluded rank cannot shrink, nor can a rank exclude itself */
  ncclComm_t c;
  CHECK_EQ(ncclCommShrink(parent[1], exclude, 1, &c, NULL, 0), ncclInvalidArgument);
  for (int r = 0; r < N; r++)
    ncclCommDestroy(parent[r]);
}

static void shrink_with_abort_fails_work_waiting_for_the_excluded(void) {
  ncclComm_t parent[3], child[3];
  cudaStream_t s[3];
  float v[3] = {1, 1, 1};
  REQUIRE_EQ(ncclCommInitAll(parent, 3, NULL), ncclSuccess);
  for (int r = 0; r < 2; r++) { /* rank 2 is dead: it never joins the allreduce */
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
    CHECK_EQ(ncclAllReduce(&v[r], &v[r], 1, ncclFloat, ncclSum, parent[r], s[r]), ncclSuccess);
  }
  CHECK_EQ(cudaStreamQuery(s[0]), cudaErrorNotReady); /* stuck on rank 2, for good */
  int exclude[1] = {2};
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; r++)
    CHECK_EQ(ncclCommShrink(parent[r], exclude, 1, &child[r], NULL, NCCL_SHRINK_ABORT),
             ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    CHECK_EQ(cudaStreamSynchronize(s[r]), cudaSuccess);
    ncclResult_t async = ncclSuccess;
    CHECK_EQ(ncclCommGetAsyncError(parent[r], &async), ncclSuccess);
    CHECK_EQ(async, ncclRemoteError);
    int count = 0;
    ncclCommCount(child[r], &count);
    CHECK_EQ(count, 2);
    ncclCommDestroy(child[r]);
    ncclCommAbort(parent[r]);
    cudaStreamDestroy(s[r]);
  }
  ncclCommAbort(parent[2]);
}

/* ---------------------------------------------------------------- finalize, destroy, abort */

static void finalize_flushes_then_destroy_releases(void) {
  ncclComm_t c[2];
  cudaStream_t s[2];
  double v[2] = {1, 2};
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  ncclGroupStart();
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
    ncclAllReduce(&v[r], &v[r], 1, ncclDouble, ncclSum, c[r], s[r]);
  }
  ncclGroupEnd();
  CHECK_EQ(ncclCommFinalize(c[0]), ncclSuccess);
  CHECK(v[0] == 3); /* finalize returned: the comm's work has run */
  CHECK_EQ(ncclCommFinalize(c[0]), ncclInvalidUsage);
  CHECK_EQ(ncclAllReduce(&v[0], &v[0], 1, ncclDouble, ncclSum, c[0], s[0]), ncclInvalidUsage);
  CHECK_EQ(ncclCommFinalize(c[1]), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    CHECK_EQ(ncclCommDestroy(c[r]), ncclSuccess);
    cudaStreamDestroy(s[r]);
  }
}

static void nonblocking_finalize_reports_progress_through_async_error(void) {
  ncclComm_t c;
  ncclUniqueId id;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclGetUniqueId(&id);
  CHECK_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &config), ncclInProgress);
  cudaStream_t s;
  cudaStreamCreate(&s);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  int v = 1;
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, c, s), ncclSuccess);
  CHECK_EQ(ncclCommFinalize(c), ncclInProgress);
  ncclResult_t async = ncclSuccess;
  CHECK_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
  CHECK_EQ(async, ncclInProgress); /* the allreduce is held behind the gate */
  gate_open(&g);
  cudaStreamSynchronize(s);
  /* as NCCL documents for non-blocking comms: poll until it is no longer in progress */
  do
    CHECK_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
  while (async == ncclInProgress);
  CHECK_EQ(async, ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
  cudaStreamDestroy(s);
}

/* As an allocator does for real NCCL: a destroyed communicator's address comes back for the next
 * one made, on another thread too, and is that one's alone (a tool that keys communicators by
 * address meets it). */
static ncclComm_t reused;

static void *init_one_rank(void *arg) {
  (void)arg;
  ncclUniqueId id;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  CHECK_EQ(ncclCommInitRank(&reused, 1, id, 0), ncclSuccess);
  return NULL;
}

static void a_destroyed_comms_address_comes_back_at_the_next_init(void) {
  ncclUniqueId id;
  ncclComm_t first;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  REQUIRE_EQ(ncclCommInitRank(&first, 1, id, 0), ncclSuccess);
  REQUIRE_EQ(ncclCommDestroy(first), ncclSuccess);
  pthread_t t;
  pthread_create(&t, NULL, init_one_rank, NULL);
  pthread_join(t, NULL);
  CHECK(reused == first);
  int rank = -1;
  CHECK_EQ(ncclCommUserRank(reused, &rank), ncclSuccess);
  CHECK_EQ(rank, 0);
  CHECK_EQ(ncclCommDestroy(reused), ncclSuccess);
}

static ncclComm_t waiting_comm;
static int destroy_started, destroy_returned;

static void *destroy_on_thread(void *arg) {
  (void)arg;
  __atomic_store_n(&destroy_started, 1, __ATOMIC_SEQ_CST);
  CHECK_EQ(ncclCommDestroy(waiting_comm), ncclSuccess);
  __atomic_store_n(&destroy_returned, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void destroy_waits_for_the_comms_enqueued_work(void) {
  ncclComm_t c[2];
  cudaStream_t s[2];
  int v[2] = {1, 2};
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
  }
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s[0], wait_at_gate, &g);
  ncclGroupStart();
  for (int r = 0; r < 2; r++)
    ncclAllReduce(&v[r], &v[r], 1, ncclInt32, ncclSum, c[r], s[r]);
  ncclGroupEnd();
  waiting_comm = c[1];
  pthread_t t;
  pthread_create(&t, NULL, destroy_on_thread, NULL);
  sleep_ms(50);
  /* rank 1's allreduce needs rank 0's, which is held behind the gate */
  CHECK_EQ(__atomic_load_n(&destroy_returned, __ATOMIC_SEQ_CST), 0);
  gate_open(&g);
  pthread_join(t, NULL);
  CHECK_EQ(v[1], 3);
  CHECK_EQ(cudaStreamQuery(s[1]), cudaSuccess); /* destroyed: its stream is past its work */
  CHECK_EQ(ncclCommDestroy(c[0]), ncclSuccess);
  cudaStreamDestroy(s[0]);
  cudaStreamDestroy(s[1]);
}

static void abort_from_another_thread_ends_a_destroy_stuck_on_a_peer(void) {
  ncclComm_t c[2];
  cudaStream_t s;
  int v = 1;
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  cudaStreamCreate(&s);
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, c[0], s), ncclSuccess);
  /* rank 1 never calls the allreduce: destroying rank 0 waits for good */
  waiting_comm = c[0];
  pthread_t t;
  pthread_create(&t, NULL, destroy_on_thread, NULL);
  /* the abort must come once the destroy waits: on a loaded machine the thread may start late */
  while (!__atomic_load_n(&destroy_started, __ATOMIC_SEQ_CST))
    sleep_ms(1);
  sleep_ms(50);
  CHECK_EQ(__atomic_load_n(&destroy_returned, __ATOMIC_SEQ_CST), 0);
  CHECK_EQ(ncclCommAbort(c[0]), ncclSuccess);
  pthread_join(t, NULL);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  int count;
  CHECK_EQ(ncclCommCount(c[0], &count), ncclInvalidArgument); /* gone */
  CHECK_EQ(ncclCommDestroy(c[1]), ncclSuccess);
  cudaStreamDestroy(s);
}

static void abort_of_a_peer_fails_work_waiting_for_it(void) {
  ncclComm_t c[2];
  cudaStream_t s;
  float v = 1;
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  cudaStreamCreate(&s);
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c[0], s), ncclSuccess);
  CHECK_EQ(ncclCommAbort(c[1]), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ncclResult_t async = ncclSuccess;
  CHECK_EQ(ncclCommGetAsyncError(c[0], &async), ncclSuccess);
  CHECK_EQ(async, ncclRemoteError);
  /* later work needing the aborted rank fails at once instead of hanging */
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c[0], s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(ncclCommDestroy(c[0]), ncclSuccess);
  cudaStreamDestroy(s);
}

static void abort_never_waits_for_enqueued_work(void) {
  ncclComm_t c;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  cudaStream_t s;
  cudaStreamCreate(&s);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  int v = 5, out = 0;
  CHECK_EQ(ncclAllReduce(&v, &out, 1, ncclInt32, ncclSum, c, s), ncclSuccess);
  CHECK_EQ(ncclCommAbort(c), ncclSuccess); /* returns with the allreduce still queued */
  gate_open(&g);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(out, 0); /* the aborted comm's work did not run */
  cudaStreamDestroy(s);
}

static void leaked_comms(void) {
  ncclComm_t c[3];
  int devlist[3] = {4, 5, 6};
  REQUIRE_EQ(ncclCommInitAll(c, 3, devlist), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c[1]), ncclSuccess);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "comm %p rank 0 nranks 3 device 4 commId *\n"
             "comm %p rank 2 nranks 3 device 6 commId *\n",
          (void *)c[0], (void *)c[2]);
  fclose(f);
}

static void everything_released(void) {
  ncclComm_t c[2];
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  cudaStream_t s;
  cudaEvent_t e;
  cudaStreamCreate(&s);
  cudaEventCreate(&e);
  cudaEventRecord(e, s);
  ncclCommDestroy(c[0]);
  ncclCommAbort(c[1]);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
  fclose(fopen(test_path("expected"), "w"));
}

static const struct test_case cases[] = {
    {"version_is_2_29_3", version_is_2_29_3, NULL, NULL},
    {"error_strings_are_nccls", error_strings_are_nccls, NULL, NULL},
    {"unique_ids_differ", unique_ids_differ, NULL, NULL},
    {"ranks_on_threads_meet_through_the_unique_id", ranks_on_threads_meet_through_the_unique_id,
     NULL, NULL},
    {"init_rank_scalable_takes_several_ids", init_rank_scalable_takes_several_ids, NULL, NULL},
    {"init_rank_in_a_group_from_one_thread", init_rank_in_a_group_from_one_thread, NULL, NULL},
    {"init_all_follows_the_device_list", init_all_follows_the_device_list, NULL, NULL},
    {"nonblocking_init_is_in_progress_until_every_rank_joined",
     nonblocking_init_is_in_progress_until_every_rank_joined, NULL, NULL},
    {"a_rank_that_left_before_its_peers_came_can_join_again",
     a_rank_that_left_before_its_peers_came_can_join_again, NULL, NULL},
    {"bad_init_arguments_are_rejected", bad_init_arguments_are_rejected, NULL, NULL},
    {"split_groups_by_color_and_orders_by_key", split_groups_by_color_and_orders_by_key, NULL,
     NULL},
    {"split_blocks_until_every_rank_calls_it", split_blocks_until_every_rank_calls_it, NULL, NULL},
    {"shrink_excludes_ranks", shrink_excludes_ranks, NULL, NULL},
    {"shrink_with_abort_fails_work_waiting_for_the_excluded",
     shrink_with_abort_fails_work_waiting_for_the_excluded, NULL, NULL},
    {"finalize_flushes_then_destroy_releases", finalize_flushes_then_destroy_releases, NULL, NULL},
    {"nonblocking_finalize_reports_progress_through_async_error",
     nonblocking_finalize_reports_progress_through_async_error, NULL, NULL},
    {"a_destroyed_comms_address_comes_back_at_the_next_init",
     a_destroyed_comms_address_comes_back_at_the_next_init, NULL, NULL},
    {"destroy_waits_for_the_comms_enqueued_work", destroy_waits_for_the_comms_enqueued_work, NULL,
     NULL},
    {"abort_from_another_thread_ends_a_destroy_stuck_on_a_peer",
     abort_from_another_thread_ends_a_destroy_stuck_on_a_peer, NULL, NULL},
    {"abort_of_a_peer_fails_work_waiting_for_it", abort_of_a_peer_fails_work_waiting_for_it, NULL,
     NULL},
    {"abort_never_waits_for_enqueued_work", abort_never_waits_for_enqueued_work, NULL, NULL},
    {"report_lists_live_comms", leaked_comms, "NCCLEMU_REPORT=@/report", exit_report_is_as_expected},
    {"report_is_empty_when_everything_was_released", everything_released,
     "NCCLEMU_REPORT=@/report", exit_report_is_as_expected},
};

TEST_MAIN(cases)
