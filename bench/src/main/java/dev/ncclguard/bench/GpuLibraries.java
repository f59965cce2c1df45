package dev.ncclguard.bench;

import com.sun.jna.Native;
import dev.ncclguard.bench.jna.Cudart;
import dev.ncclguard.bench.jna.Libc;
import dev.ncclguard.bench.jna.Nccl;
import java.nio.file.Path;

/**
 * NCCL, the CUDA runtime and libc, loaded by JNA interface mapping. With {@code -Dncclguard.emu=DIR}
 * the emulator's libraries from DIR, else the system's, by soname (a GPU machine).
 */
public final class GpuLibraries {
    public static final String EMU_PROPERTY = "ncclguard.emu";

    public final Nccl nccl;
    public final Cudart cudart;
    public final Libc libc;
    public final String origin;
    /** What JNA loaded them by: a path (emulator) or a soname. */
    public final String ncclName;
    public final String cudartName;

    private GpuLibraries(Nccl nccl, Cudart cudart, Libc libc, String origin, String ncclName, String cudartName) {
        this.nccl = nccl;
        this.cudart = cudart;
        this.libc = libc;
        this.origin = origin;
        this.ncclName = ncclName;
        this.cudartName = cudartName;
    }

    public static GpuLibraries load() {
        String emu = System.getProperty(EMU_PROPERTY);
        String nccl = "libnccl.so.2";
        String cudart = "libcudart.so.13";
        if (emu != null && !emu.isEmpty()) {
            nccl = Path.of(emu, nccl).toAbsolutePath().toString();
            cudart = Path.of(emu, cudart).toAbsolutePath().toString();
        }
        return new GpuLibraries(Native.load(nccl, Nccl.class), Native.load(cudart, Cudart.class),
                Native.load("c", Libc.class), emu == null ? "system" : "emulator " + emu, nccl, cudart);
    }

    /** Throws unless a CUDA call returned cudaSuccess. */
    public static void cuda(int status, String call) {
        if (status != Cudart.cudaSuccess) {
            throw new IllegalStateException(call + " failed: CUDA error " + status);
        }
    }

    /** Throws unless an NCCL call returned ncclSuccess. */
    public void nccl(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " failed: " + nccl.ncclGetErrorString(status));
        }
    }
}
