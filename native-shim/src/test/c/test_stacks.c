/* Creations from native code on Java threads at a Java stack Java has seen: no upcall at creation
 * or release, the event kept in C with its stack's depot id until Java adopts it (ng_stack.c,
 * ng_track.c). The test mode's java_stack hook stands for AsyncGetCallTrace: (method, bci) pairs. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "agent_test.h"

/* A stack whose first frame is JNI method `entry`, its caller at bci, main. */
static void stack_under(int64_t entry, int64_t caller_method, int64_t bci) {
  int64_t pairs[] = {entry, -3, caller_method, bci, 0x3000, 7};
  set_java_stack(pairs, 3);
}

/* A stack of three frames: the JNI entry point, its caller at bci, main. */
static void stack_at(int64_t caller_method, int64_t bci) { stack_under(0x1000, caller_method, bci); }

static int64_t stat_of(int i) {
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  return st[i];
}

/* The first creation at a stack reaches Java with its stack's id; Java held it. */
static uint32_t first_sight(cudaEvent_t *e) {
  REQUIRE_EQ(fj->event_create(e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  CHECK(u.slot >= 0);
  CHECK((uint32_t)u.token != 0);
  CHECK((uint32_t)((uint64_t)u.token >> 32) != 0);
  return (uint32_t)u.token;
}

static void a_repeated_stack_makes_no_upcall_and_the_adopted_event_has_its_stack(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t first, e;
  uint32_t id = first_sight(&first);
  int before = total_upcalls();
  REQUIRE_EQ(fj->event_create(&e), 0);
  CHECK_EQ(total_upcalls(), before);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_CREATED), 1);
  int64_t out[NCCLGUARD_ADOPT_LONGS * 4];
  CHECK_EQ(ng->adopt_events(out, 4), 1);
  CHECK_EQ(out[1], (int64_t)(uintptr_t)e);
  CHECK_EQ(out[2], fn_id("cudaEventCreateWithFlags"));
  CHECK_EQ((uint32_t)out[3], id);
  CHECK(out[5] > 0); /* created, epoch ms */
  CHECK(out[6] != 0); /* the call site */
  CHECK_EQ(ng->adopt_events(out, 4), 0); /* once */
  /* adopted: Java holds it, so its release goes to Java again */
  REQUIRE_EQ(fj->event_destroy(e), 0);
  CHECK(total_upcalls() > before);
}

static void a_release_of_an_event_java_never_saw_makes_no_upcall(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t first, e;
  first_sight(&first);
  int before = total_upcalls();
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(fj->event_destroy(e), 0);
  CHECK_EQ(total_upcalls(), before);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_RELEASED), 1);
  int64_t out[NCCLGUARD_ADOPT_LONGS];
  CHECK_EQ(ng->adopt_event((int64_t)(uintptr_t)e, out), 0);
}

static int64_t clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A creation's time comes from the CPU's counter between readings of the clock (ng_birth_ms): over
 * 250 ms (the counter's rate is known after 50), each event's time is the clock's millisecond of
 * its creation; one off by a millisecond at most where the two round apart (a microsecond from a
 * millisecond's edge), and those few. */
static void an_event_s_creation_time_is_the_clock_s_millisecond(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t first, e;
  first_sight(&first);
  int n = 0, exact = 0;
  for (int64_t end = clock_ms() + 250; clock_ms() < end; n++) {
    int64_t before = clock_ms();
    REQUIRE_EQ(fj->event_create(&e), 0);
    int64_t after = clock_ms();
    int64_t out[NCCLGUARD_ADOPT_LONGS];
    REQUIRE_EQ(ng->adopt_event((int64_t)(uintptr_t)e, out), 1);
    CHECK(out[5] >= before - 1 && out[5] <= after + 1);
    exact += out[5] >= before && out[5] <= after;
    REQUIRE_EQ(fj->event_destroy(e), 0);
    usleep(n % 7 == 0 ? 1500 : 100);
  }
  CHECK(n > 100);
  CHECK(exact * 100 >= n * 98);
}

/* A release of a lazy event ends it before its real call (ng_track.c's lazy_release): when the call
 * fails (NCCLEMU_FAIL, the case's environment) the event lives on, lazy, adoptable with its stack,
 * and its record still pending; its next release makes no upcall either. */
static void a_failed_release_leaves_the_event_with_its_stack_and_its_record(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t first, e;
  cudaStream_t s;
  uint32_t id = first_sight(&first);
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  int before = total_upcalls();
  CHECK(fj->event_destroy(e) != 0); /* the first destroy fails */
  CHECK_EQ(total_upcalls(), before);
  int64_t out[NCCLGUARD_ADOPT_LONGS];
  REQUIRE_EQ(ng->adopt_event((int64_t)(uintptr_t)e, out), 1);
  CHECK_EQ((uint32_t)out[3], id);
  CHECK(out[5] > 0);
  CHECK(out[6] != 0);
  int32_t slot = (int32_t)out[0];
  int64_t pending[3];
  ng->events_pending(&slot, 1, pending);
  CHECK_EQ(pending[0], 1); /* recorded, never seen complete */
  CHECK(pending[1] >= 0);
  CHECK_EQ(pending[2], (int64_t)(uintptr_t)s);
  /* a lazy one again, released for good: no upcall */
  REQUIRE_EQ(fj->event_create(&e), 0);
  before = total_upcalls();
  REQUIRE_EQ(fj->event_destroy(e), 0);
  CHECK_EQ(total_upcalls(), before);
}


static void a_new_stack_under_a_jni_method_java_held_makes_no_upcall_and_has_an_id_of_its_own(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t a, b, c;
  uint32_t ida = first_sight(&a);
  int before = total_upcalls();
  stack_at(0x2000, 9); /* the same method at another bytecode index */
  REQUIRE_EQ(fj->event_create(&b), 0);
  stack_at(0x2100, 5); /* another caller of the same JNI method */
  REQUIRE_EQ(fj->event_create(&c), 0);
  CHECK_EQ(total_upcalls(), before);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_CREATED), 2);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_DEPOT_STACKS), 3);
  int64_t out[NCCLGUARD_ADOPT_LONGS * 4];
  REQUIRE_EQ(ng->adopt_events(out, 4), 2);
  uint32_t idb = (uint32_t)out[3], idc = (uint32_t)out[NCCLGUARD_ADOPT_LONGS + 3];
  CHECK(idb != 0 && idc != 0);
  CHECK(idb != ida && idc != ida && idb != idc);
}

static void a_stack_under_a_jni_method_java_never_held_takes_the_upcall(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t a, b;
  uint32_t ida = first_sight(&a);
  stack_under(0x1100, 0x2000, 5); /* another JNI method: Java has not said whether it wraps it */
  uint32_t idb = first_sight(&b);
  CHECK(ida != idb);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_CREATED), 0);
}

typedef struct {
  int64_t method;
  uint32_t id, thread;
  int upcalled;
} other_thread;

static void *create_elsewhere(void *p) {
  other_thread *o = p;
  stack_at(o->method, 5);
  int before = total_upcalls();
  cudaEvent_t e;
  if (fj->event_create(&e) != 0) return NULL;
  upcall u;
  o->upcalled = total_upcalls() > before && last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u);
  o->id = (uint32_t)u.token;
  o->thread = (uint32_t)((uint64_t)u.token >> 32);
  return NULL;
}

static void two_threads_at_one_native_site_with_other_java_callers_get_their_own_stacks(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t e;
  uint32_t mine = first_sight(&e);
  other_thread o = {0x2100, 0, 0, 0}; /* another Java caller of the same JNI entry point */
  pthread_t t;
  REQUIRE_EQ(pthread_create(&t, NULL, create_elsewhere, &o), 0);
  pthread_join(t, NULL);
  CHECK_EQ(o.upcalled, 1);
  CHECK(o.id != 0 && o.id != mine);
  /* the same stack as mine, on a thread Java has not named yet: the upcall too */
  other_thread same = {0x2000, 0, 0, 0};
  REQUIRE_EQ(pthread_create(&t, NULL, create_elsewhere, &same), 0);
  pthread_join(t, NULL);
  CHECK_EQ(same.upcalled, 1);
  CHECK_EQ(same.id, mine);
  CHECK(same.thread != o.thread);
}

static void ten_million_pairs_keep_memory_flat_and_a_later_leak_keeps_its_stack(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t first, e;
  uint32_t id = first_sight(&first);
  int before = total_upcalls();
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(fj->event_destroy(e), 0);
  int64_t stacks = stat_of(NCCLGUARD_STAT_DEPOT_STACKS), slots = stat_of(NCCLGUARD_STAT_EVENT_SLOTS_MADE);
  /* under the thread sanitizer a million (ten would take minutes) */
  int pairs = getenv("TSAN_OPTIONS") != NULL ? 1000000 : 10000000;
  for (int i = 0; i < pairs; i++) {
    if (fj->event_create(&e) != 0 || fj->event_destroy(e) != 0) REQUIRE_EQ(i, -1);
  }
  CHECK_EQ(total_upcalls(), before);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_RELEASED), pairs + 1);
  /* no memory per ended handle: the depot and the slot pool are as they were */
  CHECK_EQ(stat_of(NCCLGUARD_STAT_DEPOT_STACKS), stacks);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_EVENT_SLOTS_MADE), slots);
  REQUIRE_EQ(fj->event_create(&e), 0); /* leaked */
  int64_t out[NCCLGUARD_ADOPT_LONGS * 4];
  REQUIRE_EQ(ng->adopt_events(out, 4), 1);
  CHECK_EQ(out[1], (int64_t)(uintptr_t)e);
  CHECK_EQ((uint32_t)out[3], id);
}

/* A virtual thread: the JNI entry, its caller, VirtualThread.run, then Continuation.enter and the
 * carrier's frames (carrier: its caller and bci). */
#define CONTINUATION_ENTER 0x5000
static void virtual_stack(int64_t carrier, int64_t bci) {
  int64_t pairs[] = {0x1000, -3, 0x2000, 5, 0x4000, 1, CONTINUATION_ENTER, 0, carrier, bci, 0x7000, 2};
  set_java_stack(pairs, 6);
}

static upcall creation_upcall(void) {
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  return u;
}

/* On a virtual thread the stack is the frames above Continuation.enter (those below are its
 * carrier's, whichever runs it), and every creation takes the upcall, with the stack's id and no
 * thread's (this thread is the carrier: its id and name are not the virtual thread's); Java names
 * the thread, and takes the stack it learned for the id. Nor does that upcall confirm the carrier:
 * its own first creation at a platform stack still asks Java. */
static void a_virtual_threads_creations_take_the_upcall_with_their_own_frames_id(void) {
  load_agent(&recording, 1);
  load_fake();
  ng->stack_vthread_entry((void *)CONTINUATION_ENTER);
  cudaEvent_t e;
  virtual_stack(0x6000, 9);
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u = creation_upcall();
  uint32_t id = (uint32_t)u.token;
  CHECK(id != 0);
  CHECK_EQ((uint32_t)((uint64_t)u.token >> 32), 0);
  CHECK(u.slot >= 0);
  int made = recorded(UP_EXIT, fn_id("cudaEventCreateWithFlags"));
  /* again, and on another carrier's frames: the same id, an upcall each */
  REQUIRE_EQ(fj->event_create(&e), 0);
  virtual_stack(0x6100, 3);
  REQUIRE_EQ(fj->event_create(&e), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("cudaEventCreateWithFlags")), made + 2);
  u = creation_upcall();
  CHECK_EQ((uint32_t)u.token, id);
  CHECK_EQ((uint32_t)((uint64_t)u.token >> 32), 0);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_CREATED), 0);
  /* the same frames on a platform thread (no Continuation.enter): a stack of its own, which this
   * thread's first sight asks Java for, with the thread's id */
  int64_t platform[] = {0x1000, -3, 0x2000, 5, 0x4000, 1};
  set_java_stack(platform, 3);
  REQUIRE_EQ(fj->event_create(&e), 0);
  u = creation_upcall();
  CHECK_EQ(recorded(UP_EXIT, fn_id("cudaEventCreateWithFlags")), made + 3);
  CHECK((uint32_t)u.token != 0 && (uint32_t)u.token != id);
  CHECK((uint32_t)((uint64_t)u.token >> 32) != 0);
  /* and now that Java held it, this platform thread's next creation there makes none */
  REQUIRE_EQ(fj->event_create(&e), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("cudaEventCreateWithFlags")), made + 3);
  CHECK_EQ(stat_of(NCCLGUARD_STAT_LAZY_CREATED), 1);
}

static void a_full_depot_leaves_creations_at_new_stacks_to_the_upcall(void) {
  load_agent(&recording, 1);
  load_fake();
  ng->stack_depot(1);
  stack_at(0x2000, 5);
  cudaEvent_t a, b;
  first_sight(&a);
  stack_at(0x2000, 6);
  REQUIRE_EQ(fj->event_create(&b), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  CHECK_EQ((uint32_t)u.token, 0); /* no id: Java takes its stack as before */
  CHECK_EQ(stat_of(NCCLGUARD_STAT_DEPOT_STACKS), 1);
}

static void a_change_of_the_wrapped_natives_asks_java_again(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t a, b;
  first_sight(&a);
  const char *names[] = {"Java_x_Y_z"};
  ng->wrapped_natives(names, 1);
  int before = total_upcalls();
  REQUIRE_EQ(fj->event_create(&b), 0);
  CHECK(total_upcalls() > before);
}

static void wrap_a_native(void) {
  const char *names[] = {"Java_x_Y_z"};
  ng->wrapped_natives(names, 1);
}

/* Java's answer at a first sight was the old set's when the wrapped natives change during its
 * upcall: it confirms nothing for the new set, neither the stack (here) nor its first frame's
 * method (below) */
/* The first sight of stack (0x2000, 5), its upcall answered while the wrapped natives changed. */
static void first_sight_while_the_wrapped_natives_change(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t a;
  in_exit_fn = wrap_a_native;
  first_sight(&a);
  in_exit_fn = NULL;
}

static void a_change_of_the_wrapped_natives_during_the_upcall_asks_java_again_at_that_stack(void) {
  first_sight_while_the_wrapped_natives_change();
  int before = total_upcalls();
  cudaEvent_t b;
  REQUIRE_EQ(fj->event_create(&b), 0);
  CHECK(total_upcalls() > before);
}

static void a_change_of_the_wrapped_natives_during_the_upcall_asks_java_again_under_that_method(void) {
  first_sight_while_the_wrapped_natives_change();
  stack_at(0x2000, 9);
  int before = total_upcalls();
  cudaEvent_t c;
  REQUIRE_EQ(fj->event_create(&c), 0);
  CHECK(total_upcalls() > before);
}

static const struct test_case cases[] = {
    {"a_repeated_stack_makes_no_upcall_and_the_adopted_event_has_its_stack",
     a_repeated_stack_makes_no_upcall_and_the_adopted_event_has_its_stack, NULL, NULL},
    {"a_release_of_an_event_java_never_saw_makes_no_upcall", a_release_of_an_event_java_never_saw_makes_no_upcall, NULL, NULL},
    {"a_new_stack_under_a_jni_method_java_held_makes_no_upcall_and_has_an_id_of_its_own",
     a_new_stack_under_a_jni_method_java_held_makes_no_upcall_and_has_an_id_of_its_own, NULL, NULL},
    {"a_stack_under_a_jni_method_java_never_held_takes_the_upcall", a_stack_under_a_jni_method_java_never_held_takes_the_upcall,
     NULL, NULL},
    {"an_event_s_creation_time_is_the_clock_s_millisecond", an_event_s_creation_time_is_the_clock_s_millisecond, NULL, NULL},
    {"a_failed_release_leaves_the_event_with_its_stack_and_its_record",
     a_failed_release_leaves_the_event_with_its_stack_and_its_record, "NCCLEMU_FAIL=cudaEventDestroy:1=400", NULL},
    {"two_threads_at_one_native_site_with_other_java_callers_get_their_own_stacks",
     two_threads_at_one_native_site_with_other_java_callers_get_their_own_stacks, NULL, NULL},
    {"ten_million_pairs_keep_memory_flat_and_a_later_leak_keeps_its_stack",
     ten_million_pairs_keep_memory_flat_and_a_later_leak_keeps_its_stack, NULL, NULL},
    {"a_virtual_threads_creations_take_the_upcall_with_their_own_frames_id",
     a_virtual_threads_creations_take_the_upcall_with_their_own_frames_id, NULL, NULL},
    {"a_full_depot_leaves_creations_at_new_stacks_to_the_upcall", a_full_depot_leaves_creations_at_new_stacks_to_the_upcall,
     NULL, NULL},
    {"a_change_of_the_wrapped_natives_asks_java_again", a_change_of_the_wrapped_natives_asks_java_again, NULL, NULL},
    {"a_change_of_the_wrapped_natives_during_the_upcall_asks_java_again_at_that_stack",
     a_change_of_the_wrapped_natives_during_the_upcall_asks_java_again_at_that_stack, NULL, NULL},
    {"a_change_of_the_wrapped_natives_during_the_upcall_asks_java_again_under_that_method",
     a_change_of_the_wrapped_natives_during_the_upcall_asks_java_again_under_that_method, NULL, NULL},
};

TEST_MAIN(cases)
