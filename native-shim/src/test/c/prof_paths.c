/* Which path of a wrapper a call takes, as the counting build counts them (make prof,
 * ncclguard_prof_calls): run against that build only (the Makefile's test target). A path is
 * cost, not behaviour, so the other tests cannot see it: these fail where a hot call that should
 * run straight through leaves for its hint's miss (the maps) or the generic path. */
#include "agent_test.h"

static float buf[256];
static long (*prof_calls)(const char *name, int path);

enum { PATH_WRAPPER, PATH_SLOW, PATH_MISS, PATH_GENERIC };

static void load_counting_agent(void) {
  load_agent(&recording, 1);
  prof_calls = (long (*)(const char *, int))dlsym(agent, "ncclguard_prof_calls");
  if (prof_calls == NULL) {
    fprintf(stderr, "%s is not the counting build (no ncclguard_prof_calls): make prof\n", getenv("NG_LIB"));
    exit(2);
  }
  load_fake();
}

/* A one-rank communicator, an event and a stream of its own, in a process that sees `devices` */
typedef struct {
  ncclComm_t comm;
  cudaEvent_t e;
  cudaStream_t other;
} setting;

static setting set_up(const char *devices) {
  setenv("NCCLEMU_DEVICES", devices, 1);
  load_counting_agent();
  setting t = {one_rank_comm(), NULL, NULL};
  REQUIRE_EQ(fj->event_create(&t.e), 0);
  REQUIRE_EQ(fj->stream_create(&t.other), 0);
  return t;
}

static void tear_down(const setting *t) {
  REQUIRE_EQ(fj->event_destroy(t->e), 0);
  REQUIRE_EQ(fj->stream_destroy(t->other), 0);
  REQUIRE_EQ(fj->comm_destroy(t->comm), 0);
}

/* n rounds of PyTorch's synchronous collective on the current (legacy default) stream: the
 * collective, a record of an event on it, another stream's wait for it, a synchronize */
static void default_stream_rounds(const setting *t, int n) {
  for (int i = 0; i < n; i++) {
    REQUIRE_EQ(fj->allreduce(buf, 16, t->comm, NULL), 0);
    REQUIRE_EQ(fj->event_record(t->e, NULL), 0);
    REQUIRE_EQ(fj->stream_wait(t->other, t->e), 0);
    REQUIRE_EQ(fj->stream_sync(NULL), 0);
  }
}

#define FNS 3
static const char *const default_stream_fns[FNS] = {"ncclAllReduce", "cudaEventRecord", "cudaStreamSynchronize"};

/* Each of default_stream_fns' misses of its hint in 100 rounds: missed[i] */
static void misses_in_100_rounds(const setting *t, long missed[FNS]) {
  for (int i = 0; i < FNS; i++) missed[i] = prof_calls(default_stream_fns[i], PATH_MISS);
  default_stream_rounds(t, 100);
  for (int i = 0; i < FNS; i++) {
    missed[i] = prof_calls(default_stream_fns[i], PATH_MISS) - missed[i];
    fprintf(stderr, "%s: %ld of 100 missed the hint\n", default_stream_fns[i], missed[i]);
  }
}

/* Where the process sees one device, the legacy stream's hot calls run straight through after the
 * first few (the stream's slot made, the call site's hint set): without ng_legacy_key every one of
 * them left for its hint's miss, which looked up the communicator's device or called cudaGetDevice. */
static void with_one_device_the_default_streams_calls_take_the_hot_path(void) {
  setting t = set_up("1");
  long missed[FNS];
  misses_in_100_rounds(&t, missed);
  for (int i = 0; i < FNS; i++) {
    CHECK_EQ(prof_calls(default_stream_fns[i], PATH_WRAPPER), 100);
    CHECK(missed[i] <= 2);
    CHECK(prof_calls(default_stream_fns[i], PATH_GENERIC) <= 1);
  }
  tear_down(&t);
}

/* A call site's first stream stays its hint while it lives; but where the process sees one device
 * the legacy stream's slot takes it over: a site first used on a stream of the framework's set-up,
 * then for its collectives on the current stream, stops missing after the first of those. */
static void the_legacy_stream_takes_a_sites_hint_over_from_its_first_stream(void) {
  setting t = set_up("1");
  for (int i = 0; i < 3; i++) {
    REQUIRE_EQ(fj->allreduce(buf, 16, t.comm, t.other), 0);
    REQUIRE_EQ(fj->event_record(t.e, t.other), 0);
    REQUIRE_EQ(fj->stream_sync(t.other), 0);
  }
  long missed[FNS];
  misses_in_100_rounds(&t, missed);
  for (int i = 0; i < FNS; i++) CHECK(missed[i] <= 2);
  tear_down(&t);
}

/* Where it sees several, a special stream's device is the communicator's, the event's or the
 * current one, which only the maps' path asks for: every call takes it (the constant key would
 * mix devices up). */
static void with_several_devices_the_default_streams_calls_find_their_device_first(void) {
  setting t = set_up("2");
  long missed[FNS];
  misses_in_100_rounds(&t, missed);
  for (int i = 0; i < FNS; i++) CHECK(missed[i] >= 99);
  tear_down(&t);
}

/* A framework keeps each operation's events a while (PyTorch's watchdog drops them), so a record's
 * call site's hint holds an older live event; each event is recorded right after it is made: the
 * wrapper finds it among the events its thread made last, without leaving for its miss path. */
static void a_record_of_the_event_just_made_takes_the_hot_path(void) {
  load_counting_agent();
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  enum { KEPT = 16, OPS = 100 };
  cudaEvent_t ring[KEPT];
  for (int i = 0; i < KEPT; i++) {
    REQUIRE_EQ(fj->event_create(&ring[i]), 0);
    REQUIRE_EQ(fj->event_record(ring[i], s), 0);
  }
  long missed = prof_calls("cudaEventRecord", PATH_MISS);
  for (int i = 0; i < OPS; i++) {
    REQUIRE_EQ(fj->event_destroy(ring[i % KEPT]), 0);
    REQUIRE_EQ(fj->event_create(&ring[i % KEPT]), 0);
    REQUIRE_EQ(fj->event_record(ring[i % KEPT], s), 0);
  }
  missed = prof_calls("cudaEventRecord", PATH_MISS) - missed;
  fprintf(stderr, "cudaEventRecord: %ld of %d missed the hint\n", missed, OPS);
  CHECK(missed <= 2);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  for (int i = 0; i < KEPT; i++) REQUIRE_EQ(fj->event_destroy(ring[i]), 0);
  REQUIRE_EQ(fj->stream_destroy(s), 0);
}

static const struct test_case cases[] = {
    {"with_one_device_the_default_streams_calls_take_the_hot_path", with_one_device_the_default_streams_calls_take_the_hot_path,
     NULL, NULL},
    {"the_legacy_stream_takes_a_sites_hint_over_from_its_first_stream",
     the_legacy_stream_takes_a_sites_hint_over_from_its_first_stream, NULL, NULL},
    {"a_record_of_the_event_just_made_takes_the_hot_path", a_record_of_the_event_just_made_takes_the_hot_path, NULL, NULL},
    {"with_several_devices_the_default_streams_calls_find_their_device_first",
     with_several_devices_the_default_streams_calls_find_their_device_first, NULL, NULL},
};

TEST_MAIN(cases)
