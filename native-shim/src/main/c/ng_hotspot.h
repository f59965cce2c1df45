/* What HotSpot's internals (gHotSpotVMStructs) let the native part know without a JVM
 * transition: whether the calling thread is still in the JNI call it was in when a creation's Java
 * stack was walked, so that the walk need not be made again (ng_hotspot.c). */
#ifndef NG_HOTSPOT_H
#define NG_HOTSPOT_H

#include <jni.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* JNI_OnLoad: the JVM; the memo stays off until its first use finds every offset it needs. */
void ng_hs_set_vm(JavaVM *vm);
/* The value memoized for the calling thread's current JNI call (its active JNI handle block still
 * holds our marker), or NULL: a few loads, no transition. */
void *ng_hs_memo_get(void);
/* After a walk whose first frame is a JNI method's: value holds until that JNI call returns. One
 * JVM transition (NewLocalRef of the marker). */
void ng_hs_memo_put(void *value);
/* A bool -XX flag of HotSpot's: 1 on, 0 off, -1 no such flag or not HotSpot. */
int ng_hs_bool_flag(const char *name);
/* Memo hits, memos taken (for stats). */
int64_t ng_hs_memo_hits(void);
int64_t ng_hs_memo_takes(void);

#pragma GCC visibility pop

#endif
