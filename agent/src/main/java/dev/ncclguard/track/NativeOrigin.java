package dev.ncclguard.track;

import java.util.List;

/**
 * Where in native code a handle was made: what an access of the interposer bridge says of the
 * call site it stands for (the calling library and symbol, and for a thread with no Java frames a
 * short native backtrace), for the report. Read when a report is made, never on a tracked call.
 */
public interface NativeOrigin {
    /** The calling library's file name, e.g. libep_runtime.so; null when unknown. */
    String callerLibrary();

    /** The exported symbol the call was made from, e.g. a JNI entry point; null when none. */
    String callerSymbol();

    /** The native frames of a creation on a thread with no Java frames, top first; empty otherwise. */
    List<String> nativeStack();
}
