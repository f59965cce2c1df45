/* An application's JNI-style library for test_never_changes: one scenario over every wrapped kind
 * (a creation, a destroy and an abort, hot calls, synchronizes), called in each way an application
 * calls (plainly, as tail calls, through pointers, on a pthread, in a fork's child). Built -O2, three
 * times: linked by soname against libnccl.so.2 and libcudart.so.13, with NCCL's archive exported,
 * and with it hidden; the Makefile checks that the tail calls are jumps. What the scenario saw is
 * written as text: the test compares it with and without the agent. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_api.h"

#define EXPORT __attribute__((visibility("default")))
#define TAIL __attribute__((noinline))

enum { WAY_PLAIN, WAY_TAIL, WAY_POINTER, WAY_THREAD, WAY_FORK };

/* restarts at 1 when the library is loaded again */
static int loads;
static int *fini_count;
__attribute__((destructor)) static void app_fini(void) {
  if (fini_count != NULL) (*fini_count)++;
}
EXPORT int app_loaded(int *fini) {
  fini_count = fini;
  return ++loads;
}

/* each ends in a jump to the function (the Makefile checks it) */
#if defined(__aarch64__)
/* AAPCS64 passes ncclUniqueId (128 bytes) as a pointer to a copy the caller makes, and gcc makes
 * that copy in its own frame: it never turns this call into a tail call. Written here as the jump
 * gcc -O2 makes on x86-64, handing on the copy app_tail_init's own caller made (app_tail_init's to
 * give: it reads it no more), so the tail call reaches the wrapper here too. */
__asm__(".text\n"
        ".globl app_tail_init\n"
        ".type app_tail_init, %function\n"
        ".p2align 2\n"
        "app_tail_init:\n"
        "  mov x2, x1\n" /* id: the caller's copy */
        "  mov w1, #1\n" /* nranks */
        "  mov w3, #0\n" /* rank */
        "  b ncclCommInitRank\n"
        ".size app_tail_init, .-app_tail_init\n");
EXPORT ncclResult_t app_tail_init(ncclComm_t *c, ncclUniqueId id);
#else
EXPORT TAIL ncclResult_t app_tail_init(ncclComm_t *c, ncclUniqueId id) { return ncclCommInitRank(c, 1, id, 0); }
#endif
TAIL ncclResult_t app_tail_destroy(ncclComm_t c) { return ncclCommDestroy(c); }
TAIL ncclResult_t app_tail_abort(ncclComm_t c) { return ncclCommAbort(c); }
TAIL cudaError_t app_tail_record(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); }
TAIL cudaError_t app_tail_sync(cudaStream_t s) { return cudaStreamSynchronize(s); }
/* exported, called from outside (the test, as the JVM calls a JNI method): its return address is
 * the caller's, in an object that calls no NCCL */
EXPORT TAIL ncclResult_t app_exported_tail_destroy(ncclComm_t c) { return ncclCommDestroy(c); }

struct calls {
  ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*destroy)(ncclComm_t);
  ncclResult_t (*abort)(ncclComm_t);
  cudaError_t (*record)(cudaEvent_t, cudaStream_t);
  cudaError_t (*sync)(cudaStream_t);
};

/* exported, as app_scenario is: its call is the application's where NCCL is linked inside. On
 * x86-64 -O2 makes it a tail call (the return address is app_scenario's); on aarch64 it is a plain
 * call (ncclUniqueId goes as a copy in its frame) and the return address is its own */
EXPORT TAIL ncclResult_t app_plain_init(ncclComm_t *c, int n, ncclUniqueId id, int r) { return ncclCommInitRank(c, n, id, r); }
static ncclResult_t tail_init(ncclComm_t *c, int n, ncclUniqueId id, int r) {
  (void)n, (void)r;
  return app_tail_init(c, id);
}

/* exported: a library that carries NCCL inside has its calls from its exported functions tracked,
 * the rest taken for NCCL's own (docs/usage.md) */
EXPORT void app_scenario(int way, char *out, size_t cap) {
  struct calls k = {app_plain_init, ncclCommDestroy, ncclCommAbort, cudaEventRecord, cudaStreamSynchronize};
  if (way == WAY_TAIL) k = (struct calls){tail_init, app_tail_destroy, app_tail_abort, app_tail_record, app_tail_sync};
  /* through pointers the compiler cannot see through */
  struct calls *volatile kp = &k;
  ncclResult_t (*volatile init)(ncclComm_t *, int, ncclUniqueId, int) = ncclCommInitRank;
  if (way == WAY_POINTER) kp->init = init;
  ncclUniqueId id;
  ncclComm_t comm = NULL, comm2 = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t e = NULL;
  static float buf[4] = {1, 2, 3, 4};
  int r[12];
  r[0] = ncclGetUniqueId(&id);
  r[1] = kp->init(&comm, 1, id, 0);
  r[2] = kp->init(&comm2, 1, id, 0);
  r[3] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  r[4] = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  r[5] = ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, s);
  r[6] = kp->record(e, s);
  r[7] = kp->sync(s);
  r[8] = cudaEventQuery(e);
  r[9] = (int)cudaEventDestroy(e) | (int)cudaStreamDestroy(s) << 8;
  r[10] = kp->destroy(comm);
  r[11] = kp->abort(comm2);
  snprintf(out, cap, "id %d init %d %d stream %d event %d allreduce %d record %d sync %d query %d destroyed %d destroy %d abort %d buf %g %g",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], buf[0], buf[3]);
}

struct job {
  char *out;
  size_t cap;
};
static void *on_thread(void *p) {
  struct job *j = p;
  app_scenario(WAY_PLAIN, j->out, j->cap);
  return NULL;
}

/* The scenario in one way; out: what it saw. */
EXPORT void app_run(int way, char *out, size_t cap) {
  out[0] = '\0';
  if (way == WAY_THREAD) {
    struct job j = {out, cap};
    pthread_t t;
    pthread_create(&t, NULL, on_thread, &j);
    pthread_join(t, NULL);
    return;
  }
  if (way == WAY_FORK) {
    int fd[2];
    if (pipe(fd) != 0) return;
    pid_t child = fork();
    if (child == 0) {
      char line[512];
      alarm(20); /* a child that hangs fails the case, not the run */
      app_scenario(WAY_PLAIN, line, sizeof(line));
      ssize_t w = write(fd[1], line, strlen(line));
      _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char line[512];
    ssize_t n = read(fd[0], line, sizeof(line) - 1);
    close(fd[0]);
    line[n > 0 ? n : 0] = '\0';
    int status = 0;
    waitpid(child, &status, 0);
    snprintf(out, cap, "child %s, status %d", line, status);
    return;
  }
  app_scenario(way, out, cap);
}
