/* Ranks in separate processes: they meet through the unique id (the root of the process that
 * made it), compute collectives across processes, destroy together, and a process that exits
 * without destroying is reported by the others in NCCL's words. Each case forks its rank
 * processes before any emulator call (so no thread is forked), process 0 makes the id and hands
 * it to the others through pipes; each process writes its stderr to a file of its own. */
#include <sys/mman.h>

#include "test.h"

#define MAXPROCS 6

struct procs {
  int n;
  bool maker_is_rank; /* process 0 makes the id and is a rank; else it only makes the id */
  void (*fn)(int proc, const ncclUniqueId *id);
};

/* A pipe per pair of processes for the few orderings a case needs: tell(a, b) and await(b, a). */
static int sync_pipes[MAXPROCS][MAXPROCS][2];

/* The write end of death[i] is held by process i alone: a read returns once it has exited. */
static int death[MAXPROCS][2];

static void await_death(int proc) {
  char c;
  while (read(death[proc][0], &c, 1) != 0 && errno == EINTR) {
  }
}

static void tell(int from, int to) {
  ssize_t ignored = write(sync_pipes[from][to][1], "x", 1);
  (void)ignored;
}

static void await_from(int me, int from) {
  char c;
  while (read(sync_pipes[from][me][0], &c, 1) < 0 && errno == EINTR) {
  }
}

static char *proc_stderr(int proc) {
  char name[32];
  snprintf(name, sizeof(name), "stderr.%d", proc);
  return read_file(test_path(name));
}

/* Waits (up to 10 s) until the stderr of process 0 holds what, and returns it. */
static char *await_stderr_of_0(const char *what) {
  char *err = proc_stderr(0);
  for (int i = 0; i < 10000 && count_of(err, what) == 0; i++) {
    free(err);
    sleep_ms(1);
    err = proc_stderr(0);
  }
  return err;
}

/* Runs the case's processes and waits for them; each must exit 0. */
static void run_procs(const struct procs *ps) {
  int id_pipe[MAXPROCS][2], keep_alive[2];
  for (int i = 0; i < ps->n; i++)
    for (int j = 0; j < ps->n; j++)
      REQUIRE_EQ(pipe(sync_pipes[i][j]), 0);
  for (int i = 0; i < ps->n; i++)
    REQUIRE_EQ(pipe(id_pipe[i]), 0);
  REQUIRE_EQ(pipe(keep_alive), 0);
  for (int i = 0; i < ps->n; i++)
    REQUIRE_EQ(pipe(death[i]), 0);
  pid_t pids[MAXPROCS];
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < ps->n; i++) {
    pids[i] = fork();
    REQUIRE_EQ(pids[i] >= 0, 1);
    if (pids[i] != 0)
      continue;
    for (int j = 0; j < ps->n; j++)
      if (j != i)
        close(death[j][1]);
    alarm(60);
    char name[32];
    snprintf(name, sizeof(name), "stderr.%d", i);
    int fd = open(test_path(name), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    dup2(fd, 2);
    close(fd);
    ncclUniqueId id;
    if (i == 0) {
      REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
      for (int j = 1; j < ps->n; j++)
        REQUIRE_EQ(write(id_pipe[j][1], &id, sizeof(id)), (ssize_t)sizeof(id));
      if (!ps->maker_is_rank) {
        /* the root must outlive the inits: stay until the parent closes the pipe */
        close(keep_alive[1]);
        char c;
        while (read(keep_alive[0], &c, 1) > 0) {
        }
        exit(0);
      }
    } else {
      REQUIRE_EQ(read(id_pipe[i][0], &id, sizeof(id)), (ssize_t)sizeof(id));
    }
    ps->fn(i, &id);
    exit(__atomic_load_n(&test_failures, __ATOMIC_SEQ_CST) ? 1 : 0);
  }
  for (int i = 0; i < ps->n; i++)
    close(death[i][1]);
  for (int i = ps->maker_is_rank ? 0 : 1; i < ps->n; i++) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      char *err = proc_stderr(i);
      fprintf(stderr, "process %d %s %d; its stderr:\n%s", i,
              WIFEXITED(status) ? "exited" : "was killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), err ? err : "");
      free(err);
      FAILED();
    }
  }
  if (!ps->maker_is_rank) {
    close(keep_alive[1]);
    waitpid(pids[0], NULL, 0);
  }
}

static ncclComm_t join(const ncclUniqueId *id, int nranks, int rank) {
  cudaSetDevice(rank);
  ncclComm_t comm = NULL;
  REQUIRE_EQ(ncclCommInitRank(&comm, nranks, *id, rank), ncclSuccess);
  return comm;
}

static ncclResult_t async_error(ncclComm_t comm) {
  ncclResult_t async = ncclInProgress;
  CHECK_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  return async;
}

/* ---------------------------------------------------------------- collectives */

#define COUNT 29

static float in(int rank, int i) { return (float)(rank + 1) * 100 + (float)i; }

/* Every kind of operation, checked on one rank of nranks. */
static void collectives_on_rank(ncclComm_t comm, int rank, int nranks) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  float *send = calloc((size_t)COUNT * nranks, sizeof(float));
  float *recv = calloc((size_t)COUNT * nranks, sizeof(float));
  for (int i = 0; i < COUNT * nranks; i++)
    send[i] = in(rank, i);

  CHECK_EQ(ncclAllReduce(send, recv, COUNT, ncclFloat, ncclSum, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < COUNT; i++) {
    float sum = 0;
    for (int r = 0; r < nranks; r++)
      sum += in(r, i);
    CHECK_EQ(recv[i], sum);
  }

  CHECK_EQ(ncclBroadcast(send, recv, COUNT, ncclFloat, 1, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < COUNT; i++)
    CHECK_EQ(recv[i], in(1, i));

  CHECK_EQ(ncclAllGather(send, recv, COUNT, ncclFloat, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int r = 0; r < nranks; r++)
    for (int i = 0; i < COUNT; i++)
      CHECK_EQ(recv[r * COUNT + i], in(r, i));

  CHECK_EQ(ncclReduceScatter(send, recv, COUNT, ncclFloat, ncclMax, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < COUNT; i++)
    CHECK_EQ(recv[i], in(nranks - 1, rank * COUNT + i));

  CHECK_EQ(ncclAlltoAll(send, recv, COUNT, ncclFloat, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int r = 0; r < nranks; r++)
    for (int i = 0; i < COUNT; i++)
      CHECK_EQ(recv[r * COUNT + i], in(r, rank * COUNT + i));

  /* a ring of sends and receives, in one group so that no rank waits for its receive first */
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  CHECK_EQ(ncclSend(send, COUNT, ncclFloat, next, comm, s), ncclSuccess);
  CHECK_EQ(ncclRecv(recv, COUNT, ncclFloat, prev, comm, s), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < COUNT; i++)
    CHECK_EQ(recv[i], in(prev, i));

  CHECK_EQ(async_error(comm), ncclSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  free(send);
  free(recv);
}

static void one_rank_per_process(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 3, proc);
  int count = 0, rank = -1;
  CHECK_EQ(ncclCommCount(comm, &count), ncclSuccess);
  CHECK_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  CHECK_EQ(count, 3);
  CHECK_EQ(rank, proc);
  collectives_on_rank(comm, proc, 3);
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
}

static void collectives_across_three_processes(void) {
  struct procs ps = {.n = 3, .maker_is_rank = true, .fn = one_rank_per_process};
  run_procs(&ps);
  for (int i = 0; i < 3; i++) {
    char *err = proc_stderr(i);
    CHECK_EQ(count_of(err, "NCCL WARN"), 0); /* every rank destroyed: nobody complains */
    free(err);
  }
}

/* Process p holds ranks 2p and 2p+1, each on its own thread. */
static const ncclUniqueId *pair_id;
static int pair_proc;

static void *pair_rank(void *arg) {
  int rank = pair_proc * 2 + (int)(intptr_t)arg;
  ncclComm_t comm = join(pair_id, 4, rank);
  collectives_on_rank(comm, rank, 4);
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
  return NULL;
}

static void two_ranks_per_process(int proc, const ncclUniqueId *id) {
  pair_id = id;
  pair_proc = proc;
  run_threads(2, pair_rank);
}

static void processes_with_several_ranks_on_threads(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = two_ranks_per_process};
  run_procs(&ps);
}

static void rank_of_launched_process(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc - 1);
  collectives_on_rank(comm, proc - 1, 2);
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
}

static void the_id_maker_need_not_be_a_rank(void) {
  struct procs ps = {.n = 3, .maker_is_rank = false, .fn = rank_of_launched_process};
  run_procs(&ps);
}

static void nonblocking_rank(int proc, const ncclUniqueId *id) {
  cudaSetDevice(proc);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  if (proc == 1)
    await_from(1, 0); /* rank 0 has seen its init in progress */
  ncclResult_t r = ncclCommInitRankConfig(&comm, 2, *id, proc, &config);
  CHECK(r == ncclInProgress || r == ncclSuccess);
  REQUIRE_EQ(comm != NULL, 1);
  if (proc == 0) {
    CHECK_EQ(async_error(comm), ncclInProgress); /* rank 1 has not joined yet */
    tell(0, 1);
  }
  ncclResult_t async;
  while ((async = async_error(comm)) == ncclInProgress)
    sleep_ms(1);
  CHECK_EQ(async, ncclSuccess);
  collectives_on_rank(comm, proc, 2);
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
}

static void nonblocking_init_completes_through_the_async_error(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = nonblocking_rank};
  run_procs(&ps);
}

/* ---------------------------------------------------------------- leaving */

static double *shared_ms; /* times the processes note for the parent: mmap'ed before the fork */

static void share_times(void) {
  shared_ms = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE_EQ(shared_ms != MAP_FAILED, 1);
}

static void destroy_late_or_early(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc);
  collectives_on_rank(comm, proc, 2);
  if (proc == 1) {
    sleep_ms(300);
    shared_ms[1] = now_ms(); /* rank 1 starts its destroy */
  }
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
  shared_ms[2 + proc] = now_ms(); /* each destroy returned */
}

static void destroy_waits_for_the_ranks_of_other_processes(void) {
  share_times();
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = destroy_late_or_early};
  run_procs(&ps);
  /* rank 0 destroyed at once and returned only once rank 1 had started its own destroy */
  CHECK(shared_ms[2] >= shared_ms[1]);
  for (int i = 0; i < 2; i++) {
    char *err = proc_stderr(i);
    CHECK_EQ(count_of(err, "NCCL WARN"), 0);
    free(err);
  }
}

static void exit_without_destroying(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc);
  collectives_on_rank(comm, proc, 2);
  if (proc == 1)
    return; /* exits with its communicator alive */
  await_death(1);
  /* the service thread notices the closed connection: wait for its lines */
  char *err = await_stderr_of_0("[Proxy Service 0]");
  CHECK_EQ(count_of(err, "NCCL WARN [Service thread] Connection closed by localRank 1\n"), 1);
  CHECK_EQ(count_of(err, "NCCL WARN [Service thread] Could not receive type from localRank 1"), 1);
  CHECK_EQ(count_of(err, "NCCL WARN [Proxy Service 0] Failed to execute operation Close from rank 1"),
           1);
  free(err);
  /* work that needs the vanished rank fails instead of hanging */
  cudaStream_t s;
  cudaStreamCreate(&s);
  float v = 1;
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(async_error(comm), ncclRemoteError);
  /* and a destroy waits for it, bounded here by NCCLEMU_DESTROY_TIMEOUT_MS */
  double start = now_ms();
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
  CHECK(now_ms() - start >= 250);
  err = proc_stderr(0);
  CHECK_EQ(count_of(err, "NCCLEMU: ncclCommDestroy of rank 0 stopped waiting for the ranks of "
                         "other processes after 300 ms"),
           1);
  free(err);
}

static void a_process_that_exits_without_destroying_is_reported_by_its_peers(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = exit_without_destroying};
  run_procs(&ps);
}

static ncclResult_t hung_destroy_result;
static bool hung_destroy_returned;

static void *destroy_on_thread(void *comm) {
  hung_destroy_result = ncclCommDestroy(comm);
  __atomic_store_n(&hung_destroy_returned, true, __ATOMIC_SEQ_CST);
  return NULL;
}

static void destroy_with_a_vanished_peer(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc);
  if (proc == 1)
    _exit(0); /* as if killed: no exit handlers, no goodbye */
  await_death(1);
  char *err = await_stderr_of_0("[Proxy Service 0]");
  CHECK_EQ(count_of(err, "[Service thread] Connection closed by localRank 1\n"), 1);
  free(err);
  /* rank 1 never comes to its destroy: rank 0's waits until another thread aborts the comm */
  pthread_t t;
  pthread_create(&t, NULL, destroy_on_thread, comm);
  sleep_ms(300);
  CHECK(!__atomic_load_n(&hung_destroy_returned, __ATOMIC_SEQ_CST));
  CHECK_EQ(ncclCommAbort(comm), ncclSuccess);
  pthread_join(t, NULL);
  CHECK_EQ(hung_destroy_result, ncclSuccess);
}

static void destroy_with_a_vanished_peer_hangs_until_aborted(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = destroy_with_a_vanished_peer};
  run_procs(&ps);
}

static void abort_early(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc);
  collectives_on_rank(comm, proc, 2);
  if (proc == 0) {
    double start = now_ms();
    CHECK_EQ(ncclCommAbort(comm), ncclSuccess); /* rank 1 is alive and busy: no wait */
    CHECK(now_ms() - start < 1000);
    tell(0, 1);
    return;
  }
  await_from(1, 0);
  sleep_ms(100); /* the goodbye is on its way */
  cudaStream_t s;
  cudaStreamCreate(&s);
  float v = 1;
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(async_error(comm), ncclRemoteError);
  double start = now_ms();
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess); /* rank 0 left by abort: nothing to wait for */
  CHECK(now_ms() - start < 1000);
}

static void abort_returns_promptly_and_a_peer_that_aborted_causes_no_warning(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = abort_early};
  run_procs(&ps);
  for (int i = 0; i < 2; i++) {
    char *err = proc_stderr(i);
    CHECK_EQ(count_of(err, "[Service thread]"), 0);
    CHECK_EQ(count_of(err, "[Proxy Service"), 0);
    free(err);
  }
}

/* Rank 0's send reaches process 1 before rank 0 aborts; rank 1 posts the receive only after the
 * goodbye. The send's input is in process 1 already, so the receive gets it: a peer's abort must
 * not fail an operation whose part it had delivered (it cannot tell whether the aborting rank saw
 * that operation complete). */
static void abort_after_the_send_arrived(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc);
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  /* static: process 0 returns with its stream's work never synchronized (the send never
   * completes), and what the stream worker may still write must not land in a dead frame */
  static float send[COUNT], recv[COUNT], sum;
  float expected_sum = in(0, 0) + in(1, 0);
  sum = 0;
  for (int i = 0; i < COUNT; i++) {
    send[i] = in(proc, i);
    recv[i] = -1;
  }
  if (proc == 0) {
    /* one stream op: the send's part goes out before the all-reduce's, on the same connection */
    CHECK_EQ(ncclGroupStart(), ncclSuccess);
    CHECK_EQ(ncclSend(send, COUNT, ncclFloat, 1, comm, s), ncclSuccess);
    CHECK_EQ(ncclAllReduce(send, &sum, 1, ncclFloat, ncclSum, comm, s), ncclSuccess);
    CHECK_EQ(ncclGroupEnd(), ncclSuccess);
    await_from(0, 1); /* the all-reduce completed in process 1: the send's part is there */
    CHECK_EQ(ncclCommAbort(comm), ncclSuccess); /* the send never completes here */
    tell(0, 1);
    return;
  }
  CHECK_EQ(ncclAllReduce(send, &sum, 1, ncclFloat, ncclSum, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(sum, expected_sum);
  tell(1, 0);
  await_from(1, 0);
  /* fails once the goodbye has come (before it, it fails when the goodbye comes) */
  float v = 1;
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(async_error(comm), ncclRemoteError);
  CHECK_EQ(ncclRecv(recv, COUNT, ncclFloat, 0, comm, s), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < COUNT; i++)
    CHECK_EQ(recv[i], in(0, i));
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
}

static void a_send_that_reached_the_peer_before_its_sender_aborted_is_received(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = abort_after_the_send_arrived};
  run_procs(&ps);
}

/* ---------------------------------------------------------------- init failures */

static void disagree_on_nranks(int proc, const ncclUniqueId *id) {
  cudaSetDevice(proc);
  ncclComm_t comm = NULL;
  if (proc == 0) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    CHECK_EQ(ncclCommInitRankConfig(&comm, 2, *id, 0, &config), ncclInProgress);
    tell(0, 1);
    await_from(0, 1);
    CHECK_EQ(async_error(comm), ncclInProgress); /* still waiting for its rank 1 */
    CHECK_EQ(ncclCommAbort(comm), ncclSuccess);
    return;
  }
  await_from(1, 0);
  CHECK_EQ(ncclCommInitRank(&comm, 3, *id, 1), ncclInvalidArgument);
  char *err = proc_stderr(1);
  CHECK_EQ(count_of(err, "the root of the unique id refused a rank: rank 1 has nranks 3 but the "
                         "unique id was used with nranks 2"),
           1);
  free(err);
  tell(1, 0);
}

static void the_root_refuses_a_rank_that_disagrees(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = disagree_on_nranks};
  run_procs(&ps);
}

static void maker_exits_first(int proc, const ncclUniqueId *id) {
  if (proc == 0)
    return; /* exits at once: its root is gone */
  await_death(0);
  ncclComm_t comm = NULL;
  CHECK_EQ(ncclCommInitRank(&comm, 2, *id, 1), ncclSystemError);
  char *err = proc_stderr(1);
  CHECK_EQ(count_of(err, "NCCLEMU: cannot reach the root of the unique id in process"), 1);
  free(err);
}

static void an_id_whose_maker_exited_cannot_be_joined(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = maker_exits_first};
  run_procs(&ps);
}

static void maker_exits_during_the_init(int proc, const ncclUniqueId *id) {
  if (proc == 0) {
    await_from(0, 1);
    return; /* rank 1 registered with our root; rank 0 never comes */
  }
  cudaSetDevice(1);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  CHECK_EQ(ncclCommInitRankConfig(&comm, 2, *id, 1, &config), ncclInProgress);
  tell(1, 0);
  ncclResult_t async;
  while ((async = async_error(comm)) == ncclInProgress)
    sleep_ms(1);
  CHECK_EQ(async, ncclRemoteError);
  char *err = proc_stderr(1);
  CHECK_EQ(count_of(err, "the root of the unique id closed its connection before every rank had "
                         "joined"),
           1);
  free(err);
  CHECK_EQ(ncclCommAbort(comm), ncclSuccess);
}

static void an_init_fails_when_the_maker_exits_before_every_rank_joined(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = maker_exits_during_the_init};
  run_procs(&ps);
}

static void split_across_processes(int proc, const ncclUniqueId *id) {
  ncclComm_t comm = join(id, 2, proc), child = NULL;
  CHECK_EQ(ncclCommSplit(comm, 0, proc, &child, NULL), ncclInvalidUsage);
  CHECK_EQ(ncclCommDestroy(comm), ncclSuccess);
}

static void split_across_processes_is_not_emulated(void) {
  struct procs ps = {.n = 2, .maker_is_rank = true, .fn = split_across_processes};
  run_procs(&ps);
}

static const struct test_case cases[] = {
    {"collectives_across_three_processes", collectives_across_three_processes, NULL, NULL},
    {"processes_with_several_ranks_on_threads", processes_with_several_ranks_on_threads, NULL,
     NULL},
    {"the_id_maker_need_not_be_a_rank", the_id_maker_need_not_be_a_rank, NULL, NULL},
    {"nonblocking_init_completes_through_the_async_error",
     nonblocking_init_completes_through_the_async_error, NULL, NULL},
    {"destroy_waits_for_the_ranks_of_other_processes",
     destroy_waits_for_the_ranks_of_other_processes, NULL, NULL},
    {"a_process_that_exits_without_destroying_is_reported_by_its_peers",
     a_process_that_exits_without_destroying_is_reported_by_its_peers,
     "NCCLEMU_DESTROY_TIMEOUT_MS=300", NULL},
    {"destroy_with_a_vanished_peer_hangs_until_aborted",
     destroy_with_a_vanished_peer_hangs_until_aborted, NULL, NULL},
    {"abort_returns_promptly_and_a_peer_that_aborted_causes_no_warning",
     abort_returns_promptly_and_a_peer_that_aborted_causes_no_warning, NULL, NULL},
    {"a_send_that_reached_the_peer_before_its_sender_aborted_is_received",
     a_send_that_reached_the_peer_before_its_sender_aborted_is_received, NULL, NULL},
    {"the_root_refuses_a_rank_that_disagrees", the_root_refuses_a_rank_that_disagrees, NULL,
     NULL},
    {"an_id_whose_maker_exited_cannot_be_joined", an_id_whose_maker_exited_cannot_be_joined, NULL,
     NULL},
    {"an_init_fails_when_the_maker_exits_before_every_rank_joined",
     an_init_fails_when_the_maker_exits_before_every_rank_joined, NULL, NULL},
    {"split_across_processes_is_not_emulated", split_across_processes_is_not_emulated, NULL,
     NULL},
};

TEST_MAIN(cases)
