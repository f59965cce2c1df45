/* The live-handle registry and the exit report (NCCLEMU_REPORT). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

#define NBUCKETS 4096

struct live {
  struct live *next;
  void *handle;
  enum emu_kind kind;
  struct emu_live_info info;
  uint64_t seq; /* creation order, for a stable report */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct live *buckets[NBUCKETS]; /* guarded by reg_mu */
static uint64_t reg_seq;               /* guarded by reg_mu */

static size_t bucket_of(const void *h) {
  uint64_t x = (uint64_t)(uintptr_t)h;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)(x & (NBUCKETS - 1));
}

static struct live **find_locked(void *h, enum emu_kind kind) {
  struct live **pp = &buckets[bucket_of(h)];
  while (*pp && !((*pp)->handle == h && (*pp)->kind == kind))
    pp = &(*pp)->next;
  return pp;
}

void emu_rt_live_add(void *handle, enum emu_kind kind, const struct emu_live_info *info) {
  struct live *e = calloc(1, sizeof(*e));
  if (!e)
    abort(); /* cannot track: better to stop than to report a live handle as foreign */
  e->handle = handle;
  e->kind = kind;
  if (info)
    e->info = *info;
  pthread_mutex_lock(&reg_mu);
  e->seq = ++reg_seq;
  size_t b = bucket_of(handle);
  e->next = buckets[b];
  buckets[b] = e;
  pthread_mutex_unlock(&reg_mu);
}

bool emu_rt_live_acquire(void *handle, enum emu_kind kind) {
  if (!handle)
    return false;
  pthread_mutex_lock(&reg_mu);
  bool live = *find_locked(handle, kind) != NULL;
  /* registered objects hold their handle reference, so the object is valid here */
  if (live)
    emu_obj_ref((struct emu_obj *)handle);
  pthread_mutex_unlock(&reg_mu);
  return live;
}

bool emu_rt_live_remove(void *handle, enum emu_kind kind, struct emu_live_info *info) {
  if (!handle)
    return false;
  pthread_mutex_lock(&reg_mu);
  struct live **pp = find_locked(handle, kind);
  struct live *e = *pp;
  if (e)
    *pp = e->next;
  pthread_mutex_unlock(&reg_mu);
  if (!e)
    return false;
  if (info)
    *info = e->info;
  free(e);
  return true;
}

void emu_rt_live_update(void *handle, enum emu_kind kind, const struct emu_live_info *info) {
  pthread_mutex_lock(&reg_mu);
  struct live *e = *find_locked(handle, kind);
  if (e)
    e->info = *info;
  pthread_mutex_unlock(&reg_mu);
}

/* ---------------------------------------------------------------- exit report */

static int by_kind_then_seq(const void *a, const void *b) {
  const struct live *x = *(struct live *const *)a, *y = *(struct live *const *)b;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* NCCLEMU_REPORT with %p replaced by the pid, so that several processes can share one setting. */
static bool report_path(char *out, size_t size) {
  const char *tmpl = getenv("NCCLEMU_REPORT");
  if (!tmpl || !*tmpl)
    return false;
  size_t n = 0;
  for (const char *p = tmpl; *p && n + 24 < size; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      n += (size_t)snprintf(out + n, size - n, "%d", (int)getpid());
      p++;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
  return true;
}

static void write_line(FILE *f, const struct live *e) {
  switch (e->kind) {
  case EMU_COMM:
    fprintf(f, "comm %p rank %d nranks %d device %d commId 0x%llx%s\n", e->handle, e->info.rank,
            e->info.nranks, e->info.device, (unsigned long long)e->info.comm_id,
            e->info.flags & EMU_LIVE_REVOKED ? " revoked" : "");
    break;
  case EMU_STREAM:
    fprintf(f, "stream %p device %d pending %llu\n", e->handle, e->info.device,
            (unsigned long long)emu_stream_pending(e->handle));
    break;
  case EMU_EVENT:
    fprintf(f, "event %p device %d pending %d\n", e->handle, e->info.device,
            emu_event_pending(e->handle) ? 1 : 0);
    break;
  case EMU_NCCLMEM:
    fprintf(f, "memory %p device %d bytes %zu\n", e->handle, e->info.device, e->info.bytes);
    break;
  case EMU_REG:
    fprintf(f, "registration %p comm %p buff %p bytes %zu refs %d\n", e->handle, e->info.comm,
            e->info.buff, e->info.bytes, e->info.refs);
    break;
  case EMU_WINDOW:
    fprintf(f, "window %p comm %p buff %p bytes %zu flags %d\n", e->handle, e->info.comm,
            e->info.buff, e->info.bytes, e->info.flags);
    break;
  case EMU_DEVCOMM:
    fprintf(f, "devcomm %p comm %p rank %d\n", e->handle, e->info.comm, e->info.rank);
    break;
  default:
    break;
  }
}

/* Runs at process exit, after the application's atexit handlers. Workers may still be running or
 * blocked for good: the report never waits for them, and gives up on a registry held too long. */
__attribute__((destructor)) static void write_exit_report(void) {
  char path[4096], tmp[4200];
  if (!report_path(path, sizeof(path)))
    return;
  snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "NCCLEMU: cannot write report %s: %s\n", path, strerror(errno));
    return;
  }
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  if (pthread_mutex_timedlock(&reg_mu, &deadline) != 0) {
    fprintf(f, "# registry busy at exit: report incomplete\n");
    fclose(f);
    rename(tmp, path);
    return;
  }
  size_t n = 0, cap = 64;
  struct live **all = malloc(cap * sizeof(*all));
  for (size_t b = 0; all && b < NBUCKETS; b++)
    for (struct live *e = buckets[b]; e; e = e->next) {
      if (e->kind == EMU_ALLOC || e->kind == EMU_HOSTALLOC)
        continue; /* cudaMalloc'ed memory is not listed */
      if (n == cap) {
        struct live **grown = realloc(all, 2 * cap * sizeof(*all));
        if (!grown)
          break;
        all = grown;
        cap *= 2;
      }
      all[n++] = e;
    }
  if (all) {
    qsort(all, n, sizeof(*all), by_kind_then_seq);
    for (size_t i = 0; i < n; i++)
      write_line(f, all[i]);
    free(all);
  }
  pthread_mutex_unlock(&reg_mu);
  fclose(f);
  rename(tmp, path);
}
