package dev.ncclguard.bench.jna;

import com.sun.jna.Library;

/** Another JNA library, none of whose functions the agent tracks. */
public interface Libc extends Library {
    int getpid();
}
