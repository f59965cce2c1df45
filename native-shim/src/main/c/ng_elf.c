/* Loaded objects read in memory (ng_elf.h). */
#include <link.h>
#include <string.h>

#include "ng.h"
#include "ng_elf.h"

/* An object's dynamic symbols are read where the dynamic linker mapped them (dl_iterate_phdr,
 * PT_DYNAMIC): no dlopen, so no reference that would keep an object the application dlcloses. */

/* glibc relocates the d_ptr entries it uses in place; a vDSO's or a read-only .dynamic's are offsets */
static uintptr_t dyn_addr(const ng_image *im, ElfW(Addr) v) { return v < im->bias ? v + im->bias : v; }

int ng_image_of(const struct dl_phdr_info *info, ng_image *im) {
  memset(im, 0, sizeof(*im));
  im->bias = info->dlpi_addr;
  im->name = info->dlpi_name != NULL ? info->dlpi_name : "";
  im->info = info;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) im->dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  }
  if (im->dyn == NULL) return 0;
  for (const ElfW(Dyn) *d = im->dyn; d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_SYMTAB: im->symtab = (const ElfW(Sym) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_STRTAB: im->strtab = (const char *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_GNU_HASH: im->gnu_hash = (const uint32_t *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_HASH: im->hash = (const ElfW(Word) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_VERSYM: im->versym = (const ElfW(Half) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_JMPREL: im->jmprel = (const ElfW(Rela) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_PLTRELSZ: im->jmprel_size = d->d_un.d_val; break;
    case DT_RELA: im->rela = (const ElfW(Rela) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_RELASZ: im->rela_size = d->d_un.d_val; break;
    case DT_VERNEED: im->verneed = (const ElfW(Verneed) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_VERNEEDNUM: im->verneed_num = d->d_un.d_val; break;
    case DT_VERDEF: im->verdef = (const ElfW(Verdef) *)dyn_addr(im, d->d_un.d_ptr); break;
    case DT_VERDEFNUM: im->verdef_num = d->d_un.d_val; break;
    case DT_RPATH: im->rpath = 1; break;
    case DT_RUNPATH: im->runpath = 1; break;
    default: break;
    }
  }
  return im->symtab != NULL && im->strtab != NULL && (im->gnu_hash != NULL || im->hash != NULL);
}

int ng_image_contains(const ng_image *im, uintptr_t p) {
  const struct dl_phdr_info *info = im->info;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && p >= start && p < start + ph->p_memsz) return 1;
  }
  return 0;
}

/* Whether symbol i carries the version node named version (its definition's first name). */
static int has_version(const ng_image *im, uint32_t i, const char *version) {
  if (im->versym == NULL || im->verdef == NULL) return 0;
  ElfW(Half) ndx = im->versym[i] & 0x7fff;
  const ElfW(Verdef) *vd = im->verdef;
  for (size_t k = 0; k < im->verdef_num; k++) {
    if (vd->vd_ndx == ndx) {
      const ElfW(Verdaux) *aux = (const ElfW(Verdaux) *)((const char *)vd + vd->vd_aux);
      return strcmp(im->strtab + aux->vda_name, version) == 0;
    }
    if (vd->vd_next == 0) break;
    vd = (const ElfW(Verdef) *)((const char *)vd + vd->vd_next);
  }
  return 0;
}

/* Whether sym is a function defined there (of that version, if one is asked); the default version
 * wins over a hidden one. */
static int better(const ng_image *im, uint32_t i, const ElfW(Sym) *best, int best_hidden, const char *version) {
  const ElfW(Sym) *sym = &im->symtab[i];
  int type = ELF64_ST_TYPE(sym->st_info), bind = ELF64_ST_BIND(sym->st_info);
  if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 || (type != STT_FUNC && type != STT_NOTYPE) ||
      (bind != STB_GLOBAL && bind != STB_WEAK))
    return 0;
  if (version != NULL && !has_version(im, i, version)) return 0;
  int hidden = im->versym != NULL && (im->versym[i] & 0x8000);
  return best == NULL || (best_hidden && !hidden);
}

/* The address of the function an object defines under that name itself (not its dependencies), or 0. */
uintptr_t ng_image_lookup_version(const ng_image *im, const char *name, const char *version) {
  const ElfW(Sym) *best = NULL;
  int best_hidden = 0;
  if (im->gnu_hash != NULL) {
    const uint32_t *gh = im->gnu_hash;
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c != '\0'; c++) h = h * 33 + *c;
    if (nbuckets == 0) return 0;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return 0;
    for (;; i++) {
      uint32_t h2 = chain[i - symoffset];
      if ((h | 1) == (h2 | 1) && strcmp(im->strtab + im->symtab[i].st_name, name) == 0 && better(im, i, best, best_hidden, version)) {
        best = &im->symtab[i];
        best_hidden = im->versym != NULL && (im->versym[i] & 0x8000);
      }
      if (h2 & 1) break;
    }
  } else {
    uint32_t h = 0;
    for (const unsigned char *c = (const unsigned char *)name; *c != '\0'; c++) {
      h = (h << 4) + *c;
      uint32_t g = h & 0xf0000000u;
      if (g != 0) h ^= g >> 24;
      h &= ~g;
    }
    const ElfW(Word) *hash = im->hash;
    ElfW(Word) nbucket = hash[0];
    const ElfW(Word) *bucket = hash + 2, *chain = bucket + nbucket;
    if (nbucket == 0) return 0;
    for (ElfW(Word) i = bucket[h % nbucket]; i != STN_UNDEF; i = chain[i]) {
      if (strcmp(im->strtab + im->symtab[i].st_name, name) == 0 && better(im, i, best, best_hidden, version)) {
        best = &im->symtab[i];
        best_hidden = im->versym != NULL && (im->versym[i] & 0x8000);
      }
    }
  }
  return best != NULL ? im->bias + best->st_value : 0;
}

uintptr_t ng_image_lookup(const ng_image *im, const char *name) { return ng_image_lookup_version(im, name, NULL); }

/* Whether an object names fn in its dynamic symbols: defines it, or imports it (an import is
 * before the GNU hash's first hashed symbol; with DT_HASH, anywhere). */
int ng_image_references(const ng_image *im, int fn) {
  const char *name = ng_fn_name[fn];
  if (ng_image_lookup(im, name) != 0) return 1;
  uint32_t n = 0;
  if (im->gnu_hash != NULL) n = im->gnu_hash[1];
  else if (im->hash != NULL) n = im->hash[1];
  for (uint32_t i = 1; i < n; i++) {
    const char *s = im->strtab + im->symtab[i].st_name;
    if (s[0] == name[0] && strcmp(s, name) == 0) return 1;
  }
  return 0;
}

/* Runs f on every loaded object's ng_image (this library's too) until it answers non-zero. */
struct each {
  ng_image_fn f;
  void *data;
};
static int each_cb(struct dl_phdr_info *info, size_t size, void *p) {
  (void)size;
  struct each *e = p;
  ng_image im;
  if (!ng_image_of(info, &im)) return 0;
  return e->f(&im, e->data);
}
int ng_each_image(ng_image_fn f, void *data) {
  struct each e = {f, data};
  return dl_iterate_phdr(each_cb, &e);
}