/* The emulated NCCL beside a CUDA runtime that is not the emulator's: a stand-in with the real
 * soname and none of the emulator's symbols (fake_cudart.c) loaded first, as JavaCPP loads the
 * CUDA toolkit's runtime before NCCL. libnccl.so.2 loads with every symbol bound (RTLD_NOW),
 * says so in one WARN line with the fix, and works on the emulator's own runtime. This program
 * links nothing of the emulator: it loads what it tests. */
#include <dlfcn.h>
#include <link.h>

#include "test.h"

static const char *libdir(void) { return getenv("NCCLEMU_TEST_LIBDIR"); }

static const char *path_in(const char *dir, const char *name) {
  static __thread char buf[2][1024];
  static __thread int next;
  char *p = buf[next++ & 1];
  snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
  return p;
}

static void *load(const char *path, int mode) {
  void *h = dlopen(path, mode);
  if (!h)
    fprintf(stderr, "%s\n", dlerror());
  REQUIRE_EQ(h != NULL, 1);
  return h;
}

#define SYM(h, name) ((__typeof__(&name))dlsym(h, #name))

static void *fake_first_then_nccl(void) {
  /* as HotSpot's System.load, the way JavaCPP loads the toolkit's libcudart */
  load(path_in(getenv("NCCLEMU_TEST_ARTEFACTS"), "fake-cudart/libcudart.so.13"), RTLD_LAZY);
  /* RTLD_NOW: a symbol libnccl needed from the emulator's runtime would fail the load here */
  return load(path_in(libdir(), "libnccl.so.2"), RTLD_NOW);
}

static void a_foreign_runtime_first_is_one_warn_line_and_nccl_works(void) {
  void *nccl = fake_first_then_nccl();
  void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  struct link_map *lm = NULL;
  REQUIRE_EQ(rt && dlinfo(rt, RTLD_DI_LINKMAP, &lm) == 0, 1);
  CHECK(strstr(lm->l_name, "fake-cudart") != NULL); /* the loader paired NCCL with the fake */
  capture_stderr();
  int version = 0;
  CHECK_EQ(SYM(nccl, ncclGetVersion)(&version), ncclSuccess);
  char *err = captured_stderr();
  char want[2048];
  snprintf(want, sizeof(want),
           "NCCLEMU: libnccl.so.2 is the emulator's, but the libcudart.so.13 loaded first is not "
           "(%s)",
           lm->l_name);
  CHECK(is_one_warn_line(err, want));
  snprintf(want, sizeof(want), "LD_PRELOAD=%s/libcudart.so.13", libdir());
  CHECK(err && strstr(err, want));
  CHECK(err && strstr(err, "-Dorg.bytedeco.javacpp.platform.linkpath="));
  free(err);
  CHECK_EQ(version, 22903);
  /* NCCL works on the emulator's own runtime: its streams (0) and memory */
  capture_stderr();
  ncclUniqueId id;
  ncclComm_t comm;
  CHECK_EQ(SYM(nccl, ncclGetUniqueId)(&id), ncclSuccess);
  CHECK_EQ(SYM(nccl, ncclCommInitRank)(&comm, 1, id, 0), ncclSuccess);
  static int in = 42, out;
  CHECK_EQ(SYM(nccl, ncclAllReduce)(&in, &out, 1, ncclInt32, ncclSum, comm, 0), ncclSuccess);
  CHECK_EQ(SYM(nccl, ncclCommDestroy)(comm), ncclSuccess); /* after the comm's work */
  CHECK_EQ(out, 42);
  void *mem = NULL;
  CHECK_EQ(SYM(nccl, ncclMemAlloc)(&mem, 256), ncclSuccess);
  CHECK_EQ(SYM(nccl, ncclMemFree)(mem), ncclSuccess);
  err = captured_stderr();
  CHECK_EQ(count_lines(err), 0); /* one line, once */
  free(err);
}

/* A stream of the other runtime is none of the emulator's: a CUDA failure, not a crash. */
static void the_other_runtimes_streams_are_foreign(void) {
  void *nccl = fake_first_then_nccl();
  ncclUniqueId id;
  ncclComm_t comm;
  capture_stderr();
  CHECK_EQ(SYM(nccl, ncclGetUniqueId)(&id), ncclSuccess);
  CHECK_EQ(SYM(nccl, ncclCommInitRank)(&comm, 1, id, 0), ncclSuccess);
  static int v;
  CHECK_EQ(SYM(nccl, ncclAllReduce)(&v, &v, 1, ncclInt32, ncclSum, comm, (cudaStream_t)0x7e57),
           ncclUnhandledCudaError);
  char *err = captured_stderr();
  CHECK(err && strstr(err, "ncclAllReduce: Cuda failure 'invalid resource handle'"));
  free(err);
  CHECK_EQ(SYM(nccl, ncclCommDestroy)(comm), ncclSuccess);
}

static void the_emulators_runtime_first_is_silent(void) {
  load(path_in(libdir(), "libcudart.so.13"), RTLD_LAZY);
  void *nccl = load(path_in(libdir(), "libnccl.so.2"), RTLD_NOW);
  capture_stderr();
  int version = 0;
  CHECK_EQ(SYM(nccl, ncclGetVersion)(&version), ncclSuccess);
  char *err = captured_stderr();
  CHECK_EQ(count_lines(err), 0);
  free(err);
}

/* A static NCCL in a library without any runtime: one line, and no devices. */
static void a_static_nccl_without_a_runtime_has_no_devices(void) {
  char self[1024];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 32);
  REQUIRE_EQ(n > 0, 1);
  self[n] = '\0';
  strcpy(strrchr(self, '/') + 1, "libstaticnort.so");
  void *h = load(self, RTLD_LAZY);
  ncclResult_t (*init)(void) = (ncclResult_t(*)(void))dlsym(h, "static_nort_init");
  REQUIRE_EQ(init != NULL, 1);
  capture_stderr();
  CHECK_EQ(init(), ncclUnhandledCudaError);
  char *err = captured_stderr();
  CHECK_EQ(count_of(err, "NCCLEMU: no CUDA runtime is loaded"), 1);
  CHECK_EQ(count_of(err, "Cuda failure 'no CUDA-capable device is detected'"), 1);
  CHECK(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD) == NULL);
  free(err);
}

static const struct test_case cases[] = {
    {"a_foreign_runtime_first_is_one_warn_line_and_nccl_works",
     a_foreign_runtime_first_is_one_warn_line_and_nccl_works, NULL, NULL},
    {"the_other_runtimes_streams_are_foreign", the_other_runtimes_streams_are_foreign, NULL, NULL},
    {"the_emulators_runtime_first_is_silent", the_emulators_runtime_first_is_silent, NULL, NULL},
    {"a_static_nccl_without_a_runtime_has_no_devices",
     a_static_nccl_without_a_runtime_has_no_devices, NULL, NULL},
};

TEST_MAIN(cases)
