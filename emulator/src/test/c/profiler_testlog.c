/* A profiler plugin for tests: logs every call NCCL makes into it, with its arguments, one line
 * each, to the file NCCLEMU_TESTLOG names (%p: the pid). Built as
 *   libnccl-profiler-testlog.so     exports ncclProfiler_v6, _v5 and _v4 (NCCL takes v6)
 *   libnccl-profiler-testlog-v5.so  exports ncclProfiler_v5 and _v4
 *   libnccl-profiler-testlog-v4.so  exports ncclProfiler_v4
 *   libnccl-profiler-testlog-v3.so  exports only a ncclProfiler_v3 (unsupported by the emulator)
 * Knobs: NCCLEMU_TESTLOG_MASK (the activation mask init returns, a number; default 0x6: Coll
 * and P2p), NCCLEMU_TESTLOG_FAIL_INIT=1 (init fails with ncclInternalError).
 *
 * Lines (tid: the calling thread; handles and contexts are numbers the plugin gives out):
 *   load pid=P                     (library constructor; "unload" at dlclose)
 *   init vN tid=T context=C commId=0x.. mask_in=0x.. mask=0x.. commName=S nNodes=N nranks=N rank=R
 *   start tid=T context=C handle=H type=Coll parent=P rank=R seq=.. func=.. send=.. recv=..
 *         count=.. root=.. datatype=.. nChannels=.. nWarps=.. algo=.. proto=.. parentGroup=..
 *   start ... type=P2p ... func=.. buff=.. datatype=.. count=.. peer=.. nChannels=.. parentGroup=..
 *   start ... type=CollApi|P2pApi|GroupApi|KernelLaunch|KernelCh|Group ...
 *   stop tid=T handle=H
 *   record tid=T handle=H state=S pTimer=..
 *   finalize tid=T context=C
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_profiler.h"

#ifndef TESTLOG_VERSIONS
#define TESTLOG_VERSIONS 654
#endif

static atomic_uintptr_t next_handle = 1;

static void *new_handle(void) { return (void *)atomic_fetch_add(&next_handle, 1); }

__attribute__((format(printf, 1, 2))) static void logline(const char *fmt, ...) {
  const char *tmpl = getenv("NCCLEMU_TESTLOG");
  if (!tmpl || !*tmpl)
    return;
  char path[1024];
  size_t n = 0;
  for (const char *c = tmpl; *c && n + 24 < sizeof(path); c++) {
    if (c[0] == '%' && c[1] == 'p') {
      n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid());
      c++;
    } else {
      path[n++] = *c;
    }
  }
  path[n] = '\0';
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  if (len < 0)
    return;
  if (len > (int)sizeof(line) - 2)
    len = (int)sizeof(line) - 2;
  line[len++] = '\n';
  /* one write on an O_APPEND descriptor: lines of concurrent threads never interleave */
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  ssize_t ignored = write(fd, line, (size_t)len);
  (void)ignored;
  close(fd);
}

__attribute__((constructor)) static void loaded(void) { logline("load pid=%d", (int)getpid()); }
__attribute__((destructor)) static void unloaded(void) { logline("unload pid=%d", (int)getpid()); }

static int mask_from_env(void) {
  const char *m = getenv("NCCLEMU_TESTLOG_MASK");
  return m && *m ? (int)strtol(m, NULL, 0) : ncclProfileColl | ncclProfileP2p;
}

static ncclResult_t do_init(int version, void **context, uint64_t commId, int *mask,
                            const char *commName, int nNodes, int nranks, int rank) {
  int in = *mask;
  const char *fail = getenv("NCCLEMU_TESTLOG_FAIL_INIT");
  if (fail && strcmp(fail, "1") == 0) {
    logline("init v%d tid=%d failed commId=0x%llx", version, (int)gettid(),
            (unsigned long long)commId);
    return ncclInternalError;
  }
  *mask = mask_from_env();
  *context = new_handle();
  logline("init v%d tid=%d context=%p commId=0x%llx mask_in=0x%x mask=0x%x commName=%s nNodes=%d "
          "nranks=%d rank=%d",
          version, (int)gettid(), *context, (unsigned long long)commId, in, *mask,
          commName ? commName : "(null)", nNodes, nranks, rank);
  return ncclSuccess;
}

static const char *type_name(uint64_t type) {
  switch (type) {
  case ncclProfileGroup:
    return "Group";
  case ncclProfileColl:
    return "Coll";
  case ncclProfileP2p:
    return "P2p";
  case ncclProfileKernelCh:
    return "KernelCh";
  case ncclProfileGroupApi:
    return "GroupApi";
  case ncclProfileCollApi:
    return "CollApi";
  case ncclProfileP2pApi:
    return "P2pApi";
  case ncclProfileKernelLaunch:
    return "KernelLaunch";
  default:
    return "Other";
  }
}

/* v5 and v6 share the layout of every event NCCL's v5 knows */
static ncclResult_t start_v5(void *context, void **handle, ncclProfilerEventDescr_v5_t *d) {
  *handle = new_handle();
  char head[256], body[1024] = "";
  snprintf(head, sizeof(head), "start tid=%d context=%p handle=%p type=%s parent=%p rank=%d",
           (int)gettid(), context, *handle, type_name(d->type), d->parentObj, d->rank);
  switch (d->type) {
  case ncclProfileColl:
    snprintf(body, sizeof(body),
             " seq=%llu func=%s send=%p recv=%p count=%zu root=%d datatype=%s nChannels=%u "
             "nWarps=%u algo=%s proto=%s parentGroup=%p",
             (unsigned long long)d->coll.seqNumber, d->coll.func, d->coll.sendBuff,
             d->coll.recvBuff, d->coll.count, d->coll.root, d->coll.datatype, d->coll.nChannels,
             d->coll.nWarps, d->coll.algo, d->coll.proto, d->coll.parentGroup);
    break;
  case ncclProfileP2p:
    snprintf(body, sizeof(body),
             " func=%s buff=%p datatype=%s count=%zu peer=%d nChannels=%u parentGroup=%p",
             d->p2p.func, d->p2p.buff, d->p2p.datatype, d->p2p.count, d->p2p.peer,
             d->p2p.nChannels, d->p2p.parentGroup);
    break;
  case ncclProfileCollApi:
    snprintf(body, sizeof(body),
             " func=%s count=%zu datatype=%s root=%d stream=%p graphCaptured=%d",
             d->collApi.func, d->collApi.count, d->collApi.datatype, d->collApi.root,
             d->collApi.stream, d->collApi.graphCaptured);
    break;
  case ncclProfileP2pApi:
    snprintf(body, sizeof(body), " func=%s count=%zu datatype=%s stream=%p graphCaptured=%d",
             d->p2pApi.func, d->p2pApi.count, d->p2pApi.datatype, d->p2pApi.stream,
             d->p2pApi.graphCaptured);
    break;
  case ncclProfileGroupApi:
    snprintf(body, sizeof(body), " depth=%d graphCaptured=%d", d->groupApi.groupDepth,
             d->groupApi.graphCaptured);
    break;
  case ncclProfileKernelLaunch:
    snprintf(body, sizeof(body), " stream=%p", d->kernelLaunch.stream);
    break;
  case ncclProfileKernelCh:
    snprintf(body, sizeof(body), " channel=%u pTimer=%llu", d->kernelCh.channelId,
             (unsigned long long)d->kernelCh.pTimer);
    break;
  default:
    break;
  }
  logline("%s%s", head, body);
  return ncclSuccess;
}

static ncclResult_t stop(void *handle) {
  logline("stop tid=%d handle=%p", (int)gettid(), handle);
  return ncclSuccess;
}

static ncclResult_t record(void *handle, ncclProfilerEventState_t state,
                           ncclProfilerEventStateArgs_v5_t *args) {
  logline("record tid=%d handle=%p state=%d pTimer=%llu", (int)gettid(), handle, (int)state,
          state == ncclProfilerKernelChStop && args ? (unsigned long long)args->kernelCh.pTimer
                                                    : 0ULL);
  return ncclSuccess;
}

static ncclResult_t finalize(void *context) {
  logline("finalize tid=%d context=%p", (int)gettid(), context);
  return ncclSuccess;
}

/* ---------------------------------------------------------------- v6 */

__attribute__((unused)) static ncclResult_t init_v6(void **context, uint64_t commId, int *mask,
                                                    const char *commName, int nNodes, int nranks,
                                                    int rank, ncclDebugLogger_t logfn) {
  (void)logfn;
  return do_init(6, context, commId, mask, commName, nNodes, nranks, rank);
}

__attribute__((unused)) static ncclResult_t start_v6(void *context, void **handle,
                                                     ncclProfilerEventDescr_v6_t *d) {
  return start_v5(context, handle, (ncclProfilerEventDescr_v5_t *)d);
}

/* ---------------------------------------------------------------- v5 */

__attribute__((unused)) static ncclResult_t init_v5(void **context, uint64_t commId, int *mask,
                                                    const char *commName, int nNodes, int nranks,
                                                    int rank, ncclDebugLogger_t logfn) {
  /* the logger NCCL hands over must work: one INFO line through it */
  if (logfn)
    logfn(NCCL_LOG_INFO, NCCL_INIT, __FILE__, __LINE__, "testlog: init of rank %d", rank);
  return do_init(5, context, commId, mask, commName, nNodes, nranks, rank);
}

/* ---------------------------------------------------------------- v4 */

static ncclResult_t init_v4(void **context, int *mask, const char *commName, uint64_t commHash,
                            int nNodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  (void)logfn;
  return do_init(4, context, commHash, mask, commName, nNodes, nranks, rank);
}

static ncclResult_t start_v4(void *context, void **handle, ncclProfilerEventDescr_v4_t *d) {
  /* v4's union has no API events: only Group, Coll, P2p and KernelCh arrive here */
  ncclProfilerEventDescr_v5_t v5;
  memset(&v5, 0, sizeof(v5));
  v5.type = d->type;
  v5.parentObj = d->parentObj;
  v5.rank = d->rank;
  if (d->type == ncclProfileColl) {
    v5.coll.seqNumber = d->coll.seqNumber;
    v5.coll.func = d->coll.func;
    v5.coll.sendBuff = d->coll.sendBuff;
    v5.coll.recvBuff = d->coll.recvBuff;
    v5.coll.count = d->coll.count;
    v5.coll.root = d->coll.root;
    v5.coll.datatype = d->coll.datatype;
    v5.coll.nChannels = d->coll.nChannels;
    v5.coll.nWarps = d->coll.nWarps;
    v5.coll.algo = d->coll.algo;
    v5.coll.proto = d->coll.proto;
  } else if (d->type == ncclProfileP2p) {
    v5.p2p.func = d->p2p.func;
    v5.p2p.buff = d->p2p.buff;
    v5.p2p.datatype = d->p2p.datatype;
    v5.p2p.count = d->p2p.count;
    v5.p2p.peer = d->p2p.peer;
    v5.p2p.nChannels = d->p2p.nChannels;
  } else if (d->type == ncclProfileKernelCh) {
    v5.kernelCh.channelId = d->kernelCh.channelId;
    v5.kernelCh.pTimer = d->kernelCh.pTimer;
  }
  return start_v5(context, handle, &v5);
}

#if TESTLOG_VERSIONS == 654
__attribute__((visibility("default"))) const ncclProfiler_v6_t ncclProfiler_v6 = {
    "testlog", init_v6, start_v6, stop, record, finalize};
#endif
#if TESTLOG_VERSIONS == 654 || TESTLOG_VERSIONS == 54
__attribute__((visibility("default"))) const ncclProfiler_v5_t ncclProfiler_v5 = {
    "testlog", init_v5, start_v5, stop, record, finalize};
#endif
#if TESTLOG_VERSIONS != 3
__attribute__((visibility("default"))) const ncclProfiler_v4_t ncclProfiler_v4 = {
    "testlog", init_v4, start_v4, stop, record, finalize};
#else
/* a plugin of NCCL 2.26's interface only: the emulator does not take it */
__attribute__((visibility("default"))) const ncclProfiler_v4_t ncclProfiler_v3 = {
    "testlog", init_v4, start_v4, stop, record, finalize};
#endif
