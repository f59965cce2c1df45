/* The profiler plugin, loaded and called as NCCL 2.28/2.29 do, through the test plugin
 * (profiler_testlog.c, which logs every call to NCCLEMU_TESTLOG), and NCCL's commId. */
#include "test.h"

/* Values printed by a program built from NCCL's own bitops.h (v2.29.3-1). */
static void hashes_match_nccls_own_code(void) {
  ncclUniqueId id;
  for (int i = 0; i < 128; i++)
    id.internal[i] = (char)i;
  uint64_t h = id_hash(&id);
  CHECK(h == 0x6afe1cc17717e1f4ULL);
  CHECK(child_hash(h, 1, 0) == 0x79030d073b3c579fULL);
  CHECK(child_hash(h, 0, 0) == 0x3ab8d78e8fb6dbdaULL);
  CHECK(hash_combine(0x1122334455667788ULL, 5) == 0x8e136f84506edd7bULL);
}

/* ---------------------------------------------------------------- reading the plugin's log */

static const char *artefact(const char *name) {
  static __thread char buf[512];
  snprintf(buf, sizeof(buf), "%s/%s", getenv("NCCLEMU_TEST_ARTEFACTS"), name);
  return buf;
}

static char *plugin_log(void) { return read_file(test_path("plugin.log")); }

static void use_plugin_by_path(const char *name) {
  setenv("NCCL_PROFILER_PLUGIN", artefact(name), 1);
}

static ncclComm_t solo(ncclUniqueId *id_out) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  REQUIRE_EQ(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
  if (id_out)
    *id_out = id;
  return c;
}

/* Two ranks, on devices 0 and 1, from this thread. */
static void pair(ncclUniqueId *id_out, ncclComm_t c[2]) {
  ncclUniqueId id;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclGroupStart();
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    ncclCommInitRank(&c[r], 2, id, r);
  }
  REQUIRE_EQ(ncclGroupEnd(), ncclSuccess);
  cudaSetDevice(0);
  if (id_out)
    *id_out = id;
}

/* One allreduce of both ranks, on each device's default stream, waited for. */
static void allreduce_pair(ncclComm_t c[2]) {
  static float v[2] = {1, 2};
  ncclGroupStart();
  for (int r = 0; r < 2; r++)
    CHECK_EQ(ncclAllReduce(&v[r], &v[r], 1, ncclFloat, ncclSum, c[r], 0), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  cudaDeviceSynchronize();
  cudaSetDevice(1);
  cudaDeviceSynchronize();
  cudaSetDevice(0);
}

/* ---------------------------------------------------------------- loading and init */

#define N 2
static ncclUniqueId shared_id;
static ncclComm_t comms[N];
static int tids[N];

static void *init_on_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  tids[r] = (int)gettid();
  cudaSetDevice(r);
  CHECK_EQ(ncclCommInitRank(&comms[r], N, shared_id, r), ncclSuccess);
  return NULL;
}

static void *destroy_on_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  tids[r] = (int)gettid();
  CHECK_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  return NULL;
}

static void init_runs_on_the_initing_thread_with_nccls_commid(void) {
  use_plugin_by_path("libnccl-profiler-testlog.so");
  REQUIRE_EQ(ncclGetUniqueId(&shared_id), ncclSuccess);
  run_threads(N, init_on_thread);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "load pid="), 1);
  CHECK_EQ(count_of(log, "init v6 "), N);
  char context[N][32];
  for (int r = 0; r < N; r++) {
    char want[32];
    snprintf(want, sizeof(want), "tid=%d ", tids[r]);
    const char *line = line_with(log, want, 0);
    CHECK(strstr(line, "init v6 ") != NULL);
    CHECK(hex_field(line, "commId") == id_hash(&shared_id));
    CHECK_EQ(atoi(field(line, "rank")), r);
    CHECK_EQ(atoi(field(line, "nranks")), N);
    CHECK_EQ(atoi(field(line, "nNodes")), 1);
    CHECK(strcmp(field(line, "commName"), "(null)") == 0);
    snprintf(context[r], sizeof(context[r]), "%s", field(line, "context"));
  }
  free(log);
  run_threads(N, destroy_on_thread);
  log = plugin_log();
  for (int r = 0; r < N; r++) {
    char want[128];
    snprintf(want, sizeof(want), "finalize tid=%d context=%s", tids[r], context[r]);
    CHECK(strstr(log, want) != NULL);
  }
  free(log);
}

static void short_name_is_found_on_the_library_path_and_info_says_so(void) {
  ncclUniqueId id;
  ncclComm_t c = solo(&id);
  char *info = read_file(test_path("nccl.log"));
  char want[1024];
  snprintf(want, sizeof(want), "NCCL INFO Successfully loaded external profiler plugin %s\n",
           artefact("libnccl-profiler-testlog.so"));
  CHECK(info && strstr(info, want));
  CHECK(info && strstr(info, "NCCL INFO NCCL_PROFILER_PLUGIN set by environment to testlog\n"));
  CHECK(info && strstr(info, "NCCL INFO PROFILER/Plugin: Loaded testlog (v6)\n"));
  snprintf(want, sizeof(want),
           "NCCL INFO ncclCommInitRank comm %p rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1000 "
           "commId 0x%llx - Init COMPLETE\n",
           (void *)c, (unsigned long long)id_hash(&id));
  CHECK(info && strstr(info, want));
  char *log = plugin_log();
  CHECK(hex_field(line_with(log, "init v6", 0), "commId") == id_hash(&id));
  free(log);
  free(info);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

/* The line NCCL_DEBUG=INFO prints by default goes to stdout. */
static void info_lines_go_to_stdout_by_default(void) {
  fflush(stdout);
  int saved = dup(1);
  int fd = open(test_path("stdout"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  dup2(fd, 1);
  close(fd);
  ncclUniqueId id;
  ncclComm_t c = solo(&id);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  char *out = read_file(test_path("stdout"));
  char want[256];
  snprintf(want, sizeof(want), "commId 0x%llx - Init COMPLETE\n", (unsigned long long)id_hash(&id));
  CHECK(out && strstr(out, want));
  CHECK(out && strstr(out, " NCCL INFO NCCL version 2."));
  free(out);
  ncclCommDestroy(c);
}

static void none_loads_no_plugin(void) {
  ncclComm_t c = solo(NULL);
  ncclCommDestroy(c);
  char *log = plugin_log();
  CHECK(log == NULL);
  free(log);
  char *info = read_file(test_path("nccl.log"));
  CHECK(info && strstr(info, "NCCL_PROFILER_PLUGIN set by environment to none\n"));
  CHECK(info && !strstr(info, "Successfully loaded"));
  free(info);
}

static void a_missing_plugin_is_named_and_nccl_goes_on(void) {
  ncclComm_t c = solo(NULL);
  char *info = read_file(test_path("nccl.log"));
  CHECK(info &&
        strstr(info, "PROFILER/Plugin: Could not find: nosuch libnccl-profiler-nosuch.so\n"));
  free(info);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

static void v5_is_taken_when_there_is_no_v6(void) {
  use_plugin_by_path("libnccl-profiler-testlog-v5.so");
  ncclUniqueId id;
  ncclComm_t c = solo(&id);
  char *log = plugin_log();
  CHECK(hex_field(line_with(log, "init v5 ", 0), "commId") == id_hash(&id));
  free(log);
  /* the logger NCCL hands the plugin prints through NCCL's own INFO lines */
  char *info = read_file(test_path("nccl.log"));
  CHECK(info && strstr(info, "NCCL INFO testlog: init of rank 0\n"));
  CHECK(info && strstr(info, "PROFILER/Plugin: Loaded testlog (v5)\n"));
  free(info);
  ncclCommDestroy(c);
}

/* v4's init takes the mask before commName and the hash after it; its events have no API
 * parents: a collective's parent is its group. */
static void v4_gets_its_own_argument_order_and_parents(void) {
  use_plugin_by_path("libnccl-profiler-testlog-v4.so");
  ncclUniqueId id;
  ncclComm_t c[2];
  pair(&id, c);
  allreduce_pair(c);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "init v4 "), 2);
  const char *init = line_with(log, "init v4 ", 0);
  CHECK(hex_field(init, "commId") == id_hash(&id));
  CHECK(strcmp(field(init, "mask"), "0x746") == 0); /* asked for API events too: none come */
  char group[32];
  snprintf(group, sizeof(group), "%s", field(line_with(log, "type=Group ", 0), "handle"));
  CHECK(strcmp(field(line_with(log, "type=Coll ", 0), "parent"), group) == 0);
  CHECK_EQ(count_of(log, "type=CollApi"), 0);
  CHECK_EQ(count_of(log, "type=GroupApi"), 0);
  CHECK_EQ(count_of(log, "type=KernelCh"), 2);
  free(log);
  ncclCommDestroy(c[0]);
  ncclCommDestroy(c[1]);
}

static void an_older_interface_is_unsupported(void) {
  use_plugin_by_path("libnccl-profiler-testlog-v3.so");
  ncclComm_t c = solo(NULL);
  char *info = read_file(test_path("nccl.log"));
  char want[600];
  snprintf(want, sizeof(want), "External profiler plugin %s is unsupported\n",
           artefact("libnccl-profiler-testlog-v3.so"));
  CHECK(info && strstr(info, want));
  free(info);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "init "), 0);
  free(log);
  ncclCommDestroy(c);
}

/* Checked after the process exited: two inits, one finalize (the aborted comm's); the leaked
 * comm is in the exit report with the commId its plugin init had. */
static void finalize_at_abort_and_none_for_a_leaked_comm(void) {
  use_plugin_by_path("libnccl-profiler-testlog.so");
  ncclComm_t aborted = solo(NULL);
  ncclComm_t leaked = solo(NULL);
  (void)leaked;
  CHECK_EQ(ncclCommAbort(aborted), ncclSuccess);
}

static int one_finalize_for_two_inits(int status, const char *dir) {
  (void)status;
  char path[512];
  snprintf(path, sizeof(path), "%s/plugin.log", dir);
  char *log = read_file(path);
  snprintf(path, sizeof(path), "%s/report", dir);
  char *report = read_file(path);
  int failures = count_of(log, "init v6 ") != 2 || count_of(log, "finalize ") != 1;
  char first[32], second_id[64];
  snprintf(first, sizeof(first), "%s", field(line_with(log, "init v6 ", 0), "context"));
  snprintf(second_id, sizeof(second_id), "%s", field(line_with(log, "init v6 ", 1), "commId"));
  failures += strcmp(field(line_with(log, "finalize ", 0), "context"), first) != 0;
  const char *in_report = strstr(report ? report : "", " commId ");
  failures += count_lines(report) != 1 || !in_report ||
              strncmp(in_report + 8, second_id, strlen(second_id)) != 0;
  if (failures)
    fprintf(stderr, "plugin log:\n%s\nreport:\n%s\n", log ? log : "(none)",
            report ? report : "(none)");
  free(log);
  free(report);
  return failures != 0;
}

static void the_plugin_is_closed_after_the_last_finalize(void) {
  ncclComm_t a = solo(NULL);
  CHECK_EQ(ncclCommDestroy(a), ncclSuccess);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "unload pid="), 1);
  free(log);
  ncclComm_t b = solo(NULL);
  log = plugin_log();
  CHECK_EQ(count_of(log, "load pid="), 3); /* "unload pid=" holds "load pid=" too */
  CHECK_EQ(count_of(log, "init v6 "), 2);
  free(log);
  char *info = read_file(test_path("nccl.log"));
  CHECK(info && strstr(info, "PROFILER/Plugin: Closing profiler plugin testlog\n"));
  CHECK_EQ(count_of(info, "Successfully loaded external profiler plugin"), 2);
  free(info);
  ncclCommDestroy(b);
}

static void a_failed_init_gets_no_events_and_no_finalize(void) {
  ncclComm_t c[2];
  pair(NULL, c);
  allreduce_pair(c);
  CHECK_EQ(ncclCommDestroy(c[0]), ncclSuccess);
  CHECK_EQ(ncclCommDestroy(c[1]), ncclSuccess);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "failed"), 2);
  CHECK_EQ(count_of(log, "start "), 0);
  CHECK_EQ(count_of(log, "finalize "), 0);
  free(log);
  char *info = read_file(test_path("nccl.log"));
  CHECK(info && strstr(info, "Profiler init failed with error '3'"));
  free(info);
}

/* ---------------------------------------------------------------- where inits run */

static int tid_of_init(const char *log, int nth) {
  return atoi(field(line_with(log, "init v6 ", nth), "tid"));
}

/* NCCL runs a group's init jobs, when there are several, on a thread each. */
static void inits_of_a_group_run_on_a_thread_each(void) {
  ncclUniqueId id;
  ncclComm_t c[3];
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclGroupStart();
  for (int r = 0; r < 3; r++)
    CHECK_EQ(ncclCommInitRank(&c[r], 3, id, r), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "init v6 "), 3);
  int t0 = tid_of_init(log, 0), t1 = tid_of_init(log, 1), t2 = tid_of_init(log, 2);
  CHECK(t0 != (int)gettid() && t1 != (int)gettid() && t2 != (int)gettid());
  CHECK(t0 != t1 && t1 != t2 && t0 != t2);
  for (int i = 0; i < 3; i++)
    CHECK(hex_field(line_with(log, "init v6 ", i), "commId") == id_hash(&id));
  free(log);
  for (int r = 0; r < 3; r++)
    ncclCommDestroy(c[r]);
}

static void init_all_of_several_devices_on_threads_of_one_on_the_caller(void) {
  ncclComm_t one, two[2];
  REQUIRE_EQ(ncclCommInitAll(&one, 1, NULL), ncclSuccess);
  char *log = plugin_log();
  CHECK_EQ(tid_of_init(log, 0), (int)gettid());
  free(log);
  REQUIRE_EQ(ncclCommInitAll(two, 2, NULL), ncclSuccess);
  log = plugin_log();
  const char *a = line_with(log, "init v6 ", 1);
  int ta = atoi(field(a, "tid"));
  unsigned long long ia = hex_field(a, "commId");
  const char *b = line_with(log, "init v6 ", 2);
  CHECK(ta != (int)gettid() && atoi(field(b, "tid")) != (int)gettid());
  CHECK(ia == hex_field(b, "commId")); /* one communicator, one commId */
  CHECK(ia != hex_field(line_with(log, "init v6 ", 0), "commId"));
  free(log);
  ncclCommDestroy(one);
  ncclCommDestroy(two[0]);
  ncclCommDestroy(two[1]);
}

/* A non-blocking init completes on a thread of NCCL's; the comm is ready after its plugin init. */
static void a_nonblocking_init_is_ready_after_its_plugin_init(void) {
  ncclUniqueId id;
  ncclComm_t c;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclResult_t r = ncclCommInitRankConfig(&c, 1, id, 0, &config);
  CHECK(r == ncclInProgress || r == ncclSuccess);
  ncclResult_t state = ncclInProgress;
  for (int i = 0; i < 2000 && state == ncclInProgress; i++) {
    CHECK_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
    if (state == ncclInProgress)
      sleep_ms(1);
  }
  CHECK_EQ(state, ncclSuccess);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "init v6 "), 1);
  CHECK(tid_of_init(log, 0) != (int)gettid());
  CHECK(hex_field(line_with(log, "init v6 ", 0), "commId") == id_hash(&id));
  free(log);
  CHECK_EQ(ncclCommDestroy(c), ncclSuccess);
}

/* ---------------------------------------------------------------- commIds of splits and shrinks */

static void children_get_nccls_hash_of_parent_count_and_color(void) {
  ncclUniqueId id;
  ncclComm_t c[2], s1[2], s2[2], nocolor[2], shrunk;
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclGroupStart();
  for (int r = 0; r < 2; r++)
    ncclCommInitRank(&c[r], 2, id, r);
  REQUIRE_EQ(ncclGroupEnd(), ncclSuccess);
  uint64_t parent = id_hash(&id);
  ncclGroupStart();
  for (int r = 0; r < 2; r++)
    ncclCommSplit(c[r], 0, r, &s1[r], NULL);
  REQUIRE_EQ(ncclGroupEnd(), ncclSuccess);
  ncclGroupStart();
  for (int r = 0; r < 2; r++)
    ncclCommSplit(c[r], r, 0, &s2[r], NULL); /* a communicator of its own each */
  REQUIRE_EQ(ncclGroupEnd(), ncclSuccess);
  ncclGroupStart();
  for (int r = 0; r < 2; r++)
    ncclCommSplit(c[r], r == 0 ? 7 : NCCL_SPLIT_NOCOLOR, 0, &nocolor[r], NULL);
  REQUIRE_EQ(ncclGroupEnd(), ncclSuccess);
  CHECK(nocolor[1] == NULL);
  int excluded[1] = {1};
  REQUIRE_EQ(ncclCommShrink(c[0], excluded, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT), ncclSuccess);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "init v6 "), 2 + 2 + 2 + 1 + 1);
  int with = 0;
  uint64_t want[] = {child_hash(parent, 1, 0), child_hash(parent, 2, 0), child_hash(parent, 2, 1),
                     child_hash(parent, 3, 7), child_hash(parent, 0, 0)};
  int times[] = {2, 1, 1, 1, 1};
  for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
    char needle[64];
    snprintf(needle, sizeof(needle), "commId=0x%llx ", (unsigned long long)want[k]);
    with = count_of(log, needle);
    if (with != times[k])
      fprintf(stderr, "commId 0x%llx: %d inits, expected %d\n", (unsigned long long)want[k], with,
              times[k]);
    CHECK_EQ(with, times[k]);
  }
  free(log);
  ncclComm_t all[] = {s1[0], s1[1], s2[0], s2[1], nocolor[0], shrunk, c[0], c[1]};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    CHECK_EQ(ncclCommDestroy(all[i]), ncclSuccess);
}

/* ---------------------------------------------------------------- events */

/* With Coll and KernelCh: the collective's events start and stop in the call (NCCL's stop says
 * "enqueued"); its KernelCh event starts when the stream reaches it and stops when it is done.
 * Rank 0's stream is held at a gate: rank 1's allreduce starts and cannot finish. */
static void collective_events_and_the_kernel_while_it_runs(void) {
  ncclComm_t c[2];
  pair(NULL, c);
  cudaStream_t s[2];
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
  }
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s[0], wait_at_gate, &g);
  static float in[2][4] = {{1, 2, 3, 4}, {1, 2, 3, 4}}, out[2][4];
  for (int i = 0; i < 2; i++) {
    ncclGroupStart();
    for (int r = 0; r < 2; r++)
      CHECK_EQ(ncclAllReduce(in[r], out[r], 4, ncclFloat, ncclSum, c[r], s[r]), ncclSuccess);
    CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  }
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "type=Coll "), 4);
  const char *coll = line_with(log, "type=Coll ", 0);
  CHECK_EQ(atoi(field(coll, "tid")), (int)gettid());
  CHECK(strcmp(field(coll, "rank"), "0") == 0);
  CHECK(strcmp(field(coll, "func"), "AllReduce") == 0);
  CHECK(strcmp(field(coll, "seq"), "0") == 0);
  CHECK(strcmp(field(coll, "count"), "4") == 0);
  CHECK(strcmp(field(coll, "datatype"), "ncclFloat32") == 0);
  CHECK(strcmp(field(coll, "root"), "0") == 0);
  char ptr[32];
  snprintf(ptr, sizeof(ptr), "%p", (void *)in[0]);
  CHECK(strcmp(field(coll, "send"), ptr) == 0);
  snprintf(ptr, sizeof(ptr), "%p", (void *)out[0]);
  CHECK(strcmp(field(coll, "recv"), ptr) == 0);
  char handle[32], stop[64];
  snprintf(handle, sizeof(handle), "%s", field(coll, "handle"));
  snprintf(stop, sizeof(stop), "stop tid=%d handle=%s\n", (int)gettid(), handle);
  CHECK(strstr(log, stop) != NULL);
  const char *coll1 = line_with(log, "type=Coll ", 1);
  CHECK(strcmp(field(coll1, "rank"), "1") == 0);
  char handle1[32];
  snprintf(handle1, sizeof(handle1), "%s", field(coll1, "handle"));
  CHECK(strcmp(field(line_with(log, "type=Coll ", 2), "seq"), "1") == 0);
  free(log);
  /* in flight: rank 1's first allreduce started on its stream, and waits for rank 0 */
  for (int i = 0; i < 2000 && count_of(log = plugin_log(), "type=KernelCh") < 1; i++) {
    free(log);
    sleep_ms(1);
  }
  CHECK_EQ(count_of(log, "type=KernelCh"), 1);
  CHECK_EQ(count_of(log, "state=22 "), 0);
  const char *k = line_with(log, "type=KernelCh", 0);
  CHECK(strcmp(field(k, "parent"), handle1) == 0);
  CHECK(atoi(field(k, "tid")) != (int)gettid());
  char kh[32];
  snprintf(kh, sizeof(kh), "%s", field(k, "handle"));
  free(log);
  gate_open(&g);
  for (int r = 0; r < 2; r++)
    CHECK_EQ(cudaStreamSynchronize(s[r]), cudaSuccess);
  log = plugin_log();
  CHECK_EQ(count_of(log, "type=KernelCh"), 4);
  CHECK_EQ(count_of(log, "state=22 "), 4);
  char rec[64];
  snprintf(rec, sizeof(rec), "handle=%s state=22 ", kh);
  CHECK(strstr(log, rec) != NULL);
  snprintf(stop, sizeof(stop), "handle=%s\n", kh);
  CHECK(strstr(log, stop) != NULL);
  /* a Coll mask brings NCCL's GroupApi, CollApi and Group events too */
  CHECK_EQ(count_of(log, "type=GroupApi"), 2);
  CHECK_EQ(count_of(log, "type=CollApi"), 4);
  CHECK_EQ(count_of(log, "type=Group "), 4);
  free(log);
  for (int r = 0; r < 2; r++) {
    cudaStreamDestroy(s[r]);
    ncclCommDestroy(c[r]);
  }
}

/* As NCCL's: a collective of one rank is a copy, with no task and no event; a send to itself
 * is a task. */
static void a_single_rank_collective_has_no_events_a_send_to_itself_has(void) {
  ncclComm_t c = solo(NULL);
  static float v[4], w[4];
  CHECK_EQ(ncclAllReduce(v, v, 4, ncclFloat, ncclSum, c, 0), ncclSuccess);
  cudaStreamSynchronize(0);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "start "), 0);
  free(log);
  ncclGroupStart();
  ncclSend(v, 4, ncclFloat, 0, c, 0);
  ncclRecv(w, 4, ncclFloat, 0, c, 0);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  cudaStreamSynchronize(0);
  log = plugin_log();
  CHECK_EQ(count_of(log, "type=P2p "), 2);
  CHECK_EQ(count_of(log, "type=Coll"), 0);
  free(log);
  ncclCommDestroy(c);
}

static void a_zero_mask_gets_no_events(void) {
  ncclComm_t c[2];
  pair(NULL, c);
  allreduce_pair(c);
  ncclCommDestroy(c[0]);
  ncclCommDestroy(c[1]);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "init v6 "), 2);
  CHECK_EQ(count_of(log, "start "), 0);
  CHECK_EQ(count_of(log, "finalize "), 2);
  free(log);
}

/* Sends and receives are P2p tasks; ncclAlltoAll is one Send and one Recv per peer. */
static void p2p_events_and_alltoall_as_nccl_runs_it(void) {
  ncclComm_t c[2];
  REQUIRE_EQ(ncclCommInitAll(c, 2, NULL), ncclSuccess);
  static int a[2] = {1, 2}, b[2];
  ncclGroupStart();
  ncclSend(a, 2, ncclInt32, 1, c[0], 0);
  ncclRecv(b, 2, ncclInt32, 0, c[1], 0);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  cudaDeviceSynchronize();
  char *log = plugin_log();
  const char *send = line_with2(log, "type=P2p ", "func=Send", 0);
  CHECK(strcmp(field(send, "peer"), "1") == 0 && strcmp(field(send, "rank"), "0") == 0);
  CHECK(strcmp(field(send, "count"), "2") == 0);
  CHECK(strcmp(field(send, "datatype"), "ncclInt32") == 0);
  const char *recv = line_with2(log, "type=P2p ", "func=Recv", 0);
  CHECK(strcmp(field(recv, "peer"), "0") == 0);
  CHECK(strcmp(field(recv, "rank"), "1") == 0);
  free(log);
  static int x[2][4], y[2][4];
  ncclGroupStart();
  for (int r = 0; r < 2; r++) {
    cudaSetDevice(r);
    ncclAlltoAll(x[r], y[r], 2, ncclInt32, c[r], 0);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  cudaDeviceSynchronize();
  log = plugin_log();
  CHECK_EQ(count_of(log, "type=P2p "), 2 + 2 * 4);
  CHECK_EQ(count_of(log, "type=Coll "), 0);
  free(log);
  ncclCommDestroy(c[0]);
  ncclCommDestroy(c[1]);
}

/* GroupApi: one for the user's group (depth 2: the group and the call's implicit one), its
 * states recorded as the group's start ends and its end begins; a CollApi per call. */
static void api_events_follow_the_group(void) {
  ncclComm_t c[2];
  pair(NULL, c);
  static float v[2];
  ncclGroupStart();
  for (int i = 0; i < 2; i++)
    for (int r = 0; r < 2; r++)
      ncclAllReduce(&v[r], &v[r], 1, ncclFloat, ncclSum, c[r], 0);
  char *log = plugin_log();
  CHECK_EQ(count_of(log, "type=GroupApi"), 1);
  const char *g = line_with(log, "type=GroupApi", 0);
  CHECK(strcmp(field(g, "depth"), "2") == 0);
  char handle[32];
  snprintf(handle, sizeof(handle), "%s", field(g, "handle"));
  CHECK_EQ(count_of(log, "type=CollApi"), 4);
  CHECK(strcmp(field(line_with(log, "type=CollApi", 3), "parent"), handle) == 0);
  CHECK_EQ(count_of(log, "state=23 "), 1);
  CHECK_EQ(count_of(log, "state=24 "), 0);
  free(log);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  log = plugin_log();
  CHECK_EQ(count_of(log, "state=24 "), 1);
  char stop[64];
  snprintf(stop, sizeof(stop), "handle=%s\n", handle);
  CHECK(strstr(log, stop) != NULL); /* the GroupApi event stopped at the group's end */
  CHECK_EQ(count_of(log, "type=Coll "), 0); /* not asked for */
  free(log);
  cudaDeviceSynchronize();
  ncclCommDestroy(c[0]);
  ncclCommDestroy(c[1]);
}

/* ---------------------------------------------------------------- the cases */

#define LOG "NCCLEMU_TESTLOG=@/plugin.log"
#define INFO "NCCL_DEBUG=INFO NCCL_DEBUG_FILE=@/nccl.log"

static const struct test_case cases[] = {
    {"hashes_match_nccls_own_code", hashes_match_nccls_own_code, NULL, NULL},
    {"init_runs_on_the_initing_thread_with_nccls_commid",
     init_runs_on_the_initing_thread_with_nccls_commid, LOG, NULL},
    {"short_name_is_found_on_the_library_path_and_info_says_so",
     short_name_is_found_on_the_library_path_and_info_says_so,
     LOG " NCCL_PROFILER_PLUGIN=testlog " INFO, NULL},
    {"info_lines_go_to_stdout_by_default", info_lines_go_to_stdout_by_default,
     "NCCL_DEBUG=INFO", NULL},
    {"none_loads_no_plugin", none_loads_no_plugin, LOG " NCCL_PROFILER_PLUGIN=none " INFO, NULL},
    {"a_missing_plugin_is_named_and_nccl_goes_on", a_missing_plugin_is_named_and_nccl_goes_on,
     LOG " NCCL_PROFILER_PLUGIN=nosuch " INFO, NULL},
    {"v5_is_taken_when_there_is_no_v6", v5_is_taken_when_there_is_no_v6, LOG " " INFO, NULL},
    {"v4_gets_its_own_argument_order_and_parents", v4_gets_its_own_argument_order_and_parents,
     LOG " NCCLEMU_TESTLOG_MASK=0x746", NULL},
    {"an_older_interface_is_unsupported", an_older_interface_is_unsupported, LOG " " INFO, NULL},
    {"finalize_at_abort_and_none_for_a_leaked_comm", finalize_at_abort_and_none_for_a_leaked_comm,
     LOG " NCCLEMU_REPORT=@/report", one_finalize_for_two_inits},
    {"the_plugin_is_closed_after_the_last_finalize", the_plugin_is_closed_after_the_last_finalize,
     LOG " NCCL_PROFILER_PLUGIN=testlog " INFO, NULL},
    {"a_failed_init_gets_no_events_and_no_finalize", a_failed_init_gets_no_events_and_no_finalize,
     LOG " NCCL_PROFILER_PLUGIN=testlog NCCLEMU_TESTLOG_FAIL_INIT=1 " INFO, NULL},
    {"inits_of_a_group_run_on_a_thread_each", inits_of_a_group_run_on_a_thread_each,
     LOG " NCCL_PROFILER_PLUGIN=testlog", NULL},
    {"init_all_of_several_devices_on_threads_of_one_on_the_caller",
     init_all_of_several_devices_on_threads_of_one_on_the_caller,
     LOG " NCCL_PROFILER_PLUGIN=testlog", NULL},
    {"a_nonblocking_init_is_ready_after_its_plugin_init",
     a_nonblocking_init_is_ready_after_its_plugin_init, LOG " NCCL_PROFILER_PLUGIN=testlog", NULL},
    {"children_get_nccls_hash_of_parent_count_and_color",
     children_get_nccls_hash_of_parent_count_and_color, LOG " NCCL_PROFILER_PLUGIN=testlog", NULL},
    {"collective_events_and_the_kernel_while_it_runs",
     collective_events_and_the_kernel_while_it_runs,
     LOG " NCCL_PROFILER_PLUGIN=testlog NCCLEMU_TESTLOG_MASK=0x42", NULL},
    {"a_single_rank_collective_has_no_events_a_send_to_itself_has",
     a_single_rank_collective_has_no_events_a_send_to_itself_has,
     LOG " NCCL_PROFILER_PLUGIN=testlog", NULL},
    {"a_zero_mask_gets_no_events", a_zero_mask_gets_no_events,
     LOG " NCCL_PROFILER_PLUGIN=testlog NCCLEMU_TESTLOG_MASK=0", NULL},
    {"p2p_events_and_alltoall_as_nccl_runs_it", p2p_events_and_alltoall_as_nccl_runs_it,
     LOG " NCCL_PROFILER_PLUGIN=testlog", NULL},
    {"api_events_follow_the_group", api_events_follow_the_group,
     LOG " NCCL_PROFILER_PLUGIN=testlog NCCLEMU_TESTLOG_MASK=0x300", NULL},
};

TEST_MAIN(cases)
