/* Shared state of the emulator. libcudart.so.13 owns the live-handle registry, the knobs and the
 * streams, and exports them to libnccl.so.2 under the emu_rt_ prefix (streams are shared: NCCL work
 * is enqueued on the caller's CUDA stream). The NCCL part keeps its communicators to itself. */
#ifndef NCCLEMU_EMU_H
#define NCCLEMU_EMU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "emu_api.h"

/* ---------------------------------------------------------------- live handles (libcudart) */

/* Every handle the emulator gives out is registered here. A handle from the caller is turned into
 * an object only through the registry, so a stale or foreign address is never dereferenced. */
enum emu_kind { EMU_COMM = 1, EMU_STREAM, EMU_EVENT, EMU_ALLOC, EMU_HOSTALLOC };

/* First member of every registered object that can be acquired. Freed when refs reaches 0. */
struct emu_obj {
  atomic_int refs;
};

struct emu_live_info {
  int device;
  int rank;
  int nranks;
  size_t bytes;
};

void emu_rt_live_add(void *handle, enum emu_kind kind, const struct emu_live_info *info);
/* Takes a reference on a live handle; false when it is not live (never dereferenced then). */
bool emu_rt_live_acquire(void *handle, enum emu_kind kind);
/* Ends a live handle; true only for the one caller that ended it. */
bool emu_rt_live_remove(void *handle, enum emu_kind kind, struct emu_live_info *info);
static inline void emu_obj_ref(struct emu_obj *obj) { atomic_fetch_add(&obj->refs, 1); }
/* Drops a reference; true when it was the last one and the caller must free the object. */
static inline bool emu_obj_unref(struct emu_obj *obj) {
  return atomic_fetch_sub(&obj->refs, 1) == 1;
}

/* ---------------------------------------------------------------- knobs (libcudart) */

enum emu_knob { EMU_KNOB_NONE = 0, EMU_KNOB_FAIL, EMU_KNOB_HANG };
/* Counts a call of fn against NCCLEMU_FAIL / NCCLEMU_HANG; on FAIL, *code is the code to return. */
enum emu_knob emu_rt_knob(const char *fn, int *code);
unsigned emu_rt_op_delay_us(void);
int emu_rt_device_count(void);
int emu_rt_current_device(void);

/* ---------------------------------------------------------------- streams (libcudart) */

struct emu_stream;

/* A unit of stream work, run by the stream's worker: run() does the work (may be NULL); then the
 * stream counts the op complete, and under the stream's lock complete_locked() (may be NULL)
 * changes what must change in the same instant (an event's completion, a comm's pending count:
 * whoever sees one also sees the other); then release() owns the op and frees it. */
struct emu_op {
  struct emu_op *next;
  void (*run)(struct emu_op *op);
  void (*complete_locked)(struct emu_op *op);
  void (*release)(struct emu_op *op);
  bool timed; /* takes NCCLEMU_OP_DELAY_US: real work, not an event marker or a wait */
};

/* Resolves a caller's stream handle (0, cudaStreamLegacy, cudaStreamPerThread or a created one)
 * and takes a reference. per_thread: handle 0 means the per-thread default stream. device: the
 * device whose implicit streams 0/legacy/per-thread mean, or -1 for the thread's current one. */
cudaError_t emu_rt_stream_acquire(cudaStream_t handle, bool per_thread, int device,
                                  struct emu_stream **out);
void emu_rt_stream_release(struct emu_stream *s);
/* Appends op (after the implicit legacy-stream dependencies); returns its position in the stream. */
uint64_t emu_rt_stream_enqueue(struct emu_stream *s, struct emu_op *op);
int emu_rt_stream_device(const struct emu_stream *s);

/* libcudart internals shared between its files */
cudaError_t emu_cuda_result(cudaError_t e); /* records a failure as the thread's last error */
void emu_stream_wait(struct emu_stream *s, uint64_t upto);
void emu_device_synchronize(int device);
uint64_t emu_stream_pending(struct emu_stream *s);
bool emu_event_pending(void *event);
void emu_nanosleep_us(unsigned us);

#define CUDA_KNOB(fn)                                                                             \
  do {                                                                                            \
    int knob_code_;                                                                               \
    if (emu_rt_knob(fn, &knob_code_) == EMU_KNOB_FAIL)                                            \
      return emu_cuda_result((cudaError_t)knob_code_);                                            \
  } while (0)

/* ---------------------------------------------------------------- NCCL (libnccl) */

enum emu_comm_state {
  COMM_LIVE,
  COMM_FINALIZING,
  COMM_FINALIZED,
  COMM_DESTROYING,
  COMM_ABORTED,
  COMM_RELEASED
};

struct emu_slot;

/* The ranks of one communicator, in one process. Everything below mu is guarded by it. */
struct emu_clique {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* any change: a rank joined, a slot completed, an op finished, an abort */
  int nranks;
  unsigned char id[NCCL_UNIQUE_ID_BYTES];
  bool forming; /* still in the table of cliques waiting for ranks */
  struct emu_clique *forming_next;
  int joined;
  bool complete; /* every rank joined once */
  int refs; /* communicators not yet freed */
  struct ncclComm **comms;
  unsigned char *gone; /* ranks aborted or destroyed: work that needs them fails */
  struct emu_slot *slots;
};

struct ncclComm {
  struct emu_obj obj;
  struct emu_clique *clique;
  int rank;
  int nranks;
  int device;
  int blocking;
  /* guarded by clique->mu */
  enum emu_comm_state state;
  ncclResult_t async_error;
  int pending; /* ops enqueued and not finished */
  uint64_t coll_seq;
  uint64_t host_seq;
  uint64_t *send_seq; /* per peer */
  uint64_t *recv_seq;
};

enum emu_func {
  F_ALLREDUCE,
  F_BROADCAST,
  F_REDUCE,
  F_ALLGATHER,
  F_REDUCESCATTER,
  F_ALLTOALL,
  F_GATHER,
  F_SCATTER,
  F_SEND,
  F_RECV,
  F_SPLIT,
  F_SHRINK,
  F_INIT /* an init whose completion a group end waits for */
};

/* One rank's part of a collective, a send or receive, a split, or an init awaited by a group. */
struct emu_part {
  struct emu_part *next;
  enum emu_func func;
  const char *api;
  struct ncclComm *comm; /* a reference */
  struct emu_stream *stream;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  int root; /* or peer */
  uint64_t seq;
  struct emu_slot *slot;
  ncclResult_t result;
  /* split / shrink */
  int color;
  int key;
  int blocking;
  int *exclude;
  int nexclude;
  ncclComm_t *newcomm;
  struct ncclComm *out;
};

/* nccl_core.c */
void emu_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ncclResult_t emu_comm_acquire(ncclComm_t comm, const char *api);
void emu_comm_release(struct ncclComm *comm);
/* A new communicator of a complete clique (InitAll, split): attached and registered. */
struct ncclComm *emu_comm_new(struct emu_clique *clique, int rank, int device, int blocking);
struct emu_clique *emu_clique_new(int nranks);
/* ncclCommInitRank: a registered communicator meets its peers through the unique id. */
ncclResult_t emu_comm_join(const char *api, const ncclUniqueId *id, int nranks, int rank,
                           int device, int blocking, struct ncclComm **out);
bool emu_unique_id_valid(const ncclUniqueId *id);
ncclResult_t emu_hang(struct ncclComm *comm, const char *api);
void emu_fail_slots_locked(struct emu_clique *c, int rank);
size_t emu_type_size(ncclDataType_t t);

/* Counts the call once against the knobs: returns an injected failure at once; a hang is taken
 * by NCCL_HANG once the communicator is known (the call blocks until that comm is aborted). */
#define NCCL_KNOB(fn)                                                                             \
  int knob_code_;                                                                                 \
  __attribute__((unused)) const char *knob_fn_ = fn;                                              \
  __attribute__((unused)) enum emu_knob knob_ = emu_rt_knob(fn, &knob_code_);                     \
  if (knob_ == EMU_KNOB_FAIL) {                                                                   \
    emu_warn("NCCLEMU: injected failure of %s: %s", fn,                                           \
             ncclGetErrorString((ncclResult_t)knob_code_));                                       \
    return (ncclResult_t)knob_code_;                                                              \
  }

#define NCCL_HANG(comm)                                                                           \
  do {                                                                                            \
    if (knob_ == EMU_KNOB_HANG)                                                                   \
      return emu_hang(comm, knob_fn_);                                                            \
  } while (0)

/* nccl_coll.c */
void emu_part_arrive(struct emu_part *p);
void emu_part_await(struct emu_part *p);
/* The results of a part: its output copied, its error recorded on the comm. */
void emu_part_complete(struct emu_part *p);
void emu_part_finish(struct emu_part *p);
void emu_part_free(struct emu_part *p);

/* nccl_group.c */
bool emu_group_active(void);
void emu_group_add(struct emu_part *p);
void emu_launch(struct emu_part *parts);

/* The 'p'-prefixed profiling alias of an NCCL function: same code, second name. */
#define NCCL_ALIAS(fn) extern __typeof__(fn) p##fn __attribute__((alias(#fn)))

#endif
