/* The native part never changes what the application does. For each way of linking NCCL (by
 * soname, NCCL's archive exported, hidden) and each way of calling (plainly, tail calls, through
 * pointers, on a pthread, in a fork's child, behind another interposer, across dlclose/dlopen
 * cycles), the application library's scenario (app_lib.c: a creation, a destroy and an abort, hot
 * calls, synchronizes) runs in a process of its own without the agent and in one with it, loaded
 * and promoted as the JVM does: what the application saw must be the same, and the calls must be
 * tracked where docs/usage.md says (the handle's upcalls, the calling library). */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent_test.h"

enum { WAY_PLAIN, WAY_TAIL, WAY_POINTER, WAY_THREAD, WAY_FORK, WAY_OTHER, WAY_EXPORTED_TAIL, WAY_DLCLOSE, WAY_ATTACH,
       WAY_OTHER_PATCHED };
enum { LINK_DYNAMIC, LINK_STATIC_EXPORTED, LINK_STATIC_HIDDEN };
static const char *const app_libs[] = {"libng_app_dyn.so", "libng_app_sexp.so", "libng_app_shid.so"};

/* What a run leaves for the case, in memory shared across its forks. */
typedef struct {
  char out[2048];
  pid_t pid;                  /* the run's process: upcalls from another one came from a fork's child */
  int inits, destroys, aborts; /* upcalls (exit) of the run's process */
  int child_upcalls;          /* upcalls of any other process */
  char init_library[256];     /* the calling library of the last ncclCommInitRank ("?" none, "-" unknown) */
  char destroy_library[256];
} run_result;
static run_result *shared;

static int fn_init, fn_destroy, fn_abort;

static void count(int fn) {
  if (getpid() != shared->pid) {
    __atomic_fetch_add(&shared->child_upcalls, 1, __ATOMIC_SEQ_CST);
    return;
  }
  if (fn == fn_init) shared->inits++;
  if (fn == fn_destroy) shared->destroys++;
  if (fn == fn_abort) shared->aborts++;
}

static void library_of(int64_t caller, char *out, size_t cap) {
  char *lib = ng->caller_library(caller);
  snprintf(out, cap, "%s", lib != NULL ? lib : "-");
  free(lib);
}

static int64_t c_enter(int fn, const int64_t *slots, int n, int64_t caller) {
  (void)slots, (void)n, (void)caller;
  if (getpid() != shared->pid) __atomic_fetch_add(&shared->child_upcalls, 1, __ATOMIC_SEQ_CST);
  (void)fn;
  return 42;
}
static int c_exit(int fn, const int64_t *slots, int n, int status, int64_t token, int64_t caller, int slot) {
  (void)slots, (void)n, (void)status, (void)token, (void)slot;
  count(fn);
  if (getpid() == shared->pid && fn == fn_init) library_of(caller, shared->init_library, sizeof(shared->init_library));
  if (getpid() == shared->pid && fn == fn_destroy) library_of(caller, shared->destroy_library, sizeof(shared->destroy_library));
  return 0;
}
static int64_t c_hot_enter(int fn, int64_t handle, int64_t stream, int64_t caller) {
  (void)fn, (void)handle, (void)stream, (void)caller;
  if (getpid() != shared->pid) __atomic_fetch_add(&shared->child_upcalls, 1, __ATOMIC_SEQ_CST);
  return NCCLGUARD_NOT_JAVAS;
}
static void c_hot_exit(int fn, int64_t handle, int64_t stream, int status, int64_t token, int64_t caller) {
  (void)fn, (void)handle, (void)stream, (void)status, (void)token, (void)caller;
}
static int c_seen(int fn, int64_t handle, int device, int slot, int64_t caller) {
  (void)fn, (void)handle, (void)device, (void)slot, (void)caller;
  if (getpid() != shared->pid) __atomic_fetch_add(&shared->child_upcalls, 1, __ATOMIC_SEQ_CST);
  return 0;
}
static void c_plugin_init(int64_t record) { (void)record; }
static const ncclguard_hooks counting = {c_enter, c_exit, c_hot_enter, c_hot_exit, c_seen, c_plugin_init, NULL, NULL, NULL};

static void start_agent(void) {
  load_agent(&counting, 1);
  fn_init = fn_id("ncclCommInitRank");
  fn_destroy = fn_id("ncclCommDestroy");
  fn_abort = fn_id("ncclCommAbort");
}

/* The run itself, in its own process: the agent or not, then the application as a JVM loads it. */
/* The emulated NCCL and runtime an application library brought stay loaded (with and without the
 * agent alike): their detached threads (a stream's worker, NCCL's bootstrap root) outlive the
 * library's dlclose and would run unmapped code a moment later (a SIGSEGV in 3 of 40 runs under
 * load). What is compared is the application library's own unload. */
static void keep_emulator_loaded(void) {
  dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void run_app(int link, int way, int with_agent) {
  shared->pid = getpid();
  alarm(60);
  int behind = way == WAY_OTHER || way == WAY_OTHER_PATCHED;
  /* by its path: LD_PRELOAD loaded it under that name (it has no soname) */
  void *other = behind ? dlopen(bin_path("libng_other.so"), RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (with_agent && way != WAY_ATTACH) start_agent();
  /* the JVM's agent patches import slots too (native-patch=on): the application's, once loaded */
  if (with_agent && way == WAY_OTHER_PATCHED) ng->patch_imports();
  char line[512];
  size_t len = 0;
  int cycles = way == WAY_DLCLOSE ? 3 : 1;
  int finis = 0;
  for (int i = 0; i < cycles; i++) {
    void *app = open_or_die(bin_path(app_libs[link]), RTLD_LAZY);
    if (way == WAY_DLCLOSE) keep_emulator_loaded();
    int (*loaded)(int *) = (int (*)(int *))dlsym(app, "app_loaded");
    void (*run)(int, char *, size_t) = (void (*)(int, char *, size_t))dlsym(app, "app_run");
    int n = loaded(&finis);
    if (way == WAY_EXPORTED_TAIL) {
      /* the JVM's call of a JNI method whose last statement is the NCCL call */
      run(WAY_PLAIN, line, sizeof(line));
      int (*init)(ncclComm_t *, ncclUniqueId) = (int (*)(ncclComm_t *, ncclUniqueId))dlsym(app, "app_tail_init");
      int (*tail_destroy)(ncclComm_t) = (int (*)(ncclComm_t))dlsym(app, "app_exported_tail_destroy");
      int (*unique_id)(ncclUniqueId *) = (int (*)(ncclUniqueId *))dlsym(app, "ncclGetUniqueId");
      ncclUniqueId id;
      unique_id(&id);
      ncclComm_t comm = NULL;
      int ri = init(&comm, id);
      int rd = tail_destroy(comm);
      len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "%s; exported tail: init %d destroy %d; ", line, ri, rd);
    } else if (way == WAY_ATTACH) {
      /* the application's library loaded and used before an attach: its slots are bound by then */
      run(WAY_PLAIN, line, sizeof(line));
      len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "before the attach: %s; ", line);
      if (with_agent) {
        start_agent();
        if (ng->patch_imports() <= 0) len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "nothing patched; ");
      }
      run(WAY_PLAIN, line, sizeof(line));
      len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "%s; ", line);
    } else {
      run(behind || way == WAY_DLCLOSE ? WAY_PLAIN : way, line, sizeof(line));
      len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "%s; ", line);
    }
    if (way == WAY_DLCLOSE) {
      dlclose(app);
      len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "load %d, unloaded %d; ", n, finis);
    }
  }
  if (other != NULL) {
    int (*counted)(void) = (int (*)(void))dlsym(other, "other_counted");
    len += (size_t)snprintf(shared->out + len, sizeof(shared->out) - len, "other counted %d", counted());
  }
  fflush(NULL);
  _exit(0);
}

static int shared_fd = -1;

/* One run in a process of its own; behind another interposer, a process started with it in
 * LD_PRELOAD (this program again, told what to run). */
static void run_once(int link, int way, int with_agent) {
  memset(shared, 0, sizeof(*shared));
  strcpy(shared->init_library, "?");
  strcpy(shared->destroy_library, "?");
  pid_t child = fork();
  if (child == 0) {
    if (way == WAY_OTHER || way == WAY_OTHER_PATCHED) {
      char preload[1100], args[64], self[1024];
      snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", bin_path("libng_other.so"));
      putenv(preload);
      snprintf(args, sizeof(args), "%d,%d,%d,%d", link, way, with_agent, shared_fd);
      ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
      self[n > 0 ? n : 0] = '\0';
      /* under an emulator (qemu-user, the Makefile's RUN, passed as NG_TEST_RUN) the program is
       * started through it again: the kernel cannot run another architecture's code itself */
      char run[512], *cmd[16];
      int ncmd = 0;
      const char *runner = getenv("NG_TEST_RUN");
      snprintf(run, sizeof(run), "%s", runner != NULL ? runner : "");
      for (char *save, *w = strtok_r(run, " ", &save); w != NULL && ncmd < 12; w = strtok_r(NULL, " ", &save)) cmd[ncmd++] = w;
      cmd[ncmd++] = self;
      cmd[ncmd++] = "--run";
      cmd[ncmd++] = args;
      cmd[ncmd] = NULL;
      execvp(cmd[0], cmd);
      fprintf(stderr, "cannot start %s: %s\n", cmd[0], strerror(errno));
      _exit(127);
    }
    run_app(link, way, with_agent);
  }
  int status;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "%s, way %d, %s: the run ended with status 0x%x\n", app_libs[link], way,
            with_agent ? "agent" : "no agent", status);
    FAILED();
  }
}

/* Expected tracking with the agent: inits seen (0: NCCL hidden, nothing reaches the wrappers), and
 * the calling library named for the init and the destroy ("-": unknown). */
static void cell(int link, int way, int inits, const char *init_lib, const char *destroy_lib) {
#ifdef __SANITIZE_THREAD__
  /* the sanitizer cannot start threads in a fork's child of a process with threads (the agent's) */
  if (way == WAY_FORK) return;
#endif
  shared_fd = memfd_create("never_changes", 0);
  REQUIRE_EQ(shared_fd >= 0 && ftruncate(shared_fd, sizeof(run_result)) == 0, 1);
  shared = mmap(NULL, sizeof(run_result), PROT_READ | PROT_WRITE, MAP_SHARED, shared_fd, 0);
  REQUIRE_EQ(shared != MAP_FAILED, 1);
  run_once(link, way, 0);
  char plain[2048];
  snprintf(plain, sizeof(plain), "%s", shared->out);
  run_once(link, way, 1);
  if (strcmp(plain, shared->out) != 0) {
    fprintf(stderr, "without the agent: %s\nwith it:           %s\n", plain, shared->out);
    FAILED();
  }
  if (getenv("NG_VERBOSE") != NULL) fprintf(stderr, "%s\n", plain);
  CHECK(strstr(plain, "init 0 0") != NULL);
  CHECK_EQ(shared->child_upcalls, 0); /* a fork's child only forwards */
  if (way == WAY_FORK) return;        /* the scenario ran in the child alone */
#ifdef __SANITIZE_THREAD__
  /* its function entries and exits leave no tail call, and move calls into static functions (a
   * library with NCCL inside has those taken for NCCL's own): the results alone are compared */
  return;
#endif
  int cycles = way == WAY_DLCLOSE ? 3 : 1;
  CHECK_EQ(shared->inits, inits * cycles);
  CHECK_EQ(shared->destroys, (inits > 0 ? 1 : 0) * cycles + (way == WAY_EXPORTED_TAIL && inits > 0 ? 1 : 0));
  CHECK_EQ(shared->aborts, (inits > 0 ? 1 : 0) * cycles);
  if (inits > 0 && strcmp(shared->init_library, init_lib) != 0) {
    fprintf(stderr, "the init's calling library: %s, expected %s\n", shared->init_library, init_lib);
    FAILED();
  }
  if (inits > 0 && strcmp(shared->destroy_library, destroy_lib) != 0) {
    fprintf(stderr, "the destroy's calling library: %s, expected %s\n", shared->destroy_library, destroy_lib);
    FAILED();
  }
}

#define CELLS(name, link, inits, lib)                                                               \
  static void name##_plain(void) { cell(link, WAY_PLAIN, inits, lib, lib); }                        \
  static void name##_tail_calls(void) { cell(link, WAY_TAIL, inits, lib, lib); }                    \
  static void name##_through_pointers(void) { cell(link, WAY_POINTER, inits, lib, lib); }           \
  static void name##_on_a_pthread(void) { cell(link, WAY_THREAD, inits, lib, lib); }                \
  static void name##_in_a_fork_child(void) { cell(link, WAY_FORK, inits, lib, lib); }               \
  static void name##_dlclosed_and_opened_again(void) { cell(link, WAY_DLCLOSE, inits, lib, lib); } \
  static void name##_loaded_and_used_before_an_attach(void) { cell(link, WAY_ATTACH, inits, lib, lib); }

CELLS(dynamic, LINK_DYNAMIC, 2, "libng_app_dyn.so")
CELLS(static_exported, LINK_STATIC_EXPORTED, 2, "libng_app_sexp.so")
/* NCCL hidden inside: none of its calls reaches the wrappers (cudart's do) */
CELLS(static_hidden, LINK_STATIC_HIDDEN, 0, "?")

/* the tail call's return address is in the caller of the JNI method (here the test): unknown */
static void dynamic_tail_call_from_an_exported_function(void) { cell(LINK_DYNAMIC, WAY_EXPORTED_TAIL, 3, "-", "-"); }
static void static_exported_tail_call_from_an_exported_function(void) { cell(LINK_STATIC_EXPORTED, WAY_EXPORTED_TAIL, 3, "-", "-"); }
/* behind another interposer that forwards with RTLD_NEXT: its call is the agent's caller */
static void dynamic_behind_another_interposer(void) { cell(LINK_DYNAMIC, WAY_OTHER, 2, "libng_other.so", "libng_other.so"); }
static void static_hidden_behind_another_interposer(void) { cell(LINK_STATIC_HIDDEN, WAY_OTHER, 0, "?", "?"); }
/* the same with import slots patched (native-patch, as in a JVM): the functions the other
 * interposer defines are left to it, so it still counts every call (the output compares its count;
 * patched, it counted none) and its call stays the wrappers' caller */
static void dynamic_behind_another_interposer_with_slots_patched(void) {
  cell(LINK_DYNAMIC, WAY_OTHER_PATCHED, 2, "libng_other.so", "libng_other.so");
}

/* The wrappers' resolution walks the loaded objects (dl_iterate_phdr, the dynamic linker's write
 * lock held) while another thread dlopens and dlcloses (its load lock held, then the write lock):
 * a callback that asked dladdr or dlsym (the load lock) deadlocked against it, as a JVM's
 * JNA cleaner thread closing a library did. The application library is opened, used and closed
 * again and again (each load resolves anew) while a second thread opens and closes another one;
 * each round bounded by alarm(): a deadlock ends the case by SIGALRM (a round, not the whole case:
 * on a VM whose munmap is slow the 200 rounds took 60-120 s, a deadlocked round never ends). */
#if !defined(__SANITIZE_THREAD__)
static atomic_int churning = 1;
static void *open_and_close(void *arg) {
  (void)arg;
  while (atomic_load(&churning)) {
    void *h = dlopen(bin_path("libng_other.so"), RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) dlclose(h);
  }
  return NULL;
}

static void resolution_races_dlopen_and_dlclose_without_a_deadlock(void) {
  shared = mmap(NULL, sizeof(run_result), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE_EQ(shared != MAP_FAILED, 1);
  shared->pid = getpid();
  alarm(30);
  start_agent();
  pthread_t t;
  REQUIRE_EQ(pthread_create(&t, NULL, open_and_close, NULL), 0);
  char line[512];
  /* under qemu-user (NG_TEST_RUN) a round takes seconds: a few there, the property is the linker's */
  int rounds = getenv("NG_TEST_RUN") != NULL ? 3 : 200;
  for (int i = 0; i < rounds; i++) {
    alarm(30);
    void *app = open_or_die(bin_path("libng_app_dyn.so"), RTLD_LAZY);
    keep_emulator_loaded();
    void (*run)(int, char *, size_t) = (void (*)(int, char *, size_t))dlsym(app, "app_run");
    run(WAY_PLAIN, line, sizeof(line));
    dlclose(app);
  }
  atomic_store(&churning, 0);
  pthread_join(t, NULL);
  alarm(0);
  CHECK_EQ(shared->inits, 2 * rounds);
}
#endif

#define ROW(name) {#name "_plain", name##_plain, NULL, NULL}, {#name "_tail_calls", name##_tail_calls, NULL, NULL}, \
    {#name "_through_pointers", name##_through_pointers, NULL, NULL}, {#name "_on_a_pthread", name##_on_a_pthread, NULL, NULL}, \
    {#name "_in_a_fork_child", name##_in_a_fork_child, NULL, NULL}, \
    {#name "_dlclosed_and_opened_again", name##_dlclosed_and_opened_again, NULL, NULL}, \
    {#name "_loaded_and_used_before_an_attach", name##_loaded_and_used_before_an_attach, NULL, NULL}

static const struct test_case cases[] = {
    ROW(dynamic),
    ROW(static_exported),
    ROW(static_hidden),
    {"dynamic_tail_call_from_an_exported_function", dynamic_tail_call_from_an_exported_function, NULL, NULL},
    {"static_exported_tail_call_from_an_exported_function", static_exported_tail_call_from_an_exported_function, NULL, NULL},
    {"dynamic_behind_another_interposer", dynamic_behind_another_interposer, NULL, NULL},
    {"static_hidden_behind_another_interposer", static_hidden_behind_another_interposer, NULL, NULL},
    {"dynamic_behind_another_interposer_with_slots_patched", dynamic_behind_another_interposer_with_slots_patched, NULL, NULL},
#if !defined(__SANITIZE_THREAD__)
    /* not under the thread sanitizer: the dynamic linker's own malloc and free in two threads'
     * dlopen and dlclose, ordered by its lock, which it does not see (google/sanitizers#611) */
    {"resolution_races_dlopen_and_dlclose_without_a_deadlock", resolution_races_dlopen_and_dlclose_without_a_deadlock, NULL, NULL},
#endif
};

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--run") == 0) {
    int link, way, with_agent, fd;
    if (sscanf(argv[2], "%d,%d,%d,%d", &link, &way, &with_agent, &fd) != 4) return 2;
    shared = mmap(NULL, sizeof(run_result), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) return 2;
    run_app(link, way, with_agent);
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  return run_cases(cases, (int)(sizeof(cases) / sizeof(cases[0])), argc, argv);
}
