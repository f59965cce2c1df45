/* Loading and the JVM: JNI_OnLoad, promotion to the global scope, the JNI natives of
 * dev.ncclguard.bridge.interposer.Interposer, the upcalls into it, attaching threads with no JVM
 * attachment as daemons, the dying flag, and the test mode that replaces the JVM by C callbacks.
 *
 * Nothing here calls into the JVM once it began to die (JVMTI VMDeath, the Java exit hook's
 * dying(), exit(3) or this library's destructor): the wrappers then only forward. */
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ncclguard_test.h"
#include "ng.h"

#define INTERPOSER "dev/ncclguard/bridge/interposer/Interposer"

ng_words ng_w = {.state = 1u << 1}; /* generation 1, not dying */
atomic_long ng_exceptions_cleared, ng_missing_real, ng_upcalls;
const char *ng_self_path = "";
uintptr_t ng_self_base;

static JavaVM *vm;
static jclass interposer;
static jmethodID m_enter, m_exit, m_hot_enter, m_hot_exit, m_seen, m_plugin_init;
static atomic_int java_ready;
static const ncclguard_hooks *hooks;
static char last_error[512];
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t detach_key;

/* A thread this library attached to the JVM (no Java frames of its own). */
static __thread int attached;

/* ---------------------------------------------------------------- small things */
void ng_log(const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof(line), "ncclguard: native: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof(line) - 2) len = sizeof(line) - 2;
  line[len++] = '\n';
  ssize_t w = write(2, line, len);
  (void)w;
}

void ng_log_once(atomic_int *flag, const char *fmt, ...) {
  if (atomic_exchange(flag, 1) != 0) return;
  char line[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  ng_log("%s", line);
}

int64_t ng_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ng_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void set_error(const char *fmt, ...) {
  pthread_mutex_lock(&error_lock);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&error_lock);
}

static const char *get_error(void) { return last_error; }

static void mark_dying(void) {
  atomic_fetch_or(&ng_w.state, NG_DYING);
  ng_gate_refresh();
}

static void on_exit_handler(void) { mark_dying(); }

static void detach_thread(void *p) {
  (void)p;
  /* a JVM that began to die must not be called, not even to detach */
  if (vm != NULL && !ng_is_dying()) (*vm)->DetachCurrentThread(vm);
}

/* dladdr of a static function names this library (of a global one, whatever it bound to). */
static void self_marker(void) {}

__attribute__((constructor)) static void ng_init(void) {
  Dl_info info;
  if (dladdr((void *)&self_marker, &info) != 0) {
    ng_self_path = strdup(info.dli_fname);
    ng_self_base = (uintptr_t)info.dli_fbase;
  }
  ng_default_object.path = "";
  ng_default_object.name = "";
  ng_track_init();
  ng_gate_refresh();
  ng_bt_init();
  pthread_key_create(&detach_key, detach_thread);
  atexit(on_exit_handler);
}

/* C++ static destructors and atexit handlers of other libraries may run after this: they forward. */
__attribute__((destructor)) static void ng_fini(void) { mark_dying(); }

/* ---------------------------------------------------------------- promotion */
static int promote(void) {
  if (ng_self_path[0] == '\0') {
    set_error("dladdr could not name the agent's native library");
    return 0;
  }
  /* into the global scope, so that libraries loaded from now on bind their NCCL and cudart
   * references to our wrappers; never unloaded, since their references point into us */
  void *h = dlopen(ng_self_path, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL | RTLD_NODELETE);
  if (h == NULL) {
    const char *e = dlerror();
    set_error("dlopen(%s, RTLD_GLOBAL) failed: %s", ng_self_path, e != NULL ? e : "unknown error");
    return 0;
  }
  ng_owners_start();
  return 1;
}

/* ---------------------------------------------------------------- upcalls */
static JNIEnv *env_now(int attach) {
  if (vm == NULL || ng_is_dying()) return NULL;
  JNIEnv *env = NULL;
  jint r = (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8);
  if (r == JNI_OK) return env;
  if (r != JNI_EDETACHED || !attach) return NULL;
  char name[64];
  snprintf(name, sizeof(name), "ncclguard-native-%ld", (long)syscall(SYS_gettid));
  JavaVMAttachArgs args = {JNI_VERSION_1_8, name, NULL};
  if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, &args) != JNI_OK) return NULL;
  attached = 1;
  pthread_setspecific(detach_key, (void *)1);
  return env;
}

int ng_up_ready(void) {
  if (ng_is_dying()) return 0;
  return hooks != NULL || atomic_load_explicit(&java_ready, NG_ACQUIRE);
}

int ng_up_java_thread(void) {
  if (hooks != NULL) return hooks->java_thread == NULL || hooks->java_thread();
  if (attached || vm == NULL) return 0;
  JNIEnv *env;
  return (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) == JNI_OK;
}

/* After a call into Java: a pending exception is cleared and counted, never left to the caller. */
static int cleared(JNIEnv *env) {
  if (!(*env)->ExceptionCheck(env)) return 0;
  (*env)->ExceptionClear(env);
  atomic_fetch_add_explicit(&ng_exceptions_cleared, 1, NG_RELAXED);
  return 1;
}

static jlongArray long_array(JNIEnv *env, const uint64_t *slots, int n) {
  jlongArray a = (*env)->NewLongArray(env, n);
  if (a == NULL) {
    cleared(env);
    return NULL;
  }
  (*env)->SetLongArrayRegion(env, a, 0, n, (const jlong *)slots);
  return a;
}

int64_t ng_up_enter(int fn, const uint64_t *slots, int n, ng_site *site, int *ok) {
  *ok = 0;
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  if (hooks != NULL) {
    if (hooks->enter == NULL) return 0;
    *ok = 1;
    return hooks->enter(fn, (const int64_t *)slots, n, (int64_t)(uintptr_t)site);
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return 0;
  jlongArray a = long_array(env, slots, n);
  if (a == NULL) return 0;
  jlong r = (*env)->CallStaticLongMethod(env, interposer, m_enter, (jint)fn, a, (jlong)(uintptr_t)site);
  *ok = !cleared(env);
  (*env)->DeleteLocalRef(env, a);
  return *ok ? r : 0;
}

int ng_up_exit(int fn, const uint64_t *slots, int n, int status, int64_t token, ng_site *site, int slot) {
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  if (hooks != NULL) {
    return hooks->exit != NULL && hooks->exit(fn, (const int64_t *)slots, n, status, token, (int64_t)(uintptr_t)site, slot);
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return 0;
  jlongArray a = long_array(env, slots, n);
  if (a == NULL) return 0;
  jboolean held = (*env)->CallStaticBooleanMethod(env, interposer, m_exit, (jint)fn, a, (jint)status, (jlong)token,
                                                  (jlong)(uintptr_t)site, (jint)slot);
  int failed = cleared(env);
  (*env)->DeleteLocalRef(env, a);
  return !failed && held;
}

int64_t ng_up_hot_enter(int fn, uint64_t handle, uint64_t stream, ng_site *site, int *ok) {
  *ok = 0;
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  if (hooks != NULL) {
    if (hooks->hot_enter == NULL) return NG_NOT_JAVAS;
    *ok = 1;
    return hooks->hot_enter(fn, (int64_t)handle, (int64_t)stream, (int64_t)(uintptr_t)site);
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return NG_NOT_JAVAS;
  jlong r = (*env)->CallStaticLongMethod(env, interposer, m_hot_enter, (jint)fn, (jlong)handle, (jlong)stream,
                                         (jlong)(uintptr_t)site);
  *ok = !cleared(env);
  return *ok ? r : NG_NOT_JAVAS;
}

void ng_up_hot_exit(int fn, uint64_t handle, uint64_t stream, int status, int64_t token, ng_site *site) {
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  if (hooks != NULL) {
    if (hooks->hot_exit != NULL) hooks->hot_exit(fn, (int64_t)handle, (int64_t)stream, status, token, (int64_t)(uintptr_t)site);
    return;
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return;
  (*env)->CallStaticVoidMethod(env, interposer, m_hot_exit, (jint)fn, (jlong)handle, (jlong)stream, (jint)status,
                               (jlong)token, (jlong)(uintptr_t)site);
  cleared(env);
}

int ng_up_seen(int fn, uint64_t handle, int device, int slot, ng_site *site) {
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  if (hooks != NULL) return hooks->seen != NULL && hooks->seen(fn, (int64_t)handle, device, slot, (int64_t)(uintptr_t)site);
  JNIEnv *env = env_now(1);
  if (env == NULL) return 0;
  jboolean held = (*env)->CallStaticBooleanMethod(env, interposer, m_seen, (jint)fn, (jlong)handle, (jint)device,
                                                  (jint)slot, (jlong)(uintptr_t)site);
  return !cleared(env) && held;
}

void ng_up_plugin_init(int64_t record) {
  if (!ng_up_ready()) return;
  if (hooks != NULL) {
    if (hooks->plugin_init != NULL && (hooks->java_thread == NULL || hooks->java_thread())) hooks->plugin_init(record);
    return;
  }
  /* only on a thread with Java frames of its own: the point is its Java stack */
  if (attached) return;
  JNIEnv *env = env_now(0);
  if (env == NULL) return;
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  (*env)->CallStaticVoidMethod(env, interposer, m_plugin_init, (jlong)record);
  cleared(env);
}

/* ---------------------------------------------------------------- the natives, in C */
static char *site_library(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL ? strdup(s->caller->obj->name) : NULL;
}

static char *site_symbol(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL && s->caller->sym != NULL ? strdup(s->caller->sym) : NULL;
}

static char *site_backtrace(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL ? ng_site_backtrace(s) : NULL;
}

static void set_wrapped(const char *const *names, int n) { ng_set_wrapped(names, n); }
static void set_suppressed(const char *const *names, int n) { ng_set_suppressed(names, n); }

static int user_plugin(const char *name) {
  char err[512];
  int ok = ng_prof_user_plugin(name, err, sizeof(err));
  if (!ok) set_error("%s", err);
  return ok;
}

static int function_id(const char *name) {
  for (int i = 0; i < NG_FN_COUNT; i++) {
    if (strcmp(ng_fn_name[i], name) == 0) return i;
  }
  return -1;
}

static const ncclguard_api api = {
    promote,
    get_error,
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
    mark_dying,
    site_library,
    site_symbol,
    site_backtrace,
    user_plugin,
    ng_prof_inits_since,
    ng_prof_comms,
    ng_prof_claim,
    ng_prof_in_flight,
    ng_track_stats,
    function_id,
};

NG_EXPORT const ncclguard_api *ncclguard_test(const ncclguard_hooks *h) {
  hooks = h;
  return &api;
}

/* ---------------------------------------------------------------- the natives, in JNI */
static jboolean JNICALL j_promote(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return (jboolean)promote();
}

static jstring JNICALL j_last_error(JNIEnv *env, jclass c) {
  (void)c;
  pthread_mutex_lock(&error_lock);
  jstring s = last_error[0] != '\0' ? (*env)->NewStringUTF(env, last_error) : NULL;
  pthread_mutex_unlock(&error_lock);
  return s;
}

/* The strings of a String[], copied; NULL entries as "". */
static char **strings(JNIEnv *env, jobjectArray a, int *n) {
  *n = a != NULL ? (*env)->GetArrayLength(env, a) : 0;
  char **out = calloc((size_t)(*n > 0 ? *n : 1), sizeof(char *));
  if (out == NULL) return NULL;
  for (int i = 0; i < *n; i++) {
    jstring s = (jstring)(*env)->GetObjectArrayElement(env, a, i);
    const char *u = s != NULL ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
    out[i] = strdup(u != NULL ? u : "");
    if (u != NULL) (*env)->ReleaseStringUTFChars(env, s, u);
    if (s != NULL) (*env)->DeleteLocalRef(env, s);
  }
  return out;
}

static void free_strings(char **s, int n) {
  for (int i = 0; s != NULL && i < n; i++) free(s[i]);
  free(s);
}

static void JNICALL j_wrapped_natives(JNIEnv *env, jclass c, jobjectArray names) {
  (void)c;
  int n;
  char **s = strings(env, names, &n);
  if (s != NULL) ng_set_wrapped((const char *const *)s, n);
  free_strings(s, n);
}

static void JNICALL j_suppress_callers(JNIEnv *env, jclass c, jobjectArray names) {
  (void)c;
  int n;
  char **s = strings(env, names, &n);
  if (s != NULL) ng_set_suppressed((const char *const *)s, n);
  free_strings(s, n);
}

static jlong JNICALL j_slot_token(JNIEnv *env, jclass c, jint fn, jint slot) {
  (void)env, (void)c;
  return ng_api_slot_token(fn, slot);
}

static jlong JNICALL j_slot_exit(JNIEnv *env, jclass c, jint fn, jint slot, jlong other, jint status, jlong token) {
  (void)env, (void)c;
  return ng_api_slot_exit(fn, slot, (uint64_t)other, status, token);
}

static jlong JNICALL j_device_sync_enter(JNIEnv *env, jclass c, jint device) {
  (void)env, (void)c;
  return ng_api_device_sync_enter(device);
}

static void JNICALL j_device_sync_exit(JNIEnv *env, jclass c, jint device, jlong token) {
  (void)env, (void)c;
  ng_api_device_sync_exit(device, token);
}

static void JNICALL j_events_pending(JNIEnv *env, jclass c, jintArray slots, jlongArray out) {
  (void)c;
  jsize n = (*env)->GetArrayLength(env, slots);
  if ((*env)->GetArrayLength(env, out) < 3 * n) return;
  int32_t *s = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  int64_t *o = malloc(sizeof(int64_t) * 3 * (size_t)(n > 0 ? n : 1));
  if (s != NULL && o != NULL) {
    (*env)->GetIntArrayRegion(env, slots, 0, n, (jint *)s);
    ng_api_events_pending(s, n, o);
    (*env)->SetLongArrayRegion(env, out, 0, 3 * n, (const jlong *)o);
  }
  free(s);
  free(o);
}

static void JNICALL j_streams_pending(JNIEnv *env, jclass c, jintArray slots, jlongArray out) {
  (void)c;
  jsize n = (*env)->GetArrayLength(env, slots);
  if ((*env)->GetArrayLength(env, out) < n) return;
  int32_t *s = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  int64_t *o = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (s != NULL && o != NULL) {
    (*env)->GetIntArrayRegion(env, slots, 0, n, (jint *)s);
    ng_api_streams_pending(s, n, o);
    (*env)->SetLongArrayRegion(env, out, 0, n, (const jlong *)o);
  }
  free(s);
  free(o);
}

static jint JNICALL j_call(JNIEnv *env, jclass c, jlong caller, jint fn, jlong a0, jlong a1, jlong a2, jlong a3) {
  (void)env, (void)c;
  return ng_api_call(caller, fn, a0, a1, a2, a3);
}

static void JNICALL j_release_slot(JNIEnv *env, jclass c, jint slot) {
  (void)env, (void)c;
  ng_api_release_slot(slot);
}

static void JNICALL j_event_to_java(JNIEnv *env, jclass c, jlong handle) {
  (void)env, (void)c;
  ng_api_event_to_java((uint64_t)handle);
}

/* setenv(3) in this process's C environment, where NCCL reads NCCL_PROFILER_PLUGIN (Java's
 * System.getenv is a copy taken at start, and ProcessBuilder children get that copy). */
static jboolean JNICALL j_set_env(JNIEnv *env, jclass c, jstring name, jstring value) {
  (void)c;
  if (name == NULL) return JNI_FALSE;
  const char *n = (*env)->GetStringUTFChars(env, name, NULL);
  const char *v = value != NULL ? (*env)->GetStringUTFChars(env, value, NULL) : NULL;
  int r = n == NULL ? -1 : value == NULL ? unsetenv(n) : v == NULL ? -1 : setenv(n, v, 1);
  if (r != 0) set_error("setenv(%s) failed: %s", n != NULL ? n : "?", strerror(errno));
  if (v != NULL) (*env)->ReleaseStringUTFChars(env, value, v);
  if (n != NULL) (*env)->ReleaseStringUTFChars(env, name, n);
  return r == 0 ? JNI_TRUE : JNI_FALSE;
}

static void JNICALL j_dying(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  mark_dying();
}

int ng_start_plain_thread(void *(*fn)(void *), void *arg) {
  pthread_attr_t attr;
  pthread_t t;
  if (pthread_attr_init(&attr) != 0) return -1;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* no signal of the process is ever delivered to it: it blocks them all from its start */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&t, &attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return rc;
}

/* ---------------------------------------------------------------- exit watchdog */
/* Armed by the exit hook when a call into NCCL or CUDA never returned: the JVM then goes on to
 * exit(3), whose handlers (the libraries' own exit work) get `millis`; if they have not ended the
 * process by then, this plain thread (never attached to the JVM) calls _exit(status). Armed once:
 * the flag is set before the values are written and the thread is made after, so the thread
 * reads them after pthread_create's barrier and nothing else ever writes them. */
static atomic_int watchdog_armed;
static long watchdog_millis;
static int watchdog_status;

static void *exit_watchdog(void *p) {
  (void)p;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += watchdog_millis / 1000;
  until.tv_nsec += (watchdog_millis % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
  }
  char line[160];
  int n = snprintf(line, sizeof(line),
                   "ncclguard: the libraries' exit handlers had not finished after %ld ms; _exit(%d)\n",
                   watchdog_millis, watchdog_status);
  if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
    /* nowhere left to say it: the status is what matters */
  }
  _exit(watchdog_status);
  return NULL;
}

static jboolean JNICALL j_arm_exit_watchdog(JNIEnv *env, jclass c, jlong millis, jint status) {
  (void)env, (void)c;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&watchdog_armed, &expected, 1)) return JNI_TRUE; /* armed already */
  watchdog_millis = millis < 0 ? 0 : millis > 86400000L ? 86400000L : (long)millis;
  watchdog_status = status;
  if (ng_start_plain_thread(exit_watchdog, NULL) == 0) return JNI_TRUE;
  atomic_store(&watchdog_armed, 0);
  return JNI_FALSE;
}

static jstring owned_string(JNIEnv *env, char *s) {
  jstring j = s != NULL ? (*env)->NewStringUTF(env, s) : NULL;
  free(s);
  return j;
}

static jstring JNICALL j_caller_library(JNIEnv *env, jclass c, jlong caller) {
  (void)c;
  return owned_string(env, site_library(caller));
}

static jstring JNICALL j_caller_symbol(JNIEnv *env, jclass c, jlong caller) {
  (void)c;
  return owned_string(env, site_symbol(caller));
}

static jstring JNICALL j_caller_backtrace(JNIEnv *env, jclass c, jlong caller) {
  (void)c;
  return owned_string(env, site_backtrace(caller));
}

static jboolean JNICALL j_user_plugin(JNIEnv *env, jclass c, jstring name) {
  (void)c;
  const char *u = name != NULL ? (*env)->GetStringUTFChars(env, name, NULL) : NULL;
  int ok = user_plugin(u);
  if (u != NULL) (*env)->ReleaseStringUTFChars(env, name, u);
  return (jboolean)ok;
}

/* Fills out (a multiple of NG_PROF_RECORD_LONGS); returns how many records there are. */
static jint JNICALL j_plugin_inits_since(JNIEnv *env, jclass c, jlong seq, jlongArray out) {
  (void)c;
  jsize len = (*env)->GetArrayLength(env, out);
  int n = len / NG_PROF_RECORD_LONGS;
  int64_t *o = malloc(sizeof(int64_t) * (size_t)(len > 0 ? len : 1));
  if (o == NULL) return 0;
  int total = ng_prof_inits_since(seq, o, n);
  int filled = total < n ? total : n;
  (*env)->SetLongArrayRegion(env, out, 0, filled * NG_PROF_RECORD_LONGS, (const jlong *)o);
  free(o);
  return total;
}

static jint JNICALL j_plugin_comms(JNIEnv *env, jclass c, jlongArray out) {
  (void)c;
  jsize len = (*env)->GetArrayLength(env, out);
  int n = len / NG_PROF_RECORD_LONGS;
  int64_t *o = malloc(sizeof(int64_t) * (size_t)(len > 0 ? len : 1));
  if (o == NULL) return 0;
  int total = ng_prof_comms(o, n);
  int filled = total < n ? total : n;
  (*env)->SetLongArrayRegion(env, out, 0, filled * NG_PROF_RECORD_LONGS, (const jlong *)o);
  free(o);
  return total;
}

static void JNICALL j_plugin_claim(JNIEnv *env, jclass c, jlong record) {
  (void)env, (void)c;
  ng_prof_claim(record);
}

static jstring JNICALL j_plugin_comm_name(JNIEnv *env, jclass c, jlong record) {
  (void)c;
  const char *n = ng_prof_comm_name(record);
  return n != NULL ? (*env)->NewStringUTF(env, n) : NULL;
}

static jint JNICALL j_in_flight(JNIEnv *env, jclass c, jlong record, jlongArray out) {
  (void)c;
  int64_t o[8] = {0};
  int total = ng_prof_in_flight(record, o, 8);
  jsize len = (*env)->GetArrayLength(env, out);
  (*env)->SetLongArrayRegion(env, out, 0, len < 6 ? len : 6, (const jlong *)o);
  return total;
}

static jobjectArray JNICALL j_in_flight_names(JNIEnv *env, jclass c, jlong record) {
  (void)c;
  const char *func = NULL, *datatype = NULL;
  if (!ng_prof_in_flight_names(record, &func, &datatype)) return NULL;
  jclass string = (*env)->FindClass(env, "java/lang/String");
  if (string == NULL) return NULL;
  jobjectArray a = (*env)->NewObjectArray(env, 2, string, NULL);
  if (a == NULL) return NULL;
  (*env)->SetObjectArrayElement(env, a, 0, func != NULL ? (*env)->NewStringUTF(env, func) : NULL);
  (*env)->SetObjectArrayElement(env, a, 1, datatype != NULL ? (*env)->NewStringUTF(env, datatype) : NULL);
  return a;
}

static void JNICALL j_stats(JNIEnv *env, jclass c, jlongArray out) {
  (void)c;
  int64_t o[16] = {0};
  ng_track_stats(o, 16);
  jsize len = (*env)->GetArrayLength(env, out);
  (*env)->SetLongArrayRegion(env, out, 0, len < 16 ? len : 16, (const jlong *)o);
}

static jint JNICALL j_catalog_size(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return NG_FN_COUNT;
}

static jstring JNICALL j_function_name(JNIEnv *env, jclass c, jint fn) {
  (void)c;
  return fn >= 0 && fn < NG_FN_COUNT ? (*env)->NewStringUTF(env, ng_fn_name[fn]) : NULL;
}

static const JNINativeMethod natives[] = {
    {"promote", "()Z", (void *)j_promote},
    {"lastError", "()Ljava/lang/String;", (void *)j_last_error},
    {"wrappedNatives", "([Ljava/lang/String;)V", (void *)j_wrapped_natives},
    {"suppressCallers", "([Ljava/lang/String;)V", (void *)j_suppress_callers},
    {"slotToken", "(II)J", (void *)j_slot_token},
    {"slotExit", "(IIJIJ)J", (void *)j_slot_exit},
    {"deviceSyncEnter", "(I)J", (void *)j_device_sync_enter},
    {"deviceSyncExit", "(IJ)V", (void *)j_device_sync_exit},
    {"eventsPending", "([I[J)V", (void *)j_events_pending},
    {"streamsPending", "([I[J)V", (void *)j_streams_pending},
    {"call", "(JIJJJJ)I", (void *)j_call},
    {"releaseSlot", "(I)V", (void *)j_release_slot},
    {"dying", "()V", (void *)j_dying},
    {"armExitWatchdog", "(JI)Z", (void *)j_arm_exit_watchdog},
    {"eventToJava", "(J)V", (void *)j_event_to_java},
    {"setEnv", "(Ljava/lang/String;Ljava/lang/String;)Z", (void *)j_set_env},
    {"callerLibrary", "(J)Ljava/lang/String;", (void *)j_caller_library},
    {"callerSymbol", "(J)Ljava/lang/String;", (void *)j_caller_symbol},
    {"callerBacktrace", "(J)Ljava/lang/String;", (void *)j_caller_backtrace},
    {"userPlugin", "(Ljava/lang/String;)Z", (void *)j_user_plugin},
    {"pluginInitsSince", "(J[J)I", (void *)j_plugin_inits_since},
    {"pluginComms", "([J)I", (void *)j_plugin_comms},
    {"pluginClaim", "(J)V", (void *)j_plugin_claim},
    {"pluginCommName", "(J)Ljava/lang/String;", (void *)j_plugin_comm_name},
    {"inFlight", "(J[J)I", (void *)j_in_flight},
    {"inFlightNames", "(J)[Ljava/lang/String;", (void *)j_in_flight_names},
    {"stats", "([J)V", (void *)j_stats},
    {"catalogSize", "()I", (void *)j_catalog_size},
    {"functionName", "(I)Ljava/lang/String;", (void *)j_function_name},
};

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
  (void)jvmti, (void)env;
  mark_dying();
}

static jmethodID static_method(JNIEnv *env, const char *name, const char *sig) {
  jmethodID m = (*env)->GetStaticMethodID(env, interposer, name, sig);
  if (m == NULL) {
    cleared(env);
    ng_log("%s.%s%s is missing: no upcalls", INTERPOSER, name, sig);
  }
  return m;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *jvm, void *reserved) {
  (void)reserved;
  vm = jvm;
  JNIEnv *env;
  if ((*jvm)->GetEnv(jvm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_VERSION_1_8;
  jvmtiEnv *jvmti;
  if ((*jvm)->GetEnv(jvm, (void **)&jvmti, JVMTI_VERSION_1_2) == JNI_OK) {
    jvmtiEventCallbacks callbacks;
    memset(&callbacks, 0, sizeof(callbacks));
    callbacks.VMDeath = on_vm_death;
    if ((*jvmti)->SetEventCallbacks(jvmti, &callbacks, (jint)sizeof(callbacks)) != JVMTI_ERROR_NONE ||
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL) != JVMTI_ERROR_NONE)
      ng_log("no JVMTI VMDeath event: relying on the exit hook's dying()");
  }
  /* the class of the loader that loaded this library (FindClass in JNI_OnLoad uses it) */
  jclass c = (*env)->FindClass(env, INTERPOSER);
  if (c == NULL) {
    cleared(env);
    return JNI_VERSION_1_8; /* loaded by something else than the agent: natives and upcalls stay off */
  }
  interposer = (jclass)(*env)->NewGlobalRef(env, c);
  (*env)->DeleteLocalRef(env, c);
  /* one by one: an Interposer that declares fewer natives still gets those it declares */
  for (size_t i = 0; i < sizeof(natives) / sizeof(natives[0]); i++) {
    if ((*env)->RegisterNatives(env, interposer, &natives[i], 1) != 0) cleared(env);
  }
  m_enter = static_method(env, "enter", "(I[JJ)J");
  m_exit = static_method(env, "exit", "(I[JIJJI)Z");
  m_hot_enter = static_method(env, "hotEnter", "(IJJJ)J");
  m_hot_exit = static_method(env, "hotExit", "(IJJIJJ)V");
  m_seen = static_method(env, "seen", "(IJIIJ)Z");
  m_plugin_init = static_method(env, "pluginInit", "(J)V");
  if (m_enter && m_exit && m_hot_enter && m_hot_exit && m_seen && m_plugin_init) atomic_store(&java_ready, 1);
  return JNI_VERSION_1_8;
}
