/* Shared state of the emulator. libcudart.so.13 owns the live-handle registry, the knobs and the
 * streams (NCCL work is enqueued on the caller's CUDA stream); it hands them to libnccl.so.2 as
 * one table of emu_rt_ functions, the data symbol emu_rt_interface, which libnccl looks up with
 * dlsym on the runtime it found (nccl_runtime.c) instead of binding to private symbols through
 * the dynamic linker: a real libcudart.so.13 loaded first then costs a WARN line, not a crash.
 * The NCCL part keeps its communicators to itself. */
#ifndef NCCLEMU_EMU_H
#define NCCLEMU_EMU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nccl_api.h"
#include "nccl_profiler.h"

/* ---------------------------------------------------------------- live handles (libcudart) */

/* Every handle the emulator gives out is registered here. A handle from the caller is turned into
 * an object only through the registry, so a stale or foreign address is never dereferenced. */
enum emu_kind {
  EMU_COMM = 1,
  EMU_STREAM,
  EMU_EVENT,
  EMU_ALLOC,
  EMU_HOSTALLOC,
  EMU_NCCLMEM, /* ncclMemAlloc's */
  EMU_REG,     /* ncclCommRegister's handles */
  EMU_WINDOW,  /* ncclCommWindowRegister's */
  EMU_DEVCOMM  /* ncclDevCommCreate's */
};

/* First member of every registered object that can be acquired. Freed when refs reaches 0. */
struct emu_obj {
  atomic_int refs;
};

struct emu_live_info {
  int device;
  int rank;
  int nranks;
  size_t bytes;
  uint64_t comm_id; /* a communicator's commHash */
  const void *comm; /* the communicator of a registration, window or device communicator */
  const void *buff;
  int flags; /* a communicator's EMU_LIVE_REVOKED; a window's winFlags */
  int refs;  /* a registration's */
};
#define EMU_LIVE_REVOKED 1

void emu_rt_live_add(void *handle, enum emu_kind kind, const struct emu_live_info *info);
/* Takes a reference on a live handle; false when it is not live (never dereferenced then). */
bool emu_rt_live_acquire(void *handle, enum emu_kind kind);
/* Ends a live handle; true only for the one caller that ended it. */
bool emu_rt_live_remove(void *handle, enum emu_kind kind, struct emu_live_info *info);
/* What the exit report says of a live handle, changed. */
void emu_rt_live_update(void *handle, enum emu_kind kind, const struct emu_live_info *info);
/* Device memory of a kind (EMU_NCCLMEM: ncclMemAlloc's), registered; freed as cudaFree frees. */
cudaError_t emu_rt_mem_alloc(void **ptr, size_t size, enum emu_kind kind);
cudaError_t emu_rt_mem_free(void *ptr, enum emu_kind kind);
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

/* ---------------------------------------------------------------- the table (libcudart) */

struct emu_stream;
struct emu_op;

/* What libnccl needs of the runtime. A new field goes at the end, with EMU_RT_ABI raised. */
#define EMU_RT_ABI 1
struct emu_rt_ops {
  uint32_t size; /* sizeof(struct emu_rt_ops) of the runtime that filled it */
  uint32_t abi;
  enum emu_knob (*knob)(const char *fn, int *code);
  int (*device_count)(void);
  unsigned (*destroy_timeout_ms)(void);
  bool (*exit_waits)(void);
  int (*current_device)(void);
  void (*live_add)(void *handle, enum emu_kind kind, const struct emu_live_info *info);
  bool (*live_acquire)(void *handle, enum emu_kind kind);
  bool (*live_remove)(void *handle, enum emu_kind kind, struct emu_live_info *info);
  void (*live_update)(void *handle, enum emu_kind kind, const struct emu_live_info *info);
  cudaError_t (*mem_alloc)(void **ptr, size_t size, enum emu_kind kind);
  cudaError_t (*mem_free)(void *ptr, enum emu_kind kind);
  cudaError_t (*stream_acquire)(cudaStream_t handle, bool per_thread, int device,
                                struct emu_stream **out);
  void (*stream_release)(struct emu_stream *s);
  uint64_t (*stream_enqueue)(struct emu_stream *s, struct emu_op *op);
  int (*stream_device)(const struct emu_stream *s);
  const char *(*error_string)(cudaError_t e);
};
/* In libcudart.so.13 (exported, version node libcudart.so.13). */
extern const struct emu_rt_ops emu_rt_interface;
const char *emu_rt_error_string(cudaError_t e);

/* ---------------------------------------------------------------- streams (libcudart) */

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
  /* one-sided signals (nccl_rma.c): [dst * nranks + src], sent and waited for */
  uint64_t *signals;
  uint64_t *consumed;
};

/* Who a new communicator is, for NCCL: its commHash and magic, and how it came to be. */
struct emu_comm_ident {
  uint64_t comm_hash;
  uint64_t magic;
  const char *api;
  const struct ncclComm *parent; /* split, shrink, grow */
  int split_count, color, key;
};

/* A communicator's side of the profiler plugin (nccl_profiler.c). Events take lock shared,
 * init and finalize exclusive: no event reaches the plugin after the comm's finalize. */
struct emu_prof_comm {
  pthread_rwlock_t lock;
  bool active;        /* init succeeded, finalize not yet called */
  bool holds_plugin;  /* counted in the plugin's references: finalize drops it */
  bool ended;         /* finalized (or destroyed before its init): no init afterwards */
  int version;        /* of the plugin's interface: 4, 5 or 6 */
  const void *api;    /* its ncclProfiler_vN_t */
  void *context;
};

struct ncclComm {
  struct emu_obj obj;
  struct emu_clique *clique;
  int rank;
  int nranks;
  int device;
  int blocking;
  /* NCCL's identity of the communicator, computed as src/init.cc does: commHash (the commId of
   * its INFO lines and of the profiler plugin) and the bootstrap magic a grow derives from;
   * and how it came to be, for the Init COMPLETE line */
  struct emu_comm_ident ident; /* the parent is printed, never followed */
  atomic_uint_fast64_t seq_number[16]; /* per emu_func, as NCCL's comm->seqNumber[func] */
  struct emu_prof_comm prof;
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
  bool ready;     /* init complete, profiler plugin told: ncclCommGetAsyncError says so */
  int child_count; /* splits and grows of this comm so far (NCCL's comm->childCount) */
  bool revoked;    /* ncclCommRevoke: its work stops, no new work; destroy or abort still due */
  struct emu_res *resources; /* registrations, windows, device communicators */
  uint64_t win_seq;          /* windows registered so far: the nth of each rank form one */
};

/* A registration, window or device communicator of a comm: registered in the live handles,
 * released with the comm (NCCL frees them at destroy) or by its own deregister. */
struct emu_res {
  struct emu_obj obj;
  enum emu_kind kind;
  struct ncclComm *comm; /* not a reference: the comm releases its resources before it goes;
                          * NULL once released (guarded by the clique's mu) */
  struct emu_clique *clique; /* a reference */
  struct emu_res *next;  /* in comm->resources, guarded by the clique's mu */
  void *buff;
  size_t size;
  int flags; /* a window's winFlags */
  int refs;  /* a registration's: registering a range again counts it again */
  uint64_t seq; /* a window's number among its comm's windows */
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
  cudaStream_t user_stream; /* as the caller named it */
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
  int child_count; /* the parent's count of splits, this one included */
  ncclComm_t *newcomm;
  struct ncclComm *out;
  /* what the profiler plugin was told of it: NCCL's tasks for this call (one Coll, or Send and
   * Recv tasks), with their event handles */
  int prof_mask;
  int ntasks;
  struct emu_prof_task *tasks;
};

/* One of NCCL's tasks, as its profiler events describe it. */
struct emu_prof_task {
  bool p2p;
  enum emu_func func; /* F_SEND or F_RECV for p2p tasks */
  void *buff;         /* p2p */
  size_t count;
  int peer;           /* p2p; a collective's root otherwise */
  void *api_handle;   /* its CollApi or P2pApi event */
  void *handle;       /* its Coll or P2p event */
  void *kernel;       /* its KernelCh event */
};

/* nccl_core.c */
void emu_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ncclResult_t emu_comm_acquire(ncclComm_t comm, const char *api);
void emu_comm_release(struct ncclComm *comm);
/* A new communicator of a complete clique (InitAll, split): attached and registered. */
struct ncclComm *emu_comm_new(struct emu_clique *clique, int rank, int device, int blocking,
                              const struct emu_comm_ident *ident);
struct emu_clique *emu_clique_new(int nranks);
/* ncclCommInitRank: a registered communicator meets its peers through the unique id. Its
 * identity is the id's (ncclCommInitRank's), or ident where given. */
ncclResult_t emu_comm_join(const char *api, const ncclUniqueId *id, int nranks, int rank,
                           int device, int blocking, const struct emu_comm_ident *ident,
                           struct ncclComm **out);
bool emu_unique_id_valid(const ncclUniqueId *id);
ncclResult_t emu_hang(struct ncclComm *comm, const char *api);
void emu_fail_slots_locked(struct emu_clique *c, int rank);
/* Like emu_fail_slots_locked, but slots that already hold the rank's part may still complete:
 * for a rank of another process that left (destroyed, aborted or vanished), a part of it that
 * came before it left holds a copy of its input. */
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
  uint64_t magic; /* random, as NCCL's bootstrap handle's: so an id cannot be guessed either */
  char marker[8]; /* "NCCLEMU1": the emulator made it */
  int32_t pid;    /* the process whose root collects the ranks */
  uint16_t port;  /* its root listener on 127.0.0.1; 0 when it could not listen (or none) */
  uint16_t pad;
  uint64_t counter;
  int64_t sec;
  int64_t nsec;
};
/* An id of this process; port 0: no root listens for it (ncclCommInitAll's own id). */
void emu_make_unique_id(ncclUniqueId *id, uint16_t port);
/* NCCL's version banner at an init, as NCCL_DEBUG asks */
void emu_show_version(int rank);
#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)
#define EMU_VERSION_STRING                                                                        \
  "NCCL version " EMU_STR(NCCL_MAJOR) "." EMU_STR(NCCL_MINOR) "." EMU_STR(NCCL_PATCH) "+cuda13.0"
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

/* nccl_mem.c: a comm's resources */
/* A new resource of comm, registered and listed; under the clique's mu. */
struct emu_res *emu_res_new_locked(struct ncclComm *comm, enum emu_kind kind, void *buff,
                                   size_t size, int flags);
/* comm's own resource handle of kind, or NULL; under the clique's mu. */
struct emu_res *emu_res_own_locked(struct ncclComm *comm, void *handle, enum emu_kind kind);
/* Ends comm's own resource handle of kind; false when it has none such. */
bool emu_res_end(struct ncclComm *comm, void *handle, enum emu_kind kind);
void emu_res_release(struct emu_res *r);
/* The comm leaves (destroy, abort): its registrations, windows and device comms go too. */
void emu_comm_release_resources(struct ncclComm *comm);
/* Takes a reference on a live resource of kind; NULL when it is none (one WARN line then). */
struct emu_res *emu_res_acquire(void *handle, enum emu_kind kind, const char *api);
/* The window of the same collective registration on rank peer, under the clique's mu. */
struct emu_res *emu_window_of_locked(struct emu_clique *c, const struct emu_res *win, int peer);
/* A live registry entry's report info for the comm (its revoked flag included). */
void emu_comm_update_report(struct ncclComm *comm);

/* nccl_group.c */
bool emu_group_active(void);
int emu_group_depth(void);
void emu_group_add(struct emu_part *p);
void emu_launch(struct emu_part *parts);

/* nccl_profiler.c: NCCL's profiler plugin (NCCL_PROFILER_PLUGIN), loaded and called as NCCL's
 * src/plugin/profiler.cc does */
void emu_prof_comm_setup(struct ncclComm *comm);
void emu_prof_comm_teardown(struct ncclComm *comm);
/* Loads the plugin on first use and counts comm among its users; false when there is none. */
bool emu_prof_comm_attach(struct ncclComm *comm);
/* ncclProfilerPluginInit: attaches, then calls the plugin's init for comm. */
void emu_prof_comm_init(struct ncclComm *comm);
/* ncclProfilerPluginFinalize: at the comm's destroy or abort; nothing reaches the plugin for
 * that comm afterwards. */
void emu_prof_comm_finalize(struct ncclComm *comm);
/* The API side of one enqueued call: NCCL's tasks for it, its GroupApi and CollApi/P2pApi
 * events. */
void emu_prof_enqueue_enter(void);
void emu_prof_task_append(struct emu_part *p, int group_depth);
/* ncclGroupEndInternal: its start (depth bookkeeping) and its exit (the GroupApi event stops). */
void emu_prof_group_end_enter(void);
void emu_prof_group_end_exit(void);
/* Launch: KernelLaunch, Group, Coll and P2p events of the parts' plans (one per comm). */
void emu_prof_launch(struct emu_part *parts);
/* On the stream: KernelCh events while the work runs. */
void emu_prof_kernel_start(struct emu_part *p);
void emu_prof_kernel_stop(struct emu_part *p);
void emu_prof_part_free(struct emu_part *p);

/* nccl_core.c: INFO lines as NCCL prints them with NCCL_DEBUG=INFO (to stdout, or to
 * NCCL_DEBUG_FILE), for the subsystems of NCCL_DEBUG_SUBSYS */
void emu_info(unsigned long subsys, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void emu_info_dev(int device, unsigned long subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool emu_info_enabled(unsigned long subsys);
/* The logger NCCL hands its plugins (ncclDebugLogger_t). */
void emu_debug_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
/* NCCL's hashes (src/include/bitops.h, src/misc/utils.cc) */
void emu_eat_hash(uint64_t acc[2], const void *bytes, size_t size);
uint64_t emu_digest_hash(const uint64_t acc[2]);
uint64_t emu_get_hash(const void *bytes, size_t size);
uint64_t emu_hash_combine(uint64_t base, uint64_t value);
/* A communicator's identity from its unique id, as ncclCommInitRank's: commHash = getHash(id). */
void emu_ident_from_id(struct emu_comm_ident *out, const ncclUniqueId *id, const char *api);
/* A communicator is complete: the profiler plugin's init and the Init COMPLETE line, on the
 * calling thread for one comm, on a thread each for several (NCCL runs the inits of a group
 * with several of them, and ncclCommInitAll's, on a thread each); then each is ready. */
void emu_comms_ready(struct ncclComm **comms, int n);
/* The same for a non-blocking init, on a thread of its own once its peers came (as NCCL's
 * non-blocking group job does); ncclCommGetAsyncError says ncclInProgress until then. */
void emu_comm_ready_async(struct ncclComm *comm);

/* The 'p'-prefixed profiling alias of an NCCL function: same code, second name. */
#define NCCL_ALIAS(fn) extern __typeof__(fn) p##fn __attribute__((alias(#fn)))

#endif
