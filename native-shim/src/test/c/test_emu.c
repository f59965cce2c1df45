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
  ncclComm_t comms[2];
  cudaStream_t s[2];
  two_rank_comms(comms, s);
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(comm_records(out, 4), 2);
  int64_t record = out[2] == 0 ? out[0] : out[NCCLGUARD_PLUGIN_RECORD_LONGS]; /* rank 0's */
  allreduce_both(buf, 64, comms, s);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->stream_sync(s[r]), 0);
  int64_t f[NCCLGUARD_IN_FLIGHT_LONGS];
  CHECK_EQ(ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS), 0);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s[0], wait_at_gate, &held), 0);
  allreduce_both(buf, 64, comms, s);
  allreduce_both(buf, 32, comms, s);
  CHECK_EQ(ng->in_flight(record, f, NCCLGUARD_IN_FLIGHT_LONGS), 2);
  CHECK_EQ(f[0], 2);
  CHECK_EQ(f[2], 1);
  CHECK_EQ(f[3], 64); /* the oldest */
  gate_open(&held);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->stream_sync(s[r]), 0);
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
  ncclComm_t comms[2];
  cudaStream_t s[2];
  two_rank_comms(comms, s);
  for (int i = 0; i < 3; i++) allreduce_both(buf, 16, comms, s);
  REQUIRE_EQ(fj->group_start(), 0);
  allreduce_both(buf, 8, comms, s);
  allreduce_both(buf + 16, 8, comms, s);
  REQUIRE_EQ(fj->group_end(), 0);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->stream_sync(s[r]), 0);
  ncclComm_t children[2];
  REQUIRE_EQ(fj->group_start(), 0);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->comm_split(comms[r], 0, r, &children[r]), 0);
  REQUIRE_EQ(fj->group_end(), 0);
  allreduce_both(buf, 4, children, s);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->stream_sync(s[r]), 0);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->comm_destroy(children[r]), 0);
  for (int r = 0; r < 2; r++) REQUIRE_EQ(fj->comm_destroy(comms[r]), 0);
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

/* A log line without the words that differ from run to run (thread ids, pids, timer values,
 * buffer and stream addresses, commIds: the unique id is random), its context named by the rank
 * its init gave it (rank, nranks) and its place among the inits of that rank: the inits of a clique run on a thread
 * each, so contexts are numbered, and the process's mask first read, in whichever order they ran. */
static void normalized(const char *line, char ctx_rank[][2][32], int nctx, char *n, size_t cap) {
  char copy[2048], *sw;
  snprintf(copy, sizeof(copy), "%s", line);
  n[0] = 0;
  for (char *w = strtok_r(copy, " ", &sw); w != NULL; w = strtok_r(NULL, " ", &sw)) {
    if (!strncmp(w, "tid=", 4) || !strncmp(w, "pid=", 4) || !strncmp(w, "pTimer=", 7) || !strncmp(w, "send=", 5) ||
        !strncmp(w, "stream=", 7) || !strncmp(w, "recv=", 5) || !strncmp(w, "commId=", 7) || !strncmp(w, "mask_in=", 8))
      continue;
    if (!strncmp(w, "context=", 8)) {
      for (int i = 0; i < nctx; i++) {
        if (!strcmp(w + 8, ctx_rank[i][0])) {
          w = ctx_rank[i][1];
          break;
        }
      }
    }
    strncat(n, w, cap - 1 - strlen(n));
    strncat(n, " ", cap - 1 - strlen(n));
  }
}

static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The log's lines, normalized and sorted; returns how many. */
static int log_lines(char *text, char **out, int cap) {
  static char ctx_rank[64][2][32];
  int nctx = 0, n = 0, per_rank[64] = {0};
  char *raw[4096], *sv;
  int nraw = 0;
  for (char *l = strtok_r(text, "\n", &sv); l != NULL && nraw < 4096; l = strtok_r(NULL, "\n", &sv)) raw[nraw++] = l;
  /* in order: a context id names the communicator of the last init that gave it out (a plugin
   * closed after its last finalize and opened again numbers its contexts from the start) */
  for (int i = 0; i < nraw && n < cap; i++) {
    const char *c = strstr(raw[i], "context="), *r = strstr(raw[i], " rank="), *nr = strstr(raw[i], " nranks=");
    if (strncmp(raw[i], "init ", 5) == 0 && c != NULL && r != NULL && nr != NULL) {
      int rank = atoi(r + 6) & 7, nranks = atoi(nr + 8) & 7, k = nranks * 8 + rank;
      char id[32];
      sscanf(c + 8, "%31s", id);
      int at = 0;
      while (at < nctx && strcmp(ctx_rank[at][0], id) != 0) at++;
      if (at == nctx && nctx < 64) nctx++;
      snprintf(ctx_rank[at][0], 32, "%s", id);
      snprintf(ctx_rank[at][1], 32, "context-of-%d/%d-%d", rank, nranks, per_rank[k]++);
    }
    char buf[2048];
    normalized(raw[i], ctx_rank, nctx, buf, sizeof(buf));
    out[n++] = strdup(buf);
  }
  qsort(out, (size_t)n, sizeof(char *), by_text);
  return n;
}

static void the_applications_plugin_sees_what_it_saw_without_the_agent(void) {
  char a[512], b[512];
  snprintf(a, sizeof(a), "%s", test_path("without.log"));
  snprintf(b, sizeof(b), "%s", test_path("with.log"));
  run_child(0, a);
  run_child(1, b);
  char *x = read_file(a), *y = read_file(b);
  REQUIRE_EQ(x != NULL && y != NULL, 1);
  static char *lx[4096], *ly[4096];
  int nx = log_lines(x, lx, 4096), ny = log_lines(y, ly, 4096);
  CHECK(nx > 20);
  CHECK_EQ(nx, ny);
  int differ = 0;
  for (int i = 0; i < nx && i < ny; i++) {
    if (strcmp(lx[i], ly[i]) != 0 && differ++ < 5) fprintf(stderr, "without: %s\nwith:    %s\n", lx[i], ly[i]);
  }
  CHECK_EQ(differ, 0);
  for (int i = 0; i < nx; i++) free(lx[i]);
  for (int i = 0; i < ny; i++) free(ly[i]);
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
