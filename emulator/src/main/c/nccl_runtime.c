/* How the emulated NCCL reaches the emulated CUDA runtime: through the table libcudart.so.13
 * exports as emu_rt_interface, looked up with dlsym, never through the dynamic linker. So a
 * real libcudart.so.13 loaded first (JavaCPP loads the one of the CUDA toolkit from its own
 * paths before NCCL) cannot make NCCL's first call die of an undefined symbol:
 *
 * - the libcudart.so.13 that is loaded is the emulator's: its table, and all is as designed;
 * - it is another one: one WARN line that says so and how to fix it, and NCCL runs on the
 *   emulator's runtime next to this library (libnccl.so.2's directory), loaded privately
 *   (RTLD_LOCAL): NCCL works on its own streams (0, legacy, per-thread) while the application's
 *   CUDA calls, and the streams they make, are the other runtime's;
 * - none is to be had (a static libnccl_static.a in a program without the emulator's runtime):
 *   one WARN line, and NCCL answers as on a machine without devices.
 *
 * The emu_rt_ functions the rest of libnccl calls are defined here, over the table; they stay
 * inside libnccl (nccl.map, and objcopy for the static archive). */
#include <dlfcn.h>
#include <libgen.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"

/* ---------------------------------------------------------------- no runtime */

static enum emu_knob none_knob(const char *fn, int *code) {
  (void)fn, (void)code;
  return EMU_KNOB_NONE;
}
static int none_zero(void) { return 0; }
static unsigned none_timeout(void) { return 0; }
static bool none_false(void) { return false; }
static void none_add(void *h, enum emu_kind k, const struct emu_live_info *i) {
  (void)h, (void)k, (void)i;
}
static bool none_acquire(void *h, enum emu_kind k) {
  (void)h, (void)k;
  return false;
}
static bool none_remove(void *h, enum emu_kind k, struct emu_live_info *i) {
  (void)h, (void)k, (void)i;
  return false;
}
static cudaError_t none_alloc(void **p, size_t s, enum emu_kind k) {
  (void)p, (void)s, (void)k;
  return cudaErrorNoDevice;
}
static cudaError_t none_free(void *p, enum emu_kind k) {
  (void)p, (void)k;
  return cudaErrorInvalidValue;
}
static cudaError_t none_stream(cudaStream_t h, bool pt, int d, struct emu_stream **out) {
  (void)h, (void)pt, (void)d, (void)out;
  return cudaErrorNoDevice;
}
static void none_release(struct emu_stream *s) { (void)s; }
static uint64_t none_enqueue(struct emu_stream *s, struct emu_op *op) {
  (void)s, (void)op;
  return 0;
}
static int none_device(const struct emu_stream *s) {
  (void)s;
  return -1;
}
static const char *none_string(cudaError_t e) {
  return e == cudaErrorNoDevice ? "no CUDA-capable device is detected" : "unknown error";
}

static const struct emu_rt_ops none_ops = {
    .size = sizeof(struct emu_rt_ops),
    .abi = EMU_RT_ABI,
    .knob = none_knob,
    .device_count = none_zero,
    .destroy_timeout_ms = none_timeout,
    .exit_waits = none_false,
    .current_device = none_zero,
    .live_add = none_add,
    .live_acquire = none_acquire,
    .live_remove = none_remove,
    .live_update = none_add,
    .mem_alloc = none_alloc,
    .mem_free = none_free,
    .stream_acquire = none_stream,
    .stream_release = none_release,
    .stream_enqueue = none_enqueue,
    .stream_device = none_device,
    .error_string = none_string,
};

/* ---------------------------------------------------------------- finding the runtime */

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t runtime_once = PTHREAD_ONCE_INIT;
static const struct emu_rt_ops *runtime = &none_ops;
static char warning[2048];
static atomic_bool warning_due;

static const struct emu_rt_ops *table_of(void *handle) {
  const struct emu_rt_ops *t = handle ? dlsym(handle, "emu_rt_interface") : NULL;
  return t && t->abi == EMU_RT_ABI && t->size >= sizeof(struct emu_rt_ops) ? t : NULL;
}

static void path_of(void *handle, char *out, size_t size) {
  struct link_map *lm;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm->l_name && *lm->l_name)
    snprintf(out, size, "%s", lm->l_name);
  else
    snprintf(out, size, "libcudart.so.13");
}

/* No emu_warn here (it asks the runtime for the device): the line waits in warning. */
static void find_runtime(void) {
  char loaded[1024] = "", dir[1024] = "", candidate[1100] = "";
  void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  const struct emu_rt_ops *t = table_of(h);
  if (t) {
    runtime = t; /* the handle stays open: the runtime is loaded anyway */
    return;
  }
  if (h) {
    path_of(h, loaded, sizeof(loaded));
    dlclose(h);
  }
  /* the emulator's runtime sits next to libnccl.so.2 (for the static archive: next to the
   * object it was linked into, where it is seldom) */
  Dl_info self;
  if (dladdr((void *)find_runtime, &self) && self.dli_fname) {
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", self.dli_fname);
    snprintf(dir, sizeof(dir), "%s", dirname(copy));
    snprintf(candidate, sizeof(candidate), "%s/libcudart.so.13", dir);
  }
  void *own = NULL;
  if (*candidate && access(candidate, R_OK) == 0 && strcmp(candidate, loaded) != 0) {
    own = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if ((t = table_of(own)))
      runtime = t;
    else if (own)
      dlclose(own);
  }
  const char *fix_dir = *dir ? dir : "emulator/target/emu";
  if (*loaded && t)
    snprintf(warning, sizeof(warning),
             "NCCLEMU: libnccl.so.2 is the emulator's, but the libcudart.so.13 loaded first is "
             "not (%.300s): the application's CUDA calls go there, and NCCL runs on the emulator's "
             "own runtime (%.300s) with streams of its own only. Load the emulator's runtime "
             "first: LD_LIBRARY_PATH=%.300s, or LD_PRELOAD=%.300s/libcudart.so.13; with JavaCPP, "
             "-Dorg.bytedeco.javacpp.platform.linkpath=%.300s (docs/emulator.md)",
             loaded, candidate, fix_dir, fix_dir, fix_dir);
  else if (*loaded)
    snprintf(warning, sizeof(warning),
             "NCCLEMU: the libcudart.so.13 loaded (%.300s) is not the emulator's, and there is no "
             "emulator's runtime next to this NCCL (%.300s): NCCL answers as without devices. Load "
             "emulator/target/emu/libcudart.so.13 first (LD_LIBRARY_PATH or LD_PRELOAD)",
             loaded, fix_dir);
  else if (!t)
    snprintf(warning, sizeof(warning),
             "NCCLEMU: no CUDA runtime is loaded and there is no emulator's runtime next to this "
             "NCCL (%.300s): NCCL answers as without devices. Link or load "
             "emulator/target/emu/libcudart.so.13",
             fix_dir);
  if (*warning)
    atomic_store(&warning_due, true);
}

static const struct emu_rt_ops *rt(void) {
  pthread_once(&runtime_once, find_runtime);
  if (atomic_load_explicit(&warning_due, memory_order_relaxed) &&
      atomic_exchange(&warning_due, false))
    emu_warn_dev(0, "%s", warning);
  return runtime;
}

/* ---------------------------------------------------------------- the runtime's functions */

enum emu_knob emu_rt_knob(const char *fn, int *code) { return rt()->knob(fn, code); }
int emu_rt_device_count(void) { return rt()->device_count(); }
unsigned emu_rt_destroy_timeout_ms(void) { return rt()->destroy_timeout_ms(); }
bool emu_rt_exit_waits(void) { return rt()->exit_waits(); }
int emu_rt_current_device(void) { return rt()->current_device(); }

void emu_rt_live_add(void *handle, enum emu_kind kind, const struct emu_live_info *info) {
  rt()->live_add(handle, kind, info);
}

bool emu_rt_live_acquire(void *handle, enum emu_kind kind) {
  return rt()->live_acquire(handle, kind);
}

bool emu_rt_live_remove(void *handle, enum emu_kind kind, struct emu_live_info *info) {
  return rt()->live_remove(handle, kind, info);
}

void emu_rt_live_update(void *handle, enum emu_kind kind, const struct emu_live_info *info) {
  rt()->live_update(handle, kind, info);
}

cudaError_t emu_rt_mem_alloc(void **ptr, size_t size, enum emu_kind kind) {
  return rt()->mem_alloc(ptr, size, kind);
}

cudaError_t emu_rt_mem_free(void *ptr, enum emu_kind kind) { return rt()->mem_free(ptr, kind); }

cudaError_t emu_rt_stream_acquire(cudaStream_t handle, bool per_thread, int device,
                                  struct emu_stream **out) {
  return rt()->stream_acquire(handle, per_thread, device, out);
}

void emu_rt_stream_release(struct emu_stream *s) { rt()->stream_release(s); }

uint64_t emu_rt_stream_enqueue(struct emu_stream *s, struct emu_op *op) {
  return rt()->stream_enqueue(s, op);
}

int emu_rt_stream_device(const struct emu_stream *s) { return rt()->stream_device(s); }

const char *emu_rt_error_string(cudaError_t e) { return rt()->error_string(e); }
