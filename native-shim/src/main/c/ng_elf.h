/* Loaded objects read in memory, no handles (ng_elf.c): their dynamic symbols, relocations and
 * version needs where the dynamic linker mapped them (dl_iterate_phdr, PT_DYNAMIC). */
#ifndef NG_ELF_H
#define NG_ELF_H

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

typedef struct {
  uintptr_t bias;
  const char *name;
  const struct dl_phdr_info *info;
  const ElfW(Sym) *symtab;
  const char *strtab;
  const uint32_t *gnu_hash;
  const ElfW(Word) *hash;
  const ElfW(Half) *versym;
  const ElfW(Dyn) *dyn;
  /* the import relocations (DT_JMPREL, DT_RELA; RELA is what x86-64 and aarch64 use) and the
   * version needs (DT_VERNEED) of ng_patch.c; rpath: whether it has DT_RPATH */
  const ElfW(Rela) *jmprel, *rela;
  size_t jmprel_size, rela_size;
  const ElfW(Verneed) *verneed;
  size_t verneed_num;
  const ElfW(Verdef) *verdef;
  size_t verdef_num;
  int rpath, runpath;
} ng_image;

/* Reads an object's dynamic section; 0 if it has no symbol table or hash to look names up in. */
int ng_image_of(const struct dl_phdr_info *info, ng_image *im);
/* Whether p lies in one of its loaded segments. */
int ng_image_contains(const ng_image *im, uintptr_t p);
/* The address of the function an object defines under that name itself (not its dependencies), or 0. */
uintptr_t ng_image_lookup(const ng_image *im, const char *name);
/* The same, of that version (dlvsym's), or 0. */
uintptr_t ng_image_lookup_version(const ng_image *im, const char *name, const char *version);
/* Whether an object names catalog function fn in its dynamic symbols (defines or imports it). */
int ng_image_references(const ng_image *im, int fn);
/* Runs f on every loaded object's image (this library's too) until it answers non-zero, inside
 * dl_iterate_phdr: no object is unmapped meanwhile, and f makes no dl* call. */
typedef int (*ng_image_fn)(const ng_image *im, void *data);
int ng_each_image(ng_image_fn f, void *data);

#pragma GCC visibility pop

#endif
