/* NVIDIA's ABI as ncclguard transcribes it: NCCL's profiler plugin interface, versions 4 to 6:
 * what a plugin exports as ncclProfiler_v6 / _v5 / _v4 and what NCCL hands it. Follows NVIDIA/nccl
 * v2.29.3-1 src/include/plugin/nccl_profiler.h, src/include/plugin/profiler/profiler_v4.h,
 * profiler_v5.h, profiler_v6.h and src/include/nccl_common.h (v4 since 2.27.3, v5 since 2.28.3,
 * v6 since 2.29.2; the layouts of v4 and v5 are those releases'). Declared once here: the agent's
 * native library is such a plugin (native-shim/src/main/c/ng_prof.c) and loads the application's,
 * the emulator loads plugins through it (emulator/src/main/c/nccl_profiler.c), and the test
 * plugins of both implement it. */
#ifndef NCCLGUARD_ABI_NCCL_PROFILER_H
#define NCCLGUARD_ABI_NCCL_PROFILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl_api.h"

/* src/include/nccl_common.h */
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000,
  NCCL_ALL = ~0
} ncclDebugLogSubSys;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);

/* event types: the activation mask's bits */
enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),
  ncclProfileNetPlugin = (1 << 7),
  ncclProfileGroupApi = (1 << 8),
  ncclProfileCollApi = (1 << 9),
  ncclProfileP2pApi = (1 << 10),
  ncclProfileKernelLaunch = (1 << 11),
  ncclProfileCeColl = (1 << 12),
  ncclProfileCeSync = (1 << 13),
  ncclProfileCeBatch = (1 << 14)
};

typedef enum {
  ncclProfilerProxyOpSendPosted = 0,
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
  ncclProfilerCeCollStart = 25,
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

/* ---------------------------------------------------------------- v4 (2.27) */

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
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
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void *data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char *name;
  /* v4's init has the activation mask before the name and the commHash after it */
  ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
                       uint64_t commHash, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

/* ---------------------------------------------------------------- v5 (2.28) */

#define NCCLGUARD_ABI_PROFILER_V5_MEMBERS                                                         \
  struct {                                                                                        \
    bool graphCaptured;                                                                           \
    int groupDepth;                                                                               \
  } groupApi;                                                                                     \
  struct {                                                                                        \
    const char *func;                                                                             \
    size_t count;                                                                                 \
    const char *datatype;                                                                         \
    int root;                                                                                     \
    void *stream;                                                                                 \
    bool graphCaptured;                                                                           \
  } collApi;                                                                                      \
  struct {                                                                                        \
    const char *func;                                                                             \
    size_t count;                                                                                 \
    const char *datatype;                                                                         \
    void *stream;                                                                                 \
    bool graphCaptured;                                                                           \
  } p2pApi;                                                                                       \
  struct {                                                                                        \
    void *stream;                                                                                 \
  } kernelLaunch;                                                                                 \
  struct {                                                                                        \
    uint64_t seqNumber;                                                                           \
    const char *func;                                                                             \
    void const *sendBuff;                                                                         \
    void *recvBuff;                                                                               \
    size_t count;                                                                                 \
    int root;                                                                                     \
    const char *datatype;                                                                         \
    uint8_t nChannels;                                                                            \
    uint8_t nWarps;                                                                               \
    const char *algo;                                                                             \
    const char *proto;                                                                            \
    void *parentGroup;                                                                            \
  } coll;                                                                                         \
  struct {                                                                                        \
    const char *func;                                                                             \
    void *buff;                                                                                   \
    const char *datatype;                                                                         \
    size_t count;                                                                                 \
    int peer;                                                                                     \
    uint8_t nChannels;                                                                            \
    void *parentGroup;                                                                            \
  } p2p;                                                                                          \
  struct {                                                                                        \
    pid_t pid;                                                                                    \
    uint8_t channelId;                                                                            \
    int peer;                                                                                     \
    int nSteps;                                                                                   \
    int chunkSize;                                                                                \
    int isSend;                                                                                   \
  } proxyOp;                                                                                      \
  struct {                                                                                        \
    int step;                                                                                     \
  } proxyStep;                                                                                    \
  struct {                                                                                        \
    uint8_t channelId;                                                                            \
    uint64_t pTimer;                                                                              \
  } kernelCh;                                                                                     \
  struct {                                                                                        \
    int64_t id;                                                                                   \
    void *data;                                                                                   \
  } netPlugin;

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    NCCLGUARD_ABI_PROFILER_V5_MEMBERS
  };
} ncclProfilerEventDescr_v5_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

/* ---------------------------------------------------------------- v6 (2.29): v5 and CE events */

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    NCCLGUARD_ABI_PROFILER_V5_MEMBERS
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
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;

#endif
