/* Import-slot patching: what the promotion into the global scope does not reach (docs/design.md,
 * "Import slots"). A reference bound before the promotion (an attach, -z now, lazy binding's first
 * call), one bound inside a scope of its own (RTLD_DEEPBIND) and a -fno-plt GLOB_DAT slot keep the
 * real function; a lookup by name (dlsym on a handle) never meets the wrappers. So, as
 * async-profiler's hooks.cpp does, the import slots of loaded objects are rewritten:
 *   - the JUMP_SLOT, GLOB_DAT and ABS64 relocations of an undefined symbol naming a catalog function
 *     point at its wrapper, those of dlopen, dlsym and dlvsym at the hooks here; the wrappers find
 *     the real function as for any caller (ng_caller.c), never from the old slot (a lazy slot holds
 *     the PLT's resolver stub: calling it from elsewhere crashed on aarch64);
 *   - one 8-byte compare-and-swap per slot (lazy binding may write it meanwhile: a slot that still
 *     pointed into its own object is checked again at the next pass); a slot in the RELRO segment
 *     is made writable for that store alone; one that cannot be is left as it was;
 *   - an object is parsed while a dlopen(RTLD_NOLOAD) handle holds it, and only then (the handle
 *     waits out a load in progress; a kept one would stop the object's dlclose), keyed by its load
 *     base and forgotten at any unload (one loaded again at the same base is patched again);
 *   - nothing is ever unpatched: once its caller is not tracked a wrapper only forwards.
 * Left alone: this library, NVIDIA's (their calls are their own), the C runtime's and the
 * sanitizers'; the JVM's own objects (and the main program, and JNA's native library) get the
 * dlopen hook and a dlsym hook that only runs what a dlopen owes, so that a library System.load
 * loads is patched too, before its JNI_OnLoad is looked up. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ng.h"
#include "ng_caller.h"
#include "ng_driver.h"
#include "ng_elf.h"
#include "ng_patch.h"

static atomic_int started;
/* set when a pass is owed (a dlopen whose caller mattered, a pass that could not take the lock) */
static atomic_int pending;
/* held by the one pass at a time; only ever tried, never waited for (a pass waits on the dynamic
 * linker's lock, whose holder may be running a constructor that calls a hook) */
static pthread_mutex_t pass_lock = PTHREAD_MUTEX_INITIALIZER;
static void *wrapper[NG_FN_COUNT];
/* defined by a library in LD_PRELOAD (another interposer): its slots are left to bind to it */
static unsigned char preloaded[NG_FN_COUNT];
static atomic_long n_objects, n_slots, n_skipped;

enum { KIND_SKIP, KIND_DLOPEN, KIND_ALL };

/* An object patched: its base, and the lazy slots to check once more at the next pass. */
typedef struct known {
  uintptr_t base;
  int nlazy;
  uintptr_t (*lazy)[2]; /* slot, value */
  struct known *next;
} known;
static known *knowns;         /* under pass_lock */
static unsigned long long known_subs;

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

/* The C runtime's and the sanitizers' objects: their dlopen and dlsym are the ones the hooks call. */
static const char *const runtime_prefixes[] = {"linux-vdso", "linux-gate", "ld-linux", "ld64.so", "libc.so", "libdl.so",
                                               "libpthread.so", "librt.so", "libm.so", "libtsan", "libasan", "liblsan",
                                               "libubsan", "libclang_rt", "libgcc_s", "libstdc++", NULL};

static int kind_of(const char *path, uintptr_t base, int first, const char *jvm_dir, size_t jvm_len) {
  if (base == ng_self_base) return KIND_SKIP;
  if (path[0] == '\0') return first ? KIND_DLOPEN : KIND_SKIP; /* the main program (the java launcher) */
  const char *name = base_name(path);
  for (int i = 0; runtime_prefixes[i] != NULL; i++) {
    if (strncmp(name, runtime_prefixes[i], strlen(runtime_prefixes[i])) == 0) return KIND_SKIP;
  }
  if (ng_is_nvidia_name(name)) return KIND_SKIP;
  if (jvm_len > 0 && strncmp(path, jvm_dir, jvm_len) == 0) return KIND_DLOPEN;
  return KIND_ALL;
}

/* ---------------------------------------------------------------- the hooks */
static void patch_now(void);

/* Whether glibc's dlopen loads the same object whoever calls it: it searches a bare name along the
 * caller's DT_RUNPATH and the DT_RPATHs of its loaders, expands $ORIGIN from the caller, and gives
 * the new object the caller as its loader (whose DT_RPATH chain its own needs then search). A
 * path with a slash and no '$', while no loaded object but the main program has a DT_RPATH: the
 * same object, found the same way. */
static int rpath_of(const ng_image *im, void *data) {
  (void)data;
  return im->rpath && im->name[0] != '\0';
}
static int caller_independent(const char *file) {
  if (file == NULL) return 1;
  if (strchr(file, '/') == NULL || strchr(file, '$') != NULL) return 0;
  return !ng_each_image(rpath_of, NULL);
}

static void *hook_dlopen(const char *file, int mode) {
  if (atomic_load_explicit(&pending, NG_RELAXED)) patch_now();
  if (!caller_independent(file)) {
    /* a tail call, so that the dynamic linker sees the caller's object; the next hook's call patches */
    atomic_store_explicit(&pending, 1, NG_RELAXED);
    return dlopen(file, mode);
  }
  void *h = dlopen(file, mode);
  if (h != NULL) patch_now();
  return h;
}

struct by_name {
  uintptr_t bias;
  const char *lname, *name, *version;
  uintptr_t found;
};
static int find_by_name(const ng_image *im, void *data) {
  struct by_name *b = data;
  if (im->bias != b->bias || strcmp(im->name, b->lname) != 0) return 0;
  b->found = ng_image_lookup_version(im, b->name, b->version);
  return 1;
}

/* NCCL's, the runtime's and the driver's names (nccl*, cuda*, cu*) */
static int catalog_fn(const char *name) {
  if (name == NULL || (strncmp(name, "nccl", 4) != 0 && strncmp(name, "cu", 2) != 0)) return -1;
  return ng_fn_id(name);
}

/* The definition of name that the handle's own object has, 0 for none (or the main program's
 * handle, which searches the global scope, not one object). */
static uintptr_t defined_by(void *handle, const char *name, const char *version) {
  struct link_map *lm = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
    dlerror();
    return 0;
  }
  if (lm->l_name == NULL || lm->l_name[0] == '\0') return 0;
  struct by_name b = {lm->l_addr, lm->l_name, name, version, 0};
  ng_each_image(find_by_name, &b);
  return b.bias == ng_self_base ? 0 : b.found;
}

/* The wrapper for a catalog function that the handle's own object defines, the object at `ret`
 * then forwarding its calls to that definition; for the driver's cuGetProcAddress(_v2), the
 * stand-in that hands out wrappers (ng_driver.c); NULL for anything else (the real lookup runs). */
static void *wrapper_by_name(void *handle, const char *name, const char *version, int fn, void *ret) {
  if (!atomic_load_explicit(&started, NG_RELAXED) || name == NULL) return NULL;
  if (fn < 0) {
    if (strncmp(name, "cuGetProcAddress", 16) != 0) return NULL;
    uintptr_t real = defined_by(handle, name, version);
    return real != 0 ? ng_driver_proc_hook(name, real, (uintptr_t)ret) : NULL;
  }
  if (wrapper[fn] == NULL) return NULL;
  uintptr_t real = defined_by(handle, name, version);
  if (real == 0) return NULL;
  ng_caller_named((uintptr_t)ret, fn, real);
  return wrapper[fn];
}

/* RTLD_DEFAULT, RTLD_NEXT and names not in the catalog: tail calls, so that the dynamic linker
 * sees the caller (its scope, its next object, the dependency a lookup adds) */
static void *hook_dlsym(void *handle, const char *name) {
  if (atomic_load_explicit(&pending, NG_RELAXED)) patch_now();
  if (handle != RTLD_DEFAULT && handle != RTLD_NEXT) {
    void *w = wrapper_by_name(handle, name, NULL, catalog_fn(name), __builtin_return_address(0));
    if (w != NULL) return w;
  }
  return dlsym(handle, name);
}

/* The JVM's own dlsym (a native method's symbol, JNI_OnLoad right after System.load): runs the pass
 * a dlopen of it owes, so that a library the JVM loaded is patched before its first native method
 * runs (a static cudart finds the driver at its first call, and keeps what it found); never a
 * wrapper (FFM's lookups are its Java bridge's). */
static void *hook_dlsym_pass(void *handle, const char *name) {
  if (atomic_load_explicit(&pending, NG_RELAXED)) patch_now();
  return dlsym(handle, name);
}

static void *hook_dlvsym(void *handle, const char *name, const char *version) {
  if (atomic_load_explicit(&pending, NG_RELAXED)) patch_now();
  if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && version != NULL) {
    void *w = wrapper_by_name(handle, name, version, catalog_fn(name), __builtin_return_address(0));
    if (w != NULL) return w;
  }
  return dlvsym(handle, name, version);
}

/* ---------------------------------------------------------------- one object's slots */
/* The version an import asks for (its DT_VERNEED name), or NULL for none. */
static const char *import_version(const ng_image *im, uint32_t symi) {
  if (im->versym == NULL || im->verneed == NULL) return NULL;
  ElfW(Half) v = im->versym[symi] & 0x7fff;
  if (v < 2) return NULL;
  const ElfW(Verneed) *vn = im->verneed;
  for (size_t i = 0; i < im->verneed_num; i++) {
    const ElfW(Vernaux) *aux = (const ElfW(Vernaux) *)((const char *)vn + vn->vn_aux);
    for (unsigned j = 0; j < vn->vn_cnt; j++) {
      if (aux->vna_other == v) return im->strtab + aux->vna_name;
      aux = (const ElfW(Vernaux) *)((const char *)aux + aux->vna_next);
    }
    if (vn->vn_next == 0) break;
    vn = (const ElfW(Verneed) *)((const char *)vn + vn->vn_next);
  }
  return NULL;
}

/* What an import slot of symbol symi is to point at, or NULL to leave it. A slot of a catalog
 * function the object defines itself (NCCL linked in, exported) is preemptible: it is what binds to
 * the wrappers when the object is loaded after the promotion. A versioned reference of another
 * cudart (libcudart.so.12's) would not bind to the wrappers (libcudart.so.13's node): left. */
static void *target_of(const ng_image *im, uint32_t symi, int kind) {
  const ElfW(Sym) *sym = &im->symtab[symi];
  if (sym->st_name == 0) return NULL;
  const char *name = im->strtab + sym->st_name;
  const char *version = import_version(im, symi);
  if (name[0] == 'd') {
    if (sym->st_shndx != SHN_UNDEF) return NULL; /* its own dlopen */
    if (version != NULL && strncmp(version, "GLIBC_", 6) != 0) return NULL;
    if (strcmp(name, "dlopen") == 0) return (void *)hook_dlopen;
    if (strcmp(name, "dlsym") == 0) return kind == KIND_ALL ? (void *)hook_dlsym : (void *)hook_dlsym_pass;
    if (kind == KIND_ALL && strcmp(name, "dlvsym") == 0) return (void *)hook_dlvsym;
    return NULL;
  }
  if (kind != KIND_ALL) return NULL;
  int fn = catalog_fn(name);
  if (fn < 0 || preloaded[fn]) return NULL;
  if (version != NULL && (ng_fn_nccl[fn] || strcmp(version, "libcudart.so.13") != 0)) return NULL;
  return wrapper[fn];
}

#if defined(__x86_64__)
#define R_SLOT(t) ((t) == R_X86_64_JUMP_SLOT || (t) == R_X86_64_GLOB_DAT || (t) == R_X86_64_64)
#define R_LAZY(t) ((t) == R_X86_64_JUMP_SLOT)
#elif defined(__aarch64__)
#define R_SLOT(t) ((t) == R_AARCH64_JUMP_SLOT || (t) == R_AARCH64_GLOB_DAT || (t) == R_AARCH64_ABS64)
#define R_LAZY(t) ((t) == R_AARCH64_JUMP_SLOT)
#else
#define R_SLOT(t) 0
#define R_LAZY(t) 0
#endif

/* Stores value in the slot, making a RELRO page writable for the store alone (glibc protects the
 * pages of PT_GNU_RELRO rounded down at both ends); *was: what it held. 0: not writable, left. */
static int write_slot(const ng_image *im, uintptr_t slot, uintptr_t value, uintptr_t *was) {
  const struct dl_phdr_info *info = im->info;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = 0, hi = 0;
  int writable = 0;
  if (slot % sizeof(uintptr_t) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_GNU_RELRO) {
      lo = start & ~(page - 1);
      hi = (start + ph->p_memsz) & ~(page - 1);
    }
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && slot >= start && slot + sizeof(uintptr_t) <= start + ph->p_memsz)
      writable = 1;
  }
  if (!writable) return 0;
  int relro = slot >= lo && slot < hi;
  void *pg = (void *)(slot & ~(page - 1));
  if (relro && mprotect(pg, page, PROT_READ | PROT_WRITE) != 0) return 0;
  _Atomic uintptr_t *p = (_Atomic uintptr_t *)slot;
  uintptr_t cur = atomic_load_explicit(p, NG_RELAXED);
  *was = cur;
  while (cur != value && !atomic_compare_exchange_weak_explicit(p, &cur, value, NG_RELEASE, NG_RELAXED)) {
  }
  if (relro) mprotect(pg, page, PROT_READ);
  return 1;
}

struct one {
  uintptr_t base;
  int kind;
  known *k;
};

static void add_lazy(known *k, uintptr_t slot, uintptr_t value) {
  uintptr_t(*more)[2] = realloc(k->lazy, (size_t)(k->nlazy + 1) * sizeof(*more));
  if (more == NULL) return;
  k->lazy = more;
  k->lazy[k->nlazy][0] = slot;
  k->lazy[k->nlazy][1] = value;
  k->nlazy++;
}

static void patch_table(const ng_image *im, const ElfW(Rela) *rel, size_t size, struct one *o) {
  if (rel == NULL) return;
  for (size_t i = 0; i < size / sizeof(ElfW(Rela)); i++) {
    uint32_t type = (uint32_t)ELF64_R_TYPE(rel[i].r_info), symi = (uint32_t)ELF64_R_SYM(rel[i].r_info);
    if (!R_SLOT(type) || symi == 0 || rel[i].r_addend != 0) continue;
    void *target = target_of(im, symi, o->kind);
    if (target == NULL) continue;
    uintptr_t slot = im->bias + rel[i].r_offset, was = 0;
    if (!write_slot(im, slot, (uintptr_t)target, &was)) {
      atomic_fetch_add_explicit(&n_skipped, 1, NG_RELAXED);
      continue;
    }
    if (was != (uintptr_t)target) atomic_fetch_add_explicit(&n_slots, 1, NG_RELAXED);
    /* unbound yet (its PLT's stub): a lazy binding in flight may store the real function after us */
    if (R_LAZY(type) && ng_image_contains(im, was)) add_lazy(o->k, slot, (uintptr_t)target);
  }
}

static int patch_one(const ng_image *im, void *data) {
  struct one *o = data;
  if (im->bias != o->base) return 0;
  known *k = o->k;
  if (k->nlazy > 0) {
    /* patched at an earlier pass: its unbound slots once more, then never again */
    for (int i = 0; i < k->nlazy; i++) {
      uintptr_t was;
      write_slot(im, k->lazy[i][0], k->lazy[i][1], &was);
    }
    free(k->lazy);
    k->lazy = NULL;
    k->nlazy = 0;
    return 1;
  }
  patch_table(im, im->jmprel, im->jmprel_size, o);
  patch_table(im, im->rela, im->rela_size, o);
  atomic_fetch_add_explicit(&n_objects, 1, NG_RELAXED);
  return 1;
}

/* ---------------------------------------------------------------- passes */
typedef struct {
  uintptr_t base;
  char *path;
  int kind, main_program, again;
} candidate;

struct scan {
  candidate *c;
  int n, cap;
  int first;
  char jvm_dir[4096];
  size_t jvm_len;
  unsigned long long subs;
};

static known *known_at(uintptr_t base) {
  for (known *k = knowns; k != NULL; k = k->next) {
    if (k->base == base) return k;
  }
  return NULL;
}

/* the JVM's own objects: those under the directory above libjvm.so's (lib/server/libjvm.so) */
static int find_jvm(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct scan *s = data;
  const char *path = info->dlpi_name != NULL ? info->dlpi_name : "";
  if (strcmp(base_name(path), "libjvm.so") != 0 || strlen(path) >= sizeof(s->jvm_dir)) return 0;
  strcpy(s->jvm_dir, path);
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(s->jvm_dir, '/');
    if (slash == NULL) return 1;
    *slash = '\0';
  }
  strcat(s->jvm_dir, "/");
  s->jvm_len = strlen(s->jvm_dir);
  return 1;
}

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct scan *s = data;
  int first = s->first;
  s->first = 0;
  if (first) s->subs = info->dlpi_subs;
  const char *path = info->dlpi_name != NULL ? info->dlpi_name : "";
  int kind = kind_of(path, info->dlpi_addr, first, s->jvm_dir, s->jvm_len);
  ng_image im;
  /* JNA's native library is the JVM's FFI as libjvm's lookups are: its calls are the JNA bridge's
   * (tracked in Java), so it gets the real functions, as FFM's lookups do */
  if (kind == KIND_ALL && ng_image_of(info, &im) && ng_image_lookup(&im, "Java_com_sun_jna_Native_invokeInt") != 0)
    kind = KIND_DLOPEN;
  if (kind == KIND_SKIP) return 0;
  known *k = known_at(info->dlpi_addr);
  if (k != NULL && k->nlazy == 0) return 0;
  if (s->n == s->cap) {
    int cap = s->cap > 0 ? s->cap * 2 : 64;
    candidate *more = realloc(s->c, (size_t)cap * sizeof(*more));
    if (more == NULL) return 1;
    s->c = more;
    s->cap = cap;
  }
  char *copy = strdup(path);
  if (copy == NULL) return 1;
  s->c[s->n++] = (candidate){info->dlpi_addr, copy, kind, path[0] == '\0', k != NULL};
  return 0;
}

static void forget_all(void) {
  while (knowns != NULL) {
    known *k = knowns;
    knowns = k->next;
    free(k->lazy);
    free(k);
  }
}

static void scan(struct scan *s) {
  memset(s, 0, sizeof(*s));
  s->first = 1;
  dl_iterate_phdr(find_jvm, s);
  dl_iterate_phdr(collect, s);
}

static void pass(void) {
  struct scan s;
  scan(&s);
  if (s.subs != known_subs) {
    /* an object was unloaded: one at a known base may be another now; patching again is harmless */
    for (int i = 0; i < s.n; i++) free(s.c[i].path);
    free(s.c);
    forget_all();
    scan(&s);
  }
  known_subs = s.subs;
  for (int i = 0; i < s.n; i++) {
    candidate *c = &s.c[i];
    /* holds the object while it is parsed, waiting out a load in progress; not found: gone, or the
     * dynamic linker's own (left) */
    void *h = c->main_program ? dlopen(NULL, RTLD_LAZY) : dlopen(c->path, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) {
      dlerror();
      free(c->path);
      continue;
    }
    known *k = c->again ? known_at(c->base) : calloc(1, sizeof(known));
    if (k != NULL) {
      if (!c->again) {
        k->base = c->base;
        k->next = knowns;
        knowns = k;
      }
      struct one o = {c->base, c->kind, k};
      ng_each_image(patch_one, &o);
    }
    dlclose(h);
    free(c->path);
  }
  free(s.c);
}

/* Runs a pass now, or leaves it owed to the pass in progress (never waits: see pass_lock). */
static void patch_now(void) {
  atomic_store_explicit(&pending, 1, NG_RELAXED);
  while (atomic_load_explicit(&pending, NG_ACQUIRE) && pthread_mutex_trylock(&pass_lock) == 0) {
    atomic_store_explicit(&pending, 0, NG_RELAXED);
    pass();
    pthread_mutex_unlock(&pass_lock);
  }
}

struct self_defs {
  int found;
};
static int find_self(const ng_image *im, void *data) {
  struct self_defs *d = data;
  if (im->bias != ng_self_base) return 0;
  for (int fn = 0; fn < NG_FN_COUNT; fn++) wrapper[fn] = (void *)ng_image_lookup(im, ng_fn_name[fn]);
  d->found = 1;
  return 1;
}

/* Another interposer in LD_PRELOAD (a profiler, a site tool) comes first in the global scope on
 * purpose: every reference binds to it, and it forwards to the next definition, the wrappers
 * (promoted after it). A slot pointed at the wrappers would skip it: their real function is the
 * next after them. So a function such a library defines is never patched; a slot bound around it
 * (RTLD_DEEPBIND, an attach after a lazy slot bound to NCCL itself) is then not seen. */
static int find_preloaded(const ng_image *im, void *data) {
  const char *preload = data;
  const char *name = base_name(im->name);
  size_t len = strlen(name);
  if (im->bias == ng_self_base || len == 0) return 0;
  for (const char *p = preload; *p != '\0';) {
    size_t n = strcspn(p, ": ");
    const char *entry = p;
    for (const char *q = p; q < p + n; q++)
      if (*q == '/') entry = q + 1;
    if ((size_t)(p + n - entry) == len && strncmp(entry, name, len) == 0) {
      for (int fn = 0; fn < NG_FN_COUNT; fn++)
        if (ng_image_lookup(im, ng_fn_name[fn]) != 0) preloaded[fn] = 1;
    }
    p += n;
    p += strspn(p, ": ");
  }
  return 0;
}

int ng_patch_start(void) {
  int was = 0;
  if (!atomic_compare_exchange_strong(&started, &was, 1)) return 0;
  struct self_defs d = {0};
  ng_each_image(find_self, &d);
  if (!d.found) return 0;
  const char *preload = getenv("LD_PRELOAD");
  if (preload != NULL && preload[0] != '\0') ng_each_image(find_preloaded, (void *)preload);
  long before = atomic_load(&n_objects);
  patch_now();
  return (int)(atomic_load(&n_objects) - before);
}

void ng_patch_stats(long out[3]) {
  out[0] = atomic_load(&n_objects);
  out[1] = atomic_load(&n_slots);
  out[2] = atomic_load(&n_skipped);
}
