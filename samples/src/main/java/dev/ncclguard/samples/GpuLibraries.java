package dev.ncclguard.samples;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import dev.ncclguard.samples.jna.Cudart;
import dev.ncclguard.samples.jna.Dl;
import dev.ncclguard.samples.jna.Nccl;
import java.lang.reflect.Proxy;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Loads NCCL and the CUDA runtime by one rule: the system's real libnccl.so.2 and libcudart.so.13
 * when libnccl.so.2 can be loaded by its soname, otherwise both from the ncclguard emulator.
 * The two never mix: an emulated cudart cannot serve real NCCL, nor the reverse.
 */
final class GpuLibraries {
    static final String NCCL = "libnccl.so.2";
    static final String CUDART = "libcudart.so.13";
    static final String DRIVER = "libcuda.so.1";
    static final String EMU_PROPERTY = "ncclguard.emu";
    static final String EMU_ENV = "NCCLGUARD_EMU";
    private static final Path EMU_IN_BUILD = Path.of("emulator", "target", "emu");

    final Nccl nccl;
    final Cudart cudart;
    final String origin;
    /** The emulator's libcuda.so.1, when the emulator is used. */
    private static NativeLibrary emulatedDriver;

    private GpuLibraries(Nccl nccl, Cudart cudart, String origin) {
        this.nccl = nccl;
        this.cudart = cudart;
        this.origin = origin;
    }

    static GpuLibraries load() {
        Dl dl = Native.load("libdl.so.2", Dl.class);
        Optional<Path> systemNccl = findBySoname(dl, NCCL, "ncclGetVersion");
        if (systemNccl.isPresent()) {
            Path cudart = findBySoname(dl, CUDART, "cudaSetDevice").orElseThrow(() -> new SampleFailure(
                    "real NCCL found at " + systemNccl.get() + " but " + CUDART + " cannot be loaded: "
                            + dl.dlerror() + " (the emulated cudart is never mixed with real NCCL)"));
            return open(systemNccl.get(), cudart, "system");
        }
        Path dir = emulatorDirectory();
        Path nccl = dir.resolve(NCCL);
        Path cudart = dir.resolve(CUDART);
        if (!Files.isRegularFile(nccl) || !Files.isRegularFile(cudart)) {
            throw new SampleFailure("no real NCCL on this system, and no emulator in " + dir
                    + " (build the emulator module, or point -D" + EMU_PROPERTY + " or " + EMU_ENV
                    + " at a folder holding " + NCCL + " and " + CUDART + ")");
        }
        // The driver's soname, for JNI libraries that link it (JavaCPP's cudart): loaded under that
        // soname now, the loader binds them to the emulator's rather than looking for a real one.
        Path driver = dir.resolve(DRIVER);
        if (Files.isRegularFile(driver)) {
            // held for good: JNA closes a library whose NativeLibrary is collected
            emulatedDriver = NativeLibrary.getInstance(driver.toString());
        }
        return open(nccl, cudart, "emulator");
    }

    /** The file the dynamic loader picks for {@code soname}, found through one of its symbols. */
    private static Optional<Path> findBySoname(Dl dl, String soname, String symbol) {
        Pointer handle = dl.dlopen(soname, Dl.RTLD_NOW);
        if (handle == null) {
            return Optional.empty();
        }
        try {
            Pointer address = dl.dlsym(handle, symbol);
            Dl.Info info = new Dl.Info();
            if (address == null || dl.dladdr(address, info) == 0 || info.dli_fname == null) {
                throw new SampleFailure(soname + " loads but has no " + symbol + ": not a usable library");
            }
            return Optional.of(Path.of(info.dli_fname).toAbsolutePath());
        } finally {
            dl.dlclose(handle);
        }
    }

    /**
     * The emulator's folder: -Dncclguard.emu, else NCCLGUARD_EMU, else emulator/target/emu under
     * the working directory, else next to this jar in a built checkout (samples/target/ → ../../).
     */
    static Path emulatorDirectory() {
        String property = System.getProperty(EMU_PROPERTY);
        if (property != null && !property.isEmpty()) {
            return Path.of(property).toAbsolutePath();
        }
        String env = System.getenv(EMU_ENV);
        if (env != null && !env.isEmpty()) {
            return Path.of(env).toAbsolutePath();
        }
        if (Files.isDirectory(EMU_IN_BUILD)) {
            return EMU_IN_BUILD.toAbsolutePath();
        }
        return jarDirectory().resolve("../..").resolve(EMU_IN_BUILD).normalize();
    }

    private static Path jarDirectory() {
        try {
            Path location = Path.of(GpuLibraries.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return location.toAbsolutePath().getParent();
        } catch (URISyntaxException e) {
            throw new SampleFailure("cannot locate the samples jar: " + e.getMessage());
        }
    }

    private static GpuLibraries open(Path nccl, Path cudart, String origin) {
        // cudart first: a libnccl that lists libcudart.so.13 as a dependency then binds to this
        // one (already loaded under that soname), not to another copy on the system.
        Cudart cudartLibrary = Native.load(cudart.toString(), Cudart.class);
        Nccl ncclLibrary = Native.load(nccl.toString(), Nccl.class);
        return new GpuLibraries(ncclLibrary, cudartLibrary, origin);
    }

    /** The file JNA loaded behind a binding. */
    static Path fileOf(Library binding) {
        NativeLibrary library = ((Library.Handler) Proxy.getInvocationHandler(binding)).getNativeLibrary();
        return library.getFile().toPath();
    }

    Path ncclFile() {
        return fileOf(nccl);
    }

    Path cudartFile() {
        return fileOf(cudart);
    }

    String describe() {
        return "nccl = " + fileOf(nccl) + " (" + origin + "), cudart = " + fileOf(cudart) + " (" + origin + ")";
    }
}
