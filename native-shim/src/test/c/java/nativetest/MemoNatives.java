package nativetest;

/** The natives of libjvmtest.so that the memo test calls (jvm_test_jni.c). */
final class MemoNatives {
    /** n events made in this one JNI call; MemoTest.gc() called back half way when asked. */
    static native long[] create(int n, boolean gcHalfway);
    /** n times: an event made here, then MemoTest.inner() called back (which makes one in innerCreate). */
    static native long[] outer(int n);
    static native long innerCreate();
    /** n events made in this one JNI call after refs local references made and deleted in it. */
    static native long[] createAfterRefs(int refs, int n);

    private MemoNatives() {
    }
}
