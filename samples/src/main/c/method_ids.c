/* A JVMTI agent that gives every method of every class a jmethodID as the class is prepared (and
 * those of the classes loaded before it, at VMInit), as a sampling profiler does so that
 * AsyncGetCallTrace can name every frame (async-profiler makes them the same way). With it, a walk
 * from native code meets no frame without a jmethodID: ep-virtual's carrier frames included.
 *   java -agentpath:<this library> ... */
#include <jvmti.h>
#include <string.h>

static void make_ids(jvmtiEnv *jvmti, jclass k) {
  jint n;
  jmethodID *methods;
  /* a class not prepared yet answers an error: its ClassPrepare comes later */
  if ((*jvmti)->GetClassMethods(jvmti, k, &n, &methods) == JVMTI_ERROR_NONE)
    (*jvmti)->Deallocate(jvmti, (unsigned char *)methods);
}

static void JNICALL on_prepare(jvmtiEnv *jvmti, JNIEnv *env, jthread thread, jclass k) {
  (void)env, (void)thread;
  make_ids(jvmti, k);
}

static void JNICALL on_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
  (void)env, (void)thread;
  jint n;
  jclass *classes;
  if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE) return;
  for (jint i = 0; i < n; i++) make_ids(jvmti, classes[i]);
  (*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)options, (void)reserved;
  jvmtiEnv *jvmti;
  if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return 1;
  jvmtiEventCallbacks callbacks;
  memset(&callbacks, 0, sizeof callbacks);
  callbacks.ClassPrepare = on_prepare;
  callbacks.VMInit = on_init;
  if ((*jvmti)->SetEventCallbacks(jvmti, &callbacks, (jint)sizeof callbacks) != JVMTI_ERROR_NONE ||
      (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, NULL) != JVMTI_ERROR_NONE ||
      (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL) != JVMTI_ERROR_NONE)
    return 1;
  return 0;
}
