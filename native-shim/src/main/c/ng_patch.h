/* Import-slot patching of loaded objects, and the dlopen/dlsym/dlvsym hooks (ng_patch.c). */
#ifndef NG_PATCH_H
#define NG_PATCH_H

#pragma GCC visibility push(hidden)

/* From now on (once; option native-patch): the import slots of the catalog's functions and of
 * dlopen, dlsym and dlvsym in every loaded object (but this library, NVIDIA's and the C runtime's;
 * the JVM's own get dlopen alone) point at the wrappers and hooks, now and after every dlopen that
 * goes through a patched import. Returns the number of objects patched now. */
int ng_patch_start(void);
/* Objects patched, slots written, slots skipped (could not be made writable) since the start. */
void ng_patch_stats(long out[3]);

#pragma GCC visibility pop

#endif
