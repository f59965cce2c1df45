/* Device memory (host memory underneath), copies and sets, synchronous and stream-ordered. */
#include "test.h"

static void malloc_memset_memcpy_round_trip(void) {
  int *d = NULL, host[64];
  REQUIRE_EQ(cudaMalloc((void **)&d, sizeof(host)), cudaSuccess);
  CHECK(d != NULL);
  CHECK_EQ((uintptr_t)d % 256, 0);
  CHECK_EQ(cudaMemset(d, 0, sizeof(host)), cudaSuccess);
  for (int i = 0; i < 64; i++)
    host[i] = i * 3;
  CHECK_EQ(cudaMemcpy(d + 8, host, 8 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  int back[64];
  CHECK_EQ(cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < 64; i++)
    CHECK_EQ(back[i], i >= 8 && i < 16 ? (i - 8) * 3 : 0);
  CHECK_EQ(cudaFree(d), cudaSuccess);
}

static void bad_frees_are_invalid_value_not_crashes(void) {
  void *d;
  int on_stack;
  REQUIRE_EQ(cudaMalloc(&d, 100), cudaSuccess);
  CHECK_EQ(cudaFree(d), cudaSuccess);
  CHECK_EQ(cudaFree(d), cudaErrorInvalidValue);
  CHECK_EQ(cudaFree(&on_stack), cudaErrorInvalidValue);
  CHECK_EQ(cudaFree(NULL), cudaSuccess);
  void *h;
  REQUIRE_EQ(cudaMallocHost(&h, 64), cudaSuccess);
  CHECK_EQ(cudaFree(h), cudaErrorInvalidValue); /* pinned host memory is not device memory */
  CHECK_EQ(cudaFreeHost(h), cudaSuccess);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

static void bad_copies_are_rejected(void) {
  char a[8], b[8] = {0};
  CHECK_EQ(cudaMemcpy(a, b, 8, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
  CHECK_EQ(cudaMemcpy(NULL, b, 8, cudaMemcpyDefault), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemset(NULL, 0, 8), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpy(NULL, NULL, 0, cudaMemcpyDefault), cudaSuccess);
  CHECK_EQ(cudaMalloc(NULL, 8), cudaErrorInvalidValue);
}

static void async_copies_run_in_stream_order(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  unsigned char *d, out[256];
  REQUIRE_EQ(cudaMallocAsync((void **)&d, 256, s), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(d, 7, 256, s), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(d + 128, 9, 128, s), cudaSuccess);
  CHECK_EQ(cudaMemcpyAsync(out, d, 256, cudaMemcpyDeviceToHost, s), cudaSuccess);
  CHECK_EQ(cudaFreeAsync(d, s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < 256; i++)
    CHECK_EQ(out[i], i < 128 ? 7 : 9);
  CHECK_EQ(cudaFree(d), cudaErrorInvalidValue); /* already released by cudaFreeAsync */
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void per_thread_forms_use_the_per_thread_stream(void) {
  int *d, back = 0, v = 42;
  REQUIRE_EQ(cudaMalloc((void **)&d, sizeof(int)), cudaSuccess);
  CHECK_EQ(cudaMemset_ptds(d, 0, sizeof(int)), cudaSuccess);
  CHECK_EQ(cudaMemcpyAsync_ptsz(d, &v, sizeof(int), cudaMemcpyHostToDevice, NULL), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  CHECK_EQ(cudaMemcpy_ptds(&back, d, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK_EQ(back, 42);
  cudaFree(d);
}

static int host_fn_ran;

static void mark_ran(void *arg) {
  wait_at_gate(arg);
  __atomic_store_n(&host_fn_ran, 1, __ATOMIC_SEQ_CST);
}

static void *open_gate_later(void *arg) {
  sleep_ms(50);
  gate_open(arg);
  return NULL;
}

/* cudaMemcpy goes through the legacy default stream, which waits for every blocking stream. */
static void synchronous_copy_waits_for_blocking_streams(void) {
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  struct gate g;
  gate_init(&g);
  CHECK_EQ(cudaLaunchHostFunc(s, mark_ran, &g), cudaSuccess);
  pthread_t t;
  pthread_create(&t, NULL, open_gate_later, &g);
  int a = 1, b = 0;
  CHECK_EQ(cudaMemcpy(&b, &a, sizeof(int), cudaMemcpyHostToHost), cudaSuccess);
  CHECK_EQ(__atomic_load_n(&host_fn_ran, __ATOMIC_SEQ_CST), 1);
  CHECK_EQ(b, 1);
  pthread_join(t, NULL);
  cudaStreamDestroy(s);
}

static void mem_get_info_counts_allocations(void) {
  size_t free0, total, free1;
  CHECK_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  CHECK_EQ(total, 80ULL << 30);
  void *d;
  REQUIRE_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  cudaMemGetInfo(&free1, &total);
  CHECK_EQ(free0 - free1, 1 << 20);
  cudaFree(d);
  cudaMemGetInfo(&free1, &total);
  CHECK_EQ(free1, free0);
}

static const struct test_case cases[] = {
    {"malloc_memset_memcpy_round_trip", malloc_memset_memcpy_round_trip, NULL, NULL},
    {"bad_frees_are_invalid_value_not_crashes", bad_frees_are_invalid_value_not_crashes, NULL,
     NULL},
    {"bad_copies_are_rejected", bad_copies_are_rejected, NULL, NULL},
    {"async_copies_run_in_stream_order", async_copies_run_in_stream_order, NULL, NULL},
    {"per_thread_forms_use_the_per_thread_stream", per_thread_forms_use_the_per_thread_stream,
     NULL, NULL},
    {"synchronous_copy_waits_for_blocking_streams", synchronous_copy_waits_for_blocking_streams,
     NULL, NULL},
    {"mem_get_info_counts_allocations", mem_get_info_counts_allocations, NULL, NULL},
};

TEST_MAIN(cases)
