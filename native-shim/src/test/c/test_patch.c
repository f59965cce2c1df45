/* Import-slot patching (ng_patch.c): the calls of libraries the promotion does not reach are seen
 * once their slots are patched (a library bound before the promotion, -z now with full RELRO or
 * -fno-plt; one loaded with RTLD_DEEPBIND; functions taken from dlsym on a handle), and without the
 * patching (option native-patch=off) they are not. */
#include "agent_test.h"

static float buf[64];
static struct gate held;

static const fake_jni *fake_at(void *h) {
  const fake_jni *f = (const fake_jni *)dlsym(h, "fake_jni_functions");
  REQUIRE_EQ(f != NULL, 1);
  return f;
}

static void check_library(int fn, const char *lib) {
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn, &u), 1);
  char *l = ng->caller_library(u.caller);
  if (l == NULL || strcmp(l, lib) != 0) {
    fprintf(stderr, "the calling library: %s, expected %s\n", l != NULL ? l : "(unknown)", lib);
    FAILED();
  }
  free(l);
}

/* A DeepEP-style runtime's calls: a stream, a communicator, work held on the stream (pending until
 * the synchronize), the communicator destroyed; each seen with the calling library. */
static void scenario_seen(const fake_jni *f, const char *lib) {
  cudaStream_t s;
  REQUIRE_EQ(f->stream_create(&s), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaStreamCreateWithFlags"), &u), 1);
  int slot = u.slot;
  check_library(fn_id("cudaStreamCreateWithFlags"), lib);
  ncclUniqueId id;
  REQUIRE_EQ(f->unique_id(&id), 0);
  ncclComm_t comm = NULL;
  REQUIRE_EQ(f->comm_init(&comm, 1, id, 0), 0);
  check_library(fn_id("ncclCommInitRank"), lib);
  gate_init(&held);
  REQUIRE_EQ(f->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(f->allreduce(buf, 16, comm, s), 0);
  CHECK_EQ(stream_pending(slot), 1);
  gate_open(&held);
  REQUIRE_EQ(f->stream_sync(s), 0);
  CHECK_EQ(stream_pending(slot), 0);
  REQUIRE_EQ(f->comm_destroy(comm), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("ncclCommDestroy")), 1);
}

/* The same calls, none seen. */
static void scenario_unseen(const fake_jni *f) {
  cudaStream_t s;
  REQUIRE_EQ(f->stream_create(&s), 0);
  ncclUniqueId id;
  REQUIRE_EQ(f->unique_id(&id), 0);
  ncclComm_t comm = NULL;
  REQUIRE_EQ(f->comm_init(&comm, 1, id, 0), 0);
  REQUIRE_EQ(f->allreduce(buf, 16, comm, s), 0);
  REQUIRE_EQ(f->stream_sync(s), 0);
  REQUIRE_EQ(f->comm_destroy(comm), 0);
  CHECK_EQ(total_upcalls(), 0);
}

/* Loaded and used before the agent (an attach), bound at load (-z now) or through GLOB_DAT slots. */
static const fake_jni *loaded_and_used_before(const char *lib) {
  const fake_jni *f = fake_at(open_or_die(bin_path(lib), RTLD_NOW));
  cudaStream_t s;
  REQUIRE_EQ(f->stream_create(&s), 0);
  REQUIRE_EQ(f->stream_sync(s), 0);
  return f;
}

static void patched(void) {
  REQUIRE_EQ(ng->patch_imports() > 0, 1);
  long st[3];
  ng->patch_stats(st);
  CHECK(st[1] > 0);
}

static void a_full_relro_library_bound_before_the_agent_is_seen_once_patched(void) {
  const fake_jni *f = loaded_and_used_before("libfakejni_now.so");
  load_agent(&recording, 1);
  patched();
  scenario_seen(f, "libfakejni_now.so");
}

static void a_no_plt_library_bound_before_the_agent_is_seen_once_patched(void) {
  const fake_jni *f = loaded_and_used_before("libfakejni_noplt.so");
  load_agent(&recording, 1);
  patched();
  scenario_seen(f, "libfakejni_noplt.so");
}

static void without_patching_a_library_bound_before_the_agent_is_not_seen(void) {
  const fake_jni *f = loaded_and_used_before("libfakejni_now.so");
  load_agent(&recording, 1);
  scenario_unseen(f);
}

static __attribute__((unused)) void a_library_loaded_with_deepbind_is_seen(void) {
  load_agent(&recording, 1);
  patched();
  scenario_seen(fake_at(open_or_die(bin_path("libfakejni_deep.so"), RTLD_NOW | RTLD_DEEPBIND)), "libfakejni_deep.so");
}

static __attribute__((unused)) void without_patching_a_library_loaded_with_deepbind_is_not_seen(void) {
  load_agent(&recording, 1);
  scenario_unseen(fake_at(open_or_die(bin_path("libfakejni_deep.so"), RTLD_NOW | RTLD_DEEPBIND)));
}

/* dlclose, then a load at the same base: a new object, patched again (async-profiler #1245) */
static __attribute__((unused)) void a_library_loaded_again_is_patched_again(void) {
  load_agent(&recording, 1);
  patched();
  for (int i = 0; i < 3; i++) {
    void *h = open_or_die(bin_path("libfakejni_deep.so"), RTLD_NOW | RTLD_DEEPBIND);
    const fake_jni *f = fake_at(h);
    int before = recorded(UP_EXIT, fn_id("cudaStreamCreateWithFlags"));
    cudaStream_t s;
    REQUIRE_EQ(f->stream_create(&s), 0);
    CHECK_EQ(recorded(UP_EXIT, fn_id("cudaStreamCreateWithFlags")), before + 1);
    REQUIRE_EQ(f->stream_destroy(s), 0);
    REQUIRE_EQ(dlclose(h), 0);
  }
}

static void functions_taken_from_dlsym_on_a_handle_are_seen(void) {
  load_agent(&recording, 1);
  patched();
  scenario_seen(fake_at(open_or_die(bin_path("libfakejni_dlsym.so"), RTLD_NOW)), "libfakejni_dlsym.so");
}

static void without_patching_functions_taken_from_dlsym_are_not_seen(void) {
  load_agent(&recording, 1);
  scenario_unseen(fake_at(open_or_die(bin_path("libfakejni_dlsym.so"), RTLD_NOW)));
}

/* RTLD_DEFAULT is the caller's scope: a library loaded RTLD_LOCAL finds its own symbols there, as
 * without the hook (which passes it through as a tail call) */
static __attribute__((unused)) void dlsym_rtld_default_stays_the_callers_lookup(void) {
  load_agent(&recording, 1);
  patched();
  void *h = open_or_die(bin_path("libfakejni_dlsym.so"), RTLD_NOW | RTLD_LOCAL);
  void *(*lookup)(const char *) = (void *(*)(const char *))dlsym(h, "fj_default_lookup");
  REQUIRE_EQ(lookup != NULL, 1);
  CHECK(lookup("fake_jni_functions") == dlsym(h, "fake_jni_functions"));
  CHECK(lookup("no_such_symbol_anywhere") == NULL);
}

/* the thread sanitizer refuses RTLD_DEEPBIND (google/sanitizers#611), and its own dlopen and dlsym
 * interceptors make it the dynamic linker's caller, with or without the agent */
#ifdef __SANITIZE_THREAD__
#define UNSANITIZED_CASE(name) {#name " (not under the thread sanitizer)", skipped, NULL, NULL}
static void skipped(void) {}
#else
#define UNSANITIZED_CASE(name) {#name, name, NULL, NULL}
#endif

static const struct test_case cases[] = {
    {"a_full_relro_library_bound_before_the_agent_is_seen_once_patched",
     a_full_relro_library_bound_before_the_agent_is_seen_once_patched, NULL, NULL},
    {"a_no_plt_library_bound_before_the_agent_is_seen_once_patched", a_no_plt_library_bound_before_the_agent_is_seen_once_patched,
     NULL, NULL},
    {"without_patching_a_library_bound_before_the_agent_is_not_seen",
     without_patching_a_library_bound_before_the_agent_is_not_seen, NULL, NULL},
    UNSANITIZED_CASE(a_library_loaded_with_deepbind_is_seen),
    UNSANITIZED_CASE(without_patching_a_library_loaded_with_deepbind_is_not_seen),
    UNSANITIZED_CASE(a_library_loaded_again_is_patched_again),
    {"functions_taken_from_dlsym_on_a_handle_are_seen", functions_taken_from_dlsym_on_a_handle_are_seen, NULL, NULL},
    {"without_patching_functions_taken_from_dlsym_are_not_seen", without_patching_functions_taken_from_dlsym_are_not_seen, NULL,
     NULL},
    UNSANITIZED_CASE(dlsym_rtld_default_stays_the_callers_lookup),
};

TEST_MAIN(cases)
