/* The emulated NCCL linked statically into a JNI-like library (libstaticjni.so, from
 * static_jni.c and libnccl_static.a), loaded as a JVM loads one: NCCL works from inside it with
 * the shared emulated runtime, no libnccl.so.2 is loaded, NCCL's API stays exported from it and
 * nothing else of the emulator does, it loads the profiler plugin, and a dlclose leaves no thread
 * of it behind. This program links nothing of the emulator. */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>

#include "test.h"

typedef int (*run_fn)(int destroy, ncclComm_t *out);

static void *load_jni(void) {
  char path[1024];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
  REQUIRE_EQ(n > 0, 1);
  path[n] = '\0';
  strcpy(strrchr(path, '/') + 1, "libstaticjni.so");
  void *h = dlopen(path, RTLD_LAZY); /* HotSpot's System.load */
  if (!h)
    fprintf(stderr, "%s\n", dlerror());
  REQUIRE_EQ(h != NULL, 1);
  return h;
}

static int run(void *h, int destroy) {
  run_fn f = (run_fn)dlsym(h, "static_jni_run");
  REQUIRE_EQ(f != NULL, 1);
  return f(destroy, NULL);
}

static int loaded_objects(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (strstr(info->dlpi_name, "libnccl.so"))
    ++*(int *)data;
  return 0;
}

static void nccl_works_from_inside_the_library(void) {
  void *h = load_jni();
  CHECK_EQ(run(h, 1), 0);
  int nccls = 0;
  dl_iterate_phdr(loaded_objects, &nccls);
  CHECK_EQ(nccls, 0); /* no libnccl.so.2: NCCL is in the library */
  CHECK(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD) != NULL); /* the shared runtime */
}

/* As a real libnccl_static.a: NCCL's functions keep default visibility (so an interposer in
 * the global scope can see the library's calls), the emulator's internals none. */
static void only_nccls_api_is_exported(void) {
  void *h = load_jni();
  CHECK(dlsym(h, "ncclCommInitRank") != NULL);
  CHECK(dlsym(h, "pncclCommInitRank") == dlsym(h, "ncclCommInitRank"));
  CHECK(dlsym(h, "ncclAllReduce") != NULL);
  CHECK(dlsym(h, "emu_warn") == NULL);
  CHECK(dlsym(h, "emu_comm_join") == NULL);
  CHECK(dlsym(h, "emu_prof_comm_init") == NULL);
}

static void the_library_loads_the_profiler_plugin(void) {
  void *h = load_jni();
  CHECK_EQ(run(h, 1), 0);
  char *log = read_file(test_path("plugin.log"));
  char tid[32];
  snprintf(tid, sizeof(tid), "init v6 tid=%d ", (int)gettid());
  CHECK(log && strstr(log, tid)); /* on this thread, inside the call */
  CHECK_EQ(count_of(log, "type=P2p "), 2);
  CHECK_EQ(count_of(log, "finalize "), 1);
  free(log);
  char *info = read_file(test_path("nccl.log"));
  CHECK(info && strstr(info, "NCCL INFO Successfully loaded external profiler plugin "));
  CHECK(info && strstr(info, " - Init COMPLETE"));
  free(info);
}

static void a_leaked_comm_gets_init_and_no_finalize(void) {
  void *h = load_jni();
  CHECK_EQ(run(h, 0), 0);
}

static int init_without_finalize(int status, const char *dir) {
  (void)status;
  char path[512];
  snprintf(path, sizeof(path), "%s/plugin.log", dir);
  char *log = read_file(path);
  int failures = count_of(log, "init v6 ") != 1 || count_of(log, "finalize ") != 0;
  snprintf(path, sizeof(path), "%s/report", dir);
  char *report = read_file(path);
  failures += count_of(report, "comm ") != 1;
  if (failures)
    fprintf(stderr, "plugin log:\n%s\nreport:\n%s\n", log ? log : "(none)",
            report ? report : "(none)");
  free(log);
  free(report);
  return failures != 0;
}

static int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  REQUIRE_EQ(d != NULL, 1);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* A JNI library is dlclosed when its class loader goes: NCCL inside it leaves no thread behind
 * (the unique id's bootstrap root, alive for the library, stops at its unload); a thread left in
 * poll there would return into unmapped code, or into the next copy mapped at the same place. */
static void *nothing(void *arg) { return arg; }

static void a_dlclosed_library_leaves_no_thread_behind(void) {
  /* the thread sanitizer's runtime starts a thread of its own at the first thread: before the count */
  pthread_t first;
  REQUIRE_EQ(pthread_create(&first, NULL, nothing, NULL), 0);
  pthread_join(first, NULL);
  int before = threads_now();
  void *h = load_jni();
  /* the shared runtime stays (its stream worker ends on its own after the stream's destroy) */
  CHECK(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL);
  CHECK_EQ(run(h, 1), 0);
  CHECK(threads_now() > before); /* the root, at least */
  CHECK_EQ(dlclose(h), 0);
  int after = threads_now();
  for (int i = 0; i < 200 && after > before; i++) {
    usleep(10000);
    after = threads_now();
  }
  CHECK_EQ(after, before);
}

#define PLUGIN "NCCL_PROFILER_PLUGIN=testlog NCCLEMU_TESTLOG=@/plugin.log"

static const struct test_case cases[] = {
    {"nccl_works_from_inside_the_library", nccl_works_from_inside_the_library, NULL, NULL},
    {"only_nccls_api_is_exported", only_nccls_api_is_exported, NULL, NULL},
    {"the_library_loads_the_profiler_plugin", the_library_loads_the_profiler_plugin,
     PLUGIN " NCCL_DEBUG=INFO NCCL_DEBUG_FILE=@/nccl.log", NULL},
    {"a_leaked_comm_gets_init_and_no_finalize", a_leaked_comm_gets_init_and_no_finalize,
     PLUGIN " NCCLEMU_REPORT=@/report", init_without_finalize},
    {"a_dlclosed_library_leaves_no_thread_behind", a_dlclosed_library_leaves_no_thread_behind, NULL, NULL},
};

TEST_MAIN(cases)
