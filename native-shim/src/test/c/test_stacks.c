/* Creations from native code on Java threads at a Java stack Java has seen: no upcall at creation
 * or release, the event kept in C with its stack's depot id until Java adopts it (ng_stack.c,
 * ng_track.c). The test mode's java_stack hook stands for AsyncGetCallTrace: (method, bci) pairs. */
#include <pthread.h>

#include "agent_test.h"

/* A stack of three frames: the JNI entry point, its caller at bci, main. */
static void stack_at(int64_t caller_method, int64_t bci) {
  int64_t pairs[] = {0x1000, -3, caller_method, bci, 0x3000, 7};
  set_java_stack(pairs, 3);
}

static int64_t stat_of(int i) {
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  return st[i];
}
#define DEPOT_STACKS 8
#define EVENT_SLOTS_MADE 10
#define LAZY_CREATED 12
#define LAZY_RELEASED 13

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
  CHECK_EQ(stat_of(LAZY_CREATED), 1);
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
  CHECK_EQ(stat_of(LAZY_RELEASED), 1);
  int64_t out[NCCLGUARD_ADOPT_LONGS];
  CHECK_EQ(ng->adopt_event((int64_t)(uintptr_t)e, out), 0);
}

static void a_new_stack_takes_the_upcall_with_an_id_of_its_own(void) {
  load_agent(&recording, 1);
  load_fake();
  stack_at(0x2000, 5);
  cudaEvent_t a, b;
  uint32_t ida = first_sight(&a);
  stack_at(0x2000, 9); /* the same method at another bytecode index */
  uint32_t idb = first_sight(&b);
  CHECK(ida != idb);
  CHECK_EQ(stat_of(LAZY_CREATED), 0);
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
  int64_t stacks = stat_of(DEPOT_STACKS), slots = stat_of(EVENT_SLOTS_MADE);
  /* under the thread sanitizer a million (ten would take minutes) */
  int pairs = getenv("TSAN_OPTIONS") != NULL ? 1000000 : 10000000;
  for (int i = 0; i < pairs; i++) {
    if (fj->event_create(&e) != 0 || fj->event_destroy(e) != 0) REQUIRE_EQ(i, -1);
  }
  CHECK_EQ(total_upcalls(), before);
  CHECK_EQ(stat_of(LAZY_RELEASED), pairs + 1);
  /* no memory per ended handle: the depot and the slot pool are as they were */
  CHECK_EQ(stat_of(DEPOT_STACKS), stacks);
  CHECK_EQ(stat_of(EVENT_SLOTS_MADE), slots);
  REQUIRE_EQ(fj->event_create(&e), 0); /* leaked */
  int64_t out[NCCLGUARD_ADOPT_LONGS * 4];
  REQUIRE_EQ(ng->adopt_events(out, 4), 1);
  CHECK_EQ(out[1], (int64_t)(uintptr_t)e);
  CHECK_EQ((uint32_t)out[3], id);
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
  CHECK_EQ(stat_of(DEPOT_STACKS), 1);
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

static const struct test_case cases[] = {
    {"a_repeated_stack_makes_no_upcall_and_the_adopted_event_has_its_stack",
     a_repeated_stack_makes_no_upcall_and_the_adopted_event_has_its_stack, NULL, NULL},
    {"a_release_of_an_event_java_never_saw_makes_no_upcall", a_release_of_an_event_java_never_saw_makes_no_upcall, NULL, NULL},
    {"a_new_stack_takes_the_upcall_with_an_id_of_its_own", a_new_stack_takes_the_upcall_with_an_id_of_its_own, NULL, NULL},
    {"two_threads_at_one_native_site_with_other_java_callers_get_their_own_stacks",
     two_threads_at_one_native_site_with_other_java_callers_get_their_own_stacks, NULL, NULL},
    {"ten_million_pairs_keep_memory_flat_and_a_later_leak_keeps_its_stack",
     ten_million_pairs_keep_memory_flat_and_a_later_leak_keeps_its_stack, NULL, NULL},
    {"a_full_depot_leaves_creations_at_new_stacks_to_the_upcall", a_full_depot_leaves_creations_at_new_stacks_to_the_upcall,
     NULL, NULL},
    {"a_change_of_the_wrapped_natives_asks_java_again", a_change_of_the_wrapped_natives_asks_java_again, NULL, NULL},
};

TEST_MAIN(cases)
