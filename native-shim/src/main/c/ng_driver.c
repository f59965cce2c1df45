/* The CUDA driver (docs/design.md, "The driver"):
 *   - a statically linked cudart (nvcc's default) reaches libcuda.so.1 by dlsym(handle,
 *     "cuGetProcAddress_v2") alone, then asks that for cuGetProcAddress and every entry point
 *     (NATIVE.md, measured 2026-12-04). ng_patch.c's dlsym hook hands it the stand-ins here, which
 *     call the real function and hand back, for the catalog's driver functions, their wrappers: the
 *     real function behind each is the one the driver answered (flags passed on unchanged, so the
 *     per-thread variant stays _ptsz), recorded for the asking object as a lookup by name
 *     (ng_caller_named). A static cudart whose runtime API its object exports is seen at its
 *     runtime calls already (they bind to the wrappers): it gets the real functions, not a second
 *     count of each call.
 *   - the agent's own exit calls where no CUDA runtime serves them (CuPy loads none; a static
 *     cudart is not callable from outside): the driver's equivalents, never through a wrapper. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ng.h"
#include "ng_caller.h"
#include "ng_driver.h"
#include "ng_elf.h"

typedef CUresult (*gpa1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* the real cuGetProcAddress of each ABI, as the driver handed them out (one driver per process) */
static _Atomic(gpa1_t) real_v1;
static _Atomic(gpa2_t) real_v2;

/* ---------------------------------------------------------------- the wrappers by id */
static _Atomic(void *) wrappers[NG_FN_COUNT];
static atomic_int wrappers_known;

static int find_wrappers(const ng_image *im, void *data) {
  (void)data;
  if (im->bias != ng_self_base) return 0;
  for (int fn = 0; fn < NG_FN_COUNT; fn++)
    atomic_store_explicit(&wrappers[fn], (void *)ng_image_lookup(im, ng_fn_name[fn]), NG_RELAXED);
  return 1;
}

static void *wrapper_of(int fn) {
  if (!atomic_load_explicit(&wrappers_known, NG_ACQUIRE)) {
    ng_each_image(find_wrappers, NULL);
    atomic_store_explicit(&wrappers_known, 1, NG_RELEASE);
  }
  return atomic_load_explicit(&wrappers[fn], NG_RELAXED);
}

/* ---------------------------------------------------------------- what a name stands for */
/* The catalog's driver function the driver answered `name` with: the exported name of the function
 * it gave (cuEventRecord_ptsz for flag 2), else the name itself, its _v2 (cuEventDestroy), or its
 * _ptsz for the per-thread flag; -1 for none. */
static int driver_fn(const char *name, void *real, cuuint64_t flags) {
  Dl_info info;
  if (dladdr(real, &info) != 0 && info.dli_saddr == real && info.dli_sname != NULL) {
    int fn = ng_fn_id(info.dli_sname);
    if (fn >= 0 && ng_fn_driver[fn]) return fn;
  }
  char v[128];
  int fn = -1;
  if (flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && snprintf(v, sizeof(v), "%s_ptsz", name) < (int)sizeof(v))
    fn = ng_fn_id(v);
  if (fn < 0) fn = ng_fn_id(name);
  if (fn < 0 && snprintf(v, sizeof(v), "%s_v2", name) < (int)sizeof(v)) fn = ng_fn_id(v);
  return fn >= 0 && ng_fn_driver[fn] ? fn : -1;
}

struct exports {
  uintptr_t at;
  int found;
};
static int exports_runtime(const ng_image *im, void *data) {
  struct exports *e = data;
  if (!ng_image_contains(im, e->at)) return 0;
  e->found = ng_image_lookup(im, "cudaEventCreate") != 0 || ng_image_lookup(im, "cudaStreamCreate") != 0;
  return 1;
}

static CUresult proc_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
static CUresult proc_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *symbolStatus);

/* What the object at ret gets for `name`, which the driver answered with `real`. */
static void *handed(const char *name, void *real, int cudaVersion, cuuint64_t flags, uintptr_t ret) {
  if (strcmp(name, "cuGetProcAddress") == 0) {
    /* itself: the five-parameter one from CUDA 12.0 (the driver's own rule) */
    if (cudaVersion >= 12000) {
      atomic_store_explicit(&real_v2, (gpa2_t)real, NG_RELEASE);
      return (void *)proc_v2;
    }
    atomic_store_explicit(&real_v1, (gpa1_t)real, NG_RELEASE);
    return (void *)proc_v1;
  }
  int fn = driver_fn(name, real, flags);
  if (fn < 0 || ng_is_dying()) return real;
  void *w = wrapper_of(fn);
  struct exports e = {ret, 0};
  ng_each_image(exports_runtime, &e);
  if (w == NULL || e.found) return real;
  ng_caller_named(ret, fn, (uintptr_t)real);
  return w;
}

static CUresult proc_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *symbolStatus) {
  gpa2_t real = atomic_load_explicit(&real_v2, NG_ACQUIRE);
  CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && symbol != NULL && pfn != NULL && *pfn != NULL)
    *pfn = handed(symbol, *pfn, cudaVersion, flags, (uintptr_t)__builtin_return_address(0));
  return r;
}

static CUresult proc_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  gpa1_t real = atomic_load_explicit(&real_v1, NG_ACQUIRE);
  CUresult r = real(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && symbol != NULL && pfn != NULL && *pfn != NULL)
    *pfn = handed(symbol, *pfn, cudaVersion, flags, (uintptr_t)__builtin_return_address(0));
  return r;
}

void *ng_driver_proc_hook(const char *name, uintptr_t real, uintptr_t ret) {
  (void)ret;
  if (name == NULL || real == 0 || strncmp(name, "cuGetProcAddress", 16) != 0) return NULL;
  if (strcmp(name, "cuGetProcAddress_v2") == 0) {
    atomic_store_explicit(&real_v2, (gpa2_t)real, NG_RELEASE);
    return (void *)proc_v2;
  }
  if (strcmp(name, "cuGetProcAddress") == 0) {
    atomic_store_explicit(&real_v1, (gpa1_t)real, NG_RELEASE);
    return (void *)proc_v1;
  }
  return NULL;
}

/* ---------------------------------------------------------------- the agent's own calls */
/* The loaded driver's own definition of name (dlsym on its handle: never a wrapper), or NULL. */
static void *driver_function(const char *name) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL) {
    dlerror();
    return NULL;
  }
  void *p = dlsym(lib, name);
  Dl_info info;
  if (p != NULL && dladdr(p, &info) != 0 && (uintptr_t)info.dli_fbase == ng_self_base) p = NULL;
  dlclose(lib);
  return p;
}

int ng_driver_call(int fn, int64_t a0, int *done) {
  const char *name = NULL;
  *done = 0;
  switch (ng_fn_effect[fn]) {
  case NG_EFFECT_EVENT_QUERY: name = "cuEventQuery"; break;
  case NG_EFFECT_EVENT_SYNC: name = "cuEventSynchronize"; break;
  case NG_EFFECT_EVENT_DESTROY: name = "cuEventDestroy_v2"; break;
  case NG_EFFECT_STREAM_QUERY: name = "cuStreamQuery"; break;
  case NG_EFFECT_STREAM_SYNC: name = "cuStreamSynchronize"; break;
  case NG_EFFECT_STREAM_DESTROY: name = "cuStreamDestroy_v2"; break;
  case NG_EFFECT_SET_DEVICE: {
    /* the runtime's cudaSetDevice: the device's primary context made current */
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))driver_function("cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))driver_function("cuCtxSetCurrent");
    if (retain == NULL || set == NULL) return 0;
    *done = 1;
    CUcontext ctx = NULL;
    CUresult r = retain(&ctx, (CUdevice)a0);
    return r != CUDA_SUCCESS ? r : set(ctx);
  }
  default: return 0;
  }
  CUresult (*f)(void *) = (CUresult(*)(void *))driver_function(name);
  if (f == NULL) return 0;
  *done = 1;
  return f((void *)(uintptr_t)a0);
}
