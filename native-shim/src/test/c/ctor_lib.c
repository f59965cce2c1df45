/* A library whose constructor calls a CUDA function through the global scope's definition (the
 * agent's wrapper, once the agent was promoted): a call site's first sight, made while the dynamic
 * linker holds its load lock for this library's dlopen (test_interposer's constructor cases). */
#include <dlfcn.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int ctor_status = -100;

__attribute__((constructor)) static void at_load(void) {
  int (*query)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "cudaStreamQuery");
  if (query != 0) ctor_status = query((void *)0);
}
