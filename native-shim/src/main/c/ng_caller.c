/* Who called a wrapper, whether the call is the application's, and where the real function is.
 *
 * The caller cache maps a return address to its caller entry (the calling object and exported
 * symbol, and the decision). It is filled on first sight with dladdr, under a lock; lookups take
 * none. The real functions are looked up per calling object, lazily per function, in the order
 * that gives the definition the call would have reached without the agent:
 *   1. the calling object's own view: dlsym on its handle (its own definitions, e.g. NCCL linked
 *      in statically and exported, then those of its dependencies), pnccl* before nccl*;
 *   2. the loaded libnccl.so.2 / libcudart.so.13 (another loaded libcudart.so.* or libnccl.so*
 *      if those sonames are absent);
 *   3. dlsym(RTLD_NEXT).
 * A definition inside this library is never taken. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_caller.h"
#include "ng_log.h"

ng_caller_slot ng_callers[NG_CALLERS];
ng_object ng_default_object;
void *ng_hint_none;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ng_object *objects;
static ng_caller *overflow; /* callers that found no free slot in the table */
static int ncallers;

/* Suppressed calling libraries and the JNI entry points the Java bridges wrap; guarded by lock. */
static char **suppressed;
static int nsuppressed;
static char **wrapped;
static int nwrapped;

/* The calling libraries that are NCCL, CUDA or another NVIDIA library: their calls are their own. */
static const char *const nvidia_prefixes[] = {
    "libnccl.",  "libnccl-",  "libcudart", "libcuda.",   "libcublas",   "libcudnn",    "libcufft",
    "libcurand", "libcusolver", "libcusparse", "libnvrtc", "libnvJitLink", "libcupti",
    "libnvToolsExt", "libnvshmem", "libnvidia-", "libcufile",  NULL};

static int is_nvidia(const char *name) {
  for (int i = 0; nvidia_prefixes[i] != NULL; i++) {
    if (strncmp(name, nvidia_prefixes[i], strlen(nvidia_prefixes[i])) == 0) return 1;
  }
  return 0;
}

static int inside_self(const void *p) {
  Dl_info info;
  return p != NULL && dladdr(p, &info) != 0 && (uintptr_t)info.dli_fbase == ng_self_base;
}

/* Whether an object carries NCCL inside it (linked statically): its NCCL API is exported, or its
 * read-only data has the environment variable NCCL reads for its profiler plugin. */
struct scan {
  uintptr_t base;
  int found;
};

static int scan_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct scan *s = data;
  if (info->dlpi_addr != s->base && !(info->dlpi_addr == 0 && s->base == 0)) return 0;
  static const char marker[] = "NCCL_PROFILER_PLUGIN";
  for (int i = 0; i < info->dlpi_phnum && !s->found; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !(ph->p_flags & PF_R)) continue;
    const char *start = (const char *)(info->dlpi_addr + ph->p_vaddr);
    if (memmem(start, ph->p_filesz, marker, sizeof(marker) - 1) != NULL) s->found = 1;
  }
  return 1;
}

static int has_nccl_inside(ng_object *o, void *handle) {
  if (handle != NULL) {
    void *p = dlsym(handle, "pncclGetVersion");
    Dl_info info;
    if (p != NULL && dladdr(p, &info) != 0 && (uintptr_t)info.dli_fbase == o->base) return 1;
  }
  /* dl_iterate_phdr's dlpi_addr is the load bias; for a shared object it equals dli_fbase */
  struct scan s = {o->base, 0};
  dl_iterate_phdr(scan_object, &s);
  return s.found;
}

/* The object at base, made on first sight; under lock. */
static ng_object *object_at(uintptr_t base, const char *path) {
  for (ng_object *o = objects; o != NULL; o = o->next) {
    if (o->base == base) return o;
  }
  ng_object *o = calloc(1, sizeof(*o));
  if (o == NULL) return &ng_default_object;
  o->base = base;
  o->path = strdup(path != NULL ? path : "");
  if (o->path == NULL) o->path = "";
  const char *slash = strrchr(o->path, '/');
  o->name = slash != NULL ? slash + 1 : o->path;
  o->nvidia = base == ng_self_base || is_nvidia(o->name);
  if (!o->nvidia) {
    void *h = o->path[0] != '\0' ? dlopen(o->path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    o->own_defs = has_nccl_inside(o, h);
    if (h != NULL) dlclose(h);
  }
  o->next = objects;
  objects = o;
  return o;
}

static int matches_library(const ng_object *o, const char *name) {
  if (strchr(name, '/') != NULL) return strcmp(o->path, name) == 0;
  size_t n = strlen(name);
  /* libfoo names libfoo.so, libfoo.so.1 and libfoo itself */
  return strncmp(o->name, name, n) == 0 && (o->name[n] == '\0' || o->name[n] == '.');
}

/* The decision for a caller under the current lists; under lock. */
static int decide(const ng_caller *c) {
  const ng_object *o = c->obj;
  if (o->nvidia) return 0;
  /* NCCL inside the object: code outside its exported symbols is NCCL's own */
  if (o->own_defs && c->sym == NULL) return 0;
  for (int i = 0; i < nsuppressed; i++) {
    if (matches_library(o, suppressed[i])) return 0;
  }
  if (c->sym != NULL) {
    for (int i = 0; i < nwrapped; i++) {
      size_t n = strlen(wrapped[i]);
      if (strncmp(c->sym, wrapped[i], n) == 0 && (c->sym[n] == '\0' || (c->sym[n] == '_' && c->sym[n + 1] == '_')))
        return 0;
    }
  }
  return 1;
}

uint32_t ng_redecide(ng_caller *c) {
  pthread_mutex_lock(&lock);
  uint32_t gen = (atomic_load_explicit(&ng_w.state, NG_ACQUIRE) >> 1);
  uint32_t d = gen << 1 | (uint32_t)decide(c);
  atomic_store_explicit(&c->decision, d, NG_RELAXED);
  pthread_mutex_unlock(&lock);
  return d;
}

/* The caller of r in its hashed slots, or NULL; *free_slot: the empty slot that ended the probes
 * (NULL if none). Without the lock for the hot path's misses, under it for a first sight: a slot's
 * caller is published before its return address. */
static ng_caller *probe(uintptr_t r, ng_caller_slot **free_slot) {
  uint32_t h = ng_hash_addr(r);
  *free_slot = NULL;
  for (uint32_t i = 0; i < 8; i++) {
    ng_caller_slot *s = &ng_callers[(h + i) & (NG_CALLERS - 1)];
    uintptr_t k = atomic_load_explicit(&s->ret, NG_ACQUIRE);
    if (k == r) return atomic_load_explicit(&s->caller, NG_ACQUIRE);
    if (k == 0) {
      *free_slot = s;
      return NULL;
    }
  }
  return NULL;
}

/* A return address seen for the first time (or in the overflow chain): its entry, made under the lock. */
static ng_caller *caller_slow(uintptr_t ret) {
  pthread_mutex_lock(&lock);
  ng_caller_slot *free_slot;
  ng_caller *found = probe(ret, &free_slot);
  if (found != NULL) {
    pthread_mutex_unlock(&lock);
    return found;
  }
  for (ng_caller *c = overflow; c != NULL; c = c->next) {
    if (c->ret == ret) {
      pthread_mutex_unlock(&lock);
      return c;
    }
  }
  ng_caller *c = aligned_alloc(64, sizeof(*c));
  if (c == NULL) abort();
  memset(c, 0, sizeof(*c));
  c->ret = ret;
  atomic_store_explicit(&c->fn, -2, NG_RELAXED); /* not known yet */
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  /* ret - 1: the call instruction itself, in case the call is the function's last instruction */
  if (dladdr1((void *)(ret - 1), &info, (void **)&sym, RTLD_DL_SYMENT) != 0) {
    c->obj = object_at((uintptr_t)info.dli_fbase, info.dli_fname);
    /* dladdr names the nearest exported symbol below; the caller is that symbol only if the
     * address lies inside it (a static function after it is not) */
    if (info.dli_sname != NULL && info.dli_saddr != NULL && sym != NULL &&
        ret - 1 < (uintptr_t)info.dli_saddr + sym->st_size) {
      c->sym = strdup(info.dli_sname);
    }
  } else {
    c->obj = object_at(0, "");
  }
  c->site.caller = c;
  atomic_store_explicit(&c->hint[0], ng_hint_none, NG_RELAXED);
  atomic_store_explicit(&c->hint[1], ng_hint_none, NG_RELAXED);
  uint32_t gen = (atomic_load_explicit(&ng_w.state, NG_ACQUIRE) >> 1);
  atomic_store_explicit(&c->decision, gen << 1 | (uint32_t)decide(c), NG_RELAXED);
  ncallers++;
  if (free_slot != NULL) {
    atomic_store_explicit(&free_slot->caller, c, NG_RELEASE);
    atomic_store_explicit(&free_slot->ret, ret, NG_RELEASE);
  } else {
    c->next = overflow;
    overflow = c;
  }
  pthread_mutex_unlock(&lock);
  return c;
}

ng_caller *ng_caller_find(uintptr_t r) {
  ng_caller_slot *free_slot;
  ng_caller *c = probe(r, &free_slot);
  return c != NULL ? c : caller_slow(r);
}

int ng_callers_known(void) {
  pthread_mutex_lock(&lock);
  int n = ncallers;
  pthread_mutex_unlock(&lock);
  return n;
}

static int set_list(char ***list, int *count, const char *const *names, int n) {
  char **copy = n > 0 ? calloc((size_t)n, sizeof(char *)) : NULL;
  if (n > 0 && copy == NULL) return -1;
  for (int i = 0; i < n; i++) copy[i] = strdup(names[i] != NULL ? names[i] : "");
  pthread_mutex_lock(&lock);
  char **old = *list;
  int nold = *count;
  *list = copy;
  *count = n;
  atomic_fetch_add_explicit(&ng_w.state, 2, NG_RELEASE);
  ng_gate_refresh();
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < nold; i++) free(old[i]);
  free(old);
  return 0;
}

int ng_set_suppressed(const char *const *names, int n) { return set_list(&suppressed, &nsuppressed, names, n); }
int ng_set_wrapped(const char *const *names, int n) { return set_list(&wrapped, &nwrapped, names, n); }

/* ---------------------------------------------------------------- the real functions */

struct find_lib {
  const char *prefix;
  char path[4096];
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct find_lib *f = data;
  const char *name = info->dlpi_name;
  if (name == NULL || name[0] == '\0') return 0;
  const char *slash = strrchr(name, '/');
  const char *base = slash != NULL ? slash + 1 : name;
  if (strncmp(base, f->prefix, strlen(f->prefix)) != 0) return 0;
  snprintf(f->path, sizeof(f->path), "%s", name);
  return 1;
}

/* A handle on the loaded NCCL or CUDA runtime, never loading one; cached once found. */
static void *library(int nccl) {
  static _Atomic(void *) handles[2];
  void *h = atomic_load_explicit(&handles[nccl], NG_ACQUIRE);
  if (h != NULL) return h;
  h = dlopen(nccl ? "libnccl.so.2" : "libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) {
    struct find_lib f = {nccl ? "libnccl.so" : "libcudart.so", ""};
    if (dl_iterate_phdr(find_loaded, &f) != 0) h = dlopen(f.path, RTLD_NOW | RTLD_NOLOAD);
  }
  if (h != NULL) atomic_store_explicit(&handles[nccl], h, NG_RELEASE);
  return h;
}

static void *lookup_in(void *handle, int fn) {
  if (handle == NULL) return NULL;
  const char *name = ng_fn_name[fn];
  void *p = NULL;
  if (ng_fn_nccl[fn]) {
    char pname[128];
    snprintf(pname, sizeof(pname), "p%s", name);
    p = dlsym(handle, pname);
    if (p != NULL && inside_self(p)) p = NULL;
  }
  if (p == NULL) {
    p = dlsym(handle, name);
    if (p != NULL && inside_self(p)) p = NULL;
  }
  return p;
}

void *ng_resolve(ng_object *o, int fn) {
  void *p = NULL;
  if (o != &ng_default_object && o->path[0] != '\0' && !o->nvidia) {
    void *h = dlopen(o->path, RTLD_LAZY | RTLD_NOLOAD);
    /* kept open: the functions found stay valid as long as we hold them */
    p = lookup_in(h, fn);
  }
  if (p == NULL) p = lookup_in(library(ng_fn_nccl[fn]), fn);
  if (p == NULL) p = lookup_in(RTLD_NEXT, fn);
  if (p != NULL) atomic_store_explicit(&o->real[fn], p, NG_RELEASE);
  return p;
}

void *ng_real_slow(ng_caller *c, int fn) {
  void *p = atomic_load_explicit(&c->obj->real[fn], NG_ACQUIRE);
  if (p == NULL) p = ng_resolve(c->obj, fn);
  if (p == NULL) return NULL;
  int was = -2;
  if (atomic_compare_exchange_strong_explicit(&c->fn, &was, fn, NG_RELAXED, NG_RELAXED)) {
    atomic_store_explicit(&c->real, p, NG_RELEASE);
  } else if (was != fn && was != -1) {
    atomic_store_explicit(&c->fn, -1, NG_RELAXED); /* called through a pointer: several functions */
  }
  return p;
}

_Atomic uint64_t ng_gate_words[NG_FN_COUNT];

void ng_gate_refresh(void) {
  /* two changes at once (a generation and dying): each writer goes on until the words it wrote
   * are those of the state it sees after, so the last state is the one left */
  uint32_t s;
  do {
    s = atomic_load_explicit(&ng_w.state, NG_ACQUIRE);
    for (int fn = 0; fn < NG_FN_COUNT; fn++)
      atomic_store_explicit(&ng_gate_words[fn], (uint64_t)s << 9 | (uint64_t)fn << 1, NG_RELEASE);
  } while (atomic_load_explicit(&ng_w.state, NG_ACQUIRE) != s);
}

ng_gate_result ng_gate_slow(ng_caller *c, int fn) {
  void *real = ng_real(c, fn);
  if (real == NULL) return (ng_gate_result){NULL, 0};
  uint64_t track = (uint64_t)ng_tracks(c);
  /* the gate opens for this call site's one function, under the state its decision was made in */
  uint32_t d = atomic_load_explicit(&c->decision, NG_RELAXED);
  uint32_t s = atomic_load_explicit(&ng_w.state, NG_ACQUIRE);
  /* the hot paths store a record whole: where that cannot be (no AVX), every call takes the generic path */
  if (atomic_load_explicit(&c->fn, NG_RELAXED) == fn && atomic_load_explicit(&c->real, NG_ACQUIRE) == real &&
      !(s & NG_DYING) && (d >> 1) == (s >> 1) && (ng_w.rec_whole || !NG_REC_WHOLE_POSSIBLE))
    atomic_store_explicit(&c->gate, (uint64_t)s << 9 | (uint64_t)fn << 1 | (uint64_t)!(d & 1), NG_RELEASE);
  return (ng_gate_result){real, track};
}

void *ng_real_default(int fn) {
  void *p = atomic_load_explicit(&ng_default_object.real[fn], NG_ACQUIRE);
  return p != NULL ? p : ng_resolve(&ng_default_object, fn);
}

int ng_current_device(void) {
  static _Atomic(void *) get_device;
  int (*f)(int *) = (int (*)(int *))atomic_load_explicit(&get_device, NG_ACQUIRE);
  if (f == NULL) {
    void *h = library(0);
    void *p = h != NULL ? dlsym(h, "cudaGetDevice") : NULL;
    if (p == NULL) p = dlsym(RTLD_NEXT, "cudaGetDevice");
    if (p == NULL || inside_self(p)) return 0;
    atomic_store_explicit(&get_device, p, NG_RELEASE);
    f = (int (*)(int *))p;
  }
  int device = 0;
  return f(&device) == 0 ? device : 0;
}

static atomic_int missing_logged[NG_FN_COUNT];

int ng_missing(int fn) {
  atomic_fetch_add_explicit(&ng_missing_real, 1, NG_RELAXED);
  ng_log_once(&missing_logged[fn], "%s was called but no %s defines it; the call fails as an "
              "uninitialized library would", ng_fn_name[fn], ng_fn_nccl[fn] ? "loaded libnccl" : "loaded libcudart");
  return ng_fn_nccl[fn] ? ncclSystemError : cudaErrorInitializationError;
}

void ng_mark_dying(void) {
  atomic_fetch_or(&ng_w.state, NG_DYING);
  ng_gate_refresh();
}

char *ng_caller_library(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL ? strdup(s->caller->obj->name) : NULL;
}

char *ng_caller_symbol(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL && s->caller->sym != NULL ? strdup(s->caller->sym) : NULL;
}
