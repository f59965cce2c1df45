/* What the hot paths do differently on x86-64 and aarch64: a spinning thread's pause, and an
 * event's record as one 16-byte store and load (ng_rec_store in ng_slots.h), with whether this CPU
 * makes that single-copy atomic. docs/design.md, "Memory ordering", says what else was checked. */
#ifndef NG_ARCH_H
#define NG_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
/* FEAT_LSE2 (Linux 5.15 reports it): LDP/STP of two 64-bit registers single-copy atomic when the
 * pair is 16-byte aligned (ARM DDI 0487, B2.2.1); named here, older headers lack it */
#define NG_HWCAP_USCAT (1ul << 25)
#endif

/* A 16-byte word, as the asm below names its memory operand. */
typedef struct {
  uint64_t w[2];
} __attribute__((aligned(16))) ng_arch_pair;

static inline void ng_pause(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#else
  __asm__ volatile("" ::: "memory");
#endif
}

/* Whether a 16-byte aligned store and load are single-copy atomic on this CPU: AVX on x86-64
 * (Intel SDM vol. 3A 9.1.1, AMD APM vol. 2 7.3.2), FEAT_LSE2 on aarch64 (Grace reports uscat). */
static inline int ng_arch_pair_atomic(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx");
#elif defined(__aarch64__)
  return (getauxval(AT_HWCAP) & NG_HWCAP_USCAT) != 0;
#else
  return 0;
#endif
}

#if defined(__x86_64__) || defined(__aarch64__)
/* The store, a release: on x86-64 a plain store is one (TSO), in its VEX form, which never pays
 * for a switch from the AVX state a real call left; on aarch64 a full barrier before STP, as
 * libatomic's 16-byte release store on LSE2. */
static inline void ng_arch_store_pair(void *p, int64_t lo, uint64_t hi) {
#if defined(__x86_64__)
  __asm__ volatile("vmovq %1, %%xmm15\n\tvpinsrq $1, %2, %%xmm15, %%xmm15\n\tvmovdqa %%xmm15, %0"
                   : "=m"(*(ng_arch_pair *)p)
                   : "r"(lo), "r"(hi)
                   : "xmm15", "memory");
#else
  __asm__ volatile("dmb ish\n\tstp %1, %2, %0" : "=Q"(*(ng_arch_pair *)p) : "r"(lo), "r"(hi) : "memory");
#endif
}

/* The load, an acquire: a plain load on x86-64; LDP then a load barrier on aarch64. */
static inline ng_arch_pair ng_arch_load_pair(void *p) {
  ng_arch_pair r;
#if defined(__x86_64__)
  __m128i v;
  __asm__ volatile("movdqa %1, %0" : "=x"(v) : "m"(*(ng_arch_pair *)p) : "memory");
  r.w[0] = (uint64_t)_mm_cvtsi128_si64(v);
  r.w[1] = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
#else
  __asm__ volatile("ldp %0, %1, %2\n\tdmb ishld" : "=&r"(r.w[0]), "=&r"(r.w[1]) : "Q"(*(ng_arch_pair *)p) : "memory");
#endif
  return r;
}
#endif

#endif
