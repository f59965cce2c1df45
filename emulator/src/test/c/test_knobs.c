/* The knobs: NCCLEMU_FAIL, NCCLEMU_HANG, NCCLEMU_REPORT, and exit with workers stuck for good. */
#include "test.h"

static ncclComm_t solo(void) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  ncclGetUniqueId(&id);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  return c;
}

static void fail_the_nth_call(void) {
  ncclComm_t a, b, c;
  a = solo();
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  capture_stderr();
  CHECK_EQ(ncclCommInitRank(&b, 1, id, 0), ncclSystemError);
  char *err = captured_stderr();
  CHECK(is_one_warn_line(err, "NCCLEMU: injected failure of ncclCommInitRank: unhandled system"));
  free(err);
  c = solo();
  CHECK_EQ(ncclCommDestroy(a), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

static void fail_every_call_with_a_numeric_cuda_code(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), 999);
  CHECK_EQ(cudaStreamSynchronize(s), 999);
  CHECK_EQ(cudaGetLastError(), 999);
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void fail_a_list_of_functions(void) {
  ncclComm_t c = solo();
  float v = 1;
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, NULL), ncclInternalError);
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, NULL), ncclSuccess);
  void *p[3];
  CHECK_EQ(cudaMalloc(&p[0], 8), cudaSuccess);
  CHECK_EQ(cudaMalloc(&p[1], 8), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaMalloc(&p[2], 8), cudaSuccess);
  cudaFree(p[0]);
  cudaFree(p[2]);
  CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

static void a_failed_destroy_leaves_the_comm_live(void) {
  ncclComm_t c = solo();
  CHECK_EQ(ncclCommDestroy(c), ncclSystemError);
  int n = 0;
  CHECK_EQ(ncclCommCount(c, &n), ncclSuccess);
  CHECK_EQ(n, 1);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

static void a_failed_group_end_launches_nothing(void) {
  ncclComm_t c[2];
  cudaStream_t s[2];
  int v[2] = {1, 2};
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  for (int i = 0; i < 2; i++) {
    cudaSetDevice(i);
    cudaStreamCreate(&s[i]);
  }
  ncclGroupStart();
  for (int i = 0; i < 2; i++)
    ncclAllReduce(&v[i], &v[i], 1, ncclInt32, ncclSum, c[i], s[i]);
  CHECK_EQ(ncclGroupEnd(), ncclInternalError);
  CHECK_EQ(cudaStreamQuery(s[0]), cudaSuccess);
  CHECK_EQ(v[0], 1);
  /* the next group works: both ranks dropped the same operation */
  ncclGroupStart();
  for (int i = 0; i < 2; i++)
    ncclAllReduce(&v[i], &v[i], 1, ncclInt32, ncclSum, c[i], s[i]);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < 2; i++) {
    cudaStreamSynchronize(s[i]);
    CHECK_EQ(v[i], 3);
    CHECK_EQ(ncclCommDestroy(c[i]), ncclSuccess); /* nothing pending: no wait */
    cudaStreamDestroy(s[i]);
  }
}

static void bad_entries_are_ignored_with_a_message(void) {
  capture_stderr();
  int v = 0;
  CHECK_EQ(ncclGetVersion(&v), ncclSuccess); /* the knobs are read at the first call */
  char *err = captured_stderr();
  CHECK(err && strstr(err, "NCCLEMU: ignoring bad NCCLEMU_FAIL entry 'ncclAllReduce'"));
  CHECK(err && strstr(err, "NCCLEMU: ignoring bad NCCLEMU_FAIL entry 'ncclCommCount:x=1'"));
  CHECK(err && strstr(err, "NCCLEMU: ignoring bad NCCLEMU_HANG entry 'ncclCommDestroy=5'"));
  free(err);
  ncclComm_t c = solo();
  float f = 1;
  CHECK_EQ(ncclAllReduce(&f, &f, 1, ncclFloat, ncclSum, c, NULL), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

/* ---------------------------------------------------------------- hangs */

struct call {
  ncclComm_t comm;
  ncclResult_t result;
  const char *what;
};

static void *call_on_thread(void *arg) {
  struct call *c = arg;
  float v = 1;
  if (!strcmp(c->what, "allreduce"))
    c->result = ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c->comm, NULL);
  else if (!strcmp(c->what, "destroy"))
    c->result = ncclCommDestroy(c->comm);
  else {
    ncclUniqueId id;
    ncclComm_t comm;
    ncclGetUniqueId(&id);
    c->result = ncclCommInitRank(&comm, 1, id, 0);
  }
  return NULL;
}

/* Waits for the emulator's line announcing the hang, and returns the comm it names. */
static ncclComm_t wait_for_hang(const char *api) {
  char want[128];
  snprintf(want, sizeof(want), "NCCLEMU: %s hangs until comm ", api);
  for (;;) {
    char *err = read_file(test_path("stderr"));
    char *at = err ? strstr(err, want) : NULL;
    void *comm = NULL;
    if (at && sscanf(at + strlen(want), "%p", &comm) == 1) {
      free(err);
      return comm;
    }
    free(err);
    sleep_ms(2);
  }
}

static void hang(const char *what, const char *api, ncclComm_t comm, ncclResult_t expected) {
  struct call call = {.comm = comm, .what = what};
  capture_stderr();
  pthread_t t;
  pthread_create(&t, NULL, call_on_thread, &call);
  ncclComm_t hung = wait_for_hang(api);
  if (comm)
    CHECK(hung == comm);
  CHECK_EQ(ncclCommAbort(hung), ncclSuccess);
  pthread_join(t, NULL);
  free(captured_stderr());
  CHECK_EQ(call.result, expected);
  int n;
  CHECK_EQ(ncclCommCount(hung, &n), ncclInvalidArgument); /* aborted: gone */
}

static void hung_allreduce_returns_once_aborted(void) {
  hang("allreduce", "ncclAllReduce", solo(), ncclRemoteError);
}

static void hang_only_the_nth_call(void) {
  ncclComm_t c = solo();
  float v = 1;
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c, NULL), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
  hang("allreduce", "ncclAllReduce", c, ncclRemoteError);
}

static void hung_destroy_returns_once_aborted(void) {
  hang("destroy", "ncclCommDestroy", solo(), ncclRemoteError);
  fclose(fopen(test_path("expected"), "w")); /* nothing left alive */
}

/* A hung destroy is a destroy in progress: another destroy of the comm is misuse meanwhile. */
static void a_second_destroy_during_a_hung_destroy_is_misuse(void) {
  ncclComm_t c = solo();
  capture_stderr();
  struct call call = {.comm = c, .what = "destroy"};
  pthread_t t;
  pthread_create(&t, NULL, call_on_thread, &call);
  wait_for_hang("ncclCommDestroy");
  CHECK_EQ(ncclCommDestroy(c), ncclInvalidArgument);
  CHECK_EQ(ncclCommAbort(c), ncclSuccess);
  pthread_join(t, NULL);
  char *err = captured_stderr();
  char want[128];
  snprintf(want, sizeof(want), "ncclCommDestroy: comm %p is not a live communicator", (void *)c);
  CHECK(err && strstr(err, want));
  free(err);
}

static void hung_init_publishes_the_comm_so_it_can_be_aborted(void) {
  hang("init", "ncclCommInitRank", NULL, ncclRemoteError);
}

/* ---------------------------------------------------------------- exit */

static void *finalize_on_thread(void *comm) {
  ncclCommFinalize(*(ncclComm_t *)comm);
  return NULL;
}

static void exit_with_everything_stuck(void) {
  ncclComm_t c[2];
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  cudaStream_t s, gated;
  cudaStreamCreate(&s);
  cudaStreamCreate(&gated);
  static float v = 1;
  static struct gate never;
  gate_init(&never);
  /* a worker waits for a peer that never comes, another at a gate that never opens */
  CHECK_EQ(ncclAllReduce(&v, &v, 1, ncclFloat, ncclSum, c[0], s), ncclSuccess);
  cudaLaunchHostFunc(gated, wait_at_gate, &never);
  /* and an application thread hangs in NCCL (NCCLEMU_HANG=ncclCommFinalize) */
  static ncclComm_t finalized;
  finalized = c[1];
  pthread_t t;
  pthread_create(&t, NULL, finalize_on_thread, &finalized);
  pthread_detach(t);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "comm %p rank 0 nranks 2 device 0 commId *\n"
             "comm %p rank 1 nranks 2 device 1 commId *\n"
             "stream %p device 0 pending 1\nstream %p device 0 pending 1\n",
          (void *)c[0], (void *)c[1], (void *)s, (void *)gated);
  fclose(f);
  /* returning exits the process: the report is written, and nothing waits for the workers */
}

/* NCCLEMU_EXIT_WAITS=1: a process that exits with a call stuck in the library does not end. */
static void exit_waits_for_a_hung_call_when_asked(void) {
  int ready[2];
  REQUIRE_EQ(pipe(ready), 0);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    capture_stderr();
    static struct call call;
    call.comm = solo();
    call.what = "destroy";
    pthread_t t;
    pthread_create(&t, NULL, call_on_thread, &call);
    wait_for_hang("ncclCommDestroy");
    ssize_t ignored = write(ready[1], "x", 1);
    (void)ignored;
    exit(0); /* the library's teardown waits for the hung destroy: for ever */
  }
  char c;
  REQUIRE_EQ(read(ready[0], &c, 1), 1);
  sleep_ms(300);
  int status;
  CHECK_EQ(waitpid(pid, &status, WNOHANG), 0); /* still exiting */
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

static void report_named_by_pid(void) {
  FILE *f = fopen(test_path("pid"), "w");
  fprintf(f, "%d", (int)getpid());
  fclose(f);
  ncclComm_t c = solo();
  ncclCommDestroy(c);
}

static int report_has_the_pid_in_its_name(int status, const char *dir) {
  (void)status;
  char path[512];
  snprintf(path, sizeof(path), "%s/pid", dir);
  char *pid = read_file(path);
  if (!pid)
    return 1;
  snprintf(path, sizeof(path), "%s/report-%s.txt", dir, pid);
  struct stat st;
  int failures = stat(path, &st) != 0 || st.st_size != 0;
  if (failures)
    fprintf(stderr, "no empty report at %s\n", path);
  free(pid);
  return failures;
}

static const struct test_case cases[] = {
    {"fail_the_nth_call", fail_the_nth_call, "NCCLEMU_FAIL=ncclCommInitRank:2=ncclSystemError",
     NULL},
    {"fail_every_call_with_a_numeric_cuda_code", fail_every_call_with_a_numeric_cuda_code,
     "NCCLEMU_FAIL=cudaStreamSynchronize=999", NULL},
    {"fail_a_list_of_functions", fail_a_list_of_functions,
     "NCCLEMU_FAIL=ncclAllReduce:1=ncclInternalError,cudaMalloc:2=cudaErrorMemoryAllocation",
     NULL},
    {"a_failed_destroy_leaves_the_comm_live", a_failed_destroy_leaves_the_comm_live,
     "NCCLEMU_FAIL=ncclCommDestroy:1=2", NULL},
    {"a_failed_group_end_launches_nothing", a_failed_group_end_launches_nothing,
     "NCCLEMU_FAIL=ncclGroupEnd:1=ncclInternalError", NULL},
    {"bad_entries_are_ignored_with_a_message", bad_entries_are_ignored_with_a_message,
     "NCCLEMU_FAIL=ncclAllReduce,ncclCommCount:x=1 NCCLEMU_HANG=ncclCommDestroy=5", NULL},
    {"hung_allreduce_returns_once_aborted", hung_allreduce_returns_once_aborted,
     "NCCLEMU_HANG=ncclAllReduce", NULL},
    {"hang_only_the_nth_call", hang_only_the_nth_call, "NCCLEMU_HANG=ncclAllReduce:2", NULL},
    {"hung_destroy_returns_once_aborted", hung_destroy_returns_once_aborted,
     "NCCLEMU_HANG=ncclCommDestroy NCCLEMU_REPORT=@/report", exit_report_is_as_expected},
    {"a_second_destroy_during_a_hung_destroy_is_misuse",
     a_second_destroy_during_a_hung_destroy_is_misuse, "NCCLEMU_HANG=ncclCommDestroy", NULL},
    {"hung_init_publishes_the_comm_so_it_can_be_aborted",
     hung_init_publishes_the_comm_so_it_can_be_aborted, "NCCLEMU_HANG=ncclCommInitRank", NULL},
    {"exit_never_waits_for_stuck_workers_and_reports_what_is_live", exit_with_everything_stuck,
     "NCCLEMU_REPORT=@/report NCCLEMU_HANG=ncclCommFinalize", exit_report_is_as_expected},
    {"exit_waits_for_a_hung_call_when_asked", exit_waits_for_a_hung_call_when_asked,
     "NCCLEMU_HANG=ncclCommDestroy NCCLEMU_EXIT_WAITS=1", NULL},
    {"report_path_expands_the_pid_and_is_written_even_when_empty", report_named_by_pid,
     "NCCLEMU_REPORT=@/report-%p.txt", report_has_the_pid_in_its_name},
};

TEST_MAIN(cases)
