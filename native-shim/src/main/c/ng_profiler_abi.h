/* NCCL's profiler plugin interface, versions 4, 5 and 6: the layouts of NVIDIA/nccl
 * src/include/plugin/profiler/profiler_v4.h (2.27.3), profiler_v5.h (2.28.3), profiler_v6.h
 * (2.29.2) and the event bits of nccl_profiler.h, declared without NCCL's headers. */
#ifndef NG_PROFILER_ABI_H
#define NG_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
  P_GROUP = 1 << 0,
  P_COLL = 1 << 1,
  P_P2P = 1 << 2,
  P_PROXY_OP = 1 << 3,
  P_PROXY_STEP = 1 << 4,
  P_PROXY_CTRL = 1 << 5,
  P_KERNEL_CH = 1 << 6,
  P_NET_PLUGIN = 1 << 7,
  P_GROUP_API = 1 << 8,
  P_COLL_API = 1 << 9,
  P_P2P_API = 1 << 10,
  P_KERNEL_LAUNCH = 1 << 11,
  P_CE_COLL = 1 << 12,
  P_CE_SYNC = 1 << 13,
  P_CE_BATCH = 1 << 14,
};

typedef void (*ng_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

struct coll_v4 {
  uint64_t seqNumber;
  const char *func;
  void const *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
};
struct p2p_v4 {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct proxy_op {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct kernel_ch {
  uint8_t channelId;
  uint64_t pTimer;
};
struct net_plugin {
  int64_t id;
  void *data;
};

union u_v4 {
  struct coll_v4 coll;
  struct p2p_v4 p2p;
  struct proxy_op proxyOp;
  struct { int step; } proxyStep;
  struct kernel_ch kernelCh;
  struct net_plugin netPlugin;
};

union u_v5 {
  struct { bool graphCaptured; int groupDepth; } groupApi;
  struct { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; } collApi;
  struct { const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured; } p2pApi;
  struct { void *stream; } kernelLaunch;
  struct { struct coll_v4 c; void *parentGroup; } coll;
  struct { struct p2p_v4 p; void *parentGroup; } p2p;
  struct proxy_op proxyOp;
  struct { int step; } proxyStep;
  struct kernel_ch kernelCh;
  struct net_plugin netPlugin;
};

union u_v6 {
  union u_v5 v5;
  struct {
    uint64_t seqNumber;
    const char *func;
    void const *sendBuff;
    void *recvBuff;
    size_t count;
    int root;
    const char *datatype;
    const char *syncStrategy;
    bool intraBatchSync;
    uint32_t batchSize;
    uint32_t numBatches;
    uint32_t ceSeqNum;
    void *stream;
  } ceColl;
  struct { bool isComplete; int nRanks; } ceCollSync;
  struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
};

/* The coll and p2p members of v5 are v4's with parentGroup after them: the same offsets. */
_Static_assert(offsetof(union u_v5, coll.parentGroup) == sizeof(struct coll_v4), "v5 coll extends v4's");

typedef struct { uint8_t type; void *parentObj; int rank; union u_v4 u; } descr_v4;
typedef struct { uint64_t type; void *parentObj; int rank; union u_v5 u; } descr_v5;
typedef struct { uint64_t type; void *parentObj; int rank; union u_v6 u; } descr_v6;

typedef union {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void *data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
} state_args;

typedef struct {
  const char *name;
  int (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes, int nranks,
              int rank, ng_logger_t logfn);
  int (*startEvent)(void *context, void **eHandle, descr_v6 *eDescr);
  int (*stopEvent)(void *eHandle);
  int (*recordEventState)(void *eHandle, int eState, state_args *eStateArgs);
  int (*finalize)(void *context);
} profiler_v6;

typedef struct {
  const char *name;
  int (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, int nNodes, int nranks,
              int rank, ng_logger_t logfn);
  int (*startEvent)(void *context, void **eHandle, descr_v5 *eDescr);
  int (*stopEvent)(void *eHandle);
  int (*recordEventState)(void *eHandle, int eState, state_args *eStateArgs);
  int (*finalize)(void *context);
} profiler_v5;

typedef struct {
  const char *name;
  int (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash, int nNodes, int nranks,
              int rank, ng_logger_t logfn);
  int (*startEvent)(void *context, void **eHandle, descr_v4 *eDescr);
  int (*stopEvent)(void *eHandle);
  int (*recordEventState)(void *eHandle, int eState, state_args *eStateArgs);
  int (*finalize)(void *context);
} profiler_v4;


#endif
