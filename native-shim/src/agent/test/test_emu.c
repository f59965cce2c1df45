/* The library as both the interposer and the profiler plugin the emulated NCCL loads
 * (NCCL_PROFILER_PLUGIN), NCCL linked statically into a JNI-like library (exported and hidden),
 * and the application's own plugin behind ours seeing what it saw without the agent. */
#include <sys/wait.h>

#include "agent_test.h"

static float buf[64];

static void plugin_is_ncclguard(void) { setenv("NCCL_PROFILER_PLUGIN", getenv("NG_LIB"), 1); }

static int64_t comm_records(int64_t *out, int n) { return ng->plugin_comms(out, n); }

static void a_native_init_carries_the_plugins_record_of_it(void) {
  plugin_is_ncclguard();
  load_agent(&recording, 1);
  load_fake();
  ncclComm_t comm = one_rank_comm();
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("ncclCommInitRank"), &u), 1);
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(comm_records(out, 4), 1);
  CHECK_EQ(u.slots[u.n - 2], out[0]); /* the record made inside this call */
  CHECK_EQ(u.slots[u.n - 1], 1);
  CHECK_EQ(out[2], 0);
  CHECK_EQ(out[3], 1);
  CHECK_EQ(out[7] & 4, 4); /* inited on a (pretend) Java thread */
  CHECK(out[1] != 0);
  CHECK_EQ(recorded(UP_PLUGIN_INIT, -1), 1);
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
  CHECK_EQ(comm_records(out, 4), 0);
}

static void init_on_thread(void *p) { *(ncclComm_t *)p = one_rank_comm(); }

static void an_init_on_a_librarys_pthread_makes_no_plugin_upcall(void) {
  plugin_is_ncclguard();
  load_agent(&recording, 1);
  load_fake();
  only_main_is_java = 1;
  ncclComm_t comm;
  fj->on_thread(init_on_thread, &comm);
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(comm_records(out, 4), 1);
  CHECK_EQ(out[7] & 4, 0);
  CHECK_EQ(recorded(UP_PLUGIN_INIT, -1), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("ncclCommInitRank"), &u), 1);
  char *bt = ng->caller_backtrace(u.caller);
  CHECK(bt != NULL);
  free(bt);
}

static struct gate held;

static void work_in_flight_is_seen_through_kernel_channel_events(void) {
  plugin_is_ncclguard();
  load_agent(&recording, 1);
  load_fake();
  ncclComm_t comm = one_rank_comm();
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(comm_records(out, 4), 1);
  int64_t record = out[0];
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->allreduce(buf, 64, comm, s), 0);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  int64_t f[NCCLGUARD_IN_FLIGHT_LONGS];
  CHECK_EQ(ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS), 0);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->allreduce(buf, 64, comm, s), 0);
  REQUIRE_EQ(fj->allreduce(buf, 32, comm, s), 0);
  CHECK_EQ(ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS), 2);
  CHECK_EQ(f[0], 2);
  CHECK_EQ(f[2], 1);
  CHECK_EQ(f[3], 64); /* the oldest */
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS), 0);
  CHECK_EQ(f[5], 3);
}

static void *open_static(const char *name) { return open_or_die(bin_path(name), RTLD_LAZY); }

static void nccl_linked_in_and_exported_is_seen_by_the_interposer_and_the_plugin(void) {
  plugin_is_ncclguard();
  load_agent(&recording, 1);
  void *h = open_static("libstaticexp.so");
  int (*run)(int, ncclComm_t *) = (int (*)(int, ncclComm_t *))dlsym(h, "sf_run");
  ncclComm_t comm;
  REQUIRE_EQ(run(0, &comm), 0); /* forwarded into the library's own NCCL: it works */
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("ncclCommInitRank"), &u), 1);
  char *lib = ng->caller_library(u.caller);
  char *sym = ng->caller_symbol(u.caller);
  CHECK(lib != NULL && strcmp(lib, "libstaticexp.so") == 0);
  CHECK(sym != NULL && strcmp(sym, "sf_run") == 0);
  free(lib);
  free(sym);
  CHECK_EQ(u.slots[u.n - 1], 1); /* and the plugin's record of it */
  CHECK_EQ(recorded(UP_EXIT, fn_id("ncclAllReduce")), 0); /* hot: C's */
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  CHECK_EQ(comm_records(out, 4), 1); /* leaked */
}

static void nccl_linked_in_and_hidden_is_seen_by_the_plugin_only(void) {
  plugin_is_ncclguard();
  load_agent(&recording, 1);
  void *h = open_static("libstatichidden.so");
  int (*run)(int, ncclComm_t *) = (int (*)(int, ncclComm_t *))dlsym(h, "sf_run");
  ncclComm_t comm;
  REQUIRE_EQ(run(0, &comm), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("ncclCommInitRank")), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("cudaStreamCreate")), 1); /* cudart is shared: its calls are seen */
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(comm_records(out, 4), 1);
  CHECK_EQ(out[3], 1);
  REQUIRE_EQ(run(1, &comm), 0);
  CHECK_EQ(comm_records(out, 4), 1); /* the destroyed one finalized, the leaked one stays */
}

/* ---------------------------------------------------------------- the application's plugin */
static void scenario(void) {
  ncclComm_t comm = one_rank_comm();
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  for (int i = 0; i < 3; i++) REQUIRE_EQ(fj->allreduce(buf, 64, comm, s), 0);
  REQUIRE_EQ(fj->group_start(), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  REQUIRE_EQ(fj->allreduce(buf, 8, comm, s), 0);
  REQUIRE_EQ(fj->group_end(), 0);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  ncclComm_t child;
  REQUIRE_EQ(fj->comm_split(comm, 0, 0, &child), 0);
  REQUIRE_EQ(fj->allreduce(buf, 4, child, s), 0);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  REQUIRE_EQ(fj->comm_destroy(child), 0);
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
  ncclComm_t again = one_rank_comm(); /* the plugin is opened again after the last finalize */
  REQUIRE_EQ(fj->comm_destroy(again), 0);
  one_rank_comm(); /* and one left alive */
}

static void run_child(int with_agent, const char *log) {
  pid_t pid = fork();
  if (pid == 0) {
    char testlog[1024];
    snprintf(testlog, sizeof(testlog), "%s/libnccl-profiler-testlog.so", getenv("NG_EMU_TEST"));
    setenv("NCCLEMU_TESTLOG", log, 1);
    if (with_agent) {
      plugin_is_ncclguard();
      load_agent(&recording, 1);
      REQUIRE_EQ(ng->user_plugin(testlog), 1);
    } else {
      setenv("NCCL_PROFILER_PLUGIN", testlog, 1);
    }
    load_fake();
    scenario();
    exit(__atomic_load_n(&test_failures, __ATOMIC_SEQ_CST) ? 1 : 0);
  }
  int status;
  waitpid(pid, &status, 0);
  REQUIRE_EQ(WIFEXITED(status) && WEXITSTATUS(status) == 0, 1);
}

static void the_applications_plugin_sees_what_it_saw_without_the_agent(void) {
  char a[512], b[512];
  snprintf(a, sizeof(a), "%s", test_path("without.log"));
  snprintf(b, sizeof(b), "%s", test_path("with.log"));
  run_child(0, a);
  run_child(1, b);
  char *x = read_file(a), *y = read_file(b);
  REQUIRE_EQ(x != NULL && y != NULL, 1);
  /* line by line, without the words that differ from run to run: thread ids, pids, timer values,
   * buffer and stream addresses, commIds (the unique id is random) */
  int lines = 0, differ = 0;
  char *sx, *sy;
  char *lx = strtok_r(x, "\n", &sx), *ly = strtok_r(y, "\n", &sy);
  while (lx != NULL || ly != NULL) {
    char nx[2048] = "", ny[2048] = "";
    for (int k = 0; k < 2; k++) {
      char *l = k == 0 ? lx : ly, *n = k == 0 ? nx : ny, *sw;
      if (l == NULL) continue;
      char copy[2048];
      snprintf(copy, sizeof(copy), "%s", l);
      for (char *w = strtok_r(copy, " ", &sw); w != NULL; w = strtok_r(NULL, " ", &sw)) {
        if (!strncmp(w, "tid=", 4) || !strncmp(w, "pid=", 4) || !strncmp(w, "pTimer=", 7) || !strncmp(w, "send=", 5) || !strncmp(w, "stream=", 7) ||
            !strncmp(w, "recv=", 5) || !strncmp(w, "commId=", 7))
          continue;
        strncat(n, w, 2047 - strlen(n));
        strncat(n, " ", 2047 - strlen(n));
      }
    }
    if (strcmp(nx, ny) != 0) {
      if (differ++ < 5) fprintf(stderr, "without: %s\nwith:    %s\n", nx, ny);
    }
    lines++;
    lx = lx != NULL ? strtok_r(NULL, "\n", &sx) : NULL;
    ly = ly != NULL ? strtok_r(NULL, "\n", &sy) : NULL;
  }
  CHECK(lines > 20);
  CHECK_EQ(differ, 0);
  free(x);
  free(y);
}

static const struct test_case cases[] = {
    {"a_native_init_carries_the_plugins_record_of_it", a_native_init_carries_the_plugins_record_of_it, NULL, NULL},
    {"an_init_on_a_librarys_pthread_makes_no_plugin_upcall", an_init_on_a_librarys_pthread_makes_no_plugin_upcall, NULL,
     NULL},
    {"work_in_flight_is_seen_through_kernel_channel_events", work_in_flight_is_seen_through_kernel_channel_events, NULL,
     NULL},
    {"nccl_linked_in_and_exported_is_seen_by_the_interposer_and_the_plugin",
     nccl_linked_in_and_exported_is_seen_by_the_interposer_and_the_plugin, NULL, NULL},
    {"nccl_linked_in_and_hidden_is_seen_by_the_plugin_only", nccl_linked_in_and_hidden_is_seen_by_the_plugin_only, NULL,
     NULL},
    {"the_applications_plugin_sees_what_it_saw_without_the_agent",
     the_applications_plugin_sees_what_it_saw_without_the_agent, NULL, NULL},
};

TEST_MAIN(cases)
