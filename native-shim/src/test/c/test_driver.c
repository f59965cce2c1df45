/* The CUDA driver (ng_driver.c): a library with a static cudart reaches libcuda.so.1 through
 * dlsym + cuGetProcAddress_v2 alone; once its dlsym is patched its events and streams are seen
 * (the catalog's driver functions, the per-thread variants behind their own wrappers), NVIDIA's own
 * calls stay theirs, and the agent's own exit calls go through the driver where no CUDA runtime is
 * loaded, failing as the agent's own where there is no driver either. */
#include "agent_test.h"

typedef struct {
  int (*stream_create)(cudaStream_t *);
  int (*stream_sync)(cudaStream_t);
  int (*stream_query)(cudaStream_t);
  int (*stream_destroy)(cudaStream_t);
  int (*event_create)(cudaEvent_t *);
  int (*event_record)(cudaEvent_t, cudaStream_t);
  int (*event_record_pt)(cudaEvent_t, cudaStream_t);
  int (*event_query)(cudaEvent_t);
  int (*event_sync)(cudaEvent_t);
  int (*event_destroy)(cudaEvent_t);
} scudart;

static scudart open_scudart(const char *name) {
#ifdef __SANITIZE_THREAD__
  /* the sanitizer's dlopen interceptor is the dynamic linker's caller: the library's own RUNPATH is
   * not searched for "libcuda.so.1", which is then found loaded by its soname */
  char drv[1024];
  snprintf(drv, sizeof(drv), "%s/libcuda.so.1", getenv("NG_EMU"));
  open_or_die(drv, RTLD_NOW);
#endif
  void *h = open_or_die(bin_path(name), RTLD_NOW);
  scudart a;
#define S(f)                                                                                       \
  *(void **)&a.f = dlsym(h, "sa_" #f);                                                             \
  REQUIRE_EQ(a.f != NULL, 1);
  S(stream_create) S(stream_sync) S(stream_query) S(stream_destroy) S(event_create) S(event_record)
  S(event_record_pt) S(event_query) S(event_sync) S(event_destroy)
#undef S
  return a;
}

static void no_runtime_loaded(void) {
  void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  CHECK(rt == NULL);
  if (rt != NULL) dlclose(rt);
}

static void patched(void) {
  load_agent(&recording, 1);
  REQUIRE_EQ(ng->patch_imports() > 0, 1);
}

/* The creation's upcall: its calling library, and the function of it that called the runtime
 * (found up the stack, past the static cudart's one call site of the driver function) */
static int64_t creation(const char *fn, const char *lib, const char *symbol, int *slot) {
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id(fn), &u), 1);
  CHECK_EQ(u.status, 0);
  char *l = ng->caller_library(u.caller);
  if (l == NULL || strcmp(l, lib) != 0) {
    fprintf(stderr, "%s: the calling library is %s, expected %s\n", fn, l != NULL ? l : "(unknown)", lib);
    FAILED();
  }
  free(l);
  char *s = ng->caller_symbol(u.caller);
  if (s == NULL || strcmp(s, symbol) != 0) {
    fprintf(stderr, "%s: the calling function is %s, expected %s\n", fn, s != NULL ? s : "(unknown)", symbol);
    FAILED();
  }
  free(s);
  *slot = u.slot;
  return u.caller;
}

/* A stream and an event made through the static cudart: seen as cuStreamCreate and cuEventCreate
 * of the calling library; work recorded on the stream is pending until its synchronize; the
 * event is released by cuEventDestroy_v2. */
static void a_static_cudarts_events_and_streams_are_seen(void) {
  patched();
  scudart a = open_scudart("libng_scudart.so");
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  REQUIRE_EQ(a.stream_create(&s), 0);
  int sslot, eslot;
  creation("cuStreamCreate", "libng_scudart.so", "sa_stream_create", &sslot);
  REQUIRE_EQ(a.event_create(&e), 0);
  creation("cuEventCreate", "libng_scudart.so", "sa_event_create", &eslot);
  REQUIRE_EQ(a.event_record(e, s), 0);
  CHECK_EQ(stream_pending(sslot), 1);
  CHECK_EQ(event_pending(eslot), 1);
  REQUIRE_EQ(a.stream_sync(s), 0);
  CHECK_EQ(stream_pending(sslot), 0);
  /* still unseen complete (its stream's synchronize answers it at exit), until its own query */
  CHECK_EQ(event_pending(eslot), 1);
  REQUIRE_EQ(a.event_query(e), 0);
  CHECK_EQ(event_pending(eslot), 0);
  REQUIRE_EQ(a.event_destroy(e), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("cuEventDestroy_v2")), 1);
  REQUIRE_EQ(a.stream_destroy(s), 0);
  CHECK_EQ(recorded(UP_EXIT, fn_id("cuStreamDestroy_v2")), 1);
  no_runtime_loaded();
}

/* cudaEventRecord_ptsz asks the driver with the per-thread flag: the per-thread variant's wrapper,
 * with cuEventRecord_ptsz behind it (its work goes to the per-thread stream: unchanged results) */
static void the_per_thread_variant_is_seen_and_stays_per_thread(void) {
  patched();
  scudart a = open_scudart("libng_scudart.so");
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  REQUIRE_EQ(a.stream_create(&s), 0);
  REQUIRE_EQ(a.event_create(&e), 0);
  int eslot;
  creation("cuEventCreate", "libng_scudart.so", "sa_event_create", &eslot);
  REQUIRE_EQ(a.event_record_pt(e, s), 0);
  CHECK_EQ(event_pending(eslot), 1);
  REQUIRE_EQ(a.event_sync(e), 0);
  CHECK_EQ(event_pending(eslot), 0);
  /* on the per-thread default stream (2), which is the emulator's per-thread stream */
  REQUIRE_EQ(a.event_record_pt(e, cudaStreamPerThread), 0);
  CHECK_EQ(event_pending(eslot), 1);
  REQUIRE_EQ(a.event_sync(e), 0);
  CHECK_EQ(event_pending(eslot), 0);
  REQUIRE_EQ(a.event_destroy(e), 0);
  REQUIRE_EQ(a.stream_destroy(s), 0);
}

/* A stream, an event recorded on it, a synchronize: none of it reaches the agent. */
static void unseen(scudart a) {
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  REQUIRE_EQ(a.stream_create(&s), 0);
  REQUIRE_EQ(a.event_create(&e), 0);
  REQUIRE_EQ(a.event_record(e, s), 0);
  REQUIRE_EQ(a.stream_sync(s), 0);
  REQUIRE_EQ(a.event_destroy(e), 0);
  CHECK_EQ(total_upcalls(), 0);
}

static void without_patching_a_static_cudart_is_not_seen(void) {
  load_agent(&recording, 1);
  unseen(open_scudart("libng_scudart.so"));
}

/* A creation at a Java stack Java has seen makes no upcall (kept in C until adopted): its site
 * names the application's function too. */
static void an_event_made_without_an_upcall_is_named_after_the_application_too(void) {
  patched();
  scudart a = open_scudart("libng_scudart.so");
  int64_t pairs[] = {0x1000, -3, 0x2000, 5, 0x3000, 7};
  set_java_stack(pairs, 3);
  cudaEvent_t first = NULL, e = NULL;
  REQUIRE_EQ(a.event_create(&first), 0);
  int slot;
  creation("cuEventCreate", "libng_scudart.so", "sa_event_create", &slot);
  int before = total_upcalls();
  REQUIRE_EQ(a.event_create(&e), 0);
  CHECK_EQ(total_upcalls(), before);
  int64_t out[NCCLGUARD_ADOPT_LONGS];
  REQUIRE_EQ(ng->adopt_event((int64_t)(uintptr_t)e, out), 1);
  CHECK_EQ(out[2], fn_id("cuEventCreate"));
  char *s = ng->caller_symbol(out[6]);
  if (s == NULL || strcmp(s, "sa_event_create") != 0) {
    fprintf(stderr, "the adopted event's calling function is %s, expected sa_event_create\n", s != NULL ? s : "(unknown)");
    FAILED();
  }
  free(s);
}

/* the same static cudart inside an NVIDIA library: its calls are its own */
static void an_nvidia_librarys_static_cudart_stays_its_own(void) {
  patched();
  unseen(open_scudart("libnvidia-ngscudart.so"));
}

/* Many events through the static cudart's one call site of cuEventRecord: each is tracked as its
 * own (the site's hint stays on the first, the others are found in the map, none is mixed up). */
static void one_internal_call_site_serves_every_event(void) {
  patched();
  scudart a = open_scudart("libng_scudart.so");
  cudaStream_t s = NULL;
  REQUIRE_EQ(a.stream_create(&s), 0);
  enum { N = 40 };
  cudaEvent_t e[N];
  int slot[N];
  for (int i = 0; i < N; i++) {
    REQUIRE_EQ(a.event_create(&e[i]), 0);
    creation("cuEventCreate", "libng_scudart.so", "sa_event_create", &slot[i]);
  }
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) REQUIRE_EQ(a.event_record(e[i], s), 0);
    for (int i = 0; i < N; i++) CHECK_EQ(event_pending(slot[i]), 1);
    /* every other one seen complete by its own query */
    for (int i = 0; i < N; i += 2) {
      while (a.event_query(e[i]) == cudaErrorNotReady) {
      }
    }
    for (int i = 0; i < N; i++) CHECK_EQ(event_pending(slot[i]), i % 2 == 0 ? 0 : 1);
    REQUIRE_EQ(a.stream_sync(s), 0);
    for (int i = 1; i < N; i += 2) REQUIRE_EQ(a.event_query(e[i]), 0);
    for (int i = 0; i < N; i++) CHECK_EQ(event_pending(slot[i]), 0);
  }
  for (int i = 0; i < N; i++) REQUIRE_EQ(a.event_destroy(e[i]), 0);
  REQUIRE_EQ(a.stream_destroy(s), 0);
}

/* The agent's own exit calls for what the static cudart made: no libcudart is loaded, so they go
 * through libcuda.so.1 (cuEventQuery, cuStreamQuery, cuEventDestroy_v2, a primary context for
 * cudaSetDevice), and no line says an application's call found no library. */
static void the_agents_own_calls_go_through_the_driver(void) {
  patched();
  scudart a = open_scudart("libng_scudart.so");
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  REQUIRE_EQ(a.stream_create(&s), 0);
  REQUIRE_EQ(a.event_create(&e), 0);
  int eslot;
  int64_t caller = creation("cuEventCreate", "libng_scudart.so", "sa_event_create", &eslot);
  REQUIRE_EQ(a.event_record(e, s), 0);
  no_runtime_loaded();
  int64_t h = (int64_t)(uintptr_t)e;
  int q = ng->call(caller, fn_id("cudaEventQuery"), h, 0, 0, 0);
  CHECK(q == 0 || q == cudaErrorNotReady);
  int sq = ng->call(caller, fn_id("cudaStreamQuery"), (int64_t)(uintptr_t)s, 0, 0, 0);
  CHECK(sq == 0 || sq == cudaErrorNotReady);
  CHECK_EQ(ng->call(caller, fn_id("cudaSetDevice"), 0, 0, 0, 0), 0);
  CHECK_EQ(a.stream_sync(s), 0);
  CHECK_EQ(ng->call(caller, fn_id("cudaEventQuery"), h, 0, 0, 0), 0);
  CHECK_EQ(ng->call(caller, fn_id("cudaEventDestroy"), h, 0, 0, 0), 0);
  /* released: the driver says so */
  CHECK_EQ(a.event_query(e), cudaErrorInvalidResourceHandle);
  CHECK_EQ(ng->call(caller, fn_id("cudaStreamDestroy"), (int64_t)(uintptr_t)s, 0, 0, 0), 0);
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_MISSING_REAL], 0); /* no real function missing */
}

/* neither a runtime nor a driver: the agent's own call fails as its own (-2), nothing logged as
 * the application's */
static void with_no_runtime_and_no_driver_the_agents_call_fails_as_its_own(void) {
  load_agent(&recording, 1);
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(drv == NULL);
  CHECK_EQ(ng->call(0, fn_id("cudaStreamQuery"), 0x1000, 0, 0, 0), -2);
  CHECK_EQ(ng->call(0, fn_id("cudaSetDevice"), 0, 0, 0, 0), -2);
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_MISSING_REAL], 0);
}

static const struct test_case cases[] = {
    {"a_static_cudarts_events_and_streams_are_seen", a_static_cudarts_events_and_streams_are_seen, "NCCLEMU_OP_DELAY_US=100000",
     NULL},
    {"the_per_thread_variant_is_seen_and_stays_per_thread", the_per_thread_variant_is_seen_and_stays_per_thread,
     "NCCLEMU_OP_DELAY_US=100000", NULL},
    {"without_patching_a_static_cudart_is_not_seen", without_patching_a_static_cudart_is_not_seen, NULL, NULL},
    {"an_event_made_without_an_upcall_is_named_after_the_application_too",
     an_event_made_without_an_upcall_is_named_after_the_application_too, NULL, NULL},
    {"an_nvidia_librarys_static_cudart_stays_its_own", an_nvidia_librarys_static_cudart_stays_its_own, NULL, NULL},
    {"one_internal_call_site_serves_every_event", one_internal_call_site_serves_every_event, "NCCLEMU_OP_DELAY_US=2000", NULL},
    {"the_agents_own_calls_go_through_the_driver", the_agents_own_calls_go_through_the_driver, "NCCLEMU_OP_DELAY_US=100000",
     NULL},
    {"with_no_runtime_and_no_driver_the_agents_call_fails_as_its_own",
     with_no_runtime_and_no_driver_the_agents_call_fails_as_its_own, NULL, NULL},
};

TEST_MAIN(cases)
