/* Streams: asynchronous in-order work on a worker, pending states, the legacy default stream's
 * implicit synchronization, per-thread default streams, misuse. */
#include "test.h"

static void create_query_destroy(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  CHECK(s != NULL && s != cudaStreamLegacy && s != cudaStreamPerThread);
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  unsigned flags = 9;
  int prio = 9, dev = 9;
  CHECK_EQ(cudaStreamGetFlags(s, &flags), cudaSuccess);
  CHECK_EQ(flags, cudaStreamDefault);
  CHECK_EQ(cudaStreamGetPriority(s, &prio), cudaSuccess);
  CHECK_EQ(prio, 0);
  CHECK_EQ(cudaStreamGetDevice(s, &dev), cudaSuccess);
  CHECK_EQ(dev, 0);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void streams_are_never_capturing(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  CHECK_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  CHECK_EQ(status, cudaStreamCaptureStatusNone);
  status = cudaStreamCaptureStatusActive;
  CHECK_EQ(cudaStreamIsCapturing_ptsz(NULL, &status), cudaSuccess);
  CHECK_EQ(status, cudaStreamCaptureStatusNone);
  CHECK_EQ(cudaStreamIsCapturing(s, NULL), cudaErrorInvalidValue);
  cudaStreamDestroy(s);
  CHECK_EQ(cudaStreamIsCapturing(s, &status), cudaErrorInvalidResourceHandle);
}

static void flags_priority_and_device_are_kept(void) {
  cudaSetDevice(3);
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -3), cudaSuccess);
  unsigned flags;
  int prio, dev;
  cudaStreamGetFlags(s, &flags);
  cudaStreamGetPriority(s, &prio);
  cudaStreamGetDevice(s, &dev);
  CHECK_EQ(flags, cudaStreamNonBlocking);
  CHECK_EQ(prio, -3);
  CHECK_EQ(dev, 3);
  cudaStreamDestroy(s);
  REQUIRE_EQ(cudaStreamCreateWithPriority(&s, 0, -100), cudaSuccess);
  cudaStreamGetPriority(s, &prio);
  CHECK_EQ(prio, -5); /* clamped to the device's range */
  cudaStreamDestroy(s);
  CHECK_EQ(cudaStreamCreateWithFlags(&s, 0x10), cudaErrorInvalidValue);
  CHECK_EQ(cudaStreamCreate(NULL), cudaErrorInvalidValue);
}

static void destroyed_or_foreign_handles_are_invalid_resource_handles(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  int x;
  CHECK_EQ(cudaStreamQuery((cudaStream_t)&x), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaMemsetAsync(&x, 0, sizeof(x), s), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamDestroy(cudaStreamLegacy), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

static int order[200];
static int norder;

static void append(void *arg) { order[norder++] = (int)(intptr_t)arg; }

static void work_runs_in_order_on_one_worker(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  for (intptr_t i = 0; i < 200; i++)
    CHECK_EQ(cudaLaunchHostFunc(s, append, (void *)i), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(norder, 200);
  for (int i = 0; i < 200; i++)
    CHECK_EQ(order[i], i);
  cudaStreamDestroy(s);
}

static void pending_work_answers_not_ready_until_done(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  struct gate g;
  gate_init(&g);
  CHECK_EQ(cudaLaunchHostFunc(s, wait_at_gate, &g), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  CHECK_EQ(cudaGetLastError(), cudaSuccess); /* not ready is no error */
  gate_open(&g);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  cudaStreamDestroy(s);
}

static sem_t ran;

static void post_ran(void *arg) {
  (void)arg;
  sem_post(&ran);
}

static void destroying_a_busy_stream_still_runs_its_work(void) {
  sem_init(&ran, 0, 0);
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, wait_at_gate, &g);
  cudaLaunchHostFunc(s, post_ran, NULL);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  gate_open(&g);
  CHECK_EQ(sem_wait(&ran), 0); /* hangs (and the case times out) if the work was dropped */
}

static int flag;

static void set_flag(void *arg) {
  (void)arg;
  __atomic_store_n(&flag, 1, __ATOMIC_SEQ_CST);
}

static void stream_waits_for_an_event_of_another_stream(void) {
  cudaStream_t a, b;
  cudaEvent_t e;
  REQUIRE_EQ(cudaStreamCreate(&a), cudaSuccess);
  REQUIRE_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  REQUIRE_EQ(cudaEventCreate(&e), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(a, wait_at_gate, &g);
  CHECK_EQ(cudaEventRecord(e, a), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
  CHECK_EQ(cudaLaunchHostFunc(b, set_flag, NULL), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(b), cudaErrorNotReady);
  CHECK_EQ(__atomic_load_n(&flag, __ATOMIC_SEQ_CST), 0);
  gate_open(&g);
  CHECK_EQ(cudaStreamSynchronize(b), cudaSuccess);
  CHECK_EQ(flag, 1);
  cudaEvent_t never;
  cudaEventCreate(&never);
  CHECK_EQ(cudaStreamWaitEvent(b, never, 0), cudaSuccess); /* never recorded: no wait */
  CHECK_EQ(cudaStreamSynchronize(b), cudaSuccess);
  cudaEventDestroy(e);
  cudaEventDestroy(never);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

static void legacy_stream_waits_for_blocking_streams_only(void) {
  cudaStream_t blocking, nonblocking;
  REQUIRE_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  REQUIRE_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  struct gate gb, gn;
  gate_init(&gb);
  gate_init(&gn);
  cudaLaunchHostFunc(nonblocking, wait_at_gate, &gn);
  /* work on the legacy stream does not wait for a non-blocking stream */
  CHECK_EQ(cudaLaunchHostFunc(NULL, set_flag, NULL), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
  CHECK_EQ(flag, 1);
  /* but it waits for a blocking one */
  cudaLaunchHostFunc(blocking, wait_at_gate, &gb);
  CHECK_EQ(cudaLaunchHostFunc(cudaStreamLegacy, set_flag, NULL), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(cudaStreamLegacy), cudaErrorNotReady);
  gate_open(&gb);
  CHECK_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(blocking), cudaSuccess);
  gate_open(&gn);
  cudaStreamSynchronize(nonblocking); /* the gate lives on this stack frame */
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

static void blocking_streams_wait_for_the_legacy_stream(void) {
  cudaStream_t blocking, nonblocking;
  REQUIRE_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  REQUIRE_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(NULL, wait_at_gate, &g);
  cudaLaunchHostFunc(blocking, set_flag, NULL);
  CHECK_EQ(cudaLaunchHostFunc(nonblocking, post_ran, NULL), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(nonblocking), cudaSuccess); /* hangs if it waited */
  CHECK_EQ(cudaStreamQuery(blocking), cudaErrorNotReady);
  CHECK_EQ(__atomic_load_n(&flag, __ATOMIC_SEQ_CST), 0);
  gate_open(&g);
  CHECK_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  CHECK_EQ(flag, 1);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

static struct gate ptds_gate;

static void *query_own_per_thread_stream(void *out) {
  *(cudaError_t *)out = cudaStreamQuery(cudaStreamPerThread);
  return NULL;
}

static void per_thread_default_stream_is_per_thread(void) {
  gate_init(&ptds_gate);
  CHECK_EQ(cudaLaunchHostFunc(cudaStreamPerThread, wait_at_gate, &ptds_gate), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
  CHECK_EQ(cudaStreamQuery_ptsz(NULL), cudaErrorNotReady); /* 0 means per-thread in _ptsz */
  cudaError_t other = cudaErrorUnknown;
  pthread_t t;
  pthread_create(&t, NULL, query_own_per_thread_stream, &other);
  pthread_join(t, NULL);
  CHECK_EQ(other, cudaSuccess);
  CHECK_EQ(cudaStreamQuery(NULL), cudaSuccess); /* nothing on the legacy stream itself */
  gate_open(&ptds_gate);
  CHECK_EQ(cudaStreamSynchronize_ptsz(NULL), cudaSuccess);
}

static cudaStream_t seen_stream;
static cudaError_t seen_status = cudaErrorUnknown;

static void callback(cudaStream_t s, cudaError_t status, void *arg) {
  seen_stream = s;
  seen_status = status;
  *(int *)arg = 7;
}

static void stream_callbacks_get_the_stream_and_status(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  int out = 0;
  CHECK_EQ(cudaStreamAddCallback(s, callback, &out, 0), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK(seen_stream == s);
  CHECK_EQ(seen_status, cudaSuccess);
  CHECK_EQ(out, 7);
  CHECK_EQ(cudaStreamAddCallback(s, callback, &out, 1), cudaErrorInvalidValue);
  CHECK_EQ(cudaLaunchHostFunc(s, NULL, NULL), cudaErrorInvalidValue);
  cudaStreamDestroy(s);
}

static void *open_gate_later(void *arg) {
  sleep_ms(50);
  gate_open(arg);
  return NULL;
}

static void set_flag_after_gate(void *arg) {
  wait_at_gate(arg);
  set_flag(NULL);
}

static void device_synchronize_waits_for_every_stream_of_the_device(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  struct gate g;
  gate_init(&g);
  cudaLaunchHostFunc(s, set_flag_after_gate, &g);
  pthread_t t;
  pthread_create(&t, NULL, open_gate_later, &g);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(__atomic_load_n(&flag, __ATOMIC_SEQ_CST), 1);
  pthread_join(t, NULL);
  cudaStreamDestroy(s);
}

static void op_delay_makes_work_take_that_long(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  char buf[16];
  double t0 = now_ms();
  CHECK_EQ(cudaMemsetAsync(buf, 1, sizeof(buf), s), cudaSuccess);
  cudaError_t q = cudaStreamQuery(s);
  double t1 = now_ms();
  if (t1 - t0 < 300) /* asked well within the op's 300 ms, so it cannot be done */
    CHECK_EQ(q, cudaErrorNotReady);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK(now_ms() - t0 >= 300);
  CHECK_EQ(buf[15], 1);
  cudaStreamDestroy(s);
}

static int churned;

static void count_up(void *arg) {
  (void)arg;
  __atomic_fetch_add(&churned, 1, __ATOMIC_SEQ_CST);
}

static void *stream_churn(void *arg) {
  cudaSetDevice((int)(intptr_t)arg % 8);
  for (int i = 0; i < 50; i++) {
    cudaStream_t s;
    cudaEvent_t e;
    char buf[64];
    if (cudaStreamCreate(&s) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess) {
      CHECK(0);
      return NULL;
    }
    cudaMemsetAsync(buf, i, sizeof(buf), s);
    cudaEventRecord(e, s);
    cudaStreamWaitEvent(NULL, e, 0);
    cudaLaunchHostFunc(NULL, count_up, NULL);
    cudaEventSynchronize(e);
    CHECK_EQ(buf[63], i);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
  }
  cudaStreamSynchronize(NULL);
  return NULL;
}

static void many_threads_create_use_and_destroy_streams(void) {
  run_threads(8, stream_churn);
  CHECK_EQ(__atomic_load_n(&churned, __ATOMIC_SEQ_CST), 8 * 50);
}

static void leaked_busy_stream(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  static struct gate never;
  gate_init(&never);
  cudaLaunchHostFunc(s, wait_at_gate, &never); /* blocked for good: exit must not wait for it */
  char buf[4];
  cudaMemsetAsync(buf, 0, sizeof(buf), s);
  FILE *f = fopen(test_path("expected"), "w");
  fprintf(f, "stream %p device 0 pending 2\n", (void *)s);
  fclose(f);
}

static const struct test_case cases[] = {
    {"create_query_destroy", create_query_destroy, NULL, NULL},
    {"streams_are_never_capturing", streams_are_never_capturing, NULL, NULL},
    {"flags_priority_and_device_are_kept", flags_priority_and_device_are_kept, NULL, NULL},
    {"destroyed_or_foreign_handles_are_invalid_resource_handles",
     destroyed_or_foreign_handles_are_invalid_resource_handles, NULL, NULL},
    {"work_runs_in_order_on_one_worker", work_runs_in_order_on_one_worker, NULL, NULL},
    {"pending_work_answers_not_ready_until_done", pending_work_answers_not_ready_until_done, NULL,
     NULL},
    {"destroying_a_busy_stream_still_runs_its_work", destroying_a_busy_stream_still_runs_its_work,
     NULL, NULL},
    {"stream_waits_for_an_event_of_another_stream", stream_waits_for_an_event_of_another_stream,
     NULL, NULL},
    {"legacy_stream_waits_for_blocking_streams_only",
     legacy_stream_waits_for_blocking_streams_only, NULL, NULL},
    {"blocking_streams_wait_for_the_legacy_stream", blocking_streams_wait_for_the_legacy_stream,
     NULL, NULL},
    {"per_thread_default_stream_is_per_thread", per_thread_default_stream_is_per_thread, NULL,
     NULL},
    {"stream_callbacks_get_the_stream_and_status", stream_callbacks_get_the_stream_and_status,
     NULL, NULL},
    {"device_synchronize_waits_for_every_stream_of_the_device",
     device_synchronize_waits_for_every_stream_of_the_device, NULL, NULL},
    {"op_delay_makes_work_take_that_long", op_delay_makes_work_take_that_long,
     "NCCLEMU_OP_DELAY_US=300000", NULL},
    {"many_threads_create_use_and_destroy_streams", many_threads_create_use_and_destroy_streams,
     NULL, NULL},
    {"exit_does_not_wait_for_a_blocked_stream_and_reports_it", leaked_busy_stream,
     "NCCLEMU_REPORT=@/report", exit_report_is_as_expected},
};

TEST_MAIN(cases)
