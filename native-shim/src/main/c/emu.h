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
/* NCCLEMU_DESTROY_TIMEOUT_MS: how long a destroy waits for ranks of other processes; 0: forever */
unsigned emu_rt_destroy_timeout_ms(void);
/* NCCLEMU_EXIT_WAITS=1: process exit waits for calls stuck in NCCLEMU_HANG */
bool emu_rt_exit_waits(void);
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
struct emu_net;

/* Where a rank of a clique lives, as the root's table says. */
enum emu_where { WHERE_UNKNOWN = 0, WHERE_HERE, WHERE_THERE };
/* How a rank of another process left: its goodbye. */
enum emu_left { LEFT_NOT = 0, LEFT_DESTROYED, LEFT_ABORTED };

struct emu_member {
  int32_t pid;
  uint16_t port; /* the service listener of its process, on 127.0.0.1 */
  uint16_t where;
};

/* The ranks of one communicator, in one process. Everything below mu is guarded by it. */
struct emu_clique {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* any change: a rank joined, a slot completed, an op finished, an abort */
  int nranks;
  unsigned char id[NCCL_UNIQUE_ID_BYTES];
  bool forming; /* still in the table of cliques waiting for ranks */
  struct emu_clique *forming_next;
  int joined;
  bool complete; /* every rank joined once (and, across processes, the connections are up) */
  int refs; /* communicators not yet freed, the service thread, the root's hold */
  struct ncclComm **comms;
  unsigned char *gone; /* ranks aborted or destroyed: work that needs them fails */
  struct emu_slot *slots;
  /* ranks in other processes (nccl_bootstrap.c, nccl_proxy.c) */
  bool foreign;             /* the unique id is another process's: its root completes the clique */
  bool tabled;              /* every rank is known, in members */
  int remote_joined;        /* root side: ranks other processes registered */
  int registrants;          /* root side: connections that registered ranks, not yet answered */
  int local_live;           /* communicators here that have not left */
  ncclResult_t init_error;  /* the root refused, or could not be reached */
  struct emu_member *members; /* nranks */
  unsigned char *left;      /* enum emu_left, for ranks of other processes */
  struct emu_net *net;      /* set once; NULL while no other process takes part */
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
  bool left;      /* destroyed or aborted: no longer counted in clique->local_live */
  bool announced; /* the other processes were told it destroyed or aborted */
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
  struct ncclComm *comm; /* a reference; NULL for a part of a rank of another process */
  /* a rank of another process: its part came over the network, with a copy of its input that
   * the part owns; the slot it joined frees it */
  bool remote;
  int rank;
  struct emu_clique *clique;
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
/* Like emu_fail_slots_locked, but slots that already hold the rank's part may still complete:
 * for a rank of another process that left after its work, its input is here already. */
void emu_fail_slots_missing_locked(struct emu_clique *c, int rank);
/* Drops a reference on a clique (communicator, service thread, root hold); the last frees it. */
void emu_clique_unref(struct emu_clique *c);
void emu_clique_ref(struct emu_clique *c);
/* Whether the clique spans processes, or may: splits and shrinks are not emulated then. */
bool emu_clique_spans_processes(struct emu_clique *c);
/* The forming table's lock: cliques still waiting for ranks are found there by unique id. Lock
 * order: emu_forming_mu, then a clique's mu. */
extern pthread_mutex_t emu_forming_mu;
/* The forming clique of a unique id, created when absent (NULL: out of memory). Under
 * emu_forming_mu. */
struct emu_clique *emu_forming_find_locked(const unsigned char *id, int nranks, bool create);
/* Takes a forming clique out of the table: every rank is known. Under emu_forming_mu and mu. */
void emu_forming_remove_locked(struct emu_clique *c);
/* A warning as a given device's thread would print it (service threads have no device). */
void emu_warn_dev(int device, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- ranks in other processes */

/* The 128 bytes of an ncclUniqueId: what another process needs to find the one that made it. */
struct emu_id_fields {
  char magic[8];
  int32_t pid;   /* the process whose root collects the ranks */
  uint16_t port; /* its root listener on 127.0.0.1; 0 when it could not listen */
  uint16_t pad;
  uint64_t counter;
  int64_t sec;
  int64_t nsec;
  uint64_t tag; /* random, so an id cannot be guessed from an earlier one */
};
void emu_id_fields(const ncclUniqueId *id, struct emu_id_fields *out);
/* Whether the id was made by another process (then its root completes the clique). */
bool emu_id_foreign(const ncclUniqueId *id);

/* nccl_net.c: loopback sockets and framed messages */
enum emu_msg_type {
  MSG_REGISTER = 1, /* to a root: a rank of this process joins */
  MSG_UNREGISTER,   /* to a root: it left before the clique was complete */
  MSG_TABLE,        /* from a root: every rank and its process */
  MSG_REFUSED,      /* from a root: the registration was refused */
  MSG_HELLO,        /* first message on a connection between two processes of a clique */
  MSG_PART,         /* a rank's part of an operation, with its input */
  MSG_LEFT,         /* a rank destroyed or aborted its communicator */
  MSG_BYE           /* the last rank of the process left: the connection closes next */
};
/* MSG_REGISTER: one rank, and where its process listens for the other processes. */
struct emu_reg_msg {
  unsigned char id[NCCL_UNIQUE_ID_BYTES];
  int32_t nranks;
  int32_t rank;
  int32_t pid;
  uint16_t port;
  uint16_t pad;
};
struct emu_msg {
  uint32_t type;
  uint64_t size;
  unsigned char *data; /* size bytes, malloc'ed; NULL when size is 0 */
};
int emu_net_listen(uint16_t *port);
int emu_net_connect(uint16_t port);
/* One message, from two pieces (header fields, then bulk data). 0, or -1 when the peer is gone. */
int emu_net_send(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
/* 0: a message; 1: the peer closed the connection cleanly between messages; -1: an error. */
int emu_net_recv(int fd, struct emu_msg *m);
void emu_net_close(int *fd);

/* nccl_bootstrap.c: the root of the unique ids this process made */
uint16_t emu_root_port(void); /* starts the root on first use; 0 when it cannot listen */
void emu_root_wake(void);     /* a rank joined a clique other processes registered with */

/* nccl_proxy.c: the service thread of a clique that spans processes */
struct emu_net *emu_net_new(void);
void emu_net_free(struct emu_net *net);
/* A rank of a foreign clique registers with the id's root; the first one connects and starts
 * the clique's service thread. */
ncclResult_t emu_proxy_register(struct emu_clique *c, const ncclUniqueId *id, int rank);
void emu_proxy_unregister(struct emu_clique *c, int rank);
/* Root side: the listener of the clique's service thread here, before its port is handed out. */
ncclResult_t emu_proxy_listen(struct emu_clique *c, uint16_t *port);
/* Root side: every rank is in members; connects to the other processes and serves. */
void emu_proxy_serve(struct emu_clique *c);
/* Sends a local part to the processes that hold the other parties of its operation. */
void emu_proxy_announce(struct emu_part *p);
/* Tells the other processes that a rank destroyed or aborted its communicator. */
void emu_proxy_left(struct emu_clique *c, int rank, enum emu_left how);
/* The last rank here left: goodbye to the other processes, and the service thread ends. */
void emu_proxy_stop(struct emu_clique *c);
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
/* Frees the slots a clique still holds (with the parts of other processes in them) at its end. */
void emu_slots_free(struct emu_clique *c);
/* Bytes of input a rank sends for its part: what another process needs to compute the result. */
size_t emu_part_input_bytes(const struct emu_part *p, int nranks);
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
