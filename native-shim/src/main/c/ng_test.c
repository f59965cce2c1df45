/* The test mode (ncclguard_test.h): C programs load the library without a JVM, register C
 * callbacks in place of the upcalls, and reach what the JNI natives do through this table. A JVM
 * never calls ncclguard_test; it changes nothing until called. */
#include "ncclguard_test.h"
#include "ng.h"
#include "ng_bt.h"
#include "ng_caller.h"
#include "ng_load.h"
#include "ng_log.h"
#include "ng_patch.h"
#include "ng_prof.h"
#include "ng_stack.h"
#include "ng_track.h"
#include "ng_upcall.h"

static void set_wrapped(const char *const *names, int n) {
  ng_set_wrapped(names, n);
  ng_stack_invalidate();
}
static void set_suppressed(const char *const *names, int n) { ng_set_suppressed(names, n); }

static const ncclguard_api api = {
    ng_promote,
    ng_last_error,
    set_wrapped,
    set_suppressed,
    ng_api_slot_token,
    (int64_t(*)(int, int, int64_t, int, int64_t))ng_api_slot_exit,
    ng_api_device_sync_enter,
    ng_api_device_sync_exit,
    ng_api_events_pending,
    ng_api_streams_pending,
    ng_api_call,
    ng_api_release_slot,
    ng_mark_dying,
    ng_caller_library,
    ng_caller_symbol,
    ng_bt_of_caller,
    ng_prof_user_plugin,
    ng_prof_inits_since,
    ng_prof_comms,
    ng_prof_claim,
    ng_prof_in_flight,
    ng_track_stats,
    ng_fn_id,
    ng_api_adopt_events,
    ng_api_adopt_event,
    ng_stack_set_max,
    ng_patch_start,
    ng_patch_stats,
    ng_prof_hold_locks,
    ng_stack_set_vthread_entry,
};

NG_EXPORT const ncclguard_api *ncclguard_test(const ncclguard_hooks *h) {
  ng_up_set_hooks(h);
  ng_caller_set_test_locked(h != NULL ? h->caller_locked : NULL);
  return &api;
}
