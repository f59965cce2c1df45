/* Events: record, query, synchronize, elapsed time, and what misuse answers. */
#include "test.h"

static void unrecorded_event_is_complete(void) {
  cudaEvent_t e;
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e), cudaSuccess);
  CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
  float ms;
  CHECK_EQ(cudaEventElapsedTime(&ms, e, e), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
}

static void recorded_event_is_pending_until_the_stream_gets_there(void) {
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  REQUIRE_EQ(cudaEventCreateWithFlags(&e, cudaEventBlockingSync), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
  CHECK_EQ(cudaGetLastError(), cudaSuccess); /* not ready is no error */
  gate_open(&g);
  CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
}

static void the_latest_record_decides(void) {
  cudaStream_t busy, idle;
  cudaEvent_t e;
  REQUIRE_EQ(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking), cudaSuccess);
  REQUIRE_EQ(cudaStreamCreateWithFlags(&idle, cudaStreamNonBlocking), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(busy, wait_at_gate, &g);
  cudaEventRecord(e, busy);
  CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
  cudaEventRecord(e, idle);
  CHECK_EQ(cudaEventSynchronize(e), cudaSuccess); /* would hang on the first record */
  CHECK_EQ(cudaEventQuery(e), cudaSuccess);
  gate_open(&g);
  cudaStreamSynchronize(busy);
  cudaEventDestroy(e);
  cudaStreamDestroy(busy);
  cudaStreamDestroy(idle);
}

/* Both ways, every time: a synchronized stream means its events completed, and a completed event
 * means its stream got that far. */
static void event_and_stream_completion_agree(void) {
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  char buf[64];
  for (int i = 0; i < 300; i++) {
    cudaMemsetAsync(buf, i, sizeof(buf), s);
    cudaEventRecord(e, s);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess);
    cudaMemsetAsync(buf, i, sizeof(buf), s);
    cudaEventRecord(e, s);
    CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  }
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
}

static void elapsed_time_measures_between_records(void) {
  cudaEvent_t a, b, untimed;
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&a), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&b), cudaSuccess);
  REQUIRE_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  cudaEventRecord(a, s);
  char buf[8];
  cudaMemsetAsync(buf, 0, sizeof(buf), s); /* takes NCCLEMU_OP_DELAY_US = 100 ms */
  cudaEventRecord(b, s);
  cudaEventRecord(untimed, s);
  float ms = -1;
  cudaError_t early = cudaEventElapsedTime(&ms, a, b);
  CHECK(early == cudaErrorNotReady || early == cudaSuccess);
  CHECK_EQ(cudaEventSynchronize(b), cudaSuccess);
  CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  CHECK(ms >= 100.0f);
  CHECK_EQ(cudaEventElapsedTime(&ms, a, untimed), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventElapsedTime(NULL, a, b), cudaErrorInvalidValue);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaEventDestroy(untimed);
  cudaStreamDestroy(s);
}

static void bad_flags_are_invalid_value(void) {
  cudaEvent_t e;
  CHECK_EQ(cudaEventCreateWithFlags(&e, 0x40), cudaErrorInvalidValue);
  CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
  CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming),
           cudaSuccess);
  CHECK_EQ(cudaEventRecordWithFlags(e, NULL, 0x8), cudaErrorInvalidValue);
  CHECK_EQ(cudaEventRecordWithFlags(e, NULL, cudaEventRecordDefault), cudaSuccess);
  CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
  CHECK_EQ(cudaEventCreate(NULL), cudaErrorInvalidValue);
}

static void destroyed_or_foreign_events_are_invalid_resource_handles(void) {
  cudaEvent_t e;
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
  CHECK_EQ(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventSynchronize(e), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventRecord(e, NULL), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamWaitEvent(NULL, e, 0), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventDestroy(NULL), cudaErrorInvalidResourceHandle);
  long junk[8] = {0};
  CHECK_EQ(cudaEventQuery((cudaEvent_t)junk), cudaErrorInvalidResourceHandle);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEventCreate(&e);
  cudaStreamDestroy(s);
  CHECK_EQ(cudaEventRecord(e, s), cudaErrorInvalidResourceHandle);
  cudaEventDestroy(e);
}

/* As the CUDA runtime does: the handle of an event destroyed last comes back at the next creation,
 * a new event (unrecorded, complete) whatever the old one was. */
static void a_destroyed_events_handle_comes_back_at_the_next_creation(void) {
  cudaStream_t s;
  cudaEvent_t e, again;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  REQUIRE_EQ(cudaEventRecord(e, s), cudaSuccess);
  gate_open(&g);
  REQUIRE_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
  REQUIRE_EQ(cudaEventCreateWithFlags(&again, cudaEventDisableTiming), cudaSuccess);
  CHECK(again == e);
  CHECK_EQ(cudaEventQuery(again), cudaSuccess);
  float ms;
  CHECK_EQ(cudaEventElapsedTime(&ms, again, again), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventDestroy(again), cudaSuccess);
  CHECK_EQ(cudaEventDestroy(again), cudaErrorInvalidResourceHandle);
  cudaStreamDestroy(s);
}

static void an_event_records_only_on_a_stream_of_its_device(void) {
  cudaEvent_t e;
  REQUIRE_EQ(cudaSetDevice(0), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  cudaStream_t s0;
  REQUIRE_EQ(cudaStreamCreate(&s0), cudaSuccess);
  REQUIRE_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t s1;
  REQUIRE_EQ(cudaStreamCreate(&s1), cudaSuccess);
  CHECK_EQ(cudaEventRecord(e, s1), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventRecord(e, NULL), cudaErrorInvalidResourceHandle); /* device 1's legacy stream */
  CHECK_EQ(cudaEventRecord(e, cudaStreamPerThread), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventRecord(e, s0), cudaSuccess); /* the stream's device, not the current one, counts */
  CHECK_EQ(cudaStreamWaitEvent(s1, e, 0), cudaSuccess); /* a wait may take another device's event */
  REQUIRE_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaEventRecord(e, NULL), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
  cudaEventDestroy(e);
}

static void destroying_a_pending_event_is_safe(void) {
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  cudaEventRecord(e, s);
  cudaStream_t waiter;
  cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking);
  cudaStreamWaitEvent(waiter, e, 0);
  CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(waiter), cudaErrorNotReady);
  gate_open(&g);
  CHECK_EQ(cudaStreamSynchronize(waiter), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaStreamDestroy(s);
  cudaStreamDestroy(waiter);
}

static void leaked_events(void) {
  cudaStream_t s;
  cudaEvent_t done, pending;
  cudaSetDevice(2);
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaEventCreate(&done);
  cudaEventCreate(&pending);
  cudaEventRecord(done, s);
  cudaEventSynchronize(done);
  static struct gate never;
  gate_init(&never);
  cudaLaunchHostFunc(s, wait_at_gate, &never);
  cudaEventRecord(pending, s);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "stream %p device 2 pending 2\nevent %p device 2 pending 0\nevent %p device 2 pending 1\n",
          (void *)s, (void *)done, (void *)pending);
  fclose(f);
}

static const struct test_case cases[] = {
    {"unrecorded_event_is_complete", unrecorded_event_is_complete, NULL, NULL},
    {"recorded_event_is_pending_until_the_stream_gets_there",
     recorded_event_is_pending_until_the_stream_gets_there, NULL, NULL},
    {"the_latest_record_decides", the_latest_record_decides, NULL, NULL},
    {"event_and_stream_completion_agree", event_and_stream_completion_agree, NULL, NULL},
    {"elapsed_time_measures_between_records", elapsed_time_measures_between_records,
     "NCCLEMU_OP_DELAY_US=100000", NULL},
    {"bad_flags_are_invalid_value", bad_flags_are_invalid_value, NULL, NULL},
    {"destroyed_or_foreign_events_are_invalid_resource_handles",
     destroyed_or_foreign_events_are_invalid_resource_handles, NULL, NULL},
    {"a_destroyed_events_handle_comes_back_at_the_next_creation", a_destroyed_events_handle_comes_back_at_the_next_creation,
     NULL, NULL},
    {"an_event_records_only_on_a_stream_of_its_device", an_event_records_only_on_a_stream_of_its_device, NULL, NULL},
    {"destroying_a_pending_event_is_safe", destroying_a_pending_event_is_safe, NULL, NULL},
    {"report_lists_live_events_with_their_pending_state", leaked_events,
     "NCCLEMU_REPORT=@/report", exit_report_is_as_expected},
};

TEST_MAIN(cases)
