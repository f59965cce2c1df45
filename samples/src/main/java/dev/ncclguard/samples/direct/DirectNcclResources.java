package dev.ncclguard.samples.direct;

import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * NCCL 2.28's memory, registrations, windows and device communicators by JNA direct mapping, in a
 * class of their own: {@code Native.register} binds every native of a class or fails, and an NCCL
 * older than 2.28 has none of these.
 */
final class DirectNcclResources {
    private DirectNcclResources() {
    }

    static void register(NativeLibrary library) {
        com.sun.jna.Native.register(DirectNcclResources.class, library);
    }

    static native int ncclMemAlloc(PointerByReference ptr, long size);

    static native int ncclMemFree(Pointer ptr);

    static native int ncclCommRegister(Pointer comm, Pointer buff, long size, PointerByReference handle);

    static native int ncclCommDeregister(Pointer comm, Pointer handle);

    static native int ncclCommWindowRegister(Pointer comm, Pointer buff, long size, PointerByReference win, int winFlags);

    static native int ncclCommWindowDeregister(Pointer comm, Pointer win);

    static native int ncclDevCommCreate(Pointer comm, Pointer reqs, Pointer outDevComm);

    static native int ncclDevCommDestroy(Pointer comm, Pointer devComm);
}
