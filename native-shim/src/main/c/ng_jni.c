/* The JVM's entry: JNI_OnLoad (JVMTI VMDeath, the natives registered on
 * dev.ncclguard.bridge.interposer.Interposer, its upcalls bound) and the JNI natives, each a
 * conversion of Java's arguments and results around what the file of its role does. Nothing else:
 * no file includes this one for a utility. */
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_bt.h"
#include "ng_caller.h"
#include "ng_hotspot.h"
#include "ng_load.h"
#include "ng_log.h"
#include "ncclguard_test.h"
#include "ng_patch.h"
#include "ng_prof.h"
#include "ng_stack.h"
#include "ng_track.h"
#include "ng_upcall.h"
#include "ng_watchdog.h"

#define INTERPOSER "dev/ncclguard/bridge/interposer/Interposer"

static jboolean JNICALL j_promote(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return (jboolean)ng_promote();
}

static jint JNICALL j_patch_imports(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return ng_patch_start();
}

static jstring JNICALL j_last_error(JNIEnv *env, jclass c) {
  (void)c;
  char e[512];
  return ng_last_error_copy(e, sizeof(e)) ? (*env)->NewStringUTF(env, e) : NULL;
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
  /* whose creations a stack's are (a Java bridge's or this one's) is asked again */
  ng_stack_invalidate();
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
  if (r != 0) ng_set_error("setenv(%s) failed: %s", n != NULL ? n : "?", strerror(errno));
  if (v != NULL) (*env)->ReleaseStringUTFChars(env, value, v);
  if (n != NULL) (*env)->ReleaseStringUTFChars(env, name, n);
  return r == 0 ? JNI_TRUE : JNI_FALSE;
}

static void JNICALL j_dying(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  ng_mark_dying();
}

static jboolean JNICALL j_arm_exit_watchdog(JNIEnv *env, jclass c, jlong millis, jint status) {
  (void)env, (void)c;
  return ng_watchdog_arm(millis, status) ? JNI_TRUE : JNI_FALSE;
}

static jstring owned_string(JNIEnv *env, char *s) {
  jstring j = s != NULL ? (*env)->NewStringUTF(env, s) : NULL;
  free(s);
  return j;
}

static jstring JNICALL j_caller_library(JNIEnv *env, jclass c, jlong caller) {
  (void)c;
  return owned_string(env, ng_caller_library(caller));
}

static jstring JNICALL j_caller_symbol(JNIEnv *env, jclass c, jlong caller) {
  (void)c;
  return owned_string(env, ng_caller_symbol(caller));
}

static jstring JNICALL j_caller_backtrace(JNIEnv *env, jclass c, jlong caller) {
  (void)c;
  return owned_string(env, ng_bt_of_caller(caller));
}

static jboolean JNICALL j_user_plugin(JNIEnv *env, jclass c, jstring name) {
  (void)c;
  const char *u = name != NULL ? (*env)->GetStringUTFChars(env, name, NULL) : NULL;
  int ok = ng_prof_user_plugin(u);
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
  int64_t o[NCCLGUARD_STATS] = {0};
  ng_track_stats(o, NCCLGUARD_STATS);
  jsize len = (*env)->GetArrayLength(env, out);
  (*env)->SetLongArrayRegion(env, out, 0, len < NCCLGUARD_STATS ? len : NCCLGUARD_STATS, (const jlong *)o);
}

/* Fills out with NCCLGUARD_ADOPT_LONGS longs per adopted event; returns how many. */
static jint JNICALL j_adopt_events(JNIEnv *env, jclass c, jlongArray out) {
  (void)c;
  jsize len = (*env)->GetArrayLength(env, out);
  int n = len / NCCLGUARD_ADOPT_LONGS;
  if (n <= 0) return 0;
  int64_t *o = malloc(sizeof(int64_t) * (size_t)len);
  if (o == NULL) return 0;
  int done = ng_api_adopt_events(o, n);
  (*env)->SetLongArrayRegion(env, out, 0, done * NCCLGUARD_ADOPT_LONGS, (const jlong *)o);
  free(o);
  return done;
}

static jint JNICALL j_adopt_event(JNIEnv *env, jclass c, jlong handle, jlongArray out) {
  (void)c;
  int64_t o[NCCLGUARD_ADOPT_LONGS];
  if ((*env)->GetArrayLength(env, out) < NCCLGUARD_ADOPT_LONGS || !ng_api_adopt_event(handle, o)) return 0;
  (*env)->SetLongArrayRegion(env, out, 0, NCCLGUARD_ADOPT_LONGS, (const jlong *)o);
  return 1;
}

static jlong JNICALL j_lazy_live(JNIEnv *env, jclass c) {
  (void)env, (void)c;
  return ng_api_lazy_live();
}

static void JNICALL j_stack_depot(JNIEnv *env, jclass c, jlong max) {
  (void)env, (void)c;
  ng_stack_set_max(max);
}

/* Stack id's frames: a method (jmethodID) and a bytecode index each, in two longs; null for an id
 * the depot does not hold. */
static jlongArray JNICALL j_stack_frame_ids(JNIEnv *env, jclass c, jint id) {
  (void)c;
  int n = ng_stack_frames((uint32_t)id, NULL, 0);
  if (n <= 0) return NULL;
  ng_frame *f = malloc(sizeof(ng_frame) * (size_t)n);
  jlong *w = malloc(sizeof(jlong) * 2 * (size_t)n);
  jlongArray out = NULL;
  if (f != NULL && w != NULL && ng_stack_frames((uint32_t)id, f, n) == n) {
    for (int i = 0; i < n; i++) {
      w[2 * i] = (jlong)(uintptr_t)f[i].method;
      w[2 * i + 1] = f[i].bci;
    }
    out = (*env)->NewLongArray(env, 2 * n);
    if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, 2 * n, w);
  }
  free(f);
  free(w);
  return out;
}

/* A bool -XX flag of HotSpot's: 1 on, 0 off, -1 none (ng_hotspot.c). */
static jint JNICALL j_vm_flag(JNIEnv *env, jclass c, jstring name) {
  (void)c;
  const char *n = name != NULL ? (*env)->GetStringUTFChars(env, name, NULL) : NULL;
  if (n == NULL) return -1;
  int v = ng_hs_bool_flag(n);
  (*env)->ReleaseStringUTFChars(env, name, n);
  return v;
}

/* Frames (method, bytecode index pairs as stackFrameIds gives them), named: {Class[] (null:
 * unloaded), String[] methods, String[] descriptors, String[] files, int[] lines}. */
static jobjectArray JNICALL j_name_frames(JNIEnv *env, jclass c, jlongArray frames) {
  (void)c;
  int n = frames != NULL ? (*env)->GetArrayLength(env, frames) / 2 : 0;
  jlong *w = n > 0 ? malloc(sizeof(jlong) * 2 * (size_t)n) : NULL;
  jint *ln = n > 0 ? malloc(sizeof(jint) * (size_t)n) : NULL;
  jobjectArray out = NULL, classes = NULL, names = NULL, sigs = NULL, files = NULL;
  jintArray lines = NULL;
  if (w == NULL || ln == NULL) goto done;
  (*env)->GetLongArrayRegion(env, frames, 0, 2 * n, w);
  jclass object = (*env)->FindClass(env, "java/lang/Object");
  jclass klass = (*env)->FindClass(env, "java/lang/Class");
  jclass string = (*env)->FindClass(env, "java/lang/String");
  if (object == NULL || klass == NULL || string == NULL) goto done;
  classes = (*env)->NewObjectArray(env, n, klass, NULL);
  names = (*env)->NewObjectArray(env, n, string, NULL);
  sigs = (*env)->NewObjectArray(env, n, string, NULL);
  files = (*env)->NewObjectArray(env, n, string, NULL);
  lines = (*env)->NewIntArray(env, n);
  out = (*env)->NewObjectArray(env, 5, object, NULL);
  if (classes == NULL || names == NULL || sigs == NULL || files == NULL || lines == NULL || out == NULL) {
    out = NULL;
    goto done;
  }
  for (int i = 0; i < n; i++) {
    void *k;
    char *name, *sig, *file;
    int line;
    ng_up_name_frame((void *)(uintptr_t)w[2 * i], (int)w[2 * i + 1], &k, &name, &sig, &file, &line);
    ln[i] = line;
    if (k != NULL) {
      (*env)->SetObjectArrayElement(env, classes, i, (jobject)k);
      (*env)->DeleteLocalRef(env, (jobject)k);
    }
    jstring s = name != NULL ? (*env)->NewStringUTF(env, name) : NULL;
    if (s != NULL) (*env)->SetObjectArrayElement(env, names, i, s), (*env)->DeleteLocalRef(env, s);
    s = sig != NULL ? (*env)->NewStringUTF(env, sig) : NULL;
    if (s != NULL) (*env)->SetObjectArrayElement(env, sigs, i, s), (*env)->DeleteLocalRef(env, s);
    s = file != NULL ? (*env)->NewStringUTF(env, file) : NULL;
    if (s != NULL) (*env)->SetObjectArrayElement(env, files, i, s), (*env)->DeleteLocalRef(env, s);
    free(name);
    free(sig);
    free(file);
    if ((*env)->ExceptionCheck(env)) {
      out = NULL;
      goto done;
    }
  }
  (*env)->SetIntArrayRegion(env, lines, 0, n, ln);
  (*env)->SetObjectArrayElement(env, out, 0, classes);
  (*env)->SetObjectArrayElement(env, out, 1, names);
  (*env)->SetObjectArrayElement(env, out, 2, sigs);
  (*env)->SetObjectArrayElement(env, out, 3, files);
  (*env)->SetObjectArrayElement(env, out, 4, lines);
done:
  free(w);
  free(ln);
  return out;
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
    {"patchImports", "()I", (void *)j_patch_imports},
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
    {"adoptEvents", "([J)I", (void *)j_adopt_events},
    {"adoptEvent", "(J[J)I", (void *)j_adopt_event},
    {"lazyLive", "()J", (void *)j_lazy_live},
    {"stackDepot", "(J)V", (void *)j_stack_depot},
    {"stackFrameIds", "(I)[J", (void *)j_stack_frame_ids},
    {"nameFrames", "([J)[Ljava/lang/Object;", (void *)j_name_frames},
    {"vmFlag", "(Ljava/lang/String;)I", (void *)j_vm_flag},
    {"functionName", "(I)Ljava/lang/String;", (void *)j_function_name},
};

/* AsyncGetCallTrace walks only while ClassLoad is posted (ng_upcall.c enables it): nothing to do here */
static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jclass c) {
  (void)jvmti, (void)env, (void)thread, (void)c;
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
  (void)jvmti, (void)env;
  ng_mark_dying();
}

/* jdk.internal.vm.Continuation.enter's jmethodID (JDK 21+; NULL before): every mounted virtual
 * thread's frames run above it. Found by reflection, which loads and links the class but, unlike
 * FindClass and GetStaticMethodID, does not initialize it (its initializer is the JDK's to run). */
static void *vthread_entry(JNIEnv *env) {
  /* the class came with JDK 19 (JNI_VERSION_19): asked for on 17, it would cost the application's
   * exception counts a ClassNotFoundException */
  if ((*env)->GetVersion(env) < 0x00130000) return NULL;
  jclass klass = (*env)->FindClass(env, "java/lang/Class");
  jclass boolean = (*env)->FindClass(env, "java/lang/Boolean");
  jmethodID for_name = klass == NULL ? NULL
      : (*env)->GetStaticMethodID(env, klass, "forName", "(Ljava/lang/String;ZLjava/lang/ClassLoader;)Ljava/lang/Class;");
  jmethodID declared = klass == NULL ? NULL
      : (*env)->GetMethodID(env, klass, "getDeclaredMethod", "(Ljava/lang/String;[Ljava/lang/Class;)Ljava/lang/reflect/Method;");
  jfieldID type = boolean == NULL ? NULL : (*env)->GetStaticFieldID(env, boolean, "TYPE", "Ljava/lang/Class;");
  void *entry = NULL;
  if (for_name != NULL && declared != NULL && type != NULL) {
    jstring name = (*env)->NewStringUTF(env, "jdk.internal.vm.Continuation");
    jobject cont = name == NULL ? NULL : (*env)->CallStaticObjectMethod(env, klass, for_name, name, JNI_FALSE, NULL);
    jobject params = cont == NULL ? NULL : (*env)->NewObjectArray(env, 2, klass, NULL);
    jstring enter = params == NULL ? NULL : (*env)->NewStringUTF(env, "enter");
    if (enter != NULL) {
      (*env)->SetObjectArrayElement(env, params, 0, cont);
      (*env)->SetObjectArrayElement(env, params, 1, (*env)->GetStaticObjectField(env, boolean, type));
      jobject m = (*env)->CallObjectMethod(env, cont, declared, enter, params);
      if (m != NULL && !(*env)->ExceptionCheck(env)) entry = (void *)(*env)->FromReflectedMethod(env, m);
    }
  }
  /* a JVM without it (or without that method): nothing to find, nothing to count */
  (*env)->ExceptionClear(env);
  return entry;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *jvm, void *reserved) {
  (void)reserved;
  ng_up_set_vm(jvm);
  ng_hs_set_vm(jvm);
  JNIEnv *env;
  if ((*jvm)->GetEnv(jvm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_VERSION_1_8;
  jvmtiEnv *jvmti;
  if ((*jvm)->GetEnv(jvm, (void **)&jvmti, JVMTI_VERSION_1_2) == JNI_OK) {
    jvmtiEventCallbacks callbacks;
    memset(&callbacks, 0, sizeof(callbacks));
    callbacks.VMDeath = on_vm_death;
    callbacks.ClassLoad = on_class_load;
    if ((*jvmti)->SetEventCallbacks(jvmti, &callbacks, (jint)sizeof(callbacks)) != JVMTI_ERROR_NONE ||
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL) != JVMTI_ERROR_NONE)
      ng_log("no JVMTI VMDeath event: relying on the exit hook's dying()");
    ng_up_set_jvmti(jvmti);
  }
  /* the class of the loader that loaded this library (FindClass in JNI_OnLoad uses it) */
  jclass c = (*env)->FindClass(env, INTERPOSER);
  if (c == NULL) {
    ng_up_cleared(env);
    return JNI_VERSION_1_8; /* loaded by something else than the agent: natives and upcalls stay off */
  }
  jclass interposer = (jclass)(*env)->NewGlobalRef(env, c);
  (*env)->DeleteLocalRef(env, c);
  /* one by one: an Interposer that declares fewer natives still gets those it declares */
  for (size_t i = 0; i < sizeof(natives) / sizeof(natives[0]); i++) {
    if ((*env)->RegisterNatives(env, interposer, &natives[i], 1) != 0) ng_up_cleared(env);
  }
  ng_up_bind(env, interposer);
  ng_stack_set_vthread_entry(vthread_entry(env));
  return JNI_VERSION_1_8;
}
