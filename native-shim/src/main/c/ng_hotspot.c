/* A per-thread memo of a creation's Java stack, valid while the JNI call it was walked in is
 * active: the Java frames below a JNI call cannot change until it returns, and the embedded-CPython
 * case runs every collective inside one JNI call. Telling that call from a later one at the same
 * frames uses HotSpot's JNI local handles (docs/design.md, "Creations at hot-call cost"):
 *  - taken after a walk whose first frame is a JNI method: NewLocalRef of a private marker object
 *    puts it at _handles[i] of the thread's active JNIHandleBlock; memo = (block, i, value);
 *  - checked with loads only: still the active block, its _top > i, _handles[i] holds the marker.
 * The native method's return resets the active block's _top to 0 (its wrapper, compiled or
 * interpreted); a Java call made from native code and PushLocalFrame run on other blocks, released
 * zapped; the slots below _top were all written since the last reset, and only this file ever
 * writes the marker. A memo that fails the check costs a walk, never a wrong stack.
 * Offsets come from libjvm's gHotSpotVMStructs; anything missing, or not HotSpot: the memo is off. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_hotspot.h"
#include "ng_log.h"

/* What a memo's lookup reads, set once: in one cache line, as a framework's creation finds it
 * evicted by the work between its operations (docs/design.md) */
static struct {
  JavaVM *vm;
  intptr_t env_at;         /* JNIEnv's offset in JavaThread (JavaThread::_jni_environment) */
  intptr_t active_at;      /* (Java)Thread::_active_handles */
  intptr_t top_at;         /* JNIHandleBlock::_top (int) */
  intptr_t handles_at;     /* JNIHandleBlock::_handles (oop[block_size]) */
  uintptr_t *marker_slot;  /* the global handle's slot: the marker's current oop */
  atomic_int state;        /* 0: not tried yet, 1: on, -1: off */
  int block_size;          /* JNIHandleBlock::block_size_in_oops */
  int naive;               /* the check off, for the JVM test that shows what it catches: the block decides */
} __attribute__((aligned(64))) hs;
_Static_assert(sizeof(hs) == 64, "what a memo's lookup reads fills one line");
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
/* the set-up's tries that may succeed later (under init_lock) */
#define MAX_INIT_TRIES 64
static int init_tries;
static jobject marker;
static _Atomic int64_t hits, takes;

#define MEMOS 4
/* retakes in a block whose memo was not proven stale (its index below _top): beyond this many a
 * thread stops taking memos, so that no JNI call collects our local references unbounded */
#define MAX_AMBIGUOUS 256
typedef struct {
  uintptr_t block;
  int32_t index;
  void *value;
} memo;
static __thread memo memos[MEMOS];
static __thread uint32_t next_memo;
static __thread int32_t ambiguous;

int64_t ng_hs_memo_hits(void) { return atomic_load_explicit(&hits, NG_RELAXED); }
int64_t ng_hs_memo_takes(void) { return atomic_load_explicit(&takes, NG_RELAXED); }

void ng_hs_set_vm(JavaVM *jvm) {
  hs.vm = jvm;
  const char *k = getenv("NCCLGUARD_TEST_NAIVE_MEMO");
  hs.naive = k != NULL && strcmp(k, "1") == 0;
  /* off, for a paired measurement of the walk against the memo (docs/performance.md) */
  const char *off = getenv("NCCLGUARD_NATIVE_MEMO");
  if (off != NULL && strcmp(off, "0") == 0) atomic_store(&hs.state, -1);
}

static void debug(const char *why) {
  const char *d = getenv("NCCLGUARD_NATIVE_DEBUG");
  if (d != NULL && *d != '\0' && strcmp(d, "0") != 0) ng_log("debug: creations' stack memo off: %s", why);
}

/* ---------------------------------------------------------------- gHotSpotVMStructs */
static void *jvm_lib;

static long sym_long(const char *name, int *ok) {
  long *p = dlsym(jvm_lib, name);
  if (p == NULL) *ok = 0;
  return p != NULL ? *p : 0;
}

/* A field's offset (or a static field's address, in *addr); -1 if the table has no such entry. */
static intptr_t vm_field(const char *type, const char *field, void **addr) {
  int ok = 1;
  char **table = dlsym(jvm_lib, "gHotSpotVMStructs");
  long tn = sym_long("gHotSpotVMStructEntryTypeNameOffset", &ok), fn = sym_long("gHotSpotVMStructEntryFieldNameOffset", &ok),
       off = sym_long("gHotSpotVMStructEntryOffsetOffset", &ok), ad = sym_long("gHotSpotVMStructEntryAddressOffset", &ok),
       stride = sym_long("gHotSpotVMStructEntryArrayStride", &ok);
  if (table == NULL || *table == NULL || !ok || stride <= 0) return -1;
  for (char *e = *table;; e += stride) {
    const char *t = *(const char **)(e + tn), *f = *(const char **)(e + fn);
    if (t == NULL) return -1;
    if (f != NULL && strcmp(t, type) == 0 && strcmp(f, field) == 0) {
      if (addr != NULL) *addr = *(void **)(e + ad);
      return (intptr_t) * (uint64_t *)(e + off);
    }
  }
}

static long vm_type_size(const char *type) {
  int ok = 1;
  char **table = dlsym(jvm_lib, "gHotSpotVMTypes");
  long tn = sym_long("gHotSpotVMTypeEntryTypeNameOffset", &ok), sz = sym_long("gHotSpotVMTypeEntrySizeOffset", &ok),
       stride = sym_long("gHotSpotVMTypeEntryArrayStride", &ok);
  if (table == NULL || *table == NULL || !ok || stride <= 0) return -1;
  for (char *e = *table;; e += stride) {
    const char *t = *(const char **)(e + tn);
    if (t == NULL) return -1;
    if (strcmp(t, type) == 0) return (long)*(uint64_t *)(e + sz);
  }
}

static int vm_int_constant(const char *name, int *value) {
  int ok = 1;
  char **table = dlsym(jvm_lib, "gHotSpotVMIntConstants");
  long nm = sym_long("gHotSpotVMIntConstantEntryNameOffset", &ok), val = sym_long("gHotSpotVMIntConstantEntryValueOffset", &ok),
       stride = sym_long("gHotSpotVMIntConstantEntryArrayStride", &ok);
  if (table == NULL || *table == NULL || !ok || stride <= 0) return 0;
  for (char *e = *table;; e += stride) {
    const char *t = *(const char **)(e + nm);
    if (t == NULL) return 0;
    if (strcmp(t, name) == 0) {
      *value = *(int32_t *)(e + val);
      return 1;
    }
  }
}

/* A bool -XX flag's value: -1 if the JVM has no such flag (or no flag table). */
static int vm_bool_flag(const char *name) {
  void *flags = NULL, *count = NULL;
  long size = vm_type_size("JVMFlag");
  intptr_t name_at = vm_field("JVMFlag", "_name", NULL), addr_at = vm_field("JVMFlag", "_addr", NULL);
  if (size <= 0 || name_at < 0 || addr_at < 0 || vm_field("JVMFlag", "flags", &flags) < 0 ||
      vm_field("JVMFlag", "numFlags", &count) < 0 || flags == NULL || count == NULL)
    return -1;
  char *f = *(char **)flags;
  size_t n = *(size_t *)count;
  for (size_t i = 0; f != NULL && i < n; i++, f += size) {
    const char *s = *(const char **)(f + name_at);
    if (s != NULL && strcmp(s, name) == 0) {
      const unsigned char *v = *(const unsigned char **)(f + addr_at);
      return v != NULL && *v;
    }
  }
  return -1;
}

/* libjvm's handle, found once (under init_lock): NULL if there is none or it is not HotSpot. */
static const char *open_jvm(void) {
  static const char *why;
  if (jvm_lib != NULL || why != NULL) return why;
  /* libjvm may be loaded in a local scope (an embedder): find it from the JavaVM's functions */
  Dl_info info;
  if (hs.vm == NULL || dladdr((void *)(*hs.vm)->GetEnv, &info) == 0 || info.dli_fname == NULL) return why = "libjvm not found";
  void *lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL || dlsym(lib, "gHotSpotVMStructs") == NULL) return why = "not HotSpot (no gHotSpotVMStructs)";
  jvm_lib = lib;
  return NULL;
}

int ng_hs_bool_flag(const char *name) {
  pthread_mutex_lock(&init_lock);
  int v = open_jvm() == NULL ? vm_bool_flag(name) : -1;
  pthread_mutex_unlock(&init_lock);
  return v;
}

/* The offsets, and a self-check on this thread: in a fresh local frame, a local reference lands at
 * _top - 1 of the active block. On a Java thread inside a JNI call, with no exception pending. */
static const char *init(JNIEnv *env) {
  const char *no_jvm = open_jvm();
  if (no_jvm != NULL) return no_jvm;
  hs.active_at = vm_field("JavaThread", "_active_handles", NULL); /* JDK 19+ */
  if (hs.active_at < 0) hs.active_at = vm_field("Thread", "_active_handles", NULL);
  hs.top_at = vm_field("JNIHandleBlock", "_top", NULL);
  hs.handles_at = vm_field("JNIHandleBlock", "_handles", NULL);
  if (hs.active_at < 0 || hs.top_at < 0 || hs.handles_at < 0 ||
      !vm_int_constant("JNIHandleBlock::block_size_in_oops", &hs.block_size) ||
      hs.block_size <= 0)
    return "no JNIHandleBlock offsets in gHotSpotVMStructs";
  /* JDK 17's critical natives (-XX:+CriticalJNINatives, obsolete since 18) return without the reset */
  if (vm_bool_flag("CriticalJNINatives") == 1) return "-XX:+CriticalJNINatives";
  /* JavaThread::_jni_environment is not in the table: java.lang.Thread.eetop is the JavaThread
   * (as async-profiler finds it); a virtual thread's is 0, its carrier's is the JavaThread it runs
   * on (Thread.currentCarrierThread, JDK 21+; JNI may call it, private as it is) */
  jclass tc = (*env)->FindClass(env, "java/lang/Thread");
  jmethodID cur = tc == NULL ? NULL : (*env)->GetStaticMethodID(env, tc, "currentThread", "()Ljava/lang/Thread;");
  jfieldID eetop = tc == NULL ? NULL : (*env)->GetFieldID(env, tc, "eetop", "J");
  jobject t = cur == NULL || eetop == NULL ? NULL : (*env)->CallStaticObjectMethod(env, tc, cur);
  jlong thread = t == NULL ? 0 : (*env)->GetLongField(env, t, eetop);
  long thread_size = vm_type_size("JavaThread");
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    return "no Thread.eetop";
  }
  if (t != NULL) (*env)->DeleteLocalRef(env, t);
  if (thread == 0 && t != NULL) {
    jmethodID carrier = (*env)->GetStaticMethodID(env, tc, "currentCarrierThread", "()Ljava/lang/Thread;");
    jobject c = carrier == NULL ? NULL : (*env)->CallStaticObjectMethod(env, tc, carrier);
    thread = c == NULL ? 0 : (*env)->GetLongField(env, c, eetop);
    (*env)->ExceptionClear(env); /* a JDK without it has no virtual threads either */
    if (c != NULL) (*env)->DeleteLocalRef(env, c);
  }
  if (tc != NULL) (*env)->DeleteLocalRef(env, tc);
  if (thread == 0) return "Thread.eetop is 0: tried again later";
  hs.env_at = (intptr_t)env - (intptr_t)thread;
  if (hs.env_at <= 0 || (thread_size > 0 && hs.env_at >= thread_size)) return "JNIEnv not inside its JavaThread";
  jclass oc = (*env)->FindClass(env, "java/lang/Object");
  jobject m = oc == NULL ? NULL : (*env)->AllocObject(env, oc);
  marker = m == NULL ? NULL : (*env)->NewGlobalRef(env, m);
  if (marker == NULL) {
    (*env)->ExceptionClear(env);
    return "no marker object";
  }
  /* a global handle's low bits tag its kind (JDK 21+: 2 for a strong global) */
  hs.marker_slot = (uintptr_t *)((uintptr_t)marker & ~(uintptr_t)3);
  (*env)->DeleteLocalRef(env, m);
  (*env)->DeleteLocalRef(env, oc);
  /* The check runs in a frame of its own: PushLocalFrame makes a fresh block the active one, where
   * the first reference lands at _handles[0]. In the JNI call's own block it could land in a slot
   * an earlier reference freed or in a block chained after it (a long call that made more than
   * hs.block_size references: an embedded CPython's, after the agent's upcalls), which says nothing
   * about the offsets. */
  uintptr_t outer = *(uintptr_t *)((char *)thread + hs.active_at);
  if ((*env)->PushLocalFrame(env, 4) != 0) {
    (*env)->ExceptionClear(env);
    return "PushLocalFrame failed: tried again later";
  }
  uintptr_t block = *(uintptr_t *)((char *)thread + hs.active_at);
  jobject probe = (*env)->NewLocalRef(env, marker);
  int32_t top = block == 0 ? -1 : *(int32_t *)(block + hs.top_at);
  uintptr_t *slots = (uintptr_t *)(block + hs.handles_at);
  int ok = block != 0 && block != outer && probe != NULL && (uintptr_t *)probe == slots + top - 1 &&
           *(uintptr_t *)probe == *hs.marker_slot;
  (*env)->PopLocalFrame(env, NULL);
  ok = ok && *(uintptr_t *)((char *)thread + hs.active_at) == outer;
  return ok ? NULL : "a local reference is not where JNIHandleBlock's offsets say";
}

/* The calling thread's JNIEnv (JNI_OK from GetEnv: a thread attached to the JVM), or NULL. */
static JNIEnv *env_now(void) {
  JNIEnv *env = NULL;
  if (hs.vm == NULL || (*hs.vm)->GetEnv(hs.vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return NULL;
  return env;
}

static uintptr_t active_block(JNIEnv *env) { return *(uintptr_t *)((char *)env - hs.env_at + hs.active_at); }

/* The marker read before and after the slot: a collector that moved it meanwhile fails the check
 * (the slot and the global handle are both roots, updated by the same collection). */
static int valid(uintptr_t block, int32_t index) {
  if (*(volatile int32_t *)(block + hs.top_at) <= index) return 0;
  uintptr_t before = *(volatile uintptr_t *)hs.marker_slot;
  uintptr_t slot = ((volatile uintptr_t *)(block + hs.handles_at))[index];
  return slot == before && slot == *(volatile uintptr_t *)hs.marker_slot;
}

void *ng_hs_memo_get(void) {
  if (atomic_load_explicit(&hs.state, NG_ACQUIRE) != 1) return NULL;
  JNIEnv *env = env_now();
  if (env == NULL) return NULL;
  uintptr_t block = active_block(env);
  for (int i = 0; i < MEMOS; i++) {
    memo *m = &memos[i];
    if (m->block != block || block == 0) continue;
    if (hs.naive || valid(block, m->index)) {
      /* a statistic: a plain add, not a locked one on every creation (two threads may lose one) */
      atomic_store_explicit(&hits, atomic_load_explicit(&hits, NG_RELAXED) + 1, NG_RELAXED);
      return m->value;
    }
    return NULL;
  }
  return NULL;
}

void ng_hs_memo_put(void *value) {
  int s = atomic_load_explicit(&hs.state, NG_ACQUIRE);
  if (s < 0 || ambiguous > MAX_AMBIGUOUS) return;
  JNIEnv *env = env_now();
  /* a pending exception allows only a few JNI functions: no memo then */
  if (env == NULL || (*env)->ExceptionCheck(env)) return;
  if (s == 0) {
    pthread_mutex_lock(&init_lock);
    if (atomic_load(&hs.state) == 0) {
      const char *why = init(env);
      if (why == NULL) {
        atomic_store_explicit(&hs.state, 1, NG_RELEASE);
      } else if (strstr(why, "tried again") == NULL || ++init_tries > MAX_INIT_TRIES) {
        /* the tries are bounded: each costs Java calls and a walk of libjvm's tables */
        debug(why);
        atomic_store_explicit(&hs.state, -1, NG_RELEASE);
      }
    }
    pthread_mutex_unlock(&init_lock);
    if (atomic_load_explicit(&hs.state, NG_ACQUIRE) != 1) return;
  }
  uintptr_t block = active_block(env);
  if (block == 0) return;
  memo *m = NULL;
  for (int i = 0; i < MEMOS && m == NULL; i++) {
    if (memos[i].block == block) m = &memos[i];
  }
  if (m != NULL && *(int32_t *)(block + hs.top_at) <= m->index) {
    ambiguous = 0; /* below _top: that call returned, its references with it */
  } else if (m != NULL && ++ambiguous > MAX_AMBIGUOUS) {
    debug("a thread retook its memo too often in one block (a collector that rewrites handles?)");
    m->block = 0;
    return;
  }
  if (m == NULL) m = &memos[next_memo++ % MEMOS];
  jobject r = (*env)->NewLocalRef(env, marker);
  if (r == NULL) {
    (*env)->ExceptionClear(env);
    m->block = 0;
    return;
  }
  uintptr_t *slots = (uintptr_t *)(block + hs.handles_at);
  intptr_t i = (uintptr_t *)r - slots;
  if (active_block(env) != block || i < 0 || i >= hs.block_size) {
    /* in a block chained after the active one (the call holds more than hs.block_size references) */
    (*env)->DeleteLocalRef(env, r);
    m->block = 0;
    return;
  }
  m->block = block;
  m->index = (int32_t)i;
  m->value = value;
  atomic_fetch_add_explicit(&takes, 1, NG_RELAXED);
}
