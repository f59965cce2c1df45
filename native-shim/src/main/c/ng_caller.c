/* Who called a wrapper, whether the call is the application's, and where the real function is.
 *
 * The caller cache maps a return address to its caller entry (the calling object and exported
 * symbol, and the decision). It is filled on first sight with dladdr and a look at the call
 * instruction before the return address (a tail call leaves the return address of the function
 * that made it: ng_caller.c's classify), under a lock; lookups take none. The real functions are
 * looked up per calling object, lazily per function, in the order that gives the definition the
 * call would have reached without the agent (docs/design.md, "Forwarding"):
 *   1. the next definition after this library in the global scope (dlsym(RTLD_NEXT));
 *   2. the calling object's own definition, unless it is a forwarder (it preempts this library in
 *      the global scope, so a call that reached us skipped it: an interposer's ncclX that forwards
 *      with RTLD_NEXT), pnccl* before nccl*;
 *   3. its dependencies (DT_NEEDED, two levels); 4. a loaded libnccl.so* / libcudart.so*;
 *   5. every loaded object, pnccl* first, forwarders left out.
 * A definition inside this library is never taken, and no handle is kept on any object: symbols
 * are read from the objects' dynamic symbol tables in memory (dl_iterate_phdr), so an object the
 * application dlcloses is unloaded as without the agent; its callers and every cached real
 * function are dropped then (an unload hook through __cxa_atexit, and dlpi_subs on slow paths). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ng.h"
#include "ng_caller.h"
#include "ng_elf.h"
#include "ng_log.h"

ng_caller_slot ng_callers[NG_CALLERS];
ng_object ng_default_object;
void *ng_hint_none;

/* Guards the objects, the callers' making and dropping, the lists, and the real functions' caching.
 * No call that takes the dynamic linker's load lock (dladdr, dlsym) is made under it: a library's
 * constructor runs under that lock, and its first call of a wrapper takes this one (an ABBA
 * deadlock against a thread that held this lock and waited in dladdr). What those calls find is
 * asked before the lock is taken; under it, objects are looked at with dl_iterate_phdr alone, which
 * takes the linker's write lock, never held while a constructor runs. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The test mode's pause once a slow path holds the lock (0: a caller's first sight, 1: a real
 * function's lookup); NULL in a JVM. */
static void (*test_locked)(int where);

void ng_caller_set_test_locked(void (*f)(int where)) { test_locked = f; }

static void locked_pause(int where) {
  if (NG_UNLIKELY(test_locked != NULL)) test_locked(where);
}
static ng_object *objects;
static ng_caller *overflow; /* callers that found no free slot in the table */
static int ncallers;
/* A table slot whose caller was dropped (its object unloaded): probes go on past it. */
#define TOMB ((uintptr_t)1)
/* Set by the unload hook (inside dlclose, no lock); dlpi_subs as last seen. */
static atomic_int unload_pending;
static unsigned long long last_subs;

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

int ng_is_nvidia_name(const char *name) {
  for (int i = 0; nvidia_prefixes[i] != NULL; i++) {
    if (strncmp(name, nvidia_prefixes[i], strlen(nvidia_prefixes[i])) == 0) return 1;
  }
  return 0;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

/* By the range of this library's segments, not dladdr: it is asked inside dl_iterate_phdr's
 * callbacks, which hold the dynamic linker's write lock; dladdr and dlsym take its load lock, which
 * a dlclose holds while it waits for the write lock (a deadlock, seen with JNA's cleaner thread). */
static int inside_self(const void *p) {
  return p != NULL && (uintptr_t)p >= ng_self_base && (uintptr_t)p < ng_self_end;
}

/* ---------------------------------------------------------------- functions looked up by name
 * An object that took a catalog function from dlsym(handle, name) (ng_patch.c's hook gave it the
 * wrapper) calls it through a pointer: it names the function although its dynamic symbols do not,
 * and its calls reach the definition dlsym found in that handle. Under lock; an entry goes when its
 * object or the definition's is unloaded (sweep_locked). */
typedef struct named_fn {
  uintptr_t base;
  char *path;
  int fn;
  uintptr_t real;
  struct named_fn *next;
} named_fn;
static named_fn *named_fns;

static const named_fn *named_by(uintptr_t base, int fn) {
  for (const named_fn *n = named_fns; n != NULL; n = n->next) {
    if (n->base == base && n->fn == fn) return n;
  }
  return NULL;
}

/* ---------------------------------------------------------------- the objects that called */
static ng_object *object_listed(uintptr_t base) {
  for (ng_object *o = objects; o != NULL; o = o->next) {
    if (o->base == base) return o;
  }
  return NULL;
}

/* Whether an object carries NCCL inside it (linked statically): its NCCL API is exported, or its
 * read-only data has the environment variable NCCL reads for its profiler plugin. */
static int scan_nccl_inside(const ng_image *im, void *data) {
  ng_object *o = data;
  if (!ng_image_contains(im, o->base)) return 0;
  if (ng_image_lookup(im, "pncclGetVersion") != 0) {
    o->own_defs = 1;
    return 1;
  }
  static const char marker[] = "NCCL_PROFILER_PLUGIN";
  const struct dl_phdr_info *info = im->info;
  for (int i = 0; i < info->dlpi_phnum && !o->own_defs; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !(ph->p_flags & PF_R)) continue;
    const char *start = (const char *)(info->dlpi_addr + ph->p_vaddr);
    if (memmem(start, ph->p_filesz, marker, sizeof(marker) - 1) != NULL) o->own_defs = 1;
  }
  return 1;
}

/* The unload hook: run by the object's own __cxa_finalize when it is dlclosed (and at exit), inside
 * the dynamic linker's lock, so it takes none of ours. The object is still mapped: the slow path
 * after the unmapping (dlpi_subs) drops it; the gates closed here keep every call off what it left. */
static void on_unload(void *p) {
  (void)p;
  atomic_store_explicit(&unload_pending, 1, NG_RELEASE);
  /* every gate closes: a call from a library loaded again at the same address is not forwarded
   * on what its predecessor's calls left */
  atomic_fetch_add_explicit(&ng_w.state, 2, NG_RELEASE);
  ng_gate_refresh();
}

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

/* An object's __dso_handle (crtbeginS.o's `void *__dso_handle = &__dso_handle;`, first in its .data):
 * the handlers registered with it run when the object is dlclosed. Words of its writable data that
 * point at themselves; a wrong one costs a handler that runs at exit only. */
static int hook_unload(const ng_image *im, void *data) {
  ng_object *o = data;
  if (!ng_image_contains(im, o->base)) return 0;
  const struct dl_phdr_info *info = im->info;
  int hooked = 0;
  for (int i = 0; i < info->dlpi_phnum && hooked < 4; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W)) continue;
    uintptr_t start = (info->dlpi_addr + ph->p_vaddr + 7) & ~(uintptr_t)7;
    uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
    for (uintptr_t a = start; a + 8 <= end && hooked < 4; a += 8) {
      if (*(const uintptr_t *)a == a) {
        __cxa_atexit(on_unload, o, (void *)a);
        hooked++;
      }
    }
  }
  return 1;
}

/* The object at base, made on first sight; under lock. */
static ng_object *object_at(uintptr_t base, const char *path) {
  ng_object *o = object_listed(base);
  if (o != NULL) return o;
  o = calloc(1, sizeof(*o));
  if (o == NULL) return &ng_default_object;
  o->base = base;
  o->path = strdup(path != NULL ? path : "");
  if (o->path == NULL) o->path = "";
  o->name = base_name(o->path);
  o->nvidia = base == ng_self_base || ng_is_nvidia_name(o->name);
  if (base != 0) {
    if (!o->nvidia) ng_each_image(scan_nccl_inside, o);
    if (base != ng_self_base) ng_each_image(hook_unload, o);
  }
  for (const named_fn *n = named_fns; n != NULL; n = n->next) {
    if (n->base == base && ng_fn_driver[n->fn]) atomic_store_explicit(&o->driver, 1, NG_RELAXED);
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

/* ---------------------------------------------------------------- whose call it is
 * The instruction before a return address says what it called: a wrapper of this library (through
 * the PLT or -fno-plt's GOT), which is the plain case; another definition of a catalog function
 * (an interposer's ncclX, NCCL's own: the call went through it); or some other function F, which
 * made the call to the wrapper as a tail call: F is the caller. An indirect call is the return
 * address's object's.
 * call_target decodes that instruction, per architecture: the function a direct call reached (its
 * PLT entry followed to the GOT slot's value), or 0 where the target is not known (a call through
 * a register, an instruction it does not know, another architecture: no decoding there, every call
 * is its return address's object's). A GOT slot is read only when it lies in the calling object. */
static int in_object(uintptr_t p, uintptr_t obj_base) {
  Dl_info info;
  return dladdr((void *)p, &info) != 0 && (uintptr_t)info.dli_fbase == obj_base;
}

#if defined(__x86_64__)
/* A PLT entry ([endbr64] [bnd] jmp *disp32(%rip)): its GOT slot's value; t itself when not one. */
static uintptr_t plt_target(uintptr_t t, uintptr_t obj_base) {
  const unsigned char *p = (const unsigned char *)t;
  if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) p += 4; /* endbr64 */
  if (p[0] == 0xf2) p++;                                                   /* bnd */
  if (p[0] != 0xff || p[1] != 0x25) return t; /* not a PLT entry: a function of the object */
  int32_t disp;
  memcpy(&disp, p + 2, 4);
  uintptr_t slot = (uintptr_t)(p + 6) + (intptr_t)disp;
  if (!in_object(slot, obj_base)) return 0;
  return *(const uintptr_t *)slot;
}

/* call rel32 (e8), or -fno-plt's call *disp32(%rip) (ff 15) */
static uintptr_t call_target(uintptr_t ret, uintptr_t obj_base) {
  const unsigned char *r = (const unsigned char *)ret;
  if (r[-5] == 0xe8) {
    int32_t rel;
    memcpy(&rel, r - 4, 4);
    uintptr_t t = ret + (intptr_t)rel;
    return in_object(t, obj_base) ? plt_target(t, obj_base) : 0;
  }
  if (r[-6] == 0xff && r[-5] == 0x15) {
    int32_t disp;
    memcpy(&disp, r - 4, 4);
    uintptr_t slot = ret + (intptr_t)disp;
    return in_object(slot, obj_base) ? *(const uintptr_t *)slot : 0;
  }
  return 0;
}
#elif defined(__aarch64__)
/* A PLT entry (ARM IHI 0056, and binutils' elfNN-aarch64.c):
 *   [bti c]  adrp x16, page(slot)  ldr x17, [x16, #pageoff(slot)]  add x16, x16, #pageoff(slot)
 *   [autia1716 | autib1716]  br x17
 * its GOT slot's value; t itself when not one. */
#define A64_BTI_C 0xd503245fu
#define A64_AUTIA1716 0xd503219fu
#define A64_AUTIB1716 0xd50321dfu
static uintptr_t plt_target(uintptr_t t, uintptr_t obj_base) {
  const uint32_t *p = (const uint32_t *)t;
  if (p[0] == A64_BTI_C) p++;
  uint32_t adrp = p[0], ldr = p[1], add = p[2], br = p[3];
  if (br == A64_AUTIA1716 || br == A64_AUTIB1716) br = p[4];
  if ((adrp & 0x9f00001fu) != 0x90000010u /* adrp x16 */ || (ldr & 0xffc003ffu) != 0xf9400211u /* ldr x17, [x16, #imm12*8] */ ||
      (add & 0xffc003ffu) != 0x91000210u /* add x16, x16, #imm12 */ || br != 0xd61f0220u /* br x17 */)
    return t; /* not a PLT entry: a function of the object */
  /* adrp: immhi (bits 23:5) : immlo (bits 30:29), signed, in 4 KiB pages from the entry's page */
  uint32_t imm21 = ((adrp >> 5) & 0x7ffffu) << 2 | ((adrp >> 29) & 3u);
  int64_t pages = (int64_t)((int32_t)(imm21 << 11) >> 11);
  uintptr_t slot = ((uintptr_t)p & ~(uintptr_t)0xfff) + (uintptr_t)(pages * 4096) + (uintptr_t)((ldr >> 10) & 0xfffu) * 8;
  if (!in_object(slot, obj_base)) return 0;
  return *(const uintptr_t *)slot;
}

/* bl imm26 (a call through the PLT, or to a function of the object); blr xN (a pointer, or
 * -fno-plt's GOT load some instructions before, which is not followed) and anything else: unknown */
static uintptr_t call_target(uintptr_t ret, uintptr_t obj_base) {
  uint32_t insn;
  memcpy(&insn, (const void *)(ret - 4), 4);
  if ((insn & 0xfc000000u) != 0x94000000u) return 0;
  int64_t words = (int64_t)((int32_t)(insn << 6) >> 6); /* imm26, signed, in instructions */
  uintptr_t t = ret - 4 + (uintptr_t)(words * 4);
  return in_object(t, obj_base) ? plt_target(t, obj_base) : 0;
}
#else
/* no decoding: every call is its return address's object's */
static uintptr_t call_target(uintptr_t ret, uintptr_t obj_base) {
  (void)ret, (void)obj_base;
  return 0;
}
#endif

static int catalog_id(const char *name) {
  if (name == NULL) return -1;
  int id = ng_fn_id(name);
  if (id < 0 && name[0] == 'p') id = ng_fn_id(name + 1);
  return id;
}

/* What dladdr says of a return address and of the function its call instruction reached: asked
 * before the lock (see lock). */
typedef struct {
  int in_object;                 /* dladdr found the return address's object */
  uintptr_t base;                /* that object's */
  char *path, *sym;              /* its path; the exported symbol the call lies in (malloc'ed) */
  int via;                       /* classify: the catalog function called (a wrapper, another definition) */
  int tail;                      /* classify: a tail call from F, the caller: */
  uintptr_t tail_base;
  char *tail_path, *tail_sym;
} site_facts;

static void facts_free(site_facts *f) {
  free(f->path);
  free(f->sym);
  free(f->tail_path);
  free(f->tail_sym);
}

/* The call instruction before ret, read (no lock held): what it called. */
static void classify_facts(site_facts *f, uintptr_t ret, uintptr_t obj_base) {
  uintptr_t target = call_target(ret, obj_base);
  if (target == 0) return; /* through a pointer, or not read: the return address's object */
  Dl_info fi;
  const ElfW(Sym) *sym = NULL;
  if (dladdr1((void *)target, &fi, (void **)&sym, RTLD_DL_SYMENT) == 0) return;
  const char *fname = fi.dli_saddr == (void *)target ? fi.dli_sname : NULL;
  int id = catalog_id(fname);
  if ((uintptr_t)fi.dli_fbase == ng_self_base || id >= 0) {
    /* a wrapper, or another definition of a catalog function: that function is what was called */
    f->via = id;
    return;
  }
  /* F, called at ret, made the call as a tail call: F is the caller */
  f->tail = 1;
  f->tail_base = (uintptr_t)fi.dli_fbase;
  f->tail_path = strdup(fi.dli_fname != NULL ? fi.dli_fname : "");
  f->tail_sym = fname != NULL ? strdup(fname) : NULL;
}

int ng_addr_symbol(uintptr_t ret, Dl_info *info, const char **sym) {
  const ElfW(Sym) *s = NULL;
  *sym = NULL;
  if (dladdr1((void *)(ret - 1), info, (void **)&s, RTLD_DL_SYMENT) == 0) return 0;
  if (info->dli_sname != NULL && info->dli_saddr != NULL && s != NULL && ret - 1 < (uintptr_t)info->dli_saddr + s->st_size)
    *sym = info->dli_sname;
  return 1;
}

static void site_facts_of(site_facts *f, uintptr_t ret) {
  memset(f, 0, sizeof(*f));
  f->via = -1;
  Dl_info info;
  const char *sym;
  if (!ng_addr_symbol(ret, &info, &sym)) return;
  f->in_object = 1;
  f->base = (uintptr_t)info.dli_fbase;
  f->path = strdup(info.dli_fname != NULL ? info.dli_fname : "");
  f->sym = sym != NULL ? strdup(sym) : NULL;
  if (f->base != ng_self_base) classify_facts(f, ret, f->base);
}

/* A return address seen for the first time (or in the overflow chain): its entry, made under the lock. */
static void sweep_locked(void);
static ng_caller *caller_slow(uintptr_t ret) {
  site_facts f;
  site_facts_of(&f, ret);
  pthread_mutex_lock(&lock);
  locked_pause(0);
  sweep_locked();
  ng_caller_slot *free_slot;
  ng_caller *found = probe(ret, &free_slot);
  for (ng_caller *c = overflow; c != NULL && found == NULL; c = c->next) {
    if (c->ret == ret) found = c;
  }
  if (found != NULL) {
    pthread_mutex_unlock(&lock);
    facts_free(&f);
    return found;
  }
  ng_caller *c = aligned_alloc(64, sizeof(*c));
  if (c == NULL) abort();
  memset(c, 0, sizeof(*c));
  c->ret = ret;
  c->via = -1;
  atomic_store_explicit(&c->fn, -2, NG_RELAXED); /* not known yet */
  if (f.in_object) {
    c->obj = object_at(f.base, f.path);
    c->sym = f.sym;
    f.sym = NULL;
    c->via = f.via;
    if (f.tail) {
      c->obj = object_at(f.tail_base, f.tail_path);
      free(c->sym);
      c->sym = f.tail_sym;
      f.tail_sym = NULL;
    }
  } else {
    /* in no object (a JIT's code: the JVM's code cache, where a JNI method's tail call returns to):
     * the calling library is unknown */
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
  facts_free(&f);
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
/* Whether a definition d of name in im leads back to us: it is the first definition in the global
 * scope (so every plain reference binds to it, and a call that reached this library skipped it:
 * RTLD_NEXT from it or after it), and it is not NCCL's or cudart's own (NCCL's archive defines
 * pncclX at ncclX's address; a library named as NVIDIA's is theirs). */
static int forwarder(const ng_image *im, uintptr_t d, const char *name, int nccl, uintptr_t global) {
  if (ng_is_nvidia_name(base_name(im->name))) return 0;
  if (nccl) {
    char pname[128];
    snprintf(pname, sizeof(pname), "p%s", name);
    if (ng_image_lookup(im, pname) == d) return 0;
  }
  return global == d;
}

/* What the image callbacks below look for. global: dlsym(RTLD_DEFAULT) of the function's name,
 * taken before the walk (a callback must not call dlsym: see inside_self). */
struct want {
  int fn;
  uintptr_t base;     /* the object asked about (own); 0: any */
  const char *needed; /* a dependency's name (deps) */
  const char *prefix; /* a name prefix (by name) */
  int pass;           /* 0: pnccl* and nccl*; 1: pnccl* only (every object) */
  uintptr_t global;
  uintptr_t found;
};

/* fn's definition in im: pnccl* (never a forwarder: this library defines none), then the plain
 * name unless it is a forwarder's (the global scope's definition, `global`). */
static uintptr_t definition_in(const ng_image *im, int fn, int pnccl_only, uintptr_t global) {
  if ((uintptr_t)im->bias == ng_self_base && ng_self_base != 0) return 0;
  const char *name = ng_fn_name[fn];
  if (ng_fn_nccl[fn]) {
    char pname[128];
    snprintf(pname, sizeof(pname), "p%s", name);
    uintptr_t p = ng_image_lookup(im, pname);
    if (p != 0 && !inside_self((void *)p)) return p;
  }
  if (pnccl_only) return 0;
  uintptr_t p = ng_image_lookup(im, name);
  if (p == 0 || inside_self((void *)p) || forwarder(im, p, name, ng_fn_nccl[fn], global)) return 0;
  return p;
}

static int find_own(const ng_image *im, void *data) {
  struct want *w = data;
  if (!ng_image_contains(im, w->base)) return 0;
  w->found = definition_in(im, w->fn, 0, w->global);
  return 1;
}

static int find_needed(const ng_image *im, void *data) {
  struct want *w = data;
  const char *n = im->name[0] != '\0' ? base_name(im->name) : "";
  if (strcmp(n, w->needed) != 0) return 0;
  w->found = definition_in(im, w->fn, 0, w->global);
  return w->found != 0;
}

static int find_by_prefix(const ng_image *im, void *data) {
  struct want *w = data;
  if (strncmp(base_name(im->name), w->prefix, strlen(w->prefix)) != 0) return 0;
  w->found = definition_in(im, w->fn, 0, w->global);
  return w->found != 0;
}

static int find_any(const ng_image *im, void *data) {
  struct want *w = data;
  w->found = definition_in(im, w->fn, w->pass == 1, w->global);
  return w->found != 0;
}

/* The names an object needs (DT_NEEDED), then theirs: the rest of its own lookup scope. */
struct needs {
  uintptr_t base;
  const char *names[32];
  int n;
};
static int collect_needed(const ng_image *im, void *data) {
  struct needs *s = data;
  if (!ng_image_contains(im, s->base)) return 0;
  for (const ElfW(Dyn) *d = im->dyn; d->d_tag != DT_NULL && s->n < 32; d++) {
    if (d->d_tag == DT_NEEDED) s->names[s->n++] = im->strtab + d->d_un.d_val;
  }
  return 1;
}
struct base_of_name {
  const char *name;
  uintptr_t base;
};
static int find_base(const ng_image *im, void *data) {
  struct base_of_name *b = data;
  if (strcmp(base_name(im->name), b->name) != 0) return 0;
  for (int i = 0; i < im->info->dlpi_phnum; i++) {
    if (im->info->dlpi_phdr[i].p_type == PT_LOAD) {
      b->base = im->bias + im->info->dlpi_phdr[i].p_vaddr;
      return 1;
    }
  }
  return 0;
}

static uintptr_t in_dependencies(uintptr_t base, int fn, uintptr_t global) {
  struct needs first = {base, {0}, 0};
  ng_each_image(collect_needed, &first);
  for (int i = 0; i < first.n; i++) {
    struct want w = {fn, 0, first.names[i], NULL, 0, global, 0};
    if (ng_each_image(find_needed, &w) && w.found != 0) return w.found;
  }
  for (int i = 0; i < first.n; i++) {
    struct base_of_name b = {first.names[i], 0};
    if (!ng_each_image(find_base, &b)) continue;
    struct needs second = {b.base, {0}, 0};
    ng_each_image(collect_needed, &second);
    for (int j = 0; j < second.n; j++) {
      struct want w = {fn, 0, second.names[j], NULL, 0, global, 0};
      if (ng_each_image(find_needed, &w) && w.found != 0) return w.found;
    }
  }
  return 0;
}

/* What dlsym finds for fn, asked before the lock (see lock): the next definition after this
 * library in the global scope, and the global scope's first; subs: the linker's count of unloaded
 * objects when it asked (an object loaded since cannot make an answer point at nothing). */
typedef struct {
  void *next;
  uintptr_t global;
  unsigned long long subs;
} dl_found;

static int get_subs(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_subs;
  return 1;
}

/* The linker's count of objects unloaded so far (dl_iterate_phdr: allowed under lock). */
static unsigned long long current_subs(void) {
  unsigned long long subs = 0;
  dl_iterate_phdr(get_subs, &subs);
  return subs;
}

static void dl_found_of(int fn, dl_found *d) {
  const char *name = ng_fn_name[fn];
  d->subs = current_subs();
  void *p = NULL;
  /* 1. after this library in the global scope */
  if (ng_fn_nccl[fn]) {
    char pname[128];
    snprintf(pname, sizeof(pname), "p%s", name);
    p = dlsym(RTLD_NEXT, pname);
  }
  if (p == NULL || inside_self(p)) p = dlsym(RTLD_NEXT, name);
  if (p != NULL && inside_self(p)) p = NULL;
  d->next = p;
  d->global = p == NULL ? (uintptr_t)dlsym(RTLD_DEFAULT, name) : 0;
}

struct loaded {
  uintptr_t p;
  int found;
};
static int find_loaded(const ng_image *im, void *data) {
  struct loaded *l = data;
  l->found = ng_image_contains(im, l->p);
  return l->found;
}

/* Whether address p lies in a loaded object (dl_iterate_phdr: allowed under lock). */
static int is_loaded(uintptr_t p) {
  struct loaded l = {p, 0};
  if (p != 0) ng_each_image(find_loaded, &l);
  return l.found;
}

/* Takes the lock with what dlsym found for fn asked before it, asked again while objects were
 * unloaded meanwhile (a few times; then what it found is kept where it still lies in a loaded object). */
static void lock_with_found(int fn, dl_found *d) {
  dl_found_of(fn, d);
  for (int attempt = 0;; attempt++) {
    pthread_mutex_lock(&lock);
    locked_pause(1);
    sweep_locked(); /* it reads the linker's count: last_subs is now's */
    if (last_subs == d->subs) return;
    if (attempt >= 8) {
      if (!is_loaded((uintptr_t)d->next)) d->next = NULL;
      if (!is_loaded(d->global)) d->global = 0;
      return;
    }
    pthread_mutex_unlock(&lock);
    dl_found_of(fn, d);
  }
}

/* fn's real definition as the object o would reach it; under lock, d found before it. */
static void *resolve_locked(ng_object *o, int fn, const dl_found *d) {
  void *p = NULL;
  /* 0. what dlsym found in the handle it asked, for an object that looked the function up by name */
  const named_fn *nf = o->base != 0 ? named_by(o->base, fn) : NULL;
  if (nf != NULL) {
    atomic_store_explicit(&o->real[fn], (void *)nf->real, NG_RELEASE);
    return (void *)nf->real;
  }
  /* 1. after this library in the global scope */
  p = d->next;
  int known = o != &ng_default_object && o->base != 0 && o->base != ng_self_base;
  uintptr_t global = p == NULL ? d->global : 0;
  /* 2. its own definition; 3. its dependencies' */
  if (p == NULL && known) {
    struct want w = {fn, o->base, NULL, NULL, 0, global, 0};
    ng_each_image(find_own, &w);
    p = (void *)w.found;
    if (p == NULL) p = (void *)in_dependencies(o->base, fn, global);
  }
  /* 4. the loaded NCCL, CUDA runtime or driver by name; 5. any object, pnccl* first */
  if (p == NULL) {
    struct want w = {fn, 0, NULL, ng_fn_nccl[fn] ? "libnccl.so" : ng_fn_driver[fn] ? "libcuda.so" : "libcudart.so", 0, global, 0};
    ng_each_image(find_by_prefix, &w);
    p = (void *)w.found;
  }
  for (int pass = 1; pass >= 0 && p == NULL; pass--) {
    struct want w = {fn, 0, NULL, NULL, pass, global, 0};
    ng_each_image(find_any, &w);
    p = (void *)w.found;
  }
  if (p != NULL) atomic_store_explicit(&o->real[fn], p, NG_RELEASE);
  return p;
}

void *ng_resolve(ng_object *o, int fn) {
  dl_found d;
  lock_with_found(fn, &d);
  void *p = atomic_load_explicit(&o->real[fn], NG_ACQUIRE);
  if (p == NULL) p = resolve_locked(o, fn, &d);
  pthread_mutex_unlock(&lock);
  return p;
}

struct refs {
  uintptr_t base;
  int fn;
  int found;
};
static int find_refs(const ng_image *im, void *data) {
  struct refs *r = data;
  if (!ng_image_contains(im, r->base)) return 0;
  r->found = ng_image_references(im, r->fn);
  return 1;
}

/* A call site whose call instruction told nothing (through a pointer) in an object that does not
 * name the function: a tail call from a function it called that way. Who made it is not known, so
 * the calling library is unknown, never guessed; NVIDIA's own objects keep their calls. Under lock,
 * at a site's first function, before anything of it reaches Java. */
static void check_tail_call(ng_caller *c, int fn) {
  if (atomic_load_explicit(&c->fn, NG_RELAXED) != -2 || c->via >= 0 || c->obj->nvidia || c->obj->base == 0) return;
  if (named_by(c->obj->base, fn) != NULL) return; /* it looked fn up by name: its own call */
  struct refs r = {c->obj->base, fn, 1};
  ng_each_image(find_refs, &r);
  if (r.found) return;
  c->obj = object_at(0, "");
  free(c->sym);
  c->sym = NULL;
  uint32_t gen = (atomic_load_explicit(&ng_w.state, NG_ACQUIRE) >> 1);
  atomic_store_explicit(&c->decision, gen << 1 | (uint32_t)decide(c), NG_RELAXED);
}

void *ng_real_slow(ng_caller *c, int fn) {
  /* a site that calls several functions through one pointer (fn -1): each one's definition is the
   * one its object reaches, cached on the object and read as a single function's is, without the
   * lock and the linker's lookups (an unload empties the cache: ng_gate_slow sweeps before this) */
  if (atomic_load_explicit(&c->fn, NG_RELAXED) == -1) {
    void *p = atomic_load_explicit(&c->obj->real[fn], NG_ACQUIRE);
    if (p != NULL) return p;
  }
  dl_found d;
  lock_with_found(fn, &d);
  check_tail_call(c, fn);
  void *p = atomic_load_explicit(&c->obj->real[fn], NG_ACQUIRE);
  if (p == NULL) p = resolve_locked(c->obj, fn, &d);
  if (p != NULL) {
    int was = -2;
    if (atomic_compare_exchange_strong_explicit(&c->fn, &was, fn, NG_RELAXED, NG_RELAXED)) {
      atomic_store_explicit(&c->real, p, NG_RELEASE);
    } else if (was != fn && was != -1) {
      atomic_store_explicit(&c->fn, -1, NG_RELAXED); /* called through a pointer: several functions */
    }
  }
  pthread_mutex_unlock(&lock);
  return p;
}

/* ---------------------------------------------------------------- unloads
 * What an unloaded object leaves is dropped on the next slow path (every gate is closed by then):
 * its callers leave the table (a library loaded again at the same address is a new caller), and
 * every cached real function is looked up again. Callers are never freed: Java holds their sites. */

static _Atomic(void *) get_device NG_READ_MOSTLY;
static _Atomic(void *) get_count;

struct object_check {
  uintptr_t base;
  const char *path;
  int same;
};
static int find_object(const ng_image *im, void *data) {
  struct object_check *c = data;
  if (!ng_image_contains(im, c->base)) return 0;
  /* the main program has no name in the linker's list (dladdr gave it one): it never unloads */
  c->same = im->name == NULL || im->name[0] == '\0' || strcmp(im->name, c->path) == 0;
  return 1;
}

/* Whether the object loaded at base with that path is still there (dl_iterate_phdr, not dladdr: under lock). */
static int still_loaded(uintptr_t base, const char *path) {
  struct object_check c = {base, path, 0};
  ng_each_image(find_object, &c);
  return c.same;
}

static int object_gone(ng_object *o) {
  if (o->base == 0 || o == &ng_default_object) return 0;
  return !still_loaded(o->base, o->path);
}

/* The site's function is looked up again; its old real stays where a hot path may still read it
 * behind a gate it saw open (never NULL: a wrapper calls what it reads). */
static void forget_real(ng_caller *c) {
  atomic_store_explicit(&c->gate, 0, NG_RELAXED);
  atomic_store_explicit(&c->fn, -2, NG_RELEASE);
}

static void sweep_locked(void) {
  unsigned long long subs = current_subs();
  int pending = atomic_exchange_explicit(&unload_pending, 0, NG_ACQUIRE);
  if (!pending && subs == last_subs) return;
  last_subs = subs;
  /* every gate closes first: from here on each call takes a slow path, which waits for this lock */
  atomic_fetch_add_explicit(&ng_w.state, 2, NG_RELEASE);
  ng_gate_refresh();
  for (ng_object **op = &objects; *op != NULL;) {
    ng_object *o = *op;
    for (int fn = 0; fn < NG_FN_COUNT; fn++) atomic_store_explicit(&o->real[fn], NULL, NG_RELAXED);
    if (object_gone(o)) {
      o->gone = 1;
      *op = o->next; /* kept in memory: callers point at it */
    } else {
      op = &o->next;
    }
  }
  for (int fn = 0; fn < NG_FN_COUNT; fn++) atomic_store_explicit(&ng_default_object.real[fn], NULL, NG_RELAXED);
  for (uint32_t i = 0; i < NG_CALLERS; i++) {
    uintptr_t k = atomic_load_explicit(&ng_callers[i].ret, NG_RELAXED);
    if (k == 0 || k == TOMB) continue;
    ng_caller *c = atomic_load_explicit(&ng_callers[i].caller, NG_RELAXED);
    forget_real(c);
    if (c->obj->gone) atomic_store_explicit(&ng_callers[i].ret, TOMB, NG_RELEASE);
  }
  for (ng_caller **cp = &overflow; *cp != NULL;) {
    forget_real(*cp);
    if ((*cp)->obj->gone) *cp = (*cp)->next;
    else cp = &(*cp)->next;
  }
  atomic_store_explicit(&get_device, NULL, NG_RELAXED);
  atomic_store_explicit(&get_count, NULL, NG_RELAXED);
  for (named_fn **np = &named_fns; *np != NULL;) {
    named_fn *n = *np;
    if (!still_loaded(n->base, n->path) || !is_loaded(n->real)) {
      *np = n->next;
      free(n->path);
      free(n);
    } else {
      np = &n->next;
    }
  }
}

void ng_caller_named(uintptr_t at, int fn, uintptr_t real) {
  Dl_info info;
  if (fn < 0 || real == 0 || dladdr((void *)at, &info) == 0 || info.dli_fbase == NULL) return;
  uintptr_t base = (uintptr_t)info.dli_fbase;
  pthread_mutex_lock(&lock);
  sweep_locked();
  named_fn *n = (named_fn *)named_by(base, fn);
  if (n == NULL && (n = calloc(1, sizeof(*n))) != NULL) {
    n->path = strdup(info.dli_fname != NULL ? info.dli_fname : "");
    if (n->path == NULL) {
      free(n);
      n = NULL;
    } else {
      n->base = base;
      n->fn = fn;
      n->next = named_fns;
      named_fns = n;
    }
  }
  ng_object *o = ng_fn_driver[fn] ? object_listed(base) : NULL;
  if (o != NULL) atomic_store_explicit(&o->driver, 1, NG_RELAXED);
  if (n != NULL && n->real != real) {
    n->real = real;
    /* the sites of the object that forward fn elsewhere look it up again (every gate closes now,
     * the next slow path sweeps) */
    on_unload(NULL);
  }
  pthread_mutex_unlock(&lock);
}

/* the callers ng_caller_at_frame made: a list under lock, bounded */
static ng_caller *frame_callers;
static int nframe_callers;

ng_caller *ng_caller_at_frame(ng_caller *c, uintptr_t pc) {
  /* the frame's exported symbol, asked before the lock (see lock) */
  Dl_info info;
  const char *sym;
  char *fsym = ng_addr_symbol(pc, &info, &sym) && sym != NULL ? strdup(sym) : NULL;
  pthread_mutex_lock(&lock);
  for (ng_caller *f = frame_callers; f != NULL; f = f->next) {
    if (f->ret == pc && f->obj == c->obj) {
      pthread_mutex_unlock(&lock);
      free(fsym);
      return f;
    }
  }
  ng_caller *f = nframe_callers < 4096 ? aligned_alloc(64, sizeof(*f)) : NULL;
  if (f == NULL) {
    pthread_mutex_unlock(&lock);
    free(fsym);
    return c;
  }
  memset(f, 0, sizeof(*f));
  f->ret = pc;
  f->obj = c->obj;
  f->via = -1;
  atomic_store_explicit(&f->fn, -2, NG_RELAXED);
  atomic_store_explicit(&f->gate, 1, NG_RELAXED);
  f->sym = fsym;
  f->site.caller = f;
  atomic_store_explicit(&f->hint[0], ng_hint_none, NG_RELAXED);
  atomic_store_explicit(&f->hint[1], ng_hint_none, NG_RELAXED);
  atomic_store_explicit(&f->decision, atomic_load_explicit(&c->decision, NG_RELAXED), NG_RELAXED);
  f->next = frame_callers;
  frame_callers = f;
  nframe_callers++;
  pthread_mutex_unlock(&lock);
  return f;
}

int ng_object_uses_driver(ng_object *o) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (const named_fn *n = named_fns; n != NULL && !found && o->base != 0; n = n->next) found = n->base == o->base && ng_fn_driver[n->fn];
  pthread_mutex_unlock(&lock);
  return found;
}

struct ng_gate_state ng_gate NG_READ_MOSTLY;

void ng_gate_refresh(void) {
  /* two changes at once (a generation and dying): each writer goes on until the word it wrote is
   * that of the state it sees after, so the last state is the one left */
  uint32_t s;
  do {
    s = atomic_load_explicit(&ng_w.state, NG_ACQUIRE);
    atomic_store_explicit(&ng_gate.word, (uint64_t)s << 9, NG_RELEASE);
  } while (atomic_load_explicit(&ng_w.state, NG_ACQUIRE) != s);
}

static int gate_may_open(ng_caller *c, int fn, void *real) {
  uint32_t d = atomic_load_explicit(&c->decision, NG_RELAXED);
  uint32_t s = atomic_load_explicit(&ng_w.state, NG_ACQUIRE);
  /* the hot paths store a record whole: where that cannot be (no AVX), every call takes the generic path */
  return atomic_load_explicit(&c->fn, NG_RELAXED) == fn && atomic_load_explicit(&c->real, NG_ACQUIRE) == real &&
         !(s & NG_DYING) && (d >> 1) == (s >> 1) && (ng_w.rec_whole || !NG_REC_WHOLE_POSSIBLE) && !c->obj->gone;
}

ng_gate_result ng_gate_slow(ng_caller *c, int fn) {
  if (NG_UNLIKELY(atomic_load_explicit(&unload_pending, NG_RELAXED) || c->obj->gone)) {
    pthread_mutex_lock(&lock);
    sweep_locked();
    pthread_mutex_unlock(&lock);
    if (c->obj->gone) c = ng_caller_find(c->ret);
  }
  void *real = ng_real(c, fn);
  if (real == NULL) return (ng_gate_result){NULL, 0, c};
  /* a call made by another catalog function's definition (its tail call) is that library's own */
  uint64_t track = (uint64_t)ng_tracks(c) && !(c->via >= 0 && c->via != fn);
  /* the gate opens for this call site's one function, under the state its decision was made in;
   * checked again under the lock, so that no unload's sweep comes between the checks and the store */
  if (gate_may_open(c, fn, real)) {
    pthread_mutex_lock(&lock);
    uint32_t s = atomic_load_explicit(&ng_w.state, NG_ACQUIRE);
    if (gate_may_open(c, fn, real))
      atomic_store_explicit(&c->gate, (uint64_t)s << 9 | (uint64_t)fn << 1 | (uint64_t)!track, NG_RELEASE);
    pthread_mutex_unlock(&lock);
  }
  return (ng_gate_result){real, track, c};
}

void *ng_real_default(int fn) {
  void *p = atomic_load_explicit(&ng_default_object.real[fn], NG_ACQUIRE);
  return p != NULL ? p : ng_resolve(&ng_default_object, fn);
}

struct named {
  const char *name;
  uintptr_t found;
};
static int find_cudart_named(const ng_image *im, void *data) {
  struct named *n = data;
  if (strncmp(base_name(im->name), "libcudart.so", 12) != 0) return 0;
  n->found = ng_image_lookup(im, n->name);
  return n->found != 0;
}

/* The runtime's function name (a libcudart.so's, else RTLD_NEXT's where that lies in a loaded
 * object), cached in *slot; NULL where none is loaded. */
static void *cudart_named(_Atomic(void *) *slot, const char *name) {
  void *p = atomic_load_explicit(slot, NG_ACQUIRE);
  if (p != NULL) return p;
  /* dlsym before the lock (see lock); kept only where it still lies in a loaded object */
  void *next = dlsym(RTLD_NEXT, name);
  pthread_mutex_lock(&lock);
  sweep_locked();
  struct named n = {name, 0};
  ng_each_image(find_cudart_named, &n);
  p = (void *)n.found;
  if (p == NULL && is_loaded((uintptr_t)next)) p = next;
  if (p != NULL && inside_self(p)) p = NULL;
  if (p != NULL) atomic_store_explicit(slot, p, NG_RELEASE);
  pthread_mutex_unlock(&lock);
  return p;
}

int ng_get_device(int *device) {
  int (*f)(int *) = (int (*)(int *))cudart_named(&get_device, "cudaGetDevice");
  int status = f != NULL ? f(device) : -1;
  if (status != 0) *device = 0;
  return status;
}

int ng_current_device(void) {
  int device;
  ng_get_device(&device);
  return device;
}

int ng_device_count(void) {
  int (*count)(int *) = (int (*)(int *))cudart_named(&get_count, "cudaGetDeviceCount");
  int n = 0;
  return count != NULL && count(&n) == 0 ? n : -1;
}

static atomic_int missing_logged[NG_FN_COUNT];

int ng_missing(int fn) {
  atomic_fetch_add_explicit(&ng_missing_real, 1, NG_RELAXED);
  ng_log_once(&missing_logged[fn], "%s was called but no loaded object defines it; the call fails as an "
              "uninitialized library would", ng_fn_name[fn]);
  return ng_fn_nccl[fn] ? ncclSystemError : cudaErrorInitializationError;
}

void ng_mark_dying(void) {
  atomic_fetch_or(&ng_w.state, NG_DYING);
  ng_gate_refresh();
}

/* A fork's child has the forking thread alone, and a JVM there has no VM thread: whatever Java
 * work an upcall asks for (an allocation that needs a safepoint) never ends. The child only
 * forwards (the dying bit), and the lock another thread of the parent may have held is made
 * anew (not taken in a prepare handler: a fork from inside the dynamic linker, a constructor's,
 * would wait on it while its holder waits on the linker). */
static void forked_child(void) {
  pthread_mutex_init(&lock, NULL);
  ng_mark_dying();
}

void ng_caller_init(void) { pthread_atfork(NULL, NULL, forked_child); }

char *ng_caller_library(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  /* "": in no object (a JIT's code): the calling library is unknown, never guessed */
  return s != NULL && s->caller->obj->name[0] != '\0' ? strdup(s->caller->obj->name) : NULL;
}

char *ng_caller_symbol(int64_t caller) {
  ng_site *s = (ng_site *)(uintptr_t)caller;
  return s != NULL && s->caller->sym != NULL ? strdup(s->caller->sym) : NULL;
}
