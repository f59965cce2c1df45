/* The upcalls into dev.ncclguard.bridge.interposer.Interposer, on the calling thread: threads
 * with no JVM attachment are attached as daemons (ncclguard-native-<tid>) and detached at their
 * exit. In the test mode the same calls go to C callbacks instead (ncclguard_test.h).
 *
 * Nothing here calls into the JVM once it began to die (JVMTI VMDeath, the Java exit hook's
 * dying(), exit(3) or this library's destructor): the wrappers then only forward. */
#include <dlfcn.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ng.h"
#include "ng_log.h"
#include "ng_upcall.h"

#define INTERPOSER "dev/ncclguard/bridge/interposer/Interposer"

static JavaVM *vm;
static jclass interposer;
static jmethodID m_enter, m_exit, m_hot_enter, m_hot_exit, m_seen, m_plugin_init;
static atomic_int java_ready NG_READ_MOSTLY;
static const ncclguard_hooks *hooks;
static pthread_key_t detach_key;

/* HotSpot's AsyncGetCallTrace (forte.cpp), exported by libjvm: no JVM transition */
typedef struct {
  jint lineno;
  jmethodID method_id;
} asgct_frame;
typedef struct {
  JNIEnv *env_id;
  jint num_frames;
  asgct_frame *frames;
} asgct_trace;
static void (*asgct)(asgct_trace *, jint, void *);
static jvmtiEnv *jvmti;
static atomic_int class_load_on;
/* ASGCT's answer when no JVMTI environment enabled ClassLoad (ticks_no_class_load) */
#define ASGCT_NO_CLASS_LOAD (-1)

/* A thread this library attached to the JVM (no Java frames of its own). */
static __thread int attached;

static void detach_thread(void *p) {
  (void)p;
  /* a JVM that began to die must not be called, not even to detach */
  if (vm != NULL && !ng_is_dying()) (*vm)->DetachCurrentThread(vm);
}

void ng_up_init(void) { pthread_key_create(&detach_key, detach_thread); }

void ng_up_set_vm(JavaVM *jvm) { vm = jvm; }

void ng_up_set_hooks(const ncclguard_hooks *h) { hooks = h; }

static jmethodID static_method(JNIEnv *env, const char *name, const char *sig) {
  jmethodID m = (*env)->GetStaticMethodID(env, interposer, name, sig);
  if (m == NULL) {
    ng_up_cleared(env);
    ng_log("%s.%s%s is missing: no upcalls", INTERPOSER, name, sig);
  }
  return m;
}

void ng_up_bind(JNIEnv *env, jclass c) {
  interposer = c;
  m_enter = static_method(env, "enter", "(I[JJ)J");
  m_exit = static_method(env, "exit", "(I[JIJJI)Z");
  m_hot_enter = static_method(env, "hotEnter", "(IJJJ)J");
  m_hot_exit = static_method(env, "hotExit", "(IJJIJJ)V");
  m_seen = static_method(env, "seen", "(IJIIJ)Z");
  m_plugin_init = static_method(env, "pluginInit", "(J)V");
  if (m_enter && m_exit && m_hot_enter && m_hot_exit && m_seen && m_plugin_init) atomic_store(&java_ready, 1);
}

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
  /* java_ready first: under a JVM the hooks (the C tests') are never read */
  return atomic_load_explicit(&java_ready, NG_ACQUIRE) || hooks != NULL;
}

int ng_up_java_thread(void) {
  if (hooks != NULL) return hooks->java_thread == NULL || hooks->java_thread();
  if (attached || vm == NULL) return 0;
  JNIEnv *env;
  return (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) == JNI_OK;
}

int ng_up_cleared(JNIEnv *env) {
  if (!(*env)->ExceptionCheck(env)) return 0;
  (*env)->ExceptionClear(env);
  atomic_fetch_add_explicit(&ng_exceptions_cleared, 1, NG_RELAXED);
  return 1;
}

static void up_count(int fn) {
  atomic_fetch_add_explicit(&ng_upcalls, 1, NG_RELAXED);
  if (fn >= 0 && fn < NG_FN_COUNT) atomic_fetch_add_explicit(&ng_upcalls_fn[fn], 1, NG_RELAXED);
}

static jlongArray long_array(JNIEnv *env, const uint64_t *slots, int n) {
  jlongArray a = (*env)->NewLongArray(env, n);
  if (a == NULL) {
    ng_up_cleared(env);
    return NULL;
  }
  (*env)->SetLongArrayRegion(env, a, 0, n, (const jlong *)slots);
  return a;
}

int64_t ng_up_enter(int fn, const uint64_t *slots, int n, ng_site *site, int *ok) {
  *ok = 0;
  up_count(fn);
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
  *ok = !ng_up_cleared(env);
  (*env)->DeleteLocalRef(env, a);
  return *ok ? r : 0;
}

int ng_up_exit(int fn, const uint64_t *slots, int n, int status, int64_t token, ng_site *site, int slot) {
  up_count(fn);
  if (hooks != NULL) {
    return hooks->exit != NULL && hooks->exit(fn, (const int64_t *)slots, n, status, token, (int64_t)(uintptr_t)site, slot);
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return 0;
  jlongArray a = long_array(env, slots, n);
  if (a == NULL) return 0;
  jboolean held = (*env)->CallStaticBooleanMethod(env, interposer, m_exit, (jint)fn, a, (jint)status, (jlong)token,
                                                  (jlong)(uintptr_t)site, (jint)slot);
  int failed = ng_up_cleared(env);
  (*env)->DeleteLocalRef(env, a);
  return !failed && held;
}

int64_t ng_up_hot_enter(int fn, uint64_t handle, uint64_t stream, ng_site *site, int *ok) {
  *ok = 0;
  up_count(fn);
  if (hooks != NULL) {
    if (hooks->hot_enter == NULL) return NG_NOT_JAVAS;
    *ok = 1;
    return hooks->hot_enter(fn, (int64_t)handle, (int64_t)stream, (int64_t)(uintptr_t)site);
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return NG_NOT_JAVAS;
  jlong r = (*env)->CallStaticLongMethod(env, interposer, m_hot_enter, (jint)fn, (jlong)handle, (jlong)stream,
                                         (jlong)(uintptr_t)site);
  *ok = !ng_up_cleared(env);
  return *ok ? r : NG_NOT_JAVAS;
}

void ng_up_hot_exit(int fn, uint64_t handle, uint64_t stream, int status, int64_t token, ng_site *site) {
  up_count(fn);
  if (hooks != NULL) {
    if (hooks->hot_exit != NULL) hooks->hot_exit(fn, (int64_t)handle, (int64_t)stream, status, token, (int64_t)(uintptr_t)site);
    return;
  }
  JNIEnv *env = env_now(1);
  if (env == NULL) return;
  (*env)->CallStaticVoidMethod(env, interposer, m_hot_exit, (jint)fn, (jlong)handle, (jlong)stream, (jint)status,
                               (jlong)token, (jlong)(uintptr_t)site);
  ng_up_cleared(env);
}

int ng_up_seen(int fn, uint64_t handle, int device, int slot, ng_site *site) {
  up_count(fn);
  if (hooks != NULL) return hooks->seen != NULL && hooks->seen(fn, (int64_t)handle, device, slot, (int64_t)(uintptr_t)site);
  JNIEnv *env = env_now(1);
  if (env == NULL) return 0;
  jboolean held = (*env)->CallStaticBooleanMethod(env, interposer, m_seen, (jint)fn, (jlong)handle, (jint)device,
                                                  (jint)slot, (jlong)(uintptr_t)site);
  return !ng_up_cleared(env) && held;
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
  ng_up_cleared(env);
}

void ng_up_set_jvmti(void *env) {
  jvmti = (jvmtiEnv *)env;
  /* for ng_up_name_frame; both may be added in the live phase. Without them frames keep their
   * names and lose lines and files */
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  caps.can_get_line_numbers = 1;
  caps.can_get_source_file_name = 1;
  if (jvmti != NULL && (*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
    ng_log("JVMTI refused line numbers and source file names: stacks named late show no lines");
  }
  asgct = (void (*)(asgct_trace *, jint, void *))dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
}

int ng_up_java_frames(void *frames, int max) {
  if (hooks != NULL) {
    if (hooks->java_stack == NULL || (hooks->java_thread != NULL && !hooks->java_thread())) return -1;
    /* the pairs in the frames' own memory (16 bytes each either way), each turned into its frame
     * in place: no allocation, so that a counted walk (scripts/icount.sh) is the walk's work */
    _Static_assert(sizeof(asgct_frame) == 2 * sizeof(int64_t), "a frame is a (method, bci) pair's size");
    int64_t *pairs = frames;
    int n = hooks->java_stack(pairs, max);
    asgct_frame *f = frames;
    for (int i = 0; i < n && i < max; i++) {
      int64_t method = pairs[2 * i], bci = pairs[2 * i + 1];
      f[i].method_id = (jmethodID)(uintptr_t)method;
      f[i].lineno = (jint)bci;
    }
    return n;
  }
  if (asgct == NULL || attached || vm == NULL || ng_is_dying()) return -1;
  JNIEnv *env;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return -1;
  for (int attempt = 0; attempt < 2; attempt++) {
    asgct_trace t = {env, 0, frames};
    asgct(&t, max, NULL);
    if (t.num_frames != ASGCT_NO_CLASS_LOAD || attempt > 0 || jvmti == NULL) return t.num_frames;
    /* ASGCT walks only while some JVMTI environment posts ClassLoad: ours, from the first walk on */
    if (atomic_exchange(&class_load_on, 1) == 0 &&
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_LOAD, NULL) != JVMTI_ERROR_NONE) {
      return -1;
    }
  }
  return -1;
}

static char *jvmti_copy(char *s) {
  if (s == NULL) return NULL;
  char *c = strdup(s);
  (*jvmti)->Deallocate(jvmti, (unsigned char *)s);
  return c;
}

void ng_up_name_frame(void *method, int bci, void **cls, char **name, char **sig, char **file, int *line) {
  *cls = NULL;
  *name = *sig = *file = NULL;
  *line = -1;
  if (jvmti == NULL || method == NULL) return;
  jmethodID m = (jmethodID)method;
  char *n = NULL, *g = NULL;
  /* an unloaded class's method: JVMTI_ERROR_INVALID_METHODID */
  if ((*jvmti)->GetMethodName(jvmti, m, &n, &g, NULL) != JVMTI_ERROR_NONE) return;
  *name = jvmti_copy(n);
  *sig = jvmti_copy(g);
  jclass k = NULL;
  if ((*jvmti)->GetMethodDeclaringClass(jvmti, m, &k) != JVMTI_ERROR_NONE) return;
  *cls = k;
  char *f = NULL;
  if ((*jvmti)->GetSourceFileName(jvmti, k, &f) == JVMTI_ERROR_NONE) *file = jvmti_copy(f);
  jboolean native = JNI_FALSE;
  if ((*jvmti)->IsMethodNative(jvmti, m, &native) == JVMTI_ERROR_NONE && native) {
    *line = -2;
    return;
  }
  jint count = 0;
  jvmtiLineNumberEntry *table = NULL;
  if ((*jvmti)->GetLineNumberTable(jvmti, m, &count, &table) == JVMTI_ERROR_NONE) {
    /* Method::line_number_from_bci: the entry at bci, else the last of those before it with the
     * greatest start; the synchronization entry (-1) is bci 0 */
    int at = bci == -1 ? 0 : bci;
    int best_bci = 0, best = -1;
    for (jint i = 0; at >= 0 && i < count; i++) {
      int start = (int)table[i].start_location;
      if (start == at) {
        best = table[i].line_number;
        break;
      }
      if (start < at && start >= best_bci) {
        best_bci = start;
        best = table[i].line_number;
      }
    }
    *line = best;
    (*jvmti)->Deallocate(jvmti, (unsigned char *)table);
  }
}

int ng_up_make_method_ids(int n) {
  if (hooks != NULL) return 0;
  if (jvmti == NULL || ng_is_dying() || n <= 0) return 0;
  jvmtiFrameInfo *f = malloc(sizeof(jvmtiFrameInfo) * (size_t)n);
  if (f == NULL) return 0;
  jint count = 0;
  int ok = (*jvmti)->GetStackTrace(jvmti, NULL, 0, n, f, &count) == JVMTI_ERROR_NONE;
  free(f);
  return ok;
}
