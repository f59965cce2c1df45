/* Loading: the library's constructor (where it was loaded from, the slots, the gates, the
 * backtraces, the threads' detach key, the exit handler that marks dying), its destructor, and
 * the promotion into the global scope that lets libraries loaded later bind to the wrappers. */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_bt.h"
#include "ng_caller.h"
#include "ng_load.h"
#include "ng_log.h"
#include "ng_prof.h"
#include "ng_slots.h"
#include "ng_track.h"
#include "ng_upcall.h"

static void on_exit_handler(void) { ng_mark_dying(); }

/* dladdr of a static function names this library (of a global one, whatever it bound to). */
static void self_marker(void) {}

/* The end of this library's highest segment: [ng_self_base, ng_self_end) holds all of it. */
static int self_end(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  if (info->dlpi_addr != ng_self_base) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    if (ph->p_type == PT_LOAD && end > ng_self_end) ng_self_end = end;
  }
  return 1;
}

__attribute__((constructor)) static void ng_init(void) {
  Dl_info info;
  if (dladdr((void *)&self_marker, &info) != 0) {
    ng_self_path = strdup(info.dli_fname);
    ng_self_base = (uintptr_t)info.dli_fbase;
    dl_iterate_phdr(self_end, NULL);
  }
  ng_default_object.path = "";
  ng_default_object.name = "";
  ng_track_init();
  ng_caller_init();
  ng_prof_init();
  ng_gate_refresh();
  ng_bt_init();
  ng_up_init();
  atexit(on_exit_handler);
}

/* C++ static destructors and atexit handlers of other libraries may run after this: they forward. */
__attribute__((destructor)) static void ng_fini(void) {
  ng_mark_dying();
  ng_track_debug_line();
}

int ng_promote(void) {
  if (ng_self_path[0] == '\0') {
    ng_set_error("dladdr could not name the agent's native library");
    return 0;
  }
  /* into the global scope, so that libraries loaded from now on bind their NCCL and cudart
   * references to our wrappers; never unloaded, since their references point into us */
  void *h = dlopen(ng_self_path, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL | RTLD_NODELETE);
  if (h == NULL) {
    const char *e = dlerror();
    ng_set_error("dlopen(%s, RTLD_GLOBAL) failed: %s", ng_self_path, e != NULL ? e : "unknown error");
    return 0;
  }
  ng_owners_start();
  return 1;
}
