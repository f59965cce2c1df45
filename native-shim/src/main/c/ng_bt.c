/* Native backtraces of creations made on threads with no Java frames (a pthread of the calling
 * library): captured with backtrace(3) (16 frames at most, from the caller of the wrapper on),
 * interned so that creations at one place share one site, formatted only when Java asks. */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_bt.h"
#include "ng_upcall.h"

#define BUCKETS 4096
#define MAX_SITES 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ng_site *buckets[BUCKETS];
static int nsites;

void ng_bt_init(void) {
  /* the first backtrace loads the unwinder (libgcc_s), which allocates: done here, not in a wrapper */
  void *frames[2];
  backtrace(frames, 2);
}

static int inside_self(void *p) {
  Dl_info info;
  return dladdr(p, &info) != 0 && (uintptr_t)info.dli_fbase == ng_self_base;
}

/* The application's call behind a static cudart's call site of a driver function: from the
 * wrapper's caller up the stack, past the frames in an exported cu* / __cuda* function or in no
 * exported function of the same object (the runtime's own, hidden), the first in another exported
 * function of it; the last one in the object when the next leaves it (a hidden caller: its return
 * address names the place). Made for creations alone (ng_site_of), a dozen frames at most. */
static ng_caller *behind(ng_caller *c) {
  void *frames[12];
  int n = backtrace(frames, 12);
  int from = 0;
  for (int i = 0; i < n && i < 8; i++) {
    if (inside_self(frames[i])) from = i + 1;
  }
  uintptr_t last = 0;
  for (int i = from; i < n; i++) {
    uintptr_t pc = (uintptr_t)frames[i];
    Dl_info info;
    const char *sym;
    if (!ng_addr_symbol(pc, &info, &sym) || (uintptr_t)info.dli_fbase != c->obj->base) break;
    int runtime = sym == NULL || strncmp(sym, "cu", 2) == 0 || strncmp(sym, "__cuda", 6) == 0;
    if (!runtime) return ng_caller_at_frame(c, pc);
    last = pc;
  }
  return last != 0 ? ng_caller_at_frame(c, last) : c;
}

ng_site *ng_site_of(ng_caller *c) {
  if (NG_UNLIKELY(atomic_load_explicit(&c->obj->driver, NG_RELAXED))) c = behind(c);
  if (ng_up_java_thread()) return &c->site;
  void *frames[32];
  int n = backtrace(frames, 32);
  /* from the caller of the wrapper on: past the last of our frames (a sanitizer's backtrace may
   * come first) */
  int from = 0;
  for (int i = 0; i < n && i < 8; i++) {
    if (inside_self(frames[i])) from = i + 1;
  }
  int count = n - from > 16 ? 16 : n - from;
  if (count <= 0) return &c->site;
  uint64_t hash = (uint64_t)(uintptr_t)c;
  for (int i = 0; i < count; i++) hash = (hash ^ (uint64_t)(uintptr_t)frames[from + i]) * 0x100000001b3ull;
  pthread_mutex_lock(&lock);
  ng_site **b = &buckets[hash & (BUCKETS - 1)];
  for (ng_site *s = *b; s != NULL; s = s->next) {
    if (s->hash == hash && s->caller == c && s->nframes == count &&
        memcmp(s->frames, frames + from, sizeof(void *) * (size_t)count) == 0) {
      pthread_mutex_unlock(&lock);
      return s;
    }
  }
  ng_site *s = nsites < MAX_SITES ? calloc(1, sizeof(*s)) : NULL;
  if (s == NULL) {
    pthread_mutex_unlock(&lock);
    return &c->site; /* bounded: past that many distinct places, the caller alone */
  }
  s->caller = c;
  s->nframes = count;
  s->hash = hash;
  memcpy(s->frames, frames + from, sizeof(void *) * (size_t)count);
  s->next = *b;
  *b = s;
  nsites++;
  pthread_mutex_unlock(&lock);
  return s;
}

char *ng_site_backtrace(ng_site *s) {
  if (s->nframes == 0) return NULL;
  size_t cap = 256 * (size_t)s->nframes;
  char *out = malloc(cap);
  if (out == NULL) return NULL;
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < s->nframes; i++) {
    Dl_info info;
    uintptr_t pc = (uintptr_t)s->frames[i];
    char line[256];
    if (dladdr((void *)(pc - 1), &info) != 0 && info.dli_fname != NULL) {
      const char *slash = strrchr(info.dli_fname, '/');
      const char *lib = slash != NULL ? slash + 1 : info.dli_fname;
      if (info.dli_sname != NULL) {
        snprintf(line, sizeof(line), "%s(%s+0x%lx)", lib, info.dli_sname, (unsigned long)(pc - (uintptr_t)info.dli_saddr));
      } else {
        snprintf(line, sizeof(line), "%s+0x%lx", lib, (unsigned long)(pc - (uintptr_t)info.dli_fbase));
      }
    } else {
      snprintf(line, sizeof(line), "0x%lx", (unsigned long)pc);
    }
    int w = snprintf(out + len, cap - len, "%s%s", i > 0 ? "\n" : "", line);
    if (w < 0 || (size_t)w >= cap - len) break;
    len += (size_t)w;
  }
  return out;
}

char *ng_bt_of_caller(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL ? ng_site_backtrace(s) : NULL;
}
