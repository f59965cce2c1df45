/* Collectives and point-to-point: results for each operation, type and reduction, in place and
 * out of place, on rank threads and from one thread driving every rank in a group. */
#include "test.h"

#define NRANKS 3
#define COUNT 37 /* odd and not a multiple of the rank count, to catch offset mistakes */

static const ncclDataType_t required_types[] = {ncclFloat32, ncclFloat64, ncclInt32, ncclInt64};
static const ncclDataType_t extra_types[] = {ncclInt8,    ncclUint8,   ncclUint32,
                                             ncclUint64,  ncclFloat16, ncclBfloat16};
static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

static size_t type_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  default:
    return 8;
  }
}

static bool is_unsigned(ncclDataType_t t) {
  return t == ncclUint8 || t == ncclUint32 || t == ncclUint64;
}

static bool is_integer(ncclDataType_t t) {
  return t != ncclFloat32 && t != ncclFloat64 && t != ncclFloat16 && t != ncclBfloat16;
}

/* Small integers, negative too for signed types: every sum, product, max and min of NRANKS of
 * them is exact in every type, so results compare exactly. */
static double input(ncclDataType_t t, int rank, size_t i, int salt) {
  int v = (int)((rank * 7 + i * 3 + (size_t)salt) % 9);
  return is_unsigned(t) ? v : v - 4;
}

/* half and bfloat16 bit patterns of small integers, by exact construction */
static uint16_t small_to_half(double v, bool bf16) {
  if (v == 0)
    return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  double a = v < 0 ? -v : v;
  int e = 0;
  while (a >= 2) {
    a /= 2;
    e++;
  }
  /* a in [1, 2): mantissa bits of the fraction */
  if (bf16)
    return sign | (uint16_t)((e + 127) << 7) | (uint16_t)((a - 1) * 128);
  return sign | (uint16_t)((e + 15) << 10) | (uint16_t)((a - 1) * 1024);
}

static double half_to_small(uint16_t h, bool bf16) {
  if ((h & 0x7fff) == 0)
    return 0;
  int mbits = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
  int e = ((h & 0x7fff) >> mbits) - bias;
  double a = 1 + (double)(h & ((1 << mbits) - 1)) / (1 << mbits);
  while (e-- > 0)
    a *= 2;
  return (h & 0x8000) ? -a : a;
}

static void put(void *buf, ncclDataType_t t, size_t i, double v) {
  switch (t) {
  case ncclInt8:
    ((int8_t *)buf)[i] = (int8_t)v;
    break;
  case ncclUint8:
    ((uint8_t *)buf)[i] = (uint8_t)v;
    break;
  case ncclInt32:
    ((int32_t *)buf)[i] = (int32_t)v;
    break;
  case ncclUint32:
    ((uint32_t *)buf)[i] = (uint32_t)v;
    break;
  case ncclInt64:
    ((int64_t *)buf)[i] = (int64_t)v;
    break;
  case ncclUint64:
    ((uint64_t *)buf)[i] = (uint64_t)v;
    break;
  case ncclFloat32:
    ((float *)buf)[i] = (float)v;
    break;
  case ncclFloat64:
    ((double *)buf)[i] = v;
    break;
  case ncclFloat16:
  case ncclBfloat16:
    ((uint16_t *)buf)[i] = small_to_half(v, t == ncclBfloat16);
    break;
  default:
    break;
  }
}

static double get(const void *buf, ncclDataType_t t, size_t i) {
  switch (t) {
  case ncclInt8:
    return ((const int8_t *)buf)[i];
  case ncclUint8:
    return ((const uint8_t *)buf)[i];
  case ncclInt32:
    return ((const int32_t *)buf)[i];
  case ncclUint32:
    return ((const uint32_t *)buf)[i];
  case ncclInt64:
    return (double)((const int64_t *)buf)[i];
  case ncclUint64:
    return (double)((const uint64_t *)buf)[i];
  case ncclFloat32:
    return ((const float *)buf)[i];
  case ncclFloat64:
    return ((const double *)buf)[i];
  case ncclFloat16:
  case ncclBfloat16:
    return half_to_small(((const uint16_t *)buf)[i], t == ncclBfloat16);
  default:
    return 0;
  }
}

static double reduced(ncclDataType_t t, ncclRedOp_t op, size_t i, int salt) {
  double r = input(t, 0, i, salt);
  for (int k = 1; k < NRANKS; k++) {
    double v = input(t, k, i, salt);
    switch (op) {
    case ncclProd:
      r *= v;
      break;
    case ncclMax:
      r = v > r ? v : r;
      break;
    case ncclMin:
      r = v < r ? v : r;
      break;
    default:
      r += v;
    }
  }
  if (op == ncclAvg) {
    if (is_integer(t))
      r = (double)((long long)r / NRANKS); /* integer division, as the GPU does */
    else if (t == ncclFloat32)
      r = (float)((float)r / (double)NRANKS);
    else
      r /= NRANKS;
  }
  return r;
}

static void fill(void *buf, ncclDataType_t t, size_t n, int rank, int salt) {
  for (size_t i = 0; i < n; i++)
    put(buf, t, i, input(t, rank, i, salt));
}

/* ---------------------------------------------------------------- rank threads */

struct rank {
  int rank;
  ncclComm_t comm;
  cudaStream_t stream;
};

static ncclUniqueId unique_id;
static void (*rank_body)(struct rank *);

static void *rank_thread(void *arg) {
  struct rank r = {.rank = (int)(intptr_t)arg};
  cudaSetDevice(r.rank);
  REQUIRE_EQ(ncclCommInitRank(&r.comm, NRANKS, unique_id, r.rank), ncclSuccess);
  REQUIRE_EQ(cudaStreamCreate(&r.stream), cudaSuccess);
  rank_body(&r);
  CHECK_EQ(cudaStreamSynchronize(r.stream), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(r.stream), cudaSuccess);
  CHECK_EQ(ncclCommDestroy(r.comm), ncclSuccess);
  return NULL;
}

static void run_ranks(void (*body)(struct rank *)) {
  REQUIRE_EQ(ncclGetUniqueId(&unique_id), ncclSuccess);
  rank_body = body;
  run_threads(NRANKS, rank_thread);
}

static bool reducible(ncclDataType_t t, ncclRedOp_t op) {
  /* averages of half types round: covered by the float types */
  return !(op == ncclAvg && (t == ncclFloat16 || t == ncclBfloat16));
}

typedef void (*type_op_check)(struct rank *, ncclDataType_t, ncclRedOp_t, int salt);

static void for_types_and_ops(struct rank *r, type_op_check check, bool extra) {
  int salt = 0;
  const ncclDataType_t *types = extra ? extra_types : required_types;
  size_t ntypes = extra ? sizeof(extra_types) / sizeof(extra_types[0])
                        : sizeof(required_types) / sizeof(required_types[0]);
  for (size_t t = 0; t < ntypes; t++)
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
      if (reducible(types[t], ops[o]))
        check(r, types[t], ops[o], salt++);
}

static void expect_elems(const void *buf, ncclDataType_t t, size_t n, double (*want)(size_t, void *),
                         void *ctx, const char *what, int rank) {
  for (size_t i = 0; i < n; i++) {
    double got = get(buf, t, i), exp = want(i, ctx);
    if (got != exp) {
      fprintf(stderr, "%s: rank %d type %d element %zu is %g, expected %g\n", what, rank, (int)t,
              i, got, exp);
      FAILED();
      return;
    }
  }
}

struct want_reduced {
  ncclDataType_t t;
  ncclRedOp_t op;
  int salt;
  size_t offset;
};

static double want_reduced(size_t i, void *ctx) {
  struct want_reduced *w = ctx;
  return reduced(w->t, w->op, i + w->offset, w->salt);
}

/* ---------------------------------------------------------------- reductions */

static void check_allreduce(struct rank *r, ncclDataType_t t, ncclRedOp_t op, int salt) {
  size_t sz = type_size(t);
  char *send = malloc(COUNT * sz), *recv = malloc(COUNT * sz), *inplace = malloc(COUNT * sz);
  fill(send, t, COUNT, r->rank, salt);
  fill(inplace, t, COUNT, r->rank, salt);
  CHECK_EQ(ncclAllReduce(send, recv, COUNT, t, op, r->comm, r->stream), ncclSuccess);
  CHECK_EQ(ncclAllReduce(inplace, inplace, COUNT, t, op, r->comm, r->stream), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(r->stream), cudaSuccess);
  struct want_reduced w = {t, op, salt, 0};
  expect_elems(recv, t, COUNT, want_reduced, &w, "allreduce", r->rank);
  expect_elems(inplace, t, COUNT, want_reduced, &w, "allreduce in place", r->rank);
  free(send);
  free(recv);
  free(inplace);
}

static void check_reduce(struct rank *r, ncclDataType_t t, ncclRedOp_t op, int salt) {
  size_t sz = type_size(t);
  int root = salt % NRANKS;
  char *send = malloc(COUNT * sz), *recv = malloc(COUNT * sz);
  fill(send, t, COUNT, r->rank, salt);
  memset(recv, 0x5a, COUNT * sz);
  /* recvbuff may be NULL except on the root */
  CHECK_EQ(ncclReduce(send, r->rank == root ? recv : NULL, COUNT, t, op, root, r->comm,
                      r->stream),
           ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(r->stream), cudaSuccess);
  struct want_reduced w = {t, op, salt, 0};
  if (r->rank == root)
    expect_elems(recv, t, COUNT, want_reduced, &w, "reduce", r->rank);
  else
    CHECK_EQ((unsigned char)recv[0], 0x5a);
  free(send);
  free(recv);
}

static void check_reducescatter(struct rank *r, ncclDataType_t t, ncclRedOp_t op, int salt) {
  size_t sz = type_size(t);
  char *send = malloc(NRANKS * COUNT * sz), *recv = malloc(COUNT * sz);
  char *inplace = malloc(NRANKS * COUNT * sz);
  fill(send, t, NRANKS * COUNT, r->rank, salt);
  fill(inplace, t, NRANKS * COUNT, r->rank, salt);
  CHECK_EQ(ncclReduceScatter(send, recv, COUNT, t, op, r->comm, r->stream), ncclSuccess);
  char *mine = inplace + (size_t)r->rank * COUNT * sz; /* in place: recvbuff = sendbuff + rank */
  CHECK_EQ(ncclReduceScatter(inplace, mine, COUNT, t, op, r->comm, r->stream), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(r->stream), cudaSuccess);
  struct want_reduced w = {t, op, salt, (size_t)r->rank * COUNT};
  expect_elems(recv, t, COUNT, want_reduced, &w, "reducescatter", r->rank);
  expect_elems(mine, t, COUNT, want_reduced, &w, "reducescatter in place", r->rank);
  free(send);
  free(recv);
  free(inplace);
}

static void allreduce_types(struct rank *r) { for_types_and_ops(r, check_allreduce, false); }
static void allreduce_extra_types(struct rank *r) { for_types_and_ops(r, check_allreduce, true); }
static void reduce_types(struct rank *r) {
  for_types_and_ops(r, check_reduce, false);
  for_types_and_ops(r, check_reduce, true);
}
static void reducescatter_types(struct rank *r) {
  for_types_and_ops(r, check_reducescatter, false);
  for_types_and_ops(r, check_reducescatter, true);
}

static void allreduce_float_double_int32_int64_x_sum_prod_max_min_avg(void) {
  run_ranks(allreduce_types);
}
static void allreduce_int8_uint8_uint32_uint64_half_bfloat16(void) {
  run_ranks(allreduce_extra_types);
}
static void reduce_every_type_and_op_to_a_root(void) { run_ranks(reduce_types); }
static void reducescatter_every_type_and_op(void) { run_ranks(reducescatter_types); }

/* ---------------------------------------------------------------- data movement */

struct want_input {
  ncclDataType_t t;
  int salt;
  int rank;      /* -1: block b comes from rank b */
  size_t block;  /* elements per block */
  size_t offset; /* element offset inside each source */
};

static double want_input(size_t i, void *ctx) {
  struct want_input *w = ctx;
  if (w->rank >= 0)
    return input(w->t, w->rank, i + w->offset, w->salt);
  return input(w->t, (int)(i / w->block), i % w->block + w->offset, w->salt);
}

static void movement(struct rank *r) {
  int salt = 0;
  for (size_t k = 0; k < sizeof(required_types) / sizeof(required_types[0]); k++, salt++) {
    ncclDataType_t t = required_types[k];
    size_t sz = type_size(t), n = COUNT;
    int root = (int)k % NRANKS;
    char *send = malloc(NRANKS * n * sz), *recv = malloc(NRANKS * n * sz);
    char *inplace = malloc(NRANKS * n * sz);

    /* allgather, out of place and in place (sendbuff = recvbuff + rank * count) */
    fill(send, t, n, r->rank, salt);
    fill(inplace + (size_t)r->rank * n * sz, t, n, r->rank, salt);
    CHECK_EQ(ncclAllGather(send, recv, n, t, r->comm, r->stream), ncclSuccess);
    CHECK_EQ(ncclAllGather(inplace + (size_t)r->rank * n * sz, inplace, n, t, r->comm, r->stream),
             ncclSuccess);
    cudaStreamSynchronize(r->stream);
    struct want_input all = {t, salt, -1, n, 0};
    expect_elems(recv, t, NRANKS * n, want_input, &all, "allgather", r->rank);
    expect_elems(inplace, t, NRANKS * n, want_input, &all, "allgather in place", r->rank);

    /* broadcast, and the deprecated in-place bcast */
    fill(send, t, n, r->rank, salt);
    fill(inplace, t, n, r->rank, salt);
    CHECK_EQ(ncclBroadcast(send, recv, n, t, root, r->comm, r->stream), ncclSuccess);
    CHECK_EQ(ncclBcast(inplace, n, t, root, r->comm, r->stream), ncclSuccess);
    cudaStreamSynchronize(r->stream);
    struct want_input from_root = {t, salt, root, n, 0};
    expect_elems(recv, t, n, want_input, &from_root, "broadcast", r->rank);
    expect_elems(inplace, t, n, want_input, &from_root, "bcast", r->rank);

    /* alltoall: block j of rank i goes to block i of rank j */
    fill(send, t, NRANKS * n, r->rank, salt);
    CHECK_EQ(ncclAlltoAll(send, recv, n, t, r->comm, r->stream), ncclSuccess);
    cudaStreamSynchronize(r->stream);
    for (int src = 0; src < NRANKS; src++) {
      struct want_input w = {t, salt, src, n, (size_t)r->rank * n};
      expect_elems(recv + (size_t)src * n * sz, t, n, want_input, &w, "alltoall", r->rank);
    }

    /* gather to root, scatter from root */
    fill(send, t, n, r->rank, salt);
    memset(recv, 0, NRANKS * n * sz);
    CHECK_EQ(ncclGather(send, r->rank == root ? recv : NULL, n, t, root, r->comm, r->stream),
             ncclSuccess);
    cudaStreamSynchronize(r->stream);
    if (r->rank == root)
      expect_elems(recv, t, NRANKS * n, want_input, &all, "gather", r->rank);
    fill(send, t, NRANKS * n, r->rank, salt);
    CHECK_EQ(ncclScatter(r->rank == root ? send : NULL, recv, n, t, root, r->comm, r->stream),
             ncclSuccess);
    cudaStreamSynchronize(r->stream);
    struct want_input scattered = {t, salt, root, n, (size_t)r->rank * n};
    expect_elems(recv, t, n, want_input, &scattered, "scatter", r->rank);

    free(send);
    free(recv);
    free(inplace);
  }
}

static void allgather_broadcast_alltoall_gather_scatter_move_the_right_blocks(void) {
  run_ranks(movement);
}

/* Every rank sends to the next and receives from the previous, in one group, and to itself. */
static void ring(struct rank *r) {
  for (size_t k = 0; k < sizeof(required_types) / sizeof(required_types[0]); k++) {
    ncclDataType_t t = required_types[k];
    size_t sz = type_size(t);
    int next = (r->rank + 1) % NRANKS, prev = (r->rank + NRANKS - 1) % NRANKS;
    char *send = malloc(COUNT * sz), *recv = malloc(COUNT * sz), *self = malloc(COUNT * sz);
    fill(send, t, COUNT, r->rank, (int)k);
    CHECK_EQ(ncclGroupStart(), ncclSuccess);
    /* receives first: only the group lets this complete */
    CHECK_EQ(ncclRecv(recv, COUNT, t, prev, r->comm, r->stream), ncclSuccess);
    CHECK_EQ(ncclRecv(self, COUNT, t, r->rank, r->comm, r->stream), ncclSuccess);
    CHECK_EQ(ncclSend(send, COUNT, t, next, r->comm, r->stream), ncclSuccess);
    CHECK_EQ(ncclSend(send, COUNT, t, r->rank, r->comm, r->stream), ncclSuccess);
    CHECK_EQ(ncclGroupEnd(), ncclSuccess);
    CHECK_EQ(cudaStreamSynchronize(r->stream), cudaSuccess);
    struct want_input from_prev = {t, (int)k, prev, COUNT, 0};
    struct want_input from_self = {t, (int)k, r->rank, COUNT, 0};
    expect_elems(recv, t, COUNT, want_input, &from_prev, "recv", r->rank);
    expect_elems(self, t, COUNT, want_input, &from_self, "recv from self", r->rank);
    free(send);
    free(recv);
    free(self);
  }
}

static void send_and_recv_in_a_group_exchange_in_a_ring(void) { run_ranks(ring); }

/* ---------------------------------------------------------------- asynchrony */

static struct gate gates[NRANKS];

static void async(struct rank *r) {
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  for (int i = 0; i < 4; i++)
    in[i] *= (float)(r->rank + 1);
  gate_init(&gates[r->rank]);
  cudaLaunchHostFunc(r->stream, wait_at_gate, &gates[r->rank]);
  CHECK_EQ(ncclAllReduce(in, out, 4, ncclFloat, ncclSum, r->comm, r->stream), ncclSuccess);
  /* enqueued, not done: the stream holds it behind the gate */
  CHECK_EQ(cudaStreamQuery(r->stream), cudaErrorNotReady);
  CHECK(out[3] == 0.0f);
  gate_open(&gates[r->rank]);
  CHECK_EQ(cudaStreamSynchronize(r->stream), cudaSuccess);
  for (int i = 0; i < 4; i++)
    CHECK(out[i] == (float)(i + 1) * 6.0f);
}

static void collectives_are_enqueued_not_run_by_the_call(void) { run_ranks(async); }

/* ---------------------------------------------------------------- one thread, every rank */

static void one_thread_drives_every_rank_in_groups(void) {
  enum { N = 4 };
  ncclComm_t comms[N];
  cudaStream_t streams[N];
  int64_t *bufs[N], *recv[N];
  REQUIRE_EQ(ncclCommInitAll(comms, N, NULL), ncclSuccess);
  for (int i = 0; i < N; i++) {
    cudaSetDevice(i);
    REQUIRE_EQ(cudaStreamCreate(&streams[i]), cudaSuccess);
    cudaMalloc((void **)&bufs[i], 8 * sizeof(int64_t));
    cudaMalloc((void **)&recv[i], 8 * sizeof(int64_t));
    for (int k = 0; k < 8; k++)
      bufs[i][k] = (int64_t)(i + 1) * (k + 1);
  }
  /* two collectives per rank in one group: without a group this thread would deadlock */
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < N; i++) {
    CHECK_EQ(ncclAllReduce(bufs[i], recv[i], 8, ncclInt64, ncclSum, comms[i], streams[i]),
             ncclSuccess);
    CHECK_EQ(ncclAllReduce(bufs[i], bufs[i], 8, ncclInt64, ncclMax, comms[i], streams[i]),
             ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < N; i++) {
    CHECK_EQ(cudaStreamSynchronize(streams[i]), cudaSuccess);
    for (int k = 0; k < 8; k++) {
      CHECK_EQ(recv[i][k], 10 * (k + 1)); /* 1+2+3+4 */
      CHECK_EQ(bufs[i][k], 4 * (k + 1));
    }
  }
  /* pairs swap buffers in both directions */
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < N; i++) {
    int peer = i ^ 1;
    CHECK_EQ(ncclSend(bufs[i], 8, ncclInt64, peer, comms[i], streams[i]), ncclSuccess);
    CHECK_EQ(ncclRecv(recv[i], 8, ncclInt64, peer, comms[i], streams[i]), ncclSuccess);
  }
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  for (int i = 0; i < N; i++) {
    cudaStreamSynchronize(streams[i]);
    for (int k = 0; k < 8; k++)
      CHECK_EQ(recv[i][k], bufs[i ^ 1][k]);
  }
  for (int i = 0; i < N; i++) {
    CHECK_EQ(ncclCommDestroy(comms[i]), ncclSuccess);
    cudaStreamDestroy(streams[i]);
    cudaFree(bufs[i]);
    cudaFree(recv[i]);
  }
}

/* Two ranks on one device, one stream: their parts share a worker and must not wait for each
 * other. */
static void one_stream_carries_two_ranks_of_a_group(void) {
  ncclUniqueId id;
  ncclComm_t comms[2];
  REQUIRE_EQ(ncclGetUniqueId(&id), ncclSuccess);
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < 2; i++)
    CHECK_EQ(ncclCommInitRank(&comms[i], 2, id, i), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  cudaStream_t s;
  REQUIRE_EQ(cudaStreamCreate(&s), cudaSuccess);
  double a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  CHECK_EQ(ncclGroupStart(), ncclSuccess);
  CHECK_EQ(ncclAllReduce(a, a, 3, ncclDouble, ncclSum, comms[0], s), ncclSuccess);
  CHECK_EQ(ncclAllReduce(b, b, 3, ncclDouble, ncclSum, comms[1], s), ncclSuccess);
  CHECK_EQ(ncclGroupEnd(), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK(a[0] == 11 && b[2] == 33);
  ncclCommDestroy(comms[0]);
  ncclCommDestroy(comms[1]);
  cudaStreamDestroy(s);
}

static void legacy(struct rank *r) {
  int v = r->rank + 1, sum = 0;
  CHECK_EQ(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, r->comm, NULL), ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(NULL), cudaSuccess);
  CHECK_EQ(sum, 6);
  CHECK_EQ(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclMax, r->comm, cudaStreamPerThread),
           ncclSuccess);
  CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  CHECK_EQ(sum, 3);
}

static void default_streams_carry_collectives(void) { run_ranks(legacy); }

static void zero(struct rank *r) {
  CHECK_EQ(ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, r->comm, r->stream), ncclSuccess);
  CHECK_EQ(ncclAllGather(NULL, NULL, 0, ncclFloat, r->comm, r->stream), ncclSuccess);
}

static void zero_counts_are_allowed(void) { run_ranks(zero); }

static const struct test_case cases[] = {
    {"allreduce_float_double_int32_int64_x_sum_prod_max_min_avg",
     allreduce_float_double_int32_int64_x_sum_prod_max_min_avg, NULL, NULL},
    {"allreduce_int8_uint8_uint32_uint64_half_bfloat16",
     allreduce_int8_uint8_uint32_uint64_half_bfloat16, NULL, NULL},
    {"reduce_every_type_and_op_to_a_root", reduce_every_type_and_op_to_a_root, NULL, NULL},
    {"reducescatter_every_type_and_op", reducescatter_every_type_and_op, NULL, NULL},
    {"allgather_broadcast_alltoall_gather_scatter_move_the_right_blocks",
     allgather_broadcast_alltoall_gather_scatter_move_the_right_blocks, NULL, NULL},
    {"send_and_recv_in_a_group_exchange_in_a_ring", send_and_recv_in_a_group_exchange_in_a_ring,
     NULL, NULL},
    {"collectives_are_enqueued_not_run_by_the_call", collectives_are_enqueued_not_run_by_the_call,
     NULL, NULL},
    {"one_thread_drives_every_rank_in_groups", one_thread_drives_every_rank_in_groups, NULL, NULL},
    {"one_stream_carries_two_ranks_of_a_group", one_stream_carries_two_ranks_of_a_group, NULL,
     NULL},
    {"default_streams_carry_collectives", default_streams_carry_collectives, NULL, NULL},
    {"zero_counts_are_allowed", zero_counts_are_allowed, NULL, NULL},
};

TEST_MAIN(cases)
