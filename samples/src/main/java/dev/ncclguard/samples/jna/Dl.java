package dev.ncclguard.samples.jna;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;

/**
 * The dynamic loader (dlfcn.h): the samples ask it whether a library can be loaded by its soname
 * from the system, and which file that is, before any binding loads it.
 */
public interface Dl extends Library {
    int RTLD_NOW = 2;

    Pointer dlopen(String file, int mode);

    Pointer dlsym(Pointer handle, String symbol);

    int dladdr(Pointer address, Info info);

    int dlclose(Pointer handle);

    String dlerror();

    /** {@code Dl_info} */
    @Structure.FieldOrder({"dli_fname", "dli_fbase", "dli_sname", "dli_saddr"})
    class Info extends Structure {
        public String dli_fname;
        public Pointer dli_fbase;
        public String dli_sname;
        public Pointer dli_saddr;
    }
}
