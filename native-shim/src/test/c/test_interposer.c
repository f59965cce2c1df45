/* The interposer seen from a JNI library: promotion, forwarding, who called, the C slots, and the
 * upcalls (here recorded by C callbacks in place of Java). */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "agent_test.h"

static float buf[256];

static void promoted_library_binds_a_later_library_to_the_wrappers(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s = NULL;
  REQUIRE_EQ(fj->exported_stream_create(&s), 0);
  CHECK(s != NULL);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaStreamCreate"), &u), 1);
  CHECK_EQ(u.status, 0);
  CHECK(u.slot >= 0 && (u.slot & NCCLGUARD_STREAM_SLOT_BIT));
  char *lib = ng->caller_library(u.caller);
  char *sym = ng->caller_symbol(u.caller);
  CHECK(lib != NULL && strcmp(lib, "libfakejni.so") == 0);
  CHECK(sym != NULL && strcmp(sym, "fj_exported_stream_create") == 0);
  free(lib);
  free(sym);
  CHECK_EQ(stream_pending(u.slot), 0);
}

static void without_promotion_calls_go_straight_to_the_library(void) {
  load_agent(&recording, 0);
  load_fake();
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  REQUIRE_EQ(fj->event_sync(e), 0);
  CHECK_EQ(total_upcalls(), 0);
}

static void a_static_callers_symbol_is_unknown_not_a_neighbour(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  char *sym = ng->caller_symbol(u.caller);
  CHECK(sym == NULL); /* a static function of the library: dladdr's nearest export is not it */
  free(sym);
}

static struct gate held;

/* A stream made in C (the library's call), and the slot id its creation's upcall carried. */
static int c_stream(cudaStream_t *s) {
  REQUIRE_EQ(fj->stream_create(s), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaStreamCreateWithFlags"), &u), 1);
  return u.slot;
}

static void an_event_recorded_behind_held_work_is_pending_until_seen_complete(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  int slot = u.slot;
  CHECK(slot >= 0 && !(slot & NCCLGUARD_STREAM_SLOT_BIT));
  CHECK_EQ(event_pending(slot), 0); /* never recorded: complete */
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  CHECK_EQ(event_pending(slot), 1);
  int32_t sl = slot;
  int64_t out[3];
  ng->events_pending(&sl, 1, out);
  CHECK(out[1] >= 0 && (out[1] & NCCLGUARD_STREAM_SLOT_BIT));
  CHECK_EQ(out[2], (int64_t)(uintptr_t)s);
  CHECK_EQ(fj->event_query(e), cudaErrorNotReady);
  CHECK_EQ(event_pending(slot), 1); /* not ready changes nothing */
  gate_open(&held);
  while (fj->event_query(e) == cudaErrorNotReady) sleep_ms(1);
  CHECK_EQ(event_pending(slot), 0);
}

static void hot_calls_on_c_slots_make_no_upcall(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  ncclComm_t comm = one_rank_comm();
  int before = total_upcalls();
  for (int i = 0; i < 1000; i++) {
    REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
    REQUIRE_EQ(fj->event_record(e, s), 0);
    fj->event_query(e);
    fj->stream_query(s);
  }
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(total_upcalls(), before);
}

static void stream_counts_work_until_it_is_synchronized(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  int slot = c_stream(&s);
  ncclComm_t comm = one_rank_comm();
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  CHECK_EQ(stream_pending(slot), 2);
  CHECK_EQ(fj->stream_query(s), cudaErrorNotReady);
  CHECK_EQ(stream_pending(slot), 2);
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(stream_pending(slot), 0);
}

static void work_in_a_group_counts_at_the_outermost_group_end(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  int sslot = c_stream(&s);
  ncclComm_t comm = one_rank_comm();
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->group_start(), 0);
  REQUIRE_EQ(fj->group_start(), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  REQUIRE_EQ(fj->group_end(), 0);
  CHECK_EQ(stream_pending(sslot), 0);
  REQUIRE_EQ(fj->group_end(), 0);
  CHECK_EQ(stream_pending(sslot), 1);
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(stream_pending(sslot), 0);
}

static void communicator_creation_and_release_go_to_java_with_their_arguments(void) {
  load_agent(&recording, 1);
  load_fake();
  REQUIRE_EQ(fj->set_device(3), 0);
  ncclUniqueId id;
  REQUIRE_EQ(fj->unique_id(&id), 0);
  ncclComm_t comm = NULL;
  REQUIRE_EQ(fj->comm_init(&comm, 1, id, 0), 0);
  int init = fn_id("ncclCommInitRank");
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, init, &u), 1);
  CHECK_EQ(u.status, 0);
  CHECK_EQ(u.n, 4 + 3); /* the arguments, then device, first plugin record, their count */
  CHECK_EQ(u.slots[1], 1);
  CHECK_EQ(u.slots[3], 0);
  CHECK_EQ(u.slots[4], 3);
  /* the comm out-parameter and the unique id (by value: its address, valid during the call) */
  CHECK(u.slots[0] != 0 && u.slots[2] != 0);
  CHECK_EQ(recorded(UP_ENTER, init), 0); /* creations need no enter */
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
  int destroy = fn_id("ncclCommDestroy");
  REQUIRE_EQ(last_upcall(UP_ENTER, destroy, &u), 1);
  CHECK_EQ(u.slots[0], (int64_t)(uintptr_t)comm);
  REQUIRE_EQ(last_upcall(UP_EXIT, destroy, &u), 1);
  CHECK_EQ(u.token, 42); /* enter's token comes back at exit */
  CHECK_EQ(u.status, 0);
}

static void a_collective_on_a_special_stream_is_keyed_by_the_communicators_device(void) {
  load_agent(&recording, 1);
  load_fake();
  REQUIRE_EQ(fj->set_device(2), 0);
  ncclComm_t comm = one_rank_comm();
  REQUIRE_EQ(fj->set_device(0), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &u), 1);
  CHECK_EQ(u.handle, 0);
  CHECK_EQ(u.device, 2);
  CHECK(u.slot & NCCLGUARD_STREAM_SLOT_BIT);
  CHECK_EQ(recorded(UP_HOT_ENTER, -1), 0); /* special streams of native calls are C's: Java is not asked */
  int before = recorded(UP_SEEN, -1);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
  CHECK_EQ(recorded(UP_SEEN, -1), before);
  REQUIRE_EQ(fj->set_device(2), 0);
  REQUIRE_EQ(fj->stream_sync(NULL), 0);
  CHECK_EQ(stream_pending(u.slot), 0);
}

/* PyTorch runs a synchronous collective and its records on the current stream (the legacy default
 * one): after a special stream's first call (the generic path makes its slot), the hot paths find
 * the slot by the communicator's device (a collective) or the event's device (a record). */
static void work_on_the_default_stream_is_counted_per_device_on_the_hot_path(void) {
  load_agent(&recording, 1);
  load_fake();
  ncclComm_t comm = one_rank_comm(); /* on device 0 */
  cudaEvent_t e0, e1;
  REQUIRE_EQ(fj->event_create(&e0), 0);
  REQUIRE_EQ(fj->set_device(1), 0);
  REQUIRE_EQ(fj->event_create(&e1), 0);
  for (int i = 0; i < 3; i++) REQUIRE_EQ(fj->event_record(e1, NULL), 0);
  upcall u1;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("cudaEventRecord"), &u1), 1);
  CHECK_EQ(u1.device, 1);
  /* the collective on device 0's stream while device 1 is current: the communicator's device */
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
  upcall u0;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &u0), 1);
  CHECK_EQ(u0.device, 0);
  CHECK(u0.slot != u1.slot);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
  REQUIRE_EQ(fj->set_device(0), 0);
  int seen = recorded(UP_SEEN, -1);
  for (int i = 0; i < 3; i++) {
    REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
    REQUIRE_EQ(fj->event_record(e0, NULL), 0);
  }
  CHECK_EQ(recorded(UP_SEEN, -1), seen); /* no new slot */
  CHECK_EQ(stream_pending(u1.slot), 3);
  CHECK_EQ(stream_pending(u0.slot), 8);
  REQUIRE_EQ(fj->stream_sync(NULL), 0); /* device 0's */
  CHECK_EQ(stream_pending(u0.slot), 0);
  CHECK_EQ(stream_pending(u1.slot), 3);
  REQUIRE_EQ(fj->set_device(1), 0);
  REQUIRE_EQ(fj->stream_sync(NULL), 0);
  CHECK_EQ(stream_pending(u1.slot), 0);
}

/* A record on the default stream counts on its event's device's stream without asking for the
 * current device (cudaEventRecord succeeds only on a stream of its event's device): here every
 * cudaGetDevice after the event's creation fails, so that one made for the record would key it to
 * device 0. */
static void a_record_on_the_default_stream_takes_its_events_device_not_the_current_one(void) {
  load_agent(&recording, 1);
  load_fake();
  REQUIRE_EQ(fj->set_device(1), 0);
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall c;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &c), 1);
  REQUIRE_EQ(c.slots[2], 1); /* the creation's own cudaGetDevice: device 1 */
  for (int i = 0; i < 3; i++) REQUIRE_EQ(fj->event_record(e, NULL), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("cudaEventRecord"), &u), 1);
  CHECK_EQ(u.device, 1);
  CHECK_EQ(stream_pending(u.slot), 3);
}

/* Where the process sees one device, the legacy stream's key is a constant the hot paths take
 * (ng_legacy_key): its collectives, records, waits and queries count on the one slot as the maps'
 * path counts them, a record made while the stream is held is pending until the stream gets past
 * it, and the per-thread default stream keeps a slot per thread. (prof_paths.c shows the path.) */
static void with_one_device_the_default_streams_work_is_counted_on_its_one_slot(void) {
  setenv("NCCLEMU_DEVICES", "1", 1);
  load_agent(&recording, 1);
  load_fake();
  ncclComm_t comm = one_rank_comm();
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall c;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &c), 1);
  int eslot = c.slot;
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &u), 1);
  CHECK_EQ(u.device, 0);
  int seen = recorded(UP_SEEN, -1);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(NULL, wait_at_gate, &held), 0);
  for (int i = 0; i < 5; i++) {
    REQUIRE_EQ(fj->allreduce(buf, 16, comm, (cudaStream_t)cudaStreamLegacy), 0);
    REQUIRE_EQ(fj->event_record(e, NULL), 0);
    REQUIRE_EQ(fj->stream_wait(NULL, e), 0);
  }
  CHECK_EQ(recorded(UP_SEEN, -1), seen); /* one slot for 0 and cudaStreamLegacy */
  CHECK_EQ(stream_pending(u.slot), 16); /* the first collective's too: no call saw it done */
  CHECK_EQ(event_pending(eslot), 1);
  CHECK_EQ(fj->stream_query(NULL), cudaErrorNotReady);
  CHECK_EQ(stream_pending(u.slot), 16);
  /* the per-thread stream is not the legacy one: a slot of its own */
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, (cudaStream_t)cudaStreamPerThread), 0);
  upcall t;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &t), 1);
  CHECK(t.slot != u.slot);
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(NULL), 0);
  CHECK_EQ(stream_pending(u.slot), 0);
  CHECK_EQ(fj->event_query(e), 0);
  CHECK_EQ(event_pending(eslot), 0);
  REQUIRE_EQ(fj->event_destroy(e), 0);
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
}

/* Where the process sees one device every device number is 0: creations and releases no longer
 * ask the runtime for the current device (a real cudaGetDevice each, about 220 cycles of a creation
 * on an H100 host under PyTorch's loop). Here the runtime's second cudaGetDevice fails and leaves
 * its error as the thread's last: the one call made, as the count is learned, is the first. */
static void with_one_device_creations_and_releases_ask_for_no_current_device(void) {
  setenv("NCCLEMU_DEVICES", "1", 1);
  load_agent(&recording, 1);
  load_fake();
  int (*last_error)(void) = (int (*)(void))real_fn("libcudart.so.13", "cudaGetLastError");
  cudaEvent_t e[8];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 8; i++) REQUIRE_EQ(fj->event_create(&e[i]), 0);
    upcall c;
    REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &c), 1);
    CHECK_EQ(c.slots[2], 0); /* its device */
    for (int i = 0; i < 8; i++) REQUIRE_EQ(fj->event_destroy(e[i]), 0);
  }
  CHECK_EQ(last_error(), cudaSuccess);
}

static void a_stream_first_seen_in_native_work_is_asked_for_then_made_a_slot(void) {
  load_agent(&recording, 1);
  load_fake();
  int (*create)(cudaStream_t *) = (int (*)(cudaStream_t *))real_fn("libcudart.so.13", "cudaStreamCreate");
  cudaStream_t s;
  REQUIRE_EQ(create(&s), 0); /* as JNA would: the agent does not see it */
  ncclComm_t comm = one_rank_comm();
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_HOT_ENTER, fn_id("ncclAllReduce"), &u), 1);
  CHECK_EQ(u.stream, (int64_t)(uintptr_t)s);
  CHECK_EQ(u.handle, (int64_t)(uintptr_t)comm);
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &u), 1);
  CHECK_EQ(u.handle, (int64_t)(uintptr_t)s);
  int before = total_upcalls();
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  CHECK_EQ(total_upcalls(), before); /* known now */
}

static void hot_calls_on_a_java_stream_go_to_java_and_move_a_c_event_there(void) {
  load_agent(&recording, 1);
  load_fake();
  int (*create)(cudaStream_t *) = (int (*)(cudaStream_t *))real_fn("libcudart.so.13", "cudaStreamCreate");
  cudaStream_t s;
  REQUIRE_EQ(create(&s), 0);
  java_handles[njava++] = (int64_t)(uintptr_t)s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  int eslot = u.slot;
  int record = fn_id("cudaEventRecord");
  REQUIRE_EQ(fj->event_record(e, s), 0);
  REQUIRE_EQ(last_upcall(UP_HOT_ENTER, record, &u), 1);
  CHECK_EQ(u.handle, (int64_t)(uintptr_t)e);
  REQUIRE_EQ(last_upcall(UP_HOT_EXIT, record, &u), 1);
  CHECK_EQ(u.token, 7);
  CHECK_EQ(u.status, 0);
  CHECK_EQ(event_pending(eslot), -1); /* the event's state is Java's now */
  /* and queries of it go to Java too */
  fj->event_query(e);
  CHECK_EQ(recorded(UP_HOT_EXIT, fn_id("cudaEventQuery")), 1);
  /* a second record asks again only through the stream's JAVA mark */
  REQUIRE_EQ(fj->event_record(e, s), 0);
  CHECK_EQ(recorded(UP_HOT_EXIT, record), 2);
}

static void a_java_event_recorded_on_a_c_stream_moves_to_c(void) {
  load_agent(&recording, 1);
  load_fake();
  int (*create)(cudaEvent_t *) = (int (*)(cudaEvent_t *))real_fn("libcudart.so.13", "cudaEventCreate");
  cudaEvent_t e;
  REQUIRE_EQ(create(&e), 0);
  java_handles[njava++] = (int64_t)(uintptr_t)e;
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  CHECK_EQ(recorded(UP_HOT_ENTER, -1), 0); /* the stream is C's */
  upcall u;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("cudaEventRecord"), &u), 1);
  CHECK_EQ(u.handle, (int64_t)(uintptr_t)e);
  CHECK_EQ(event_pending(u.slot), 1);
  gate_open(&held);
  REQUIRE_EQ(fj->event_sync(e), 0);
  CHECK_EQ(event_pending(u.slot), 0);
}

static void java_hot_calls_on_c_state_go_through_the_slot_natives(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  int sslot = c_stream(&s);
  int record = fn_id("cudaEventRecord");
  /* a Java event recorded (through a Java bridge) on this C stream */
  int64_t token = ng->slot_token(record, sslot);
  int64_t eslot = ng->slot_exit(record, sslot, 0x1234, 0, token);
  CHECK(eslot >= 0);
  CHECK_EQ(event_pending((int)eslot), 1);
  /* Java's query of that event, now C's, completes it */
  int query = fn_id("cudaEventQuery");
  token = ng->slot_token(query, (int)eslot);
  ng->slot_exit(query, (int)eslot, 0, 0, token);
  CHECK_EQ(event_pending((int)eslot), 0);
  /* Java's device synchronize covers C's streams of the device */
  ncclComm_t comm = one_rank_comm();
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  CHECK_EQ(stream_pending(sslot), 1); /* the record was seen complete: the allreduce is left */
  REQUIRE_EQ(fj->stream_sync(s), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  int64_t t = ng->device_sync_enter(0);
  ng->device_sync_exit(0, t);
  CHECK_EQ(stream_pending(sslot), 0);
}

static void a_native_device_synchronize_marks_its_streams_done(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  int sslot = c_stream(&s);
  ncclComm_t comm = one_rank_comm();
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  CHECK_EQ(stream_pending(sslot), 1);
  REQUIRE_EQ(fj->device_sync(), 0);
  CHECK_EQ(stream_pending(sslot), 0);
  int sync = fn_id("cudaDeviceSynchronize");
  CHECK_EQ(recorded(UP_ENTER, sync), 1);
  CHECK_EQ(recorded(UP_EXIT, sync), 1);
}

static void a_device_synchronize_covers_what_its_streams_counted_before_it_began(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  int sslot = c_stream(&s);
  ncclComm_t comm = one_rank_comm();
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  int64_t t = ng->device_sync_enter(0);
  /* counted while the synchronize runs: not covered by it */
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  ng->device_sync_exit(0, t);
  CHECK_EQ(stream_pending(sslot), 1);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(stream_pending(sslot), 0);
}

static void of_two_device_synchronizes_at_once_the_later_marks_what_it_saw(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  int sslot = c_stream(&s);
  ncclComm_t comm = one_rank_comm();
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  int64_t first = ng->device_sync_enter(0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  int64_t second = ng->device_sync_enter(0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, s), 0);
  /* the first finds the second's start on the stream: it cannot tell what it covered */
  ng->device_sync_exit(0, first);
  CHECK_EQ(stream_pending(sslot), 3);
  ng->device_sync_exit(0, second);
  CHECK_EQ(stream_pending(sslot), 1);
  /* a synchronize of another device covers nothing here */
  int64_t other = ng->device_sync_enter(1);
  ng->device_sync_exit(1, other);
  CHECK_EQ(stream_pending(sslot), 1);
}

/* A stream idle when a synchronize starts is passed without its lock (no token kept): work it gets
 * while the synchronize runs stays pending, as on a stream the synchronize did mark. */
static void a_device_synchronize_passes_idle_streams_and_covers_the_busy_ones(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t idle, busy;
  int islot = c_stream(&idle);
  int bslot = c_stream(&busy);
  ncclComm_t comm = one_rank_comm();
  /* each stream its own half of buf: the two streams' all-reduces may run at once */
  REQUIRE_EQ(fj->allreduce(buf + 128, 16, comm, idle), 0);
  REQUIRE_EQ(fj->stream_sync(idle), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, busy), 0);
  int64_t t = ng->device_sync_enter(0);
  REQUIRE_EQ(fj->allreduce(buf + 128, 16, comm, idle), 0);
  ng->device_sync_exit(0, t);
  CHECK_EQ(stream_pending(bslot), 0);
  CHECK_EQ(stream_pending(islot), 1);
  /* the next synchronize covers it */
  REQUIRE_EQ(fj->device_sync(), 0);
  CHECK_EQ(stream_pending(islot), 0);
}

static atomic_int lookups_locked;
static void count_lookup(int where) {
  if (where == 1) atomic_fetch_add(&lookups_locked, 1);
}

static void a_call_site_that_calls_several_functions_reaches_each(void) {
  load_agent(&recording, 1);
  load_fake();
  int (*event_query)(void *) = (int (*)(void *))dlsym(agent, "cudaEventQuery");
  int (*stream_query)(void *) = (int (*)(void *))dlsym(agent, "cudaStreamQuery");
  REQUIRE_EQ(event_query != NULL && stream_query != NULL, 1);
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  /* one call site, two functions, each reaching its own: a never-recorded event is complete,
   * the stream has held work */
  for (int i = 0; i < 3; i++) {
    CHECK_EQ(fj->call_through(event_query, e), 0);
    CHECK_EQ(fj->call_through(stream_query, s), cudaErrorNotReady);
  }
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(fj->call_through(stream_query, s), 0);
  /* once each function's definition is known, neither takes the caller lock (a lock and two
   * lookups of the linker a call before: a dispatcher's every call serialized on it) */
  atomic_store(&lookups_locked, 0);
  caller_locked_fn = count_lookup;
  for (int i = 0; i < 100; i++) {
    CHECK_EQ(fj->call_through(event_query, e), 0);
    CHECK_EQ(fj->call_through(stream_query, s), 0);
  }
  caller_locked_fn = NULL;
  CHECK_EQ(atomic_load(&lookups_locked), 0);
}

static void a_suppression_or_dying_closes_the_hot_paths_of_callers_already_seen(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  CHECK_EQ(fj->event_query(e), cudaErrorNotReady); /* the query's call site is known and tracked */
  const char *names[] = {"libfakejni"};
  ng->suppress_callers(names, 1);
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(fj->event_query(e), 0);
  CHECK_EQ(event_pending(u.slot), 1); /* not the application's now: not seen */
  ng->suppress_callers(NULL, 0);
  CHECK_EQ(fj->event_query(e), 0);
  CHECK_EQ(event_pending(u.slot), 0);
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  CHECK_EQ(fj->event_query(e), cudaErrorNotReady);
  ng->dying();
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  CHECK_EQ(fj->event_query(e), 0);
  CHECK_EQ(event_pending(u.slot), 1); /* after dying, wrappers only forward */
}

static void set_device_goes_to_java_only_when_it_changes(void) {
  load_agent(&recording, 1);
  load_fake();
  int set = fn_id("cudaSetDevice");
  REQUIRE_EQ(fj->set_device(1), 0);
  REQUIRE_EQ(fj->set_device(1), 0);
  REQUIRE_EQ(fj->set_device(1), 0);
  CHECK_EQ(recorded(UP_EXIT, set), 1);
  REQUIRE_EQ(fj->set_device(2), 0);
  CHECK_EQ(recorded(UP_EXIT, set), 2);
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  CHECK_EQ(u.slots[u.n - 3], 2); /* the creating thread's device */
}

static atomic_int destroy_returned;
static void *destroy_on_thread(void *comm) {
  fj->comm_destroy(comm); /* parks: never returns */
  atomic_store(&destroy_returned, 1);
  return NULL;
}

/* on a thread of its own, not in a fork's child: a child only forwards (it has no JVM to ask) */
static void a_claimed_release_parks_the_thread_and_never_reaches_the_library(void) {
  load_agent(&recording, 1);
  load_fake();
  ncclComm_t comm = one_rank_comm();
  claimed_handle = (int64_t)(uintptr_t)comm;
  pthread_t t;
  REQUIRE_EQ(pthread_create(&t, NULL, destroy_on_thread, comm), 0);
  pthread_detach(t);
  sleep_ms(300);
  CHECK_EQ(atomic_load(&destroy_returned), 0); /* still parked */
  CHECK_EQ(recorded(UP_EXIT, fn_id("ncclCommDestroy")), 0);
}

static void calls_of_nvidia_libraries_are_left_out(void) {
  load_agent(&recording, 1);
  void *h = open_or_die(bin_path("libnccl-ngtest.so"), RTLD_NOW);
  int (*create)(cudaEvent_t *) = (int (*)(cudaEvent_t *))dlsym(h, "ngtest_event_create");
  cudaEvent_t e = NULL;
  REQUIRE_EQ(create(&e), 0);
  CHECK(e != NULL);
  CHECK_EQ(total_upcalls(), 0);
}

static void a_suppressed_library_is_forwarded_only(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  CHECK_EQ(total_upcalls(), 1);
  const char *names[] = {"libfakejni"};
  ng->suppress_callers(names, 1);
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(fj->event_sync(e), 0);
  CHECK_EQ(total_upcalls(), 1);
  ng->suppress_callers(NULL, 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  CHECK_EQ(total_upcalls(), 2);
}

static void jni_entry_points_a_java_bridge_wraps_are_left_to_it(void) {
  load_agent(&recording, 1);
  load_fake();
  const char *names[] = {"Java_dev_example_Ep_eventCreate"};
  ng->wrapped_natives(names, 1);
  cudaEvent_t e;
  REQUIRE_EQ(fj->jni_event_create(&e), 0);
  REQUIRE_EQ(fj->jni_event_create_long(&e), 0); /* the long, signature-mangled name */
  CHECK_EQ(total_upcalls(), 0);
  REQUIRE_EQ(fj->event_create(&e), 0); /* another caller in the same library */
  CHECK_EQ(total_upcalls(), 1);
}

static void after_dying_wrappers_only_forward(void) {
  load_agent(&recording, 1);
  load_fake();
  ng->dying();
  cudaStream_t s;
  cudaEvent_t e;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(fj->event_record(e, s), 0);
  REQUIRE_EQ(fj->event_sync(e), 0);
  REQUIRE_EQ(fj->stream_destroy(s), 0);
  CHECK_EQ(total_upcalls(), 0);
}

static void at_exit_call(void) {
  /* the exit: this library's own exit handler has not run yet, but the JVM's VMDeath has */
  ng->dying();
  cudaEvent_t e;
  if (fj->event_create(&e) != 0 || fj->event_destroy(e) != 0) _exit(5);
  if (total_upcalls() != 0) _exit(6);
}

static void a_wrapper_called_from_an_exit_handler_forwards(void) {
  load_agent(&recording, 1);
  load_fake();
  atexit(at_exit_call);
}

static void no_real_function_fails_as_an_uninitialized_library_would(void) {
  load_agent(&recording, 1);
  load_fake();
  capture_stderr();
  CHECK_EQ(fj->allreduce_config(buf, 16, NULL, NULL), ncclSystemError);
  CHECK_EQ(fj->allreduce_config(buf, 16, NULL, NULL), ncclSystemError);
  char *err = captured_stderr();
  CHECK(err != NULL && count_lines(err) == 1 && strstr(err, "ncclAllReduceConfig") != NULL);
  free(err);
}

static void call_reaches_the_real_function_and_is_not_tracked(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  REQUIRE_EQ(fj->exported_stream_create(&s), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaStreamCreate"), &u), 1);
  int before = total_upcalls();
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  CHECK_EQ(ng->call(u.caller, fn_id("cudaStreamQuery"), (int64_t)(uintptr_t)s, 0, 0, 0), cudaErrorNotReady);
  gate_open(&held);
  CHECK_EQ(ng->call(0, fn_id("cudaStreamSynchronize"), (int64_t)(uintptr_t)s, 0, 0, 0), 0);
  CHECK_EQ(ng->call(0, fn_id("cudaStreamDestroy"), (int64_t)(uintptr_t)s, 0, 0, 0), 0);
  CHECK_EQ(ng->call(0, fn_id("ncclCommInitRank"), 0, 0, 0, 0), -1); /* a struct by value: not callable */
  CHECK_EQ(total_upcalls(), before);
}

static void create_event_on_thread(void *p) { fj->event_create((cudaEvent_t *)p); }

static void a_creation_on_a_thread_without_java_frames_carries_a_backtrace(void) {
  load_agent(&recording, 1);
  load_fake();
  only_main_is_java = 1;
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  CHECK(ng->caller_backtrace(u.caller) == NULL); /* a Java thread: its Java stack says it */
  /* the library's own pthread: the hooks count every thread but this one as Java's */
  fj->on_thread(create_event_on_thread, &e);
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  CHECK_EQ(u.status, 0);
  char *bt = ng->caller_backtrace(u.caller);
  CHECK(bt != NULL && strstr(bt, "libfakejni.so") != NULL);
  if (bt != NULL) fprintf(stderr, "backtrace:\n%s\n", bt);
  free(bt);
  char *lib = ng->caller_library(u.caller);
  CHECK(lib != NULL && strcmp(lib, "libfakejni.so") == 0);
  free(lib);
}

static void released_slots_are_reused_once_java_lets_go(void) {
  load_agent(&recording, 1);
  load_fake();
  int64_t st[NCCLGUARD_STATS];
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u), 1);
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_EVENTS_LIVE], 1);
  REQUIRE_EQ(fj->event_destroy(e), 0);
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_EVENTS_LIVE], 1); /* Java's record still points at it */
  CHECK_EQ(event_pending(u.slot), -1);
  ng->release_slot(u.slot);
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_EVENTS_LIVE], 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  upcall v;
  REQUIRE_EQ(last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &v), 1);
  CHECK_EQ(v.slot & 0x3FFFFF, u.slot & 0x3FFFFF); /* the same slot, another incarnation */
  CHECK(v.slot != u.slot);
  CHECK_EQ(event_pending(u.slot), -1); /* the old id is refused */
  CHECK_EQ(event_pending(v.slot), 0);
}

/* Another thread releases an event this thread made and recorded (the record's call site keeps its
 * slot as a hint) while Java still holds its slot, then makes one, which the runtime gives the same
 * handle (the emulator hands a destroyed event's block out again, as CUDA does) in a slot of its own. */
typedef struct {
  cudaEvent_t e;
  int slot;
} made;

static int created_slot(void) {
  upcall u;
  return last_upcall(UP_EXIT, fn_id("cudaEventCreateWithFlags"), &u) ? u.slot : -1;
}

static void release_and_make_again(void *p) {
  made *m = p;
  m->slot = -1;
  if (fj->event_destroy(m->e) != 0 || fj->event_create(&m->e) != 0) return;
  m->slot = created_slot();
}

/* A thread's record of a handle counts on the handle's live slot, never on the slot its call site
 * found for the handle before another thread ended it; nor does a slot made again, for another
 * handle. */
static void a_record_after_another_threads_release_and_creation_counts_on_the_live_slot(void) {
  load_agent(&recording, 1);
  load_fake();
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  int same_handle = 0;
  for (int round = 0; round < 3; round++) {
    made m;
    REQUIRE_EQ(fj->event_create(&m.e), 0);
    int first = created_slot();
    cudaEvent_t before = m.e;
    REQUIRE_EQ(fj->event_record(m.e, s), 0);
    REQUIRE_EQ(fj->stream_sync(s), 0);
    REQUIRE_EQ(fj->event_query(m.e), 0);
    fj->on_thread(release_and_make_again, &m);
    REQUIRE_EQ(m.slot >= 0, 1);
    same_handle += m.e == before;
    CHECK((m.slot & 0x3FFFFF) != (first & 0x3FFFFF)); /* Java holds the first */
    gate_init(&held);
    REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
    /* the record's call site found the first slot for this handle last */
    REQUIRE_EQ(fj->event_record(m.e, s), 0);
    CHECK_EQ(event_pending(m.slot), 1);
    CHECK_EQ(event_pending(first), -1);
    /* the first slot let go, and made again here, for another handle */
    ng->release_slot(first);
    cudaEvent_t other;
    REQUIRE_EQ(fj->event_create(&other), 0);
    int other_slot = created_slot();
    REQUIRE_EQ(fj->event_record(other, s), 0);
    CHECK_EQ(event_pending(m.slot), 1);
    CHECK_EQ(event_pending(other_slot), 1);
    gate_open(&held);
    REQUIRE_EQ(fj->stream_sync(s), 0);
    REQUIRE_EQ(fj->event_query(m.e), 0);
    REQUIRE_EQ(fj->event_query(other), 0);
    CHECK_EQ(event_pending(m.slot), 0);
    CHECK_EQ(event_pending(other_slot), 0);
    REQUIRE_EQ(fj->event_destroy(other), 0);
    REQUIRE_EQ(fj->event_destroy(m.e), 0);
    ng->release_slot(other_slot);
    ng->release_slot(m.slot);
  }
  /* the case this is about happened: the handle came back */
  CHECK_EQ(same_handle, 3);
}

/* A release's real call returns, and before its exit reaches the agent another thread makes the
 * handle again (CUDA hands it out at once), releases it and makes it once more, in the very slot the
 * first release found (freed once Java let go of it): the late exit must leave that creation's map
 * entry alone. It took it out by slot index alone, and the event went untracked: its release found
 * nothing, its slot stayed live for good (test_stress's sixteen threads left one, rarely). */
static cudaEvent_t paused_handle;
static int paused_first, paused_between, paused_again, paused_ran;

static void make_release_make(void *p) {
  (void)p;
  cudaEvent_t e;
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(e == paused_handle, 1); /* the runtime's handle again */
  paused_between = created_slot();
  ng->release_slot(paused_first); /* Java saw the replacement: the first slot is free */
  REQUIRE_EQ(fj->event_destroy(e), 0);
  REQUIRE_EQ(fj->event_create(&e), 0);
  REQUIRE_EQ(e == paused_handle, 1);
  paused_again = created_slot();
}

static void between_the_real_release_and_its_exit(cudaEvent_t e) {
  (void)e;
  paused_ran++;
  fj->on_thread(make_release_make, NULL);
}

/* The agent, and the fake JNI library whose releases reach pause_cudart.c's first: its function
 * that arms the pause named pause_fn. */
static void *load_paused(const char *pause_fn) {
  load_agent(&recording, 1);
  void *lib = open_or_die(bin_path("libfakejni_paused.so"), RTLD_NOW);
  fj = (const fake_jni *)dlsym(lib, "fake_jni_functions");
  void *pause_after = dlsym(lib, pause_fn);
  REQUIRE_EQ(fj != NULL && pause_after != NULL, 1);
  return pause_after;
}

static void a_late_release_exit_leaves_the_handles_next_creation_in_its_slot_alone(void) {
  void (*pause_after)(void (*)(cudaEvent_t)) = (void (*)(void (*)(cudaEvent_t)))load_paused("pause_after_next_destroy");
  cudaStream_t s;
  REQUIRE_EQ(fj->stream_create(&s), 0);
  REQUIRE_EQ(fj->event_create(&paused_handle), 0);
  paused_first = created_slot();
  pause_after(between_the_real_release_and_its_exit);
  REQUIRE_EQ(fj->event_destroy(paused_handle), 0);
  REQUIRE_EQ(paused_ran, 1); /* the agent's real function was the pausing one */
  /* the case this is about happened: the handle's next creation but one took the first slot */
  REQUIRE_EQ(paused_again & 0x3FFFFF, paused_first & 0x3FFFFF);
  REQUIRE_EQ(paused_again != paused_first, 1);
  /* the live event is still followed: a record counts on its slot */
  gate_init(&held);
  REQUIRE_EQ(fj->host_func(s, wait_at_gate, &held), 0);
  REQUIRE_EQ(fj->event_record(paused_handle, s), 0);
  CHECK_EQ(event_pending(paused_again), 1);
  gate_open(&held);
  REQUIRE_EQ(fj->stream_sync(s), 0);
  REQUIRE_EQ(fj->event_destroy(paused_handle), 0);
  ng->release_slot(paused_between);
  ng->release_slot(paused_again);
  int64_t st[NCCLGUARD_STATS];
  ng->stats(st, NCCLGUARD_STATS);
  CHECK_EQ(st[NCCLGUARD_STAT_EVENTS_LIVE], 0); /* its release found it: every slot freed */
  REQUIRE_EQ(fj->stream_destroy(s), 0);
}

/* A communicator made at a destroyed one's address between the destroy's real call and the agent's
 * exit of it keeps its device: the exit takes out the entry the destroy found, not what the address
 * holds by then (before, the new communicator's collectives on a special stream took the current
 * device). The emulator hands the address out again, as an allocator does. */
static ncclComm_t comm_first, comm_again;

static void make_comm_on_device_3(void *p) {
  (void)p;
  REQUIRE_EQ(fj->set_device(3), 0);
  comm_again = one_rank_comm();
}

static void between_the_real_comm_destroy_and_its_exit(ncclComm_t comm) {
  (void)comm;
  paused_ran++;
  fj->on_thread(make_comm_on_device_3, NULL);
}

/* A collective of comm on the legacy stream, made with device 0 current, counts on device's slot
 * (the communicator's); its work is synchronized after. */
static void collective_counts_on_device(ncclComm_t comm, int device) {
  REQUIRE_EQ(fj->set_device(0), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comm, NULL), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &u), 1);
  CHECK_EQ(u.device, device);
  REQUIRE_EQ(fj->set_device(device), 0);
  REQUIRE_EQ(fj->stream_sync(NULL), 0);
}

static void a_comm_made_at_a_destroyed_ones_address_before_its_exit_keeps_its_device(void) {
  void (*pause_after)(void (*)(ncclComm_t)) = (void (*)(void (*)(ncclComm_t)))load_paused("pause_after_next_comm_destroy");
  REQUIRE_EQ(fj->set_device(2), 0);
  comm_first = one_rank_comm();
  pause_after(between_the_real_comm_destroy_and_its_exit);
  REQUIRE_EQ(fj->comm_destroy(comm_first), 0);
  REQUIRE_EQ(paused_ran, 1); /* the agent's real function was the pausing one */
  REQUIRE_EQ(comm_again == comm_first, 1); /* the case this is about happened */
  collective_counts_on_device(comm_again, 3);
  REQUIRE_EQ(fj->comm_destroy(comm_again), 0);
}

/* A destroy that fails leaves its communicator's device where it was. */
static void a_failed_comm_destroy_keeps_the_comms_device(void) {
  load_agent(&recording, 1);
  load_fake();
  REQUIRE_EQ(fj->set_device(2), 0);
  ncclComm_t comm = one_rank_comm();
  CHECK(fj->comm_destroy(comm) != 0); /* NCCLEMU_FAIL: the first destroy fails */
  collective_counts_on_device(comm, 2);
  REQUIRE_EQ(fj->comm_destroy(comm), 0);
}

static void init_all_and_split_learn_their_devices(void) {
  load_agent(&recording, 1);
  load_fake();
  ncclComm_t comms[2];
  int devs[2] = {4, 5};
  REQUIRE_EQ(fj->comm_init_all(comms, 2, devs), 0);
  REQUIRE_EQ(fj->allreduce(buf, 16, comms[1], NULL), 0);
  upcall u;
  REQUIRE_EQ(last_upcall(UP_SEEN, fn_id("ncclAllReduce"), &u), 1);
  CHECK_EQ(u.device, 5);
  REQUIRE_EQ(fj->comm_destroy(comms[0]), 0);
  REQUIRE_EQ(fj->comm_destroy(comms[1]), 0);
}

/* ---- a first sight from a library's constructor while another thread's slow path holds the
 * caller lock: the constructor runs under the dynamic linker's load lock and waits for the caller
 * lock; the holder must not then ask the linker anything that takes the load lock (dladdr,
 * dlsym), or both wait for ever (docs/design.md, "No dl* call under the caller lock"). */
static pthread_t pauser;
static atomic_int pause_where = -1, paused, go_open;

/* The hook: the first time this thread's slow path holds the lock at `pause_where`, the other
 * thread starts its dlopen, and the lock is held while the constructor reaches it. */
static void pause_once(int where) {
  if (where != atomic_load(&pause_where) || !pthread_equal(pthread_self(), pauser) || atomic_exchange(&paused, 1)) return;
  atomic_store(&go_open, 1);
  usleep(300 * 1000);
}

static void *open_ctor_lib(void *p) {
  while (!atomic_load(&go_open)) usleep(1000);
  *(void **)p = dlopen(bin_path("libng_ctor.so"), RTLD_NOW);
  return NULL;
}

/* A call through q from a return address of its own, not a tail call. */
static __attribute__((noinline)) int query_at_a_new_site(int (*q)(void *)) {
  int r = q(NULL);
  __asm__ volatile("" ::: "memory");
  return r;
}

static void constructor_first_sight_while_the_lock_is_held(int where) {
  load_agent(&recording, 1);
  load_fake();
  int (*q)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "cudaStreamQuery");
  REQUIRE_EQ(q != NULL, 1);
  pauser = pthread_self();
  atomic_store(&pause_where, where);
  caller_locked_fn = pause_once;
  alarm(30); /* a deadlock: the case is killed (SIGALRM) and fails */
  void *lib = NULL;
  pthread_t t;
  REQUIRE_EQ(pthread_create(&t, NULL, open_ctor_lib, &lib), 0);
  CHECK_EQ(query_at_a_new_site(q), 0);
  pthread_join(t, NULL);
  alarm(0);
  caller_locked_fn = NULL;
  CHECK_EQ(atomic_load(&paused), 1);
  REQUIRE_EQ(lib != NULL, 1);
  const int *status = (const int *)dlsym(lib, "ctor_status");
  REQUIRE_EQ(status != NULL, 1);
  CHECK_EQ(*status, 0); /* the constructor's call went through the wrapper to the real function */
}

static void a_constructors_first_call_while_a_call_sites_first_sight_holds_the_lock(void) {
  constructor_first_sight_while_the_lock_is_held(0);
}

static void a_constructors_first_call_while_a_real_functions_lookup_holds_the_lock(void) {
  constructor_first_sight_while_the_lock_is_held(1);
}

static const struct test_case cases[] = {
    {"promoted_library_binds_a_later_library_to_the_wrappers", promoted_library_binds_a_later_library_to_the_wrappers, NULL, NULL},
    {"a_constructors_first_call_while_a_call_sites_first_sight_holds_the_lock",
     a_constructors_first_call_while_a_call_sites_first_sight_holds_the_lock, NULL, NULL},
    {"a_constructors_first_call_while_a_real_functions_lookup_holds_the_lock",
     a_constructors_first_call_while_a_real_functions_lookup_holds_the_lock, NULL, NULL},
    {"without_promotion_calls_go_straight_to_the_library", without_promotion_calls_go_straight_to_the_library, NULL, NULL},
    {"a_static_callers_symbol_is_unknown_not_a_neighbour", a_static_callers_symbol_is_unknown_not_a_neighbour, NULL, NULL},
    {"an_event_recorded_behind_held_work_is_pending_until_seen_complete",
     an_event_recorded_behind_held_work_is_pending_until_seen_complete, NULL, NULL},
    {"hot_calls_on_c_slots_make_no_upcall", hot_calls_on_c_slots_make_no_upcall, NULL, NULL},
    {"stream_counts_work_until_it_is_synchronized", stream_counts_work_until_it_is_synchronized, NULL, NULL},
    {"work_in_a_group_counts_at_the_outermost_group_end", work_in_a_group_counts_at_the_outermost_group_end, NULL, NULL},
    {"communicator_creation_and_release_go_to_java_with_their_arguments",
     communicator_creation_and_release_go_to_java_with_their_arguments, NULL, NULL},
    {"a_collective_on_a_special_stream_is_keyed_by_the_communicators_device",
     a_collective_on_a_special_stream_is_keyed_by_the_communicators_device, NULL, NULL},
    {"work_on_the_default_stream_is_counted_per_device_on_the_hot_path",
     work_on_the_default_stream_is_counted_per_device_on_the_hot_path, NULL, NULL},
    {"a_record_on_the_default_stream_takes_its_events_device_not_the_current_one",
     a_record_on_the_default_stream_takes_its_events_device_not_the_current_one,
     "NCCLEMU_FAIL=cudaGetDevice:2=cudaErrorInvalidValue,cudaGetDevice:3=cudaErrorInvalidValue,"
     "cudaGetDevice:4=cudaErrorInvalidValue,cudaGetDevice:5=cudaErrorInvalidValue,cudaGetDevice:6=cudaErrorInvalidValue,"
     "cudaGetDevice:7=cudaErrorInvalidValue,cudaGetDevice:8=cudaErrorInvalidValue",
     NULL},
    {"with_one_device_the_default_streams_work_is_counted_on_its_one_slot",
     with_one_device_the_default_streams_work_is_counted_on_its_one_slot, NULL, NULL},
    {"with_one_device_creations_and_releases_ask_for_no_current_device",
     with_one_device_creations_and_releases_ask_for_no_current_device, "NCCLEMU_FAIL=cudaGetDevice:2=cudaErrorInvalidValue",
     NULL},
    {"a_stream_first_seen_in_native_work_is_asked_for_then_made_a_slot",
     a_stream_first_seen_in_native_work_is_asked_for_then_made_a_slot, NULL, NULL},
    {"hot_calls_on_a_java_stream_go_to_java_and_move_a_c_event_there",
     hot_calls_on_a_java_stream_go_to_java_and_move_a_c_event_there, NULL, NULL},
    {"a_java_event_recorded_on_a_c_stream_moves_to_c", a_java_event_recorded_on_a_c_stream_moves_to_c, NULL, NULL},
    {"java_hot_calls_on_c_state_go_through_the_slot_natives", java_hot_calls_on_c_state_go_through_the_slot_natives, NULL, NULL},
    {"a_native_device_synchronize_marks_its_streams_done", a_native_device_synchronize_marks_its_streams_done, NULL, NULL},
    {"a_device_synchronize_passes_idle_streams_and_covers_the_busy_ones", a_device_synchronize_passes_idle_streams_and_covers_the_busy_ones, NULL, NULL},
    {"a_device_synchronize_covers_what_its_streams_counted_before_it_began",
     a_device_synchronize_covers_what_its_streams_counted_before_it_began, NULL, NULL},
    {"of_two_device_synchronizes_at_once_the_later_marks_what_it_saw",
     of_two_device_synchronizes_at_once_the_later_marks_what_it_saw, NULL, NULL},
    {"a_call_site_that_calls_several_functions_reaches_each", a_call_site_that_calls_several_functions_reaches_each,
     NULL, NULL},
    {"a_suppression_or_dying_closes_the_hot_paths_of_callers_already_seen",
     a_suppression_or_dying_closes_the_hot_paths_of_callers_already_seen, NULL, NULL},
    {"set_device_goes_to_java_only_when_it_changes", set_device_goes_to_java_only_when_it_changes, NULL, NULL},
    {"a_claimed_release_parks_the_thread_and_never_reaches_the_library",
     a_claimed_release_parks_the_thread_and_never_reaches_the_library, NULL, NULL},
    {"calls_of_nvidia_libraries_are_left_out", calls_of_nvidia_libraries_are_left_out, NULL, NULL},
    {"a_suppressed_library_is_forwarded_only", a_suppressed_library_is_forwarded_only, NULL, NULL},
    {"jni_entry_points_a_java_bridge_wraps_are_left_to_it", jni_entry_points_a_java_bridge_wraps_are_left_to_it, NULL, NULL},
    {"after_dying_wrappers_only_forward", after_dying_wrappers_only_forward, NULL, NULL},
    {"a_wrapper_called_from_an_exit_handler_forwards", a_wrapper_called_from_an_exit_handler_forwards, NULL, NULL},
    {"no_real_function_fails_as_an_uninitialized_library_would", no_real_function_fails_as_an_uninitialized_library_would, NULL, NULL},
    {"call_reaches_the_real_function_and_is_not_tracked", call_reaches_the_real_function_and_is_not_tracked, NULL, NULL},
    {"a_creation_on_a_thread_without_java_frames_carries_a_backtrace",
     a_creation_on_a_thread_without_java_frames_carries_a_backtrace, NULL, NULL},
    {"released_slots_are_reused_once_java_lets_go", released_slots_are_reused_once_java_lets_go, NULL, NULL},
    {"a_record_after_another_threads_release_and_creation_counts_on_the_live_slot",
     a_record_after_another_threads_release_and_creation_counts_on_the_live_slot, NULL, NULL},
    {"a_late_release_exit_leaves_the_handles_next_creation_in_its_slot_alone",
     a_late_release_exit_leaves_the_handles_next_creation_in_its_slot_alone, NULL, NULL},
    {"a_comm_made_at_a_destroyed_ones_address_before_its_exit_keeps_its_device",
     a_comm_made_at_a_destroyed_ones_address_before_its_exit_keeps_its_device, NULL, NULL},
    {"a_failed_comm_destroy_keeps_the_comms_device", a_failed_comm_destroy_keeps_the_comms_device,
     "NCCLEMU_FAIL=ncclCommDestroy:1=ncclSystemError", NULL},
    {"init_all_and_split_learn_their_devices", init_all_and_split_learn_their_devices, NULL, NULL},
};

TEST_MAIN(cases)
