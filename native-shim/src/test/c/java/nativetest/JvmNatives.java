package nativetest;

/** The natives of libjvmtest.so, a JNI library that uses NCCL and cudart in C (jvm_test_jni.c). */
final class JvmNatives {
    static native long createEvent();
    static native long createEventOnPthread();
    static native long createStream();
    static native int recordAndQuery(long event, long stream, int times);
    static native long initComm();
    static native int destroyComm(long comm);
    static native int destroyEvent(long event);
    static native void exitHandlerUsesCudart();
    static native long createDestroy(int n, boolean real);

    private JvmNatives() {
    }
}
