/* 16 threads create, use and release events and streams through the JNI library while 4 others
 * read the C slots as the exit report would: no false pending state, every slot freed once C
 * and "Java" let go, no crash; run under the thread sanitizer too. */
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>

#include "agent_test.h"

#if defined(__SANITIZE_THREAD__)
#define ITERATIONS_DEFAULT 40
#else
#define ITERATIONS_DEFAULT 400
#endif
/* NG_STRESS_ITERATIONS scales the cases down where each op costs far more (under qemu) */
static int iterations(void) {
  const char *v = getenv("NG_STRESS_ITERATIONS");
  return v != NULL && atoi(v) > 0 ? atoi(v) : ITERATIONS_DEFAULT;
}
#define ITERATIONS iterations()
#define WORKERS 16
#define READERS 4

/* Java's side, as far as slots go: one record per handle, replaced by a creation at the same
 * address (its release was not seen yet), ended by a release whose enter saw that very record
 * (the Java tracker's serials). */
static pthread_mutex_t java_lock = PTHREAD_MUTEX_INITIALIZER;
#define HELD (1 << 16)
static int64_t held_handle[HELD];
static int held_slot[HELD];
static int64_t held_serial[HELD];
static int nheld;
static int64_t serials;
static atomic_int reading = 1;
static atomic_long false_states, reads;
static int fn_event_create, fn_stream_create, fn_event_destroy, fn_stream_destroy;
/* the slot of this thread's last creation, as the creating call's exit gave it */
static __thread int last_slot[2];

static int is_stream_slot(int slot) { return (slot & NCCLGUARD_STREAM_SLOT_BIT) != 0; }

/* under java_lock */
static int held_index(int64_t handle, int stream) {
  for (int i = 0; i < nheld; i++) {
    if (held_handle[i] == handle && is_stream_slot(held_slot[i]) == stream) return i;
  }
  return -1;
}

static int64_t s_enter(int fn, const int64_t *slots, int n, int64_t caller) {
  (void)n, (void)caller;
  if (fn != fn_event_destroy && fn != fn_stream_destroy) return 0;
  pthread_mutex_lock(&java_lock);
  int i = held_index(slots[0], fn == fn_stream_destroy);
  int64_t token = i >= 0 ? held_serial[i] : 0;
  pthread_mutex_unlock(&java_lock);
  return token;
}

static int s_exit(int fn, const int64_t *slots, int n, int status, int64_t token, int64_t caller, int slot) {
  (void)n, (void)caller;
  if (status != 0) return 0;
  int released = -1;
  if ((fn == fn_event_create || fn == fn_stream_create) && slot >= 0) {
    int64_t handle = (int64_t)(uintptr_t) * (void **)(uintptr_t)slots[0];
    pthread_mutex_lock(&java_lock);
    int i = held_index(handle, fn == fn_stream_create);
    if (i >= 0) {
      released = held_slot[i];
    } else {
      i = 0;
      while (i < nheld && held_handle[i] != 0) i++;
      if (i == nheld && nheld < HELD) nheld++;
    }
    held_handle[i] = handle;
    held_slot[i] = slot;
    held_serial[i] = ++serials;
    pthread_mutex_unlock(&java_lock);
    if (released >= 0) ng->release_slot(released);
    last_slot[fn == fn_stream_create] = slot;
    return 1;
  }
  if ((fn == fn_event_destroy || fn == fn_stream_destroy) && token > 0) {
    pthread_mutex_lock(&java_lock);
    for (int i = 0; i < nheld; i++) {
      if (held_serial[i] == token && held_handle[i] != 0) {
        released = held_slot[i];
        held_handle[i] = 0;
        break;
      }
    }
    pthread_mutex_unlock(&java_lock);
    if (released >= 0) ng->release_slot(released);
  }
  return 0;
}

static int64_t s_hot_enter(int fn, int64_t handle, int64_t stream, int64_t caller) {
  (void)fn, (void)handle, (void)stream, (void)caller;
  return NCCLGUARD_NOT_JAVAS;
}

static void s_hot_exit(int fn, int64_t handle, int64_t stream, int status, int64_t token, int64_t caller) {
  (void)fn, (void)handle, (void)stream, (void)status, (void)token, (void)caller;
}

static int s_seen(int fn, int64_t handle, int device, int slot, int64_t caller) {
  (void)fn, (void)handle, (void)device, (void)slot, (void)caller;
  return 0;
}

static const ncclguard_hooks java_like = {s_enter, s_exit, s_hot_enter, s_hot_exit, s_seen, NULL, NULL, NULL, NULL};

static int fn_allreduce;

/* The agent with Java's side as above, the JNI library, and the ids of the functions it follows. */
static void load_java_like(void) {
  load_agent(&java_like, 1);
  load_fake();
  fn_event_create = fn_id("cudaEventCreateWithFlags");
  fn_stream_create = fn_id("cudaStreamCreateWithFlags");
  fn_event_destroy = fn_id("cudaEventDestroy");
  fn_stream_destroy = fn_id("cudaStreamDestroy");
  fn_allreduce = fn_id("ncclAllReduce");
}

static int slot_of(int64_t handle, int stream) {
  int slot = -1;
  pthread_mutex_lock(&java_lock);
  for (int i = 0; i < nheld; i++) {
    if (held_handle[i] == handle && ((held_slot[i] & NCCLGUARD_STREAM_SLOT_BIT) != 0) == stream) slot = held_slot[i];
  }
  pthread_mutex_unlock(&java_lock);
  return slot;
}

static void *worker(void *arg) {
  (void)arg;
  float *buf = calloc(64, sizeof(float)); /* each worker's own: the streams read it meanwhile */
  ncclComm_t comm = one_rank_comm();
  for (int i = 0; i < ITERATIONS; i++) {
    cudaStream_t s;
    cudaEvent_t e;
    REQUIRE_EQ(fj->stream_create(&s), 0);
    int ss = last_slot[1];
    REQUIRE_EQ(fj->event_create(&e), 0);
    int es = last_slot[0];
    CHECK(es >= 0 && ss >= 0);
    REQUIRE_EQ(fj->allreduce(buf, 64, comm, s), 0);
    REQUIRE_EQ(fj->event_record(e, s), 0);
    while (fj->event_query(e) == cudaErrorNotReady) {
    }
    /* seen complete: neither the event nor its stream may say otherwise now */
    if (event_pending(es) != 0 || stream_pending(ss) != 0) atomic_fetch_add(&false_states, 1);
    REQUIRE_EQ(fj->allreduce(buf, 64, comm, s), 0);
    REQUIRE_EQ(fj->stream_sync(s), 0);
    if (stream_pending(ss) != 0) atomic_fetch_add(&false_states, 1);
    REQUIRE_EQ(fj->event_destroy(e), 0);
    REQUIRE_EQ(fj->stream_destroy(s), 0);
  }
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
  free(buf);
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  int32_t slots[64];
  int64_t out[3 * 64];
  while (atomic_load(&reading)) {
    int n = 0;
    pthread_mutex_lock(&java_lock);
    for (int i = 0; i < nheld && n < 64; i++) {
      if (held_handle[i] != 0) slots[n++] = held_slot[i];
    }
    pthread_mutex_unlock(&java_lock);
    int ne = 0;
    for (int i = 0; i < n; i++) {
      if (!(slots[i] & NCCLGUARD_STREAM_SLOT_BIT)) slots[ne++] = slots[i];
    }
    ng->events_pending(slots, ne, out);
    ng->streams_pending(slots, ne, out); /* event slots given as streams: refused, not read */
    for (int i = 0; i < ne; i++) {
      if (out[i] != -1) atomic_fetch_add(&false_states, 1);
    }
    atomic_fetch_add(&reads, 1);
  }
  return NULL;
}

static void sixteen_threads_create_use_and_release_while_others_read(void) {
  load_java_like();
  pthread_t w[WORKERS], r[READERS];
  for (int i = 0; i < READERS; i++) pthread_create(&r[i], NULL, reader, NULL);
  for (int i = 0; i < WORKERS; i++) pthread_create(&w[i], NULL, worker, NULL);
  for (int i = 0; i < WORKERS; i++) pthread_join(w[i], NULL);
  atomic_store(&reading, 0);
  for (int i = 0; i < READERS; i++) pthread_join(r[i], NULL);
  CHECK_EQ(atomic_load(&false_states), 0);
  CHECK(atomic_load(&reads) > 0);
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_EVENTS_LIVE], 0); /* every event slot freed */
  CHECK_EQ(st[NCCLGUARD_STAT_STREAMS_LIVE], 0); /* every stream slot freed */
}

static void *creator(void *arg) {
  cudaEvent_t *mine = arg;
  for (int i = 0; i < 64; i++) REQUIRE_EQ(fj->event_create(&mine[i]), 0);
  return NULL;
}

static void many_threads_creating_at_once_get_distinct_slots(void) {
  load_java_like();
  static cudaEvent_t events[WORKERS][64];
  pthread_t w[WORKERS];
  for (int i = 0; i < WORKERS; i++) pthread_create(&w[i], NULL, creator, events[i]);
  for (int i = 0; i < WORKERS; i++) pthread_join(w[i], NULL);
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_EVENTS_LIVE], WORKERS * 64);
  static char seen[WORKERS * 64 * 2];
  for (int i = 0; i < WORKERS; i++) {
    for (int j = 0; j < 64; j++) {
      int s = slot_of((int64_t)(uintptr_t)events[i][j], 0) & 0x3FFFFF; /* the index, without the incarnation */
      CHECK(s >= 0 && s < (int)sizeof(seen) && !seen[s]);
      if (s >= 0 && s < (int)sizeof(seen)) seen[s] = 1;
    }
  }
}

/* One event recorded by 8 threads, each on its own stream, while 2 others read its state: what a
 * reader sees is always one record whole (the stream slot and the handle of one of those streams,
 * together), and once every stream is synchronized and the event seen complete, nothing pending. */
#define RECORDERS 8
static cudaEvent_t shared_event;
static cudaStream_t recorder_streams[RECORDERS];
static int recorder_slots[RECORDERS];
static atomic_long torn, seen_pending;

static void *recorder(void *arg) {
  int me = (int)(intptr_t)arg;
  float *buf = calloc(64, sizeof(float));
  ncclComm_t comm = one_rank_comm();
  for (int i = 0; i < ITERATIONS; i++) {
    REQUIRE_EQ(fj->allreduce(buf, 64, comm, recorder_streams[me]), 0);
    REQUIRE_EQ(fj->event_record(shared_event, recorder_streams[me]), 0);
    if (i % 8 == 7) REQUIRE_EQ(fj->stream_sync(recorder_streams[me]), 0);
  }
  REQUIRE_EQ(fj->stream_sync(recorder_streams[me]), 0);
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
  free(buf);
  return NULL;
}

static void *record_reader(void *arg) {
  int32_t slot = (int32_t)(intptr_t)arg;
  while (atomic_load(&reading)) {
    int64_t out[3];
    ng->events_pending(&slot, 1, out);
    if (out[0] == 1) {
      atomic_fetch_add(&seen_pending, 1);
      int whole = 0;
      for (int k = 0; k < RECORDERS; k++) {
        if (out[1] == recorder_slots[k] && out[2] == (int64_t)(uintptr_t)recorder_streams[k]) whole = 1;
      }
      if (!whole) atomic_fetch_add(&torn, 1);
    }
    atomic_fetch_add(&reads, 1);
  }
  return NULL;
}

static void one_event_recorded_on_many_streams_at_once_is_always_one_record_whole(void) {
  load_java_like();
  REQUIRE_EQ(fj->event_create(&shared_event), 0);
  int es = last_slot[0];
  for (int k = 0; k < RECORDERS; k++) {
    REQUIRE_EQ(fj->stream_create(&recorder_streams[k]), 0);
    recorder_slots[k] = last_slot[1];
  }
  CHECK(es >= 0);
  atomic_store(&reading, 1);
  pthread_t w[RECORDERS], r[2];
  for (int i = 0; i < 2; i++) pthread_create(&r[i], NULL, record_reader, (void *)(intptr_t)es);
  for (int k = 0; k < RECORDERS; k++) pthread_create(&w[k], NULL, recorder, (void *)(intptr_t)k);
  for (int k = 0; k < RECORDERS; k++) pthread_join(w[k], NULL);
  atomic_store(&reading, 0);
  for (int i = 0; i < 2; i++) pthread_join(r[i], NULL);
  CHECK_EQ(atomic_load(&torn), 0);
  CHECK(atomic_load(&seen_pending) > 0);
  /* every stream synchronized: the last record's work is done, and the query that sees it says so */
  CHECK_EQ(fj->event_query(shared_event), 0);
  CHECK_EQ(event_pending(es), 0);
  for (int k = 0; k < RECORDERS; k++) CHECK_EQ(stream_pending(recorder_slots[k]), 0);
  REQUIRE_EQ(fj->event_destroy(shared_event), 0);
  for (int k = 0; k < RECORDERS; k++) REQUIRE_EQ(fj->stream_destroy(recorder_streams[k]), 0);
}

/* Two threads count ops on one stream as fast as they can (the counting Java's hot exits of C
 * streams share with the wrappers), the second starting while the first, the stream's owner, which
 * counts with plain stores, is in full flow: every op is counted exactly once. */
#define CONTENDED_OPS (ITERATIONS * 500)
static int contended_slot;
static atomic_int second_may_start;

static void *contender(void *arg) {
  int first = (int)(intptr_t)arg;
  if (!first) {
    while (!atomic_load(&second_may_start)) sched_yield();
  }
  for (int i = 0; i < CONTENDED_OPS; i++) {
    ng->slot_exit(fn_allreduce, contended_slot, 0, 0, 0);
    if (first && i == CONTENDED_OPS / 8) atomic_store(&second_may_start, 1);
  }
  return NULL;
}

/* Whether the kernel has membarrier's private expedited command (MEMBARRIER_CMD_QUERY's bit 3):
 * then streams get owners once the agent's background registration is done. */
static int owners_possible(void) { return (syscall(SYS_membarrier, 0, 0, 0) & (1 << 3)) != 0; }

/* Whether streams have owners within 5 s. */
static int owners_on_within_5s(void) {
  int64_t st[NCCLGUARD_STATS] = {0};
  for (int i = 0; i < 500; i++) {
    ng->stats(st, NCCLGUARD_STATS);
    if (st[NCCLGUARD_STAT_OWNERS] != 0) return 1;
    usleep(10000);
  }
  return 0;
}

static void two_threads_counting_on_one_stream_lose_no_op(void) {
  load_java_like();
  /* where the kernel can, the count is an owner's until the second thread takes the stream */
  if (owners_possible()) CHECK(owners_on_within_5s());
  for (int round = 0; round < 8; round++) {
    cudaStream_t s;
    REQUIRE_EQ(fj->stream_create(&s), 0);
    contended_slot = last_slot[1];
    atomic_store(&second_may_start, 0);
    pthread_t t[2];
    pthread_create(&t[0], NULL, contender, (void *)(intptr_t)1);
    pthread_create(&t[1], NULL, contender, (void *)(intptr_t)0);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECK_EQ(stream_pending(contended_slot), 2 * CONTENDED_OPS);
    REQUIRE_EQ(fj->stream_sync(s), 0);
    CHECK_EQ(stream_pending(contended_slot), 0);
    REQUIRE_EQ(fj->stream_destroy(s), 0);
  }
}

/* A fork's child has only the forking thread: it counts on a stream another thread of its parent
 * owned (the owner gone, membarrier registered again for the child) without hanging or losing. */
static void *own_stream(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) ng->slot_exit(fn_allreduce, contended_slot, 0, 0, 0);
  return NULL;
}

static void a_forked_child_counts_on_a_stream_another_thread_of_its_parent_owned(void) {
  load_java_like();
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  contended_slot = last_slot[1];
  pthread_t t;
  pthread_create(&t, NULL, own_stream, NULL);
  pthread_join(t, NULL);
  pid_t child = fork();
  REQUIRE_EQ(child >= 0, 1);
  if (child == 0) {
    alarm(20);
    for (int i = 0; i < 1000; i++) ng->slot_exit(fn_allreduce, contended_slot, 0, 0, 0);
    _exit(stream_pending(contended_slot) == 2000 ? 0 : 1);
  }
  int status = 0;
  REQUIRE_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ(stream_pending(contended_slot), 1000);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  REQUIRE_EQ(fj->stream_destroy(s), 0);
}

static const struct test_case cases[] = {
    {"a_forked_child_counts_on_a_stream_another_thread_of_its_parent_owned",
     a_forked_child_counts_on_a_stream_another_thread_of_its_parent_owned, NULL, NULL},
    {"two_threads_counting_on_one_stream_lose_no_op", two_threads_counting_on_one_stream_lose_no_op, NULL, NULL},
    {"one_event_recorded_on_many_streams_at_once_is_always_one_record_whole",
     one_event_recorded_on_many_streams_at_once_is_always_one_record_whole, NULL, NULL},
    {"sixteen_threads_create_use_and_release_while_others_read", sixteen_threads_create_use_and_release_while_others_read,
     NULL, NULL},
    {"many_threads_creating_at_once_get_distinct_slots", many_threads_creating_at_once_get_distinct_slots, NULL, NULL},
};

TEST_MAIN(cases)
