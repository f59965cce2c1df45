/* The upcalls into dev.ncclguard.bridge.interposer.Interposer, or into the test mode's C
 * callbacks (ng_upcall.c). */
#ifndef NG_UPCALL_H
#define NG_UPCALL_H

#include <jni.h>
#include <stdint.h>

#include "ncclguard_test.h"
#include "ng_caller.h"

#pragma GCC visibility push(hidden)

/* What hotEnter answers when Java follows neither handle. */
#define NG_NOT_JAVAS (INT64_MIN + 1)
/* What enter answers for a release of a handle the exit-time cleanup claimed. */
#define NG_CLAIMED (INT64_MIN)
/* Whether upcalls can be made from this thread now (a JVM or test hooks, not dying). */
int ng_up_ready(void);
/* Whether this thread had Java frames before it called (a Java thread, not one we attached). */
int ng_up_java_thread(void);
int64_t ng_up_enter(int fn, const uint64_t *slots, int n, ng_site *site, int *ok);
int ng_up_exit(int fn, const uint64_t *slots, int n, int status, int64_t token, ng_site *site, int slot);
int64_t ng_up_hot_enter(int fn, uint64_t handle, uint64_t stream, ng_site *site, int *ok);
void ng_up_hot_exit(int fn, uint64_t handle, uint64_t stream, int status, int64_t token, ng_site *site);
int ng_up_seen(int fn, uint64_t handle, int device, int slot, ng_site *site);
void ng_up_plugin_init(int64_t record);
/* The calling thread's Java frames, top first (AsyncGetCallTrace on a Java thread this library
 * did not attach, or the test mode's java_stack): how many, or -1. ng_frame of ng_stack.h. */
int ng_up_java_frames(void *frames, int max);
/* A JVMTI stack trace of the calling thread (a JVM transition): the JVM then has a jmethodID for
 * each of its first n frames' methods. 0 if it could not. */
int ng_up_make_method_ids(int n);
/* JNI_OnLoad: the JVMTI environment, for ng_up_java_frames (its ClassLoad event, which
 * AsyncGetCallTrace requires, is enabled at the first walk) */
void ng_up_set_jvmti(void *jvmti);
/* A depot frame's names, as a Throwable's frame would have them (JVMTI, the calling thread in a JNI
 * call): its declaring class (a local reference, NULL when its class was unloaded), its method's
 * name and descriptor and its class's source file (malloc'ed, NULL when absent) and the line of bci
 * (-2: a native method, -1: none), HotSpot's line_number_from_bci. */
void ng_up_name_frame(void *method, int bci, void **cls, char **name, char **sig, char **file, int *line);

/* At load: the key that detaches the threads this library attached, at their exit. */
void ng_up_init(void);
/* JNI_OnLoad: the JVM, first of all; then the loaded Interposer class (a global reference), whose
 * upcalls are looked up: upcalls start once all are found. */
void ng_up_set_vm(JavaVM *vm);
void ng_up_bind(JNIEnv *env, jclass interposer);
/* After a call into Java: a pending exception is cleared and counted, never left to the caller. */
int ng_up_cleared(JNIEnv *env);
/* The test mode: C callbacks in place of the JVM (NULL: no upcalls at all). */
void ng_up_set_hooks(const ncclguard_hooks *hooks);

#pragma GCC visibility pop

#endif
