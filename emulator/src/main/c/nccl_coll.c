/* Collectives, point-to-point, and the rendezvous that carries them and the splits.
 *
 * Each rank's part of an operation arrives at a slot of its clique, keyed by the operation's
 * number in that rank's order. Arrival never blocks: the last rank to arrive computes the result
 * of the whole operation from every rank's input into scratch memory, then every rank waits for
 * that and copies its own output. Nothing is written to a rank's output before all inputs were
 * read, so in-place operations are safe; and since arrival does not wait, one stream worker (or
 * one thread ending a group) can carry several ranks of the same operation without deadlock. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

enum slot_kind { SLOT_COLL, SLOT_P2P, SLOT_HOST };

struct emu_slot {
  struct emu_slot *next;
  enum slot_kind kind;
  uint64_t seq;
  int src, dst; /* SLOT_P2P */
  int parties, arrived;
  int refs; /* arrived parts of this process that have not left */
  bool computing, done, failed;
  ncclResult_t result;
  struct emu_part **by_rank; /* SLOT_COLL, SLOT_HOST */
  struct emu_part *send, *recv;
  struct emu_part *remotes; /* parts of ranks of other processes, linked by next */
  unsigned char *party; /* SLOT_HOST: which ranks take part */
  void *scratch;
};

static bool is_coll(enum emu_func f) { return f <= F_SCATTER; }
static bool is_host(enum emu_func f) { return f == F_SPLIT || f == F_SHRINK; }

size_t emu_type_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  default:
    return 0;
  }
}

/* ---------------------------------------------------------------- reductions */

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0)
    f = ldexpf((float)mant, -24);
  else if (exp == 31)
    f = mant ? NAN : INFINITY;
  else
    f = ldexpf((float)(mant | 0x400), exp - 25);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits |= sign;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t float_to_half(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  float a = fabsf(f);
  if (isnan(f))
    return sign | 0x7e00;
  if (a >= 65520.0f) /* rounds past the largest half */
    return sign | 0x7c00;
  if (a < ldexpf(1.0f, -14)) /* subnormal: units of 2^-24, rounded to nearest even */
    return sign | (uint16_t)nearbyintf(a * ldexpf(1.0f, 24));
  int exp;
  float m = frexpf(a, &exp); /* a = m * 2^exp, m in [0.5, 1) */
  uint32_t mant = (uint32_t)nearbyintf(m * 2048.0f); /* 11 significant bits */
  if (mant == 2048) {
    mant = 1024;
    exp++;
  }
  return sign | (uint16_t)((uint32_t)(exp + 14) << 10) | (uint16_t)(mant & 0x3ff);
}

static float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if (isnan(f))
    return (uint16_t)((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
  return (uint16_t)(bits >> 16);
}

/* Signed sums and products wrap like the GPU's, computed in the unsigned type to stay defined. */
#define REDUCE_INT(T, U)                                                                          \
  do {                                                                                            \
    T *a = acc;                                                                                   \
    const T *b = in;                                                                              \
    for (size_t i = 0; i < n; i++)                                                                \
      switch (op) {                                                                               \
      case ncclProd:                                                                              \
        a[i] = (T)((U)a[i] * (U)b[i]);                                                            \
        break;                                                                                    \
      case ncclMax:                                                                               \
        a[i] = a[i] > b[i] ? a[i] : b[i];                                                         \
        break;                                                                                    \
      case ncclMin:                                                                               \
        a[i] = a[i] < b[i] ? a[i] : b[i];                                                         \
        break;                                                                                    \
      default: /* sum, and the sum of an average */                                               \
        a[i] = (T)((U)a[i] + (U)b[i]);                                                            \
      }                                                                                           \
  } while (0)

#define REDUCE_FLOAT(T, LOAD, STORE)                                                              \
  do {                                                                                            \
    T *a = acc;                                                                                   \
    const T *b = in;                                                                              \
    for (size_t i = 0; i < n; i++) {                                                              \
      double x = LOAD(a[i]), y = LOAD(b[i]), r;                                                   \
      switch (op) {                                                                               \
      case ncclProd:                                                                              \
        r = x * y;                                                                                \
        break;                                                                                    \
      case ncclMax:                                                                               \
        r = fmax(x, y);                                                                           \
        break;                                                                                    \
      case ncclMin:                                                                               \
        r = fmin(x, y);                                                                           \
        break;                                                                                    \
      default:                                                                                    \
        r = x + y;                                                                                \
      }                                                                                           \
      a[i] = STORE(r);                                                                            \
    }                                                                                             \
  } while (0)

#define SAME(x) (x)
#define TO_FLOAT(x) ((float)(x))
#define HALF_IN(x) half_to_float(x)
#define HALF_OUT(x) float_to_half((float)(x))
#define BF16_IN(x) bf16_to_float(x)
#define BF16_OUT(x) float_to_bf16((float)(x))

static void reduce_into(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op) {
  switch (t) {
  case ncclInt8:
    REDUCE_INT(int8_t, uint8_t);
    break;
  case ncclUint8:
    REDUCE_INT(uint8_t, uint8_t);
    break;
  case ncclInt32:
    REDUCE_INT(int32_t, uint32_t);
    break;
  case ncclUint32:
    REDUCE_INT(uint32_t, uint32_t);
    break;
  case ncclInt64:
    REDUCE_INT(int64_t, uint64_t);
    break;
  case ncclUint64:
    REDUCE_INT(uint64_t, uint64_t);
    break;
  case ncclFloat32:
    REDUCE_FLOAT(float, SAME, TO_FLOAT);
    break;
  case ncclFloat64:
    REDUCE_FLOAT(double, SAME, SAME);
    break;
  case ncclFloat16:
    REDUCE_FLOAT(uint16_t, HALF_IN, HALF_OUT);
    break;
  case ncclBfloat16:
    REDUCE_FLOAT(uint16_t, BF16_IN, BF16_OUT);
    break;
  default:
    break;
  }
}

#define DIVIDE(T, LOAD, STORE)                                                                    \
  do {                                                                                            \
    T *a = acc;                                                                                   \
    for (size_t i = 0; i < n; i++)                                                                \
      a[i] = STORE(LOAD(a[i]) / d);                                                               \
  } while (0)

static void divide(void *acc, size_t n, ncclDataType_t t, int nranks) {
  int64_t d = nranks;
  double fd = nranks;
  switch (t) {
  case ncclInt8:
    DIVIDE(int8_t, SAME, SAME);
    break;
  case ncclUint8:
    DIVIDE(uint8_t, SAME, SAME);
    break;
  case ncclInt32:
    DIVIDE(int32_t, SAME, SAME);
    break;
  case ncclUint32:
    DIVIDE(uint32_t, SAME, SAME);
    break;
  case ncclInt64:
    DIVIDE(int64_t, SAME, SAME);
    break;
  case ncclUint64: {
    uint64_t *a = acc;
    for (size_t i = 0; i < n; i++)
      a[i] /= (uint64_t)nranks;
    break;
  }
  case ncclFloat32: {
    float *a = acc;
    for (size_t i = 0; i < n; i++)
      a[i] = (float)(a[i] / fd);
    break;
  }
  case ncclFloat64: {
    double *a = acc;
    for (size_t i = 0; i < n; i++)
      a[i] /= fd;
    break;
  }
  case ncclFloat16: {
    uint16_t *a = acc;
    for (size_t i = 0; i < n; i++)
      a[i] = float_to_half((float)(half_to_float(a[i]) / fd));
    break;
  }
  case ncclBfloat16: {
    uint16_t *a = acc;
    for (size_t i = 0; i < n; i++)
      a[i] = float_to_bf16((float)(bf16_to_float(a[i]) / fd));
    break;
  }
  default:
    break;
  }
}

/* ---------------------------------------------------------------- computing an operation */

static bool rooted(enum emu_func f) {
  return f == F_BROADCAST || f == F_REDUCE || f == F_GATHER || f == F_SCATTER;
}

static bool reduces(enum emu_func f) {
  return f == F_ALLREDUCE || f == F_REDUCE || f == F_REDUCESCATTER;
}

/* scratch = the reduction over all ranks of n elements at offset off of each sendbuff */
static ncclResult_t reduce_all(struct emu_slot *s, int nranks, size_t n, size_t off) {
  struct emu_part *p0 = s->by_rank[0];
  size_t bytes = n * emu_type_size(p0->dtype);
  s->scratch = malloc(bytes ? bytes : 1);
  if (!s->scratch)
    return ncclSystemError;
  memcpy(s->scratch, (const char *)p0->sendbuff + off, bytes);
  for (int r = 1; r < nranks; r++)
    reduce_into(s->scratch, (const char *)s->by_rank[r]->sendbuff + off, n, p0->dtype, p0->op);
  if (p0->op == ncclAvg)
    divide(s->scratch, n, p0->dtype, nranks);
  return ncclSuccess;
}

static ncclResult_t compute_coll(struct emu_slot *s, int nranks) {
  struct emu_part *p0 = s->by_rank[0];
  for (int r = 1; r < nranks; r++) {
    struct emu_part *p = s->by_rank[r];
    if (p->func != p0->func || p->count != p0->count || p->dtype != p0->dtype ||
        (reduces(p0->func) && p->op != p0->op) || (rooted(p0->func) && p->root != p0->root)) {
      emu_warn("NCCLEMU: ranks 0 and %d disagree on collective #%llu: %s(count %zu, type %d, "
               "op %d, root %d) against %s(count %zu, type %d, op %d, root %d)",
               r, (unsigned long long)s->seq, p0->api, p0->count, (int)p0->dtype, (int)p0->op,
               p0->root, p->api, p->count, (int)p->dtype, (int)p->op, p->root);
      return ncclInvalidUsage;
    }
  }
  size_t n = p0->count, sz = emu_type_size(p0->dtype), block = n * sz;
  if (block == 0)
    return ncclSuccess; /* nothing to move; buffers may be NULL */
  switch (p0->func) {
  case F_ALLREDUCE:
  case F_REDUCE:
    return reduce_all(s, nranks, n, 0);
  case F_REDUCESCATTER:
    return reduce_all(s, nranks, n * (size_t)nranks, 0);
  case F_BROADCAST:
  case F_SCATTER: {
    size_t bytes = p0->func == F_SCATTER ? block * (size_t)nranks : block;
    s->scratch = malloc(bytes ? bytes : 1);
    if (!s->scratch)
      return ncclSystemError;
    memcpy(s->scratch, s->by_rank[p0->root]->sendbuff, bytes);
    return ncclSuccess;
  }
  case F_ALLGATHER:
  case F_GATHER:
    s->scratch = malloc(block * (size_t)nranks + 1);
    if (!s->scratch)
      return ncclSystemError;
    for (int r = 0; r < nranks; r++)
      memcpy((char *)s->scratch + (size_t)r * block, s->by_rank[r]->sendbuff, block);
    return ncclSuccess;
  case F_ALLTOALL:
    /* laid out by destination: rank d's output is one contiguous run */
    s->scratch = malloc(block * (size_t)nranks * (size_t)nranks + 1);
    if (!s->scratch)
      return ncclSystemError;
    for (int src = 0; src < nranks; src++)
      for (int dst = 0; dst < nranks; dst++)
        memcpy((char *)s->scratch + ((size_t)dst * (size_t)nranks + (size_t)src) * block,
               (const char *)s->by_rank[src]->sendbuff + (size_t)dst * block, block);
    return ncclSuccess;
  default:
    return ncclInternalError;
  }
}

static ncclResult_t compute_p2p(struct emu_slot *s) {
  size_t sent = s->send->count * emu_type_size(s->send->dtype);
  size_t room = s->recv->count * emu_type_size(s->recv->dtype);
  if (sent != room) {
    emu_warn("NCCLEMU: rank %d sends %zu bytes to rank %d, which receives %zu", s->src, sent,
             s->dst, room);
    return ncclInvalidUsage;
  }
  if (sent && !s->recv->remote) /* a receiver in another process copies it there */
    memmove(s->recv->recvbuff, s->send->sendbuff, sent);
  return ncclSuccess;
}

/* Split and shrink: builds the new cliques and hands each caller its communicator. */
static int by_key_then_rank(const void *a, const void *b) {
  const struct emu_part *x = *(struct emu_part *const *)a, *y = *(struct emu_part *const *)b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->comm->rank - y->comm->rank;
}

/* src/init.cc ncclCommInitRankFunc, for a split or shrink: the child's hash from (parent's
 * commHash, the parent's split count, color) by eatHash and digestHash; a shrink's split count
 * and color are 0. The child's bootstrap magic is its hash (bootstrapSplit). */
static struct emu_comm_ident child_ident(const struct emu_part *p) {
  struct emu_comm_ident id = {.api = p->api, .parent = p->comm};
  int count = p->func == F_SPLIT ? p->child_count : 0;
  int color = p->func == F_SPLIT ? p->color : 0;
  uint64_t acc[2] = {1, 1};
  emu_eat_hash(acc, &p->comm->ident.comm_hash, sizeof(uint64_t));
  emu_eat_hash(acc, &count, sizeof(int));
  emu_eat_hash(acc, &color, sizeof(int));
  id.comm_hash = id.magic = emu_digest_hash(acc);
  id.split_count = count;
  id.color = color;
  id.key = p->func == F_SPLIT ? p->key : p->comm->rank;
  return id;
}

static ncclResult_t build_group(struct emu_part **members, int n) {
  struct emu_clique *c = emu_clique_new(n);
  if (!c)
    return ncclSystemError;
  for (int i = 0; i < n; i++) {
    struct emu_comm_ident id = child_ident(members[i]);
    members[i]->out = emu_comm_new(c, i, members[i]->comm->device, members[i]->blocking, &id);
    if (!members[i]->out) {
      for (int j = 0; j < i; j++)
        if (emu_rt_live_remove(members[j]->out, EMU_COMM, NULL)) {
          emu_comm_release(members[j]->out);
          members[j]->out = NULL;
        }
      return ncclSystemError;
    }
  }
  return ncclSuccess;
}

static ncclResult_t compute_host(struct emu_slot *s, int nranks) {
  struct emu_part **members = malloc((size_t)nranks * sizeof(*members));
  if (!members)
    return ncclSystemError;
  ncclResult_t r = ncclSuccess;
  int first = -1;
  for (int i = 0; i < nranks && first < 0; i++)
    if (s->party[i])
      first = i;
  enum emu_func f = s->by_rank[first]->func;
  for (int i = 0; i < nranks; i++)
    if (s->party[i] && s->by_rank[i]->func != f) {
      emu_warn("NCCLEMU: ranks %d and %d disagree: %s against %s", first, i,
               s->by_rank[first]->api, s->by_rank[i]->api);
      free(members);
      return ncclInvalidUsage;
    }
  if (f == F_SHRINK) {
    int n = 0;
    for (int i = 0; i < nranks; i++)
      if (s->party[i])
        members[n++] = s->by_rank[i];
    r = build_group(members, n);
  } else {
    /* one new communicator per color, ranks ordered by key, then by parent rank */
    bool *placed = calloc((size_t)nranks, sizeof(bool));
    for (int i = 0; placed && r == ncclSuccess && i < nranks; i++) {
      int color = s->by_rank[i]->color;
      if (placed[i] || color == NCCL_SPLIT_NOCOLOR)
        continue;
      int n = 0;
      for (int j = i; j < nranks; j++)
        if (!placed[j] && s->by_rank[j]->color == color) {
          placed[j] = true;
          members[n++] = s->by_rank[j];
        }
      qsort(members, (size_t)n, sizeof(*members), by_key_then_rank);
      r = build_group(members, n);
    }
    if (!placed)
      r = ncclSystemError;
    free(placed);
  }
  free(members);
  return r;
}

static ncclResult_t compute(struct emu_slot *s, int nranks) {
  switch (s->kind) {
  case SLOT_COLL:
    return compute_coll(s, nranks);
  case SLOT_P2P:
    return compute_p2p(s);
  default:
    return compute_host(s, nranks);
  }
}

/* ---------------------------------------------------------------- slots */

static bool is_party(const struct emu_slot *s, int rank) {
  switch (s->kind) {
  case SLOT_COLL:
    return true;
  case SLOT_P2P:
    return s->src == rank || s->dst == rank;
  default:
    return s->party[rank] != 0;
  }
}

void emu_fail_slots_locked(struct emu_clique *c, int rank) {
  for (struct emu_slot *s = c->slots; s; s = s->next)
    if (!s->done && !s->computing && !s->failed && is_party(s, rank)) {
      s->failed = true;
      s->result = ncclRemoteError;
    }
}

static bool has_part(const struct emu_slot *s, int rank) {
  if (s->kind == SLOT_P2P)
    return (s->src == rank && s->send) || (s->dst == rank && s->recv);
  return s->by_rank[rank] != NULL;
}

void emu_fail_slots_missing_locked(struct emu_clique *c, int rank) {
  for (struct emu_slot *s = c->slots; s; s = s->next)
    if (!s->done && !s->computing && !s->failed && is_party(s, rank) && !has_part(s, rank)) {
      s->failed = true;
      s->result = ncclRemoteError;
    }
}

static void remote_part_free(struct emu_part *p) {
  free((void *)p->sendbuff); /* the copy of its input that came with it */
  emu_part_free(p);
}

/* Parts of ranks of other processes belong to their slot; local parts free themselves (the
 * slot's pointers to them may be stale by now). */
static void slot_free(struct emu_slot *s) {
  for (struct emu_part *p = s->remotes, *next; p; p = next) {
    next = p->next;
    remote_part_free(p);
  }
  free(s->by_rank);
  free(s->party);
  free(s->scratch);
  free(s);
}

/* Creates the slot a part is the first to reach; NULL when a rank it needs is gone. */
static struct emu_slot *slot_new_locked(struct emu_clique *c, struct emu_part *p, int src,
                                        int dst) {
  struct emu_slot *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->kind = is_coll(p->func) ? SLOT_COLL : is_host(p->func) ? SLOT_HOST : SLOT_P2P;
  s->seq = p->seq;
  s->src = src;
  s->dst = dst;
  if (s->kind == SLOT_P2P) {
    s->parties = 2;
  } else {
    s->by_rank = calloc((size_t)c->nranks, sizeof(*s->by_rank));
    s->party = malloc((size_t)c->nranks);
    if (!s->by_rank || !s->party) {
      slot_free(s);
      return NULL;
    }
    memset(s->party, 1, (size_t)c->nranks);
    for (int i = 0; i < p->nexclude; i++)
      s->party[p->exclude[i]] = 0;
    s->parties = c->nranks - p->nexclude;
  }
  /* a party gone, or (for work, not a split or shrink) revoked, never comes */
  for (int r = 0; r < c->nranks; r++)
    if ((c->gone[r] || (s->kind != SLOT_HOST && c->comms[r] && c->comms[r]->revoked)) &&
        is_party(s, r)) {
      slot_free(s);
      return NULL;
    }
  s->next = c->slots;
  c->slots = s;
  return s;
}

void emu_slots_free(struct emu_clique *c) {
  for (struct emu_slot *s = c->slots, *next; s; s = next) {
    next = s->next;
    slot_free(s);
  }
  c->slots = NULL;
}

size_t emu_part_input_bytes(const struct emu_part *p, int nranks) {
  size_t block = p->count * emu_type_size(p->dtype);
  bool root = p->rank == p->root;
  switch (p->func) {
  case F_ALLREDUCE:
  case F_REDUCE:
  case F_ALLGATHER:
  case F_GATHER:
  case F_SEND:
    return block;
  case F_REDUCESCATTER:
  case F_ALLTOALL:
    return block * (size_t)nranks;
  case F_BROADCAST:
    return root ? block : 0;
  case F_SCATTER:
    return root ? block * (size_t)nranks : 0;
  default:
    return 0;
  }
}

/* A part of this process arrives after telling the other processes of its operation; a part of
 * another process (remote) arrives from the service thread and belongs to its slot from then on,
 * or is freed here when there is none. */
void emu_part_arrive(struct emu_part *p) {
  struct ncclComm *comm = p->comm;
  struct emu_clique *c = p->remote ? p->clique : comm->clique;
  int rank = p->remote ? p->rank : comm->rank;
  if (!p->remote)
    emu_proxy_announce(p);
  int src = rank, dst = rank;
  if (p->func == F_SEND)
    dst = p->root;
  else if (p->func == F_RECV)
    src = p->root;
  enum slot_kind kind = is_coll(p->func) ? SLOT_COLL : is_host(p->func) ? SLOT_HOST : SLOT_P2P;
  pthread_mutex_lock(&c->mu);
  if (!p->remote && comm->state == COMM_ABORTED) {
    pthread_mutex_unlock(&c->mu);
    p->result = ncclRemoteError;
    return;
  }
  if (!p->remote && comm->revoked && !is_host(p->func)) {
    pthread_mutex_unlock(&c->mu);
    p->result = ncclSuccess; /* stopped by ncclCommRevoke: it does nothing, and is no error */
    return;
  }
  struct emu_slot *s = c->slots;
  while (s && !(s->kind == kind && s->seq == p->seq && (kind != SLOT_P2P ||
                                                        (s->src == src && s->dst == dst))))
    s = s->next;
  if (!s)
    s = slot_new_locked(c, p, src, dst);
  if (s && p->remote && has_part(s, rank))
    s = NULL; /* a second copy of a part: never from a sane peer */
  if (!s) {
    pthread_mutex_unlock(&c->mu);
    p->result = ncclRemoteError;
    if (p->remote)
      remote_part_free(p);
    return;
  }
  if (kind == SLOT_P2P)
    *(p->func == F_SEND ? &s->send : &s->recv) = p;
  else
    s->by_rank[rank] = p;
  p->slot = s;
  s->arrived++;
  if (p->remote) {
    p->next = s->remotes;
    s->remotes = p;
  } else {
    s->refs++;
  }
  bool last = s->arrived == s->parties && !s->failed;
  if (last)
    s->computing = true;
  pthread_mutex_unlock(&c->mu);
  if (!last)
    return;
  /* outside the lock: no rank can leave (or free its buffers) until done is set */
  ncclResult_t r = compute(s, c->nranks);
  pthread_mutex_lock(&c->mu);
  s->result = r;
  s->computing = false;
  s->done = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

void emu_part_await(struct emu_part *p) {
  struct emu_slot *s = p->slot;
  if (!s)
    return;
  struct emu_clique *c = p->comm->clique;
  pthread_mutex_lock(&c->mu);
  while (!s->done && !s->failed)
    pthread_cond_wait(&c->cv, &c->mu);
  p->result = s->result;
  pthread_mutex_unlock(&c->mu);
}

/* Copies this rank's output out of the slot's scratch (the slot stays until the part finishes).
 * A failure is recorded here too: it is a result, seen by whoever saw the stream get past. */
void emu_part_complete(struct emu_part *p) {
  struct ncclComm *comm = p->comm;
  struct emu_slot *s = p->slot;
  if (p->result != ncclSuccess) {
    pthread_mutex_lock(&comm->clique->mu);
    if (comm->async_error == ncclSuccess && comm->state != COMM_ABORTED && !comm->revoked)
      comm->async_error = p->result;
    pthread_mutex_unlock(&comm->clique->mu);
    return;
  }
  size_t block = p->count * emu_type_size(p->dtype);
  if (!s || !s->done || block == 0)
    return;
  int rank = comm->rank, nranks = comm->nranks;
  switch (p->func) {
  case F_ALLREDUCE:
  case F_BROADCAST:
    memcpy(p->recvbuff, s->scratch, block);
    break;
  case F_REDUCE:
    if (rank == p->root)
      memcpy(p->recvbuff, s->scratch, block);
    break;
  case F_ALLGATHER:
    memcpy(p->recvbuff, s->scratch, block * (size_t)nranks);
    break;
  case F_GATHER:
    if (rank == p->root)
      memcpy(p->recvbuff, s->scratch, block * (size_t)nranks);
    break;
  case F_REDUCESCATTER:
  case F_SCATTER:
    memcpy(p->recvbuff, (const char *)s->scratch + (size_t)rank * block, block);
    break;
  case F_ALLTOALL:
    memcpy(p->recvbuff, (const char *)s->scratch + (size_t)rank * (size_t)nranks * block,
           block * (size_t)nranks);
    break;
  default:
    break;
  }
}

void emu_part_finish(struct emu_part *p) {
  struct ncclComm *comm = p->comm;
  struct emu_clique *c = comm->clique;
  struct emu_slot *s = p->slot;
  if (is_host(p->func))
    *p->newcomm = p->result == ncclSuccess ? p->out : NULL;
  pthread_mutex_lock(&c->mu);
  if (s && --s->refs == 0 && (s->done || s->failed)) {
    struct emu_slot **pp = &c->slots;
    while (*pp != s)
      pp = &(*pp)->next;
    *pp = s->next;
  } else {
    s = NULL;
  }
  pthread_mutex_unlock(&c->mu);
  if (s)
    slot_free(s);
  emu_comm_release(comm);
  p->comm = NULL;
}

void emu_part_free(struct emu_part *p) {
  emu_prof_part_free(p);
  free(p->exclude);
  free(p);
}

/* ---------------------------------------------------------------- the API */

struct coll_args {
  const char *api;
  enum emu_func func;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  int root; /* or peer */
};

static ncclResult_t check_args(const struct coll_args *a, const struct ncclComm *comm) {
  if ((int)a->dtype < 0 || a->dtype >= ncclNumTypes) {
    emu_warn("%s : invalid type %d", a->api, (int)a->dtype);
    return ncclInvalidArgument;
  }
  if (reduces(a->func)) {
    if ((int)a->op < 0 || a->op >= ncclNumOps) {
      emu_warn("%s : invalid reduction operation %d", a->api, (int)a->op);
      return ncclInvalidArgument;
    }
    if (a->dtype == ncclFloat8e4m3 || a->dtype == ncclFloat8e5m2) {
      emu_warn("%s : reductions on fp8 types are not emulated", a->api);
      return ncclInvalidArgument;
    }
  }
  if ((rooted(a->func) || a->func == F_SEND || a->func == F_RECV) &&
      (a->root < 0 || a->root >= comm->nranks)) {
    emu_warn("%s : invalid %s %d (should be in the 0..%d range)", a->api,
             rooted(a->func) ? "root" : "peer", a->root, comm->nranks - 1);
    return ncclInvalidArgument;
  }
  if (a->count == 0)
    return ncclSuccess;
  bool root = comm->rank == a->root;
  bool needs_send = a->func != F_RECV && !(a->func == F_BROADCAST && !root) &&
                    !(a->func == F_SCATTER && !root);
  bool needs_recv = a->func != F_SEND && !((a->func == F_REDUCE || a->func == F_GATHER) && !root);
  if (needs_send && !a->sendbuff) {
    emu_warn("%s : sendbuff argument is NULL", a->api);
    return ncclInvalidArgument;
  }
  if (needs_recv && !a->recvbuff) {
    emu_warn("%s : recvbuff argument is NULL", a->api);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static ncclResult_t enqueue(enum emu_knob knob, const struct coll_args *a, ncclComm_t comm,
                            cudaStream_t stream) {
  ncclResult_t r = emu_comm_acquire(comm, a->api);
  if (r != ncclSuccess)
    return r;
  if (knob == EMU_KNOB_HANG)
    return emu_hang(comm, a->api);
  struct emu_clique *c = comm->clique;
  struct emu_stream *s = NULL;
  struct emu_part *p = NULL;
  r = check_args(a, comm);
  if (r == ncclSuccess) {
    /* NCCL makes the comm's device current: streams 0/legacy/per-thread are that device's */
    cudaError_t e = emu_rt_stream_acquire(stream, false, comm->device, &s);
    if (e == cudaSuccess && emu_rt_stream_device(s) != comm->device) {
      emu_rt_stream_release(s);
      e = cudaErrorInvalidResourceHandle;
    }
    if (e != cudaSuccess) {
      emu_warn("%s: Cuda failure '%s' (stream %p, comm device %d)", a->api, emu_rt_error_string(e),
               (void *)stream, comm->device);
      r = ncclUnhandledCudaError;
    }
  }
  if (r == ncclSuccess && !(p = calloc(1, sizeof(*p)))) {
    emu_rt_stream_release(s);
    r = ncclSystemError;
  }
  if (r != ncclSuccess) {
    emu_comm_release(comm);
    return r;
  }
  p->func = a->func;
  p->api = a->api;
  p->comm = comm; /* the acquired reference travels with the part */
  p->rank = comm->rank;
  p->clique = c;
  p->stream = s;
  p->sendbuff = a->sendbuff;
  p->recvbuff = a->recvbuff;
  p->count = a->count;
  p->dtype = a->dtype;
  p->op = a->op;
  p->root = a->root;
  pthread_mutex_lock(&c->mu);
  if (comm->revoked) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("%s: communicator was revoked", a->api);
    emu_rt_stream_release(s);
    emu_comm_release(comm);
    emu_part_free(p);
    return ncclInvalidUsage;
  }
  if (comm->state != COMM_LIVE) {
    pthread_mutex_unlock(&c->mu);
    emu_warn("%s: comm %p has been finalized or is being destroyed", a->api, (void *)comm);
    emu_rt_stream_release(s);
    emu_comm_release(comm);
    emu_part_free(p);
    return ncclInvalidUsage;
  }
  if (a->func == F_SEND)
    p->seq = comm->send_seq[a->root]++;
  else if (a->func == F_RECV)
    p->seq = comm->recv_seq[a->root]++;
  else
    p->seq = comm->coll_seq++;
  comm->pending++;
  pthread_mutex_unlock(&c->mu);
  /* ncclEnqueueCheck: the task inside an implicit group, which ends here or at ncclGroupEnd */
  p->user_stream = stream;
  emu_prof_enqueue_enter();
  emu_prof_task_append(p, emu_group_depth() + 1);
  emu_prof_group_end_enter();
  if (emu_group_active())
    emu_group_add(p);
  else
    emu_launch(p);
  emu_prof_group_end_exit();
  return ncclSuccess;
}

#define COLL(name, func_, send_, recv_, count_, dtype_, op_, root_)                              \
  NCCL_KNOB(name);                                                                               \
  struct coll_args a = {name, func_, send_, recv_, count_, dtype_, op_, root_};                   \
  return enqueue(knob_, &a, comm, stream)

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  COLL("ncclAllReduce", F_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0);
}
NCCL_ALIAS(ncclAllReduce);

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclReduce", F_REDUCE, sendbuff, recvbuff, count, datatype, op, root);
}
NCCL_ALIAS(ncclReduce);

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  COLL("ncclBroadcast", F_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root);
}
NCCL_ALIAS(ncclBroadcast);

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclBcast", F_BROADCAST, buff, buff, count, datatype, ncclSum, root);
}
NCCL_ALIAS(ncclBcast);

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclAllGather", F_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0);
}
NCCL_ALIAS(ncclAllGather);

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  COLL("ncclReduceScatter", F_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0);
}
NCCL_ALIAS(ncclReduceScatter);

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclAlltoAll", F_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0);
}
NCCL_ALIAS(ncclAlltoAll);

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclGather", F_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root);
}
NCCL_ALIAS(ncclGather);

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclScatter", F_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root);
}
NCCL_ALIAS(ncclScatter);

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclSend", F_SEND, sendbuff, NULL, count, datatype, ncclSum, peer);
}
NCCL_ALIAS(ncclSend);

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  COLL("ncclRecv", F_RECV, NULL, recvbuff, count, datatype, ncclSum, peer);
}
NCCL_ALIAS(ncclRecv);
