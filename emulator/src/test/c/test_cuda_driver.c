/* libcuda.so.1: the soname JavaCPP's cudart JNI library links, and a static cudart's way to the
 * driver. cuInit, cuDriverGetVersion, cuGetProcAddress(_v2), events, streams and primary contexts
 * answer (events and streams are the loaded runtime's: one handle for both APIs); every other entry
 * point says CUDA_ERROR_NOT_SUPPORTED, whatever it is passed. */
#include <dlfcn.h>

#include "cuda_driver_api.h"
#include "test.h"

static void *driver(void) {
  char path[512];
  snprintf(path, sizeof(path), "%s/libcuda.so.1", getenv("NCCLEMU_TEST_LIBDIR"));
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    fprintf(stderr, "dlopen: %s\n", dlerror());
  REQUIRE_EQ(lib != NULL, 1);
  return lib;
}

static void init_and_version_answer(void) {
  void *lib = driver();
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
  int (*version)(int *) = (int (*)(int *))dlsym(lib, "cuDriverGetVersion");
  REQUIRE_EQ(init != NULL && version != NULL, 1);
  CHECK_EQ(init(0), 0);
  CHECK_EQ(init(1), 1); /* CUDA_ERROR_INVALID_VALUE: no flags are defined */
  int v = 0;
  CHECK_EQ(version(&v), 0);
  CHECK_EQ(v, 13000);
  CHECK_EQ(version(NULL), 1);
}

static void other_entry_points_are_not_supported(void) {
  void *lib = driver();
  const char *names[] = {"cuCtxCreate_v4", "cuMemAlloc_v2", "cuStreamGetPriority", "cuModuleLoad", "cuDeviceGet"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    int (*fn)(void *, void *, void *) = (int (*)(void *, void *, void *))dlsym(lib, names[i]);
    if (!fn)
      fprintf(stderr, "no %s\n", names[i]);
    REQUIRE_EQ(fn != NULL, 1);
    int dummy;
    CHECK_EQ(fn(&dummy, &dummy, &dummy), 801);
  }
  CHECK(dlsym(lib, "emu_driver_not_supported") == NULL);
}

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void get_proc_address_answers_what_it_implements(void) {
  void *lib = driver();
  gpa_t gpa2 = (gpa_t)dlsym(lib, "cuGetProcAddress_v2");
  REQUIRE_EQ(gpa2 != NULL, 1);
  void *p = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  /* itself: _v2 from CUDA 12.0, the four-parameter one before */
  CHECK_EQ(gpa2("cuGetProcAddress", &p, 12000, 0, &st), CUDA_SUCCESS);
  CHECK(p == (void *)gpa2);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK_EQ(gpa2("cuGetProcAddress", &p, 11030, 0, NULL), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuGetProcAddress"));
  /* base names, the _v2 behind them, and the per-thread variant where one exists */
  CHECK_EQ(gpa2("cuEventDestroy", &p, 4000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventDestroy_v2"));
  CHECK_EQ(gpa2("cuEventRecord", &p, 2000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventRecord_ptsz"));
  CHECK_EQ(gpa2("cuEventRecord", &p, 2000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventRecord"));
  CHECK_EQ(gpa2("cuEventQuery", &p, 2000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventQuery"));
  /* what it does not implement */
  p = (void *)&st;
  CHECK_EQ(gpa2("cuMemAlloc", &p, 3020, 0, &st), CUDA_ERROR_NOT_FOUND);
  CHECK(p == NULL);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK_EQ(gpa2(NULL, &p, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(gpa2("cuInit", NULL, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
}

/* CUevent is cudaEvent_t: made by the driver, the runtime knows it, and the other way round */
static void events_and_streams_are_the_runtimes(void) {
  void *lib = driver();
  CUresult (*ev_create)(CUevent *, unsigned) = (CUresult(*)(CUevent *, unsigned))dlsym(lib, "cuEventCreate");
  CUresult (*ev_record)(CUevent, CUstream) = (CUresult(*)(CUevent, CUstream))dlsym(lib, "cuEventRecord_ptsz");
  CUresult (*ev_query)(CUevent) = (CUresult(*)(CUevent))dlsym(lib, "cuEventQuery");
  CUresult (*ev_destroy)(CUevent) = (CUresult(*)(CUevent))dlsym(lib, "cuEventDestroy_v2");
  CUresult (*st_create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))dlsym(lib, "cuStreamCreate");
  CUresult (*st_sync)(CUstream) = (CUresult(*)(CUstream))dlsym(lib, "cuStreamSynchronize");
  CUresult (*st_destroy)(CUstream) = (CUresult(*)(CUstream))dlsym(lib, "cuStreamDestroy_v2");
  CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(lib, "cuDevicePrimaryCtxRetain");
  CUresult (*set_current)(CUcontext) = (CUresult(*)(CUcontext))dlsym(lib, "cuCtxSetCurrent");
  REQUIRE_EQ(ev_create && ev_record && ev_query && ev_destroy && st_create && st_sync && st_destroy && retain && set_current, 1);
  CUevent ev = NULL;
  CUstream s = NULL;
  REQUIRE_EQ(ev_create(&ev, 0), CUDA_SUCCESS);
  REQUIRE_EQ(st_create(&s, 0), CUDA_SUCCESS);
  CHECK_EQ(cudaEventQuery((cudaEvent_t)ev), cudaSuccess);
  CHECK_EQ(cudaStreamQuery((cudaStream_t)s), cudaSuccess);
  CHECK_EQ(ev_record(ev, (CUstream)s), CUDA_SUCCESS);
  CHECK_EQ(st_sync(s), CUDA_SUCCESS);
  CHECK_EQ(ev_query(ev), CUDA_SUCCESS);
  cudaEvent_t rt_ev = NULL;
  REQUIRE_EQ(cudaEventCreate(&rt_ev), cudaSuccess);
  CHECK_EQ(ev_query((CUevent)rt_ev), CUDA_SUCCESS);
  CHECK_EQ(ev_destroy((CUevent)rt_ev), CUDA_SUCCESS);
  CHECK_EQ(cudaEventQuery(rt_ev), cudaErrorInvalidResourceHandle);
  CHECK_EQ(ev_destroy(ev), CUDA_SUCCESS);
  CHECK_EQ(ev_query(ev), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cudaStreamDestroy((cudaStream_t)s), cudaSuccess);
  CHECK_EQ(st_destroy(s), CUDA_ERROR_INVALID_HANDLE);
  /* a device's primary context made current is the runtime's device */
  CUcontext ctx = NULL;
  CHECK_EQ(retain(&ctx, 1), CUDA_SUCCESS);
  CHECK(ctx != NULL);
  CHECK_EQ(set_current(ctx), CUDA_SUCCESS);
  int dev = -1;
  CHECK_EQ(cudaGetDevice(&dev), cudaSuccess);
  CHECK_EQ(dev, 1);
  CHECK_EQ(retain(&ctx, 64), 101);
}

static const struct test_case cases[] = {
    {"get_proc_address_answers_what_it_implements", get_proc_address_answers_what_it_implements, NULL, NULL},
    {"events_and_streams_are_the_runtimes", events_and_streams_are_the_runtimes, "NCCLEMU_DEVICES=2", NULL},
    {"init_and_version_answer", init_and_version_answer, NULL, NULL},
    {"other_entry_points_are_not_supported", other_entry_points_are_not_supported, NULL, NULL},
};

TEST_MAIN(cases)
