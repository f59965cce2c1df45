/* libcuda.so.1: the soname JavaCPP's cudart JNI library links. cuInit and cuDriverGetVersion
 * answer; every other entry point says CUDA_ERROR_NOT_SUPPORTED, whatever it is passed. */
#include <dlfcn.h>

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
  const char *names[] = {"cuCtxCreate_v4", "cuMemAlloc_v2", "cuStreamCreate", "cuModuleLoad", "cuDeviceGet"};
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

static const struct test_case cases[] = {
    {"init_and_version_answer", init_and_version_answer, NULL, NULL},
    {"other_entry_points_are_not_supported", other_entry_points_are_not_supported, NULL, NULL},
};

TEST_MAIN(cases)
