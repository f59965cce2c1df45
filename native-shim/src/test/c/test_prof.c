/* The profiler plugin, driven as NCCL drives it (src/plugin/profiler.cc, 2.27-2.29): init and
 * finalize per communicator, collective, p2p and KernelCh events, and the application's own
 * plugin behind ours. */
#include <malloc.h>

#include "agent_test.h"
#include "nccl_profiler.h"
#include "user_plugin.h"

static ncclProfiler_v6_t *p6;
static ncclProfiler_v5_t *p5;
static ncclProfiler_v4_t *p4;
static int nccl_mask; /* NCCL's ncclProfilerEventMask */

static void load_plugin(void) {
  load_agent(&recording, 0);
  p6 = dlsym(agent, "ncclProfiler_v6");
  p5 = dlsym(agent, "ncclProfiler_v5");
  p4 = dlsym(agent, "ncclProfiler_v4");
  REQUIRE_EQ(p6 != NULL && p5 != NULL && p4 != NULL, 1);
}

static void *init5(uint64_t comm_id, int nranks, int rank) {
  void *ctx = NULL;
  REQUIRE_EQ(p5->init(&ctx, comm_id, &nccl_mask, NULL, 1, nranks, rank, NULL), 0);
  REQUIRE_EQ(ctx != NULL, 1);
  return ctx;
}

static void *start(void *ctx, uint64_t type, void *parent, int nch, size_t count) {
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = type;
  d.parentObj = parent;
  if (type == ncclProfileColl) {
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = count;
    d.coll.nChannels = (uint8_t)nch;
  } else if (type == ncclProfileP2p) {
    d.p2p.func = "Send";
    d.p2p.datatype = "ncclInt8";
    d.p2p.count = count;
    d.p2p.nChannels = (uint8_t)nch;
  } else if (type == ncclProfileProxyOp) {
    d.proxyOp.pid = getpid();
  }
  void *h = NULL;
  REQUIRE_EQ(p5->startEvent(ctx, &h, &d), 0);
  return h;
}

/* NCCL starts a KernelCh event per channel when the kernel begins it and stops it when done. */
static void kernel_channel(void *ctx, void *coll) {
  void *k = start(ctx, ncclProfileKernelCh, coll, 0, 0);
  CHECK(k != NULL);
  REQUIRE_EQ(p5->stopEvent(k), 0);
}

static int64_t record_of(void) {
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  int n = ng->plugin_comms(out, 4);
  REQUIRE_EQ(n >= 1, 1);
  return out[(n - 1) * NCCLGUARD_PLUGIN_RECORD_LONGS];
}

static int64_t in_flight(int64_t record, int64_t *out) {
  int64_t o[NCCLGUARD_IN_FLIGHT_LONGS];
  int n = ng->in_flight(record, out != NULL ? out : o, NCCLGUARD_IN_FLIGHT_LONGS);
  return n;
}

/* ---------------------------------------------------------------- the cases */

static void the_mask_asks_for_collectives_p2p_and_their_kernel_channels(void) {
  load_plugin();
  void *ctx = init5(0xabcdef, 4, 2);
  CHECK_EQ(nccl_mask, ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(ng->plugin_comms(out, 4), 1);
  CHECK_EQ(out[1], 0xabcdef);
  CHECK_EQ(out[2], 2);
  CHECK_EQ(out[3], 4);
  CHECK_EQ(out[4], 1);
  CHECK_EQ(out[7] & 1, 0);
  CHECK_EQ(out[9], ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);
  REQUIRE_EQ(p5->finalize(ctx), 0);
  CHECK_EQ(ng->plugin_comms(out, 4), 0); /* finalized: no leak */
  REQUIRE_EQ(ng->plugin_inits_since(0, out, 4), 1);
  CHECK_EQ(out[7] & 1, 1);
}

static void an_init_never_finalized_stays_listed(void) {
  load_plugin();
  void *a = init5(1, 1, 0);
  void *b = init5(2, 1, 0);
  (void)b;
  REQUIRE_EQ(p5->finalize(a), 0);
  int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  REQUIRE_EQ(ng->plugin_comms(out, 4), 1);
  CHECK_EQ(out[1], 2);
  int64_t since[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
  CHECK_EQ(ng->plugin_inits_since(out[5] - 1, since, 4), 1);
  ng->plugin_claim(out[0]);
  REQUIRE_EQ(ng->plugin_comms(out, 4), 1);
  CHECK_EQ(out[7] & 2, 2);
}

static void *init_on_thread(void *p) {
  (void)p;
  init5(9, 1, 0);
  return NULL;
}

static void an_init_on_a_java_thread_goes_to_java(void) {
  load_plugin();
  init5(1, 1, 0);
  CHECK_EQ(recorded(UP_PLUGIN_INIT, -1), 1);
  only_main_is_java = 1;
  pthread_t t;
  pthread_create(&t, NULL, init_on_thread, NULL);
  pthread_join(t, NULL);
  CHECK_EQ(recorded(UP_PLUGIN_INIT, -1), 1);
}

static void without_kernel_events_a_stop_finishes_the_op(void) {
  load_plugin();
  void *ctx = init5(1, 1, 0);
  int64_t r = record_of();
  void *c = start(ctx, ncclProfileColl, NULL, 2, 1024);
  CHECK_EQ(in_flight(r, NULL), 1);
  REQUIRE_EQ(p5->stopEvent(c), 0);
  CHECK_EQ(in_flight(r, NULL), 0);
}

static void an_op_is_in_flight_until_its_kernel_channels_stop(void) {
  load_plugin();
  void *ctx = init5(1, 1, 0);
  int64_t r = record_of();
  void *first = start(ctx, ncclProfileColl, NULL, 1, 8);
  kernel_channel(ctx, first); /* NCCL sends KernelCh events: from now on they decide */
  REQUIRE_EQ(p5->stopEvent(first), 0);
  CHECK_EQ(in_flight(r, NULL), 0);
  void *c = start(ctx, ncclProfileColl, NULL, 2, 4096);
  REQUIRE_EQ(p5->stopEvent(c), 0); /* enqueued */
  int64_t o[NCCLGUARD_IN_FLIGHT_LONGS];
  CHECK_EQ(in_flight(r, o), 1);
  CHECK_EQ(o[0], 1);
  CHECK_EQ(o[2], 1);
  CHECK_EQ(o[3], 4096);
  CHECK(o[4] >= 0);
  kernel_channel(ctx, c);
  CHECK_EQ(in_flight(r, NULL), 1);
  kernel_channel(ctx, c);
  CHECK_EQ(in_flight(r, o), 0);
  CHECK_EQ(o[5], 2);
}

static void an_op_seen_finished_finishes_the_older_ones(void) {
  load_plugin();
  void *ctx = init5(1, 1, 0);
  int64_t r = record_of();
  void *first = start(ctx, ncclProfileColl, NULL, 1, 8);
  kernel_channel(ctx, first);
  REQUIRE_EQ(p5->stopEvent(first), 0);
  void *a = start(ctx, ncclProfileColl, NULL, 2, 100);
  void *b = start(ctx, ncclProfileP2p, NULL, 1, 200);
  int64_t o[NCCLGUARD_IN_FLIGHT_LONGS];
  CHECK_EQ(in_flight(r, o), 2);
  CHECK_EQ(o[1], 1);
  REQUIRE_EQ(p5->stopEvent(a), 0);
  REQUIRE_EQ(p5->stopEvent(b), 0);
  kernel_channel(ctx, b);
  CHECK_EQ(in_flight(r, NULL), 0);
  /* a's KernelCh events still come, late: nothing breaks, nothing counts twice */
  kernel_channel(ctx, a);
  kernel_channel(ctx, a);
  CHECK_EQ(in_flight(r, o), 0);
  CHECK_EQ(o[5], 3);
}

static void finalize_forgets_what_was_in_flight(void) {
  load_plugin();
  void *ctx = init5(1, 1, 0);
  int64_t r = record_of();
  start(ctx, ncclProfileColl, NULL, 2, 100);
  CHECK_EQ(in_flight(r, NULL), 1);
  REQUIRE_EQ(p5->finalize(ctx), 0);
  CHECK_EQ(in_flight(r, NULL), 0);
}

static void events_take_no_memory_of_their_own(void) {
  load_plugin();
  void *ctx = init5(1, 1, 0);
  void *warm = start(ctx, ncclProfileColl, NULL, 1, 1);
  kernel_channel(ctx, warm);
  p5->stopEvent(warm);
  struct mallinfo2 before = mallinfo2();
  for (int i = 0; i < 100000; i++) {
    void *c = start(ctx, ncclProfileColl, NULL, 1, 1);
    p5->stopEvent(c);
    kernel_channel(ctx, c);
  }
  struct mallinfo2 after = mallinfo2();
  CHECK((long)after.uordblks - (long)before.uordblks < 64 * 1024);
}

static ngp_call *user_calls;
static int *user_ncalls;

static void load_user_plugin(const char *name) {
  char path[1024];
  snprintf(path, sizeof(path), "%s", bin_path(name));
  REQUIRE_EQ(ng->user_plugin(path), 1);
  void *h = open_or_die(path, RTLD_NOW);
  user_calls = dlsym(h, "ngp_calls");
  user_ncalls = dlsym(h, "ngp_ncalls");
  REQUIRE_EQ(user_calls != NULL && user_ncalls != NULL, 1);
}

static ngp_call *user_call(int i) { return i < *user_ncalls ? &user_calls[i] : NULL; }

static void the_applications_plugin_sees_what_it_asked_for_with_its_own_handles(void) {
  load_plugin();
  load_user_plugin("libnccl-profiler-ngtest5.so");
  void *ctx = init5(77, 2, 1);
  REQUIRE_EQ(*user_ncalls, 1);
  CHECK_EQ(user_call(0)->what, NGP_INIT);
  CHECK_EQ(user_call(0)->comm_id, 77);
  CHECK_EQ(user_call(0)->rank, 1);
  CHECK_EQ(nccl_mask, ncclProfileProxyOp | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);
  void *group = start(ctx, ncclProfileGroup, NULL, 0, 0);
  CHECK(group != NULL);
  /* NCCL starts a collective for a ProxyOp mask too: the plugin got it before, it gets it now */
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.nChannels = 1;
  d.coll.parentGroup = group;
  void *coll = NULL;
  REQUIRE_EQ(p5->startEvent(ctx, &coll, &d), 0);
  REQUIRE_EQ(*user_ncalls, 3);
  ngp_call *ucoll = user_call(2);
  CHECK_EQ(ucoll->type, ncclProfileColl);
  ncclProfilerEventDescr_v5_t got;
  memcpy(&got, ucoll->descr, sizeof(got));
  CHECK(got.coll.parentGroup == (void *)user_call(1)); /* its own group handle */
  void *k = start(ctx, ncclProfileKernelCh, coll, 0, 0);
  CHECK_EQ(*user_ncalls, 3); /* KernelCh: ours, not asked for by the plugin */
  void *op = start(ctx, ncclProfileProxyOp, coll, 0, 0);
  REQUIRE_EQ(*user_ncalls, 4);
  CHECK(user_call(3)->parent == (void *)ucoll);
  /* a PXN proxy op of another process: its parent is passed on as it came */
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileProxyOp;
  d.parentObj = (void *)0x1234;
  d.proxyOp.pid = getpid() + 1;
  void *remote = NULL;
  REQUIRE_EQ(p5->startEvent(ctx, &remote, &d), 0);
  CHECK(user_call(4)->parent == (void *)0x1234);
  ncclProfilerEventStateArgs_v6_t args;
  memset(&args, 0, sizeof(args));
  REQUIRE_EQ(p5->recordEventState(op, 19, &args), 0);
  CHECK_EQ(user_call(5)->what, NGP_RECORD);
  CHECK(user_call(5)->parent == (void *)user_call(3));
  REQUIRE_EQ(p5->stopEvent(op), 0);
  REQUIRE_EQ(p5->stopEvent(remote), 0);
  REQUIRE_EQ(p5->stopEvent(k), 0);
  REQUIRE_EQ(p5->stopEvent(coll), 0);
  REQUIRE_EQ(p5->stopEvent(group), 0);
  REQUIRE_EQ(p5->finalize(ctx), 0);
  int stops = 0, finals = 0;
  for (int i = 0; i < *user_ncalls; i++) {
    stops += user_call(i)->what == NGP_STOP;
    finals += user_call(i)->what == NGP_FINALIZE;
  }
  CHECK_EQ(stops, 4);
  CHECK_EQ(finals, 1);
}

static void a_v4_plugin_gets_v4_descriptors_from_a_v5_nccl(void) {
  load_plugin();
  load_user_plugin("libnccl-profiler-ngtest4.so");
  void *ctx = init5(99, 1, 0);
  REQUIRE_EQ(*user_ncalls, 1);
  CHECK_EQ(user_call(0)->comm_id, 99); /* v4's init takes the hash after the name */
  void *group = start(ctx, ncclProfileGroup, NULL, 0, 0);
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileCollApi;
  void *api = NULL;
  REQUIRE_EQ(p5->startEvent(ctx, &api, &d), 0);
  CHECK_EQ(*user_ncalls, 2); /* API events are v5's */
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.parentObj = api;
  d.coll.parentGroup = group;
  d.coll.count = 5;
  void *coll = NULL;
  REQUIRE_EQ(p5->startEvent(ctx, &coll, &d), 0);
  REQUIRE_EQ(*user_ncalls, 3);
  CHECK(user_call(2)->parent == (void *)user_call(1)); /* v4's collectives hang off the group */
  ncclProfilerEventDescr_v4_t got;
  memcpy(&got, user_call(2)->descr, sizeof(got));
  CHECK_EQ(got.type, ncclProfileColl);
  CHECK_EQ(got.coll.count, 5);
}

static void a_plugin_newer_than_nccl_is_not_used(void) {
  load_plugin();
  load_user_plugin("libnccl-profiler-ngtest5.so");
  void *ctx = NULL;
  /* NCCL 2.27 looks for v4: it would not have loaded a v5-only plugin */
  REQUIRE_EQ(p4->init(&ctx, &nccl_mask, NULL, 5, 1, 1, 0, NULL), 0);
  CHECK_EQ(*user_ncalls, 0);
  CHECK_EQ(nccl_mask, ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);
}

static void an_unloadable_plugin_is_an_error_with_a_reason(void) {
  load_plugin();
  CHECK_EQ(ng->user_plugin("/nonexistent/libnccl-profiler-x.so"), 0);
  const char *e = ng->last_error();
  CHECK(e != NULL && strstr(e, "nonexistent") != NULL);
  CHECK_EQ(ng->user_plugin(NULL), 1); /* unset: no default plugin is no error */
}

static void the_v6_entry_point_takes_ce_collectives(void) {
  load_plugin();
  void *ctx = NULL;
  REQUIRE_EQ(p6->init(&ctx, 3, &nccl_mask, "named", 1, 1, 0, NULL), 0);
  int64_t r = record_of();
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileCeColl;
  d.ceColl.func = "AllGather";
  d.ceColl.count = 9;
  void *h = NULL;
  REQUIRE_EQ(p6->startEvent(ctx, &h, &d), 0);
  CHECK_EQ(in_flight(r, NULL), 1);
  REQUIRE_EQ(p6->stopEvent(h), 0);
  CHECK_EQ(in_flight(r, NULL), 0);
}

/* A thread of the parent holds every lock of the plugin (pool, communicators, the application's
 * plugin, each communicator's) when another forks: the child must not wait on them for good. */
static int held_fds[2], release_fds[2];

static void *hold_until_released(void *p) {
  (void)p;
  char c = 'h';
  ng->prof_hold_locks(1);
  REQUIRE_EQ(write(held_fds[1], &c, 1), 1);
  REQUIRE_EQ(read(release_fds[0], &c, 1), 1);
  ng->prof_hold_locks(0);
  return NULL;
}

static void a_fork_child_does_not_wait_on_a_lock_its_parents_thread_held(void) {
  load_plugin();
  void *ctx = init5(0xf02c, 1, 0);
  int64_t r = record_of();
  REQUIRE_EQ(pipe(held_fds), 0);
  REQUIRE_EQ(pipe(release_fds), 0);
  pthread_t t;
  REQUIRE_EQ(pthread_create(&t, NULL, hold_until_released, NULL), 0);
  char c;
  REQUIRE_EQ(read(held_fds[0], &c, 1), 1);
  pid_t child = fork();
  if (child == 0) {
    alarm(10); /* a hang ends as SIGALRM */
    int64_t out[4 * NCCLGUARD_PLUGIN_RECORD_LONGS];
    int n = ng->plugin_comms(out, 4);        /* the communicators' lock */
    int none = ng->user_plugin("none");       /* the application's plugin's */
    int64_t f[NCCLGUARD_IN_FLIGHT_LONGS];
    ng->in_flight(r, f, NCCLGUARD_IN_FLIGHT_LONGS); /* the communicator's own */
    void *coll = start(ctx, ncclProfileColl, NULL, 1, 8); /* the event pool's */
    int stopped = p5->stopEvent(coll);
    void *ctx2 = init5(0xf02d, 1, 0);         /* a communicator of the child's own */
    int fin = p5->finalize(ctx2);
    _exit(n >= 1 && none == 1 && coll != NULL && stopped == 0 && fin == 0 ? 0 : 3);
  }
  REQUIRE_EQ(child > 0, 1);
  int status = 0;
  waitpid(child, &status, 0);
  c = 'r';
  REQUIRE_EQ(write(release_fds[1], &c, 1), 1);
  pthread_join(t, NULL);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "the fork's child ended with status 0x%x (0xe: SIGALRM, it hung on a lock)\n", status);
    FAILED();
  }
  REQUIRE_EQ(p5->finalize(ctx), 0);
}

static const struct test_case cases[] = {
    {"the_mask_asks_for_collectives_p2p_and_their_kernel_channels",
     the_mask_asks_for_collectives_p2p_and_their_kernel_channels, NULL, NULL},
    {"an_init_never_finalized_stays_listed", an_init_never_finalized_stays_listed, NULL, NULL},
    {"an_init_on_a_java_thread_goes_to_java", an_init_on_a_java_thread_goes_to_java, NULL, NULL},
    {"without_kernel_events_a_stop_finishes_the_op", without_kernel_events_a_stop_finishes_the_op, NULL, NULL},
    {"an_op_is_in_flight_until_its_kernel_channels_stop", an_op_is_in_flight_until_its_kernel_channels_stop, NULL, NULL},
    {"an_op_seen_finished_finishes_the_older_ones", an_op_seen_finished_finishes_the_older_ones, NULL, NULL},
    {"finalize_forgets_what_was_in_flight", finalize_forgets_what_was_in_flight, NULL, NULL},
    {"events_take_no_memory_of_their_own", events_take_no_memory_of_their_own, NULL, NULL},
    {"the_applications_plugin_sees_what_it_asked_for_with_its_own_handles",
     the_applications_plugin_sees_what_it_asked_for_with_its_own_handles, "NGP_MASK=0x8", NULL},
    {"a_v4_plugin_gets_v4_descriptors_from_a_v5_nccl", a_v4_plugin_gets_v4_descriptors_from_a_v5_nccl,
     "NGP_MASK=0x2", NULL},
    {"a_plugin_newer_than_nccl_is_not_used", a_plugin_newer_than_nccl_is_not_used, NULL, NULL},
    {"an_unloadable_plugin_is_an_error_with_a_reason", an_unloadable_plugin_is_an_error_with_a_reason, NULL, NULL},
    {"the_v6_entry_point_takes_ce_collectives", the_v6_entry_point_takes_ce_collectives, NULL, NULL},
    {"a_fork_child_does_not_wait_on_a_lock_its_parents_thread_held",
     a_fork_child_does_not_wait_on_a_lock_its_parents_thread_held, NULL, NULL},
};

TEST_MAIN(cases)
