/* The hot-call benchmark's JNI library: C loops over cudaEventQuery, cudaEventRecord,
 * ncclAllReduce and an untracked function (cudaGetDevice), each once through this library's PLT
 * (bound to ncclguard's wrappers when the agent's native part was promoted before this library
 * loaded) and once through the real function's address (dlsym on the loaded libcudart.so.13 /
 * libnccl.so.2), in the same process: the difference is what the wrapper adds per call. Also
 * creations (cudaEventCreate + cudaEventDestroy), whose wrapper calls into Java when the agent's
 * Java side is there. Linked by soname against libnccl.so.2 and libcudart.so.13. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <stdint.h>
#include <time.h>

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;

int cudaEventQuery(cudaEvent_t e);
int cudaEventRecord(cudaEvent_t e, cudaStream_t s);
int cudaEventCreate(cudaEvent_t *e);
int cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
int cudaEventDestroy(cudaEvent_t e);
int cudaStreamCreate(cudaStream_t *s);
int cudaStreamSynchronize(cudaStream_t s);
int cudaGetDevice(int *d);
int cudaMalloc(void **p, size_t n);
int ncclGetUniqueId(ncclUniqueId *id);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, ncclComm_t comm, cudaStream_t stream);

static int (*real_query)(cudaEvent_t);
static int (*real_record)(cudaEvent_t, cudaStream_t);
static int (*real_create)(cudaEvent_t *);
static int (*real_destroy)(cudaEvent_t);
static int (*real_get_device)(int *);
static int (*real_sync)(cudaStream_t);
static int (*real_allreduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);

static cudaStream_t stream;
static cudaEvent_t event;       /* cudaEventDisableTiming, as events made to synchronize are */
static cudaEvent_t timed_event; /* the default: a record also takes a timestamp */
static ncclComm_t comm;
static float *buffer;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The real functions, from the loaded libraries by soname (never loading one), and the handles
 * the loops use, made through the PLT (so that, under the agent, they are C's). */
JNIEXPORT jstring JNICALL Java_dev_ncclguard_bench_NativeHotCalls_setUp(JNIEnv *env, jclass c) {
  (void)c;
  void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (cudart == NULL || nccl == NULL) return (*env)->NewStringUTF(env, "libcudart.so.13 or libnccl.so.2 is not loaded");
  real_query = (int (*)(cudaEvent_t))dlsym(cudart, "cudaEventQuery");
  real_record = (int (*)(cudaEvent_t, cudaStream_t))dlsym(cudart, "cudaEventRecord");
  real_create = (int (*)(cudaEvent_t *))dlsym(cudart, "cudaEventCreate");
  real_destroy = (int (*)(cudaEvent_t))dlsym(cudart, "cudaEventDestroy");
  real_get_device = (int (*)(int *))dlsym(cudart, "cudaGetDevice");
  real_sync = (int (*)(cudaStream_t))dlsym(cudart, "cudaStreamSynchronize");
  real_allreduce = (int (*)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t))dlsym(nccl, "pncclAllReduce");
  ncclUniqueId id;
  if (cudaStreamCreate(&stream) != 0 || cudaEventCreateWithFlags(&event, 2 /* cudaEventDisableTiming */) != 0 ||
      cudaEventCreate(&timed_event) != 0 || ncclGetUniqueId(&id) != 0 ||
      ncclCommInitRank(&comm, 1, id, 0) != 0 || cudaMalloc((void **)&buffer, 64 * sizeof(float)) != 0)
    return (*env)->NewStringUTF(env, "setting up the stream, event, communicator or buffer failed");
  return NULL;
}

/* What a loop calls: 0 cudaEventQuery, 1 cudaEventRecord, 2 ncclAllReduce, 3 cudaGetDevice
 * (untracked: not wrapped at all), 4 cudaEventRecord of an event with timing. Returns the elapsed ns of `iters` calls (stream
 * synchronizes every 256 calls are outside the timed part). */
JNIEXPORT jlong JNICALL Java_dev_ncclguard_bench_NativeHotCalls_loop(JNIEnv *env, jclass c, jint fn, jboolean real,
                                                                   jlong iters) {
  (void)env, (void)c;
  int64_t total = 0;
  int device;
  for (jlong done = 0; done < iters;) {
    jlong n = iters - done < 256 ? iters - done : 256;
    int64_t t0 = now_ns();
    switch (fn * 2 + (real ? 1 : 0)) {
    case 0: for (jlong i = 0; i < n; i++) cudaEventQuery(event); break;
    case 1: for (jlong i = 0; i < n; i++) real_query(event); break;
    case 2: for (jlong i = 0; i < n; i++) cudaEventRecord(event, stream); break;
    case 3: for (jlong i = 0; i < n; i++) real_record(event, stream); break;
    case 4: for (jlong i = 0; i < n; i++) ncclAllReduce(buffer, buffer, 1, 7, 0, comm, stream); break;
    case 5: for (jlong i = 0; i < n; i++) real_allreduce(buffer, buffer, 1, 7, 0, comm, stream); break;
    case 6: for (jlong i = 0; i < n; i++) cudaGetDevice(&device); break;
    case 7: for (jlong i = 0; i < n; i++) real_get_device(&device); break;
    case 8: for (jlong i = 0; i < n; i++) cudaEventRecord(timed_event, stream); break;
    case 9: for (jlong i = 0; i < n; i++) real_record(timed_event, stream); break;
    default: return -1;
    }
    total += now_ns() - t0;
    /* the queued work would otherwise grow without bound: drained outside the timing */
    if (fn == 1 || fn == 2 || fn == 4) real ? real_sync(stream) : cudaStreamSynchronize(stream);
    done += n;
  }
  return total;
}

/* cudaEventCreate + cudaEventDestroy pairs: the elapsed ns of `iters` pairs. */
JNIEXPORT jlong JNICALL Java_dev_ncclguard_bench_NativeHotCalls_creations(JNIEnv *env, jclass c, jboolean real,
                                                                        jlong iters) {
  (void)env, (void)c;
  int64_t t0 = now_ns();
  cudaEvent_t e;
  for (jlong i = 0; i < iters; i++) {
    if (real) {
      real_create(&e);
      real_destroy(e);
    } else {
      cudaEventCreate(&e);
      cudaEventDestroy(e);
    }
  }
  return now_ns() - t0;
}

/* Where this library's references went: the object defining what its PLT reached. */
JNIEXPORT jstring JNICALL Java_dev_ncclguard_bench_NativeHotCalls_boundTo(JNIEnv *env, jclass c) {
  (void)c;
  /* the address the PLT resolves to, as this library sees it */
  void *p = (void *)&cudaEventQuery;
  Dl_info info;
  return dladdr(p, &info) != 0 && info.dli_fname != NULL ? (*env)->NewStringUTF(env, info.dli_fname) : NULL;
}
