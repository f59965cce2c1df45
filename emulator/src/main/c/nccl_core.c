/* What every NCCL call leans on: warnings in NCCL's format, versions and error strings, unique
 * ids, and the life of communicators and of the cliques their ranks share. */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include "emu.h"

static __thread char last_error[1024]; /* per thread: a caller reads it after its own failure */

/* One line, one write(2), so that lines of concurrent ranks never interleave:
 *   host:pid:tid [device] NCCL WARN message */
static void warn_line(int device, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  host[strcspn(host, ".")] = '\0';
  char line[1400];
  int n = snprintf(line, sizeof(line), "%s:%d:%d [%d] NCCL WARN %s\n", host, (int)getpid(),
                   (int)gettid(), device, last_error);
  if (n > (int)sizeof(line) - 1) {
    n = (int)sizeof(line) - 1;
    line[n - 1] = '\n';
  }
  ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
  (void)ignored;
}

/* ---------------------------------------------------------------- INFO lines (NCCL_DEBUG) */

/* NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE, read at the first line and again after
 * ncclResetDebugInit. */
static pthread_mutex_t debug_mu = PTHREAD_MUTEX_INITIALIZER;
static bool debug_read;          /* guarded by debug_mu, as the three below */
static int debug_level;          /* ncclDebugLogLevel */
static unsigned long debug_mask; /* subsystems */
static int debug_fd = STDOUT_FILENO;

static const struct {
  const char *name;
  unsigned long bit;
} subsystems[] = {{"INIT", NCCL_INIT},   {"COLL", NCCL_COLL},     {"P2P", NCCL_P2P},
                  {"SHM", NCCL_SHM},     {"NET", NCCL_NET},       {"GRAPH", NCCL_GRAPH},
                  {"TUNING", NCCL_TUNING}, {"ENV", NCCL_ENV},     {"ALLOC", NCCL_ALLOC},
                  {"CALL", NCCL_CALL},   {"PROXY", NCCL_PROXY},   {"NVLS", NCCL_NVLS},
                  {"BOOTSTRAP", NCCL_BOOTSTRAP}, {"REG", NCCL_REG}, {"PROFILE", NCCL_PROFILE},
                  {"RAS", NCCL_RAS},     {"ALL", (unsigned long)NCCL_ALL}};

static void debug_read_locked(void) {
  if (debug_read)
    return;
  debug_read = true;
  const char *level = getenv("NCCL_DEBUG");
  debug_level = NCCL_LOG_NONE;
  if (level) {
    static const char *names[] = {"NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
    for (int i = 1; i < 6; i++)
      if (strcasecmp(level, names[i]) == 0)
        debug_level = i;
  }
  /* NCCL's default subsystems */
  debug_mask = NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV;
  const char *subsys = getenv("NCCL_DEBUG_SUBSYS");
  if (subsys) {
    bool invert = subsys[0] == '^';
    debug_mask = invert ? ~0UL : 0UL;
    char list[256];
    snprintf(list, sizeof(list), "%s", subsys + (invert ? 1 : 0));
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save))
      for (size_t i = 0; i < sizeof(subsystems) / sizeof(subsystems[0]); i++)
        if (strcasecmp(item, subsystems[i].name) == 0)
          debug_mask = invert ? debug_mask & ~subsystems[i].bit : debug_mask | subsystems[i].bit;
  }
  /* NCCL_DEBUG_FILE with NCCL's %h (host) and %p (pid) */
  const char *file = getenv("NCCL_DEBUG_FILE");
  if (file && *file && debug_level > NCCL_LOG_VERSION) {
    char path[4096], host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    size_t n = 0;
    for (const char *c = file; *c && n + 300 < sizeof(path); c++) {
      if (c[0] == '%' && c[1] == 'h') {
        n += (size_t)snprintf(path + n, sizeof(path) - n, "%s", host);
        c++;
      } else if (c[0] == '%' && c[1] == 'p') {
        n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid());
        c++;
      } else {
        path[n++] = *c;
      }
    }
    path[n] = '\0';
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0)
      debug_fd = fd;
  }
}

static int debug_fd_if(int level, unsigned long subsys) {
  pthread_mutex_lock(&debug_mu);
  debug_read_locked();
  bool on = debug_level >= level && (level != NCCL_LOG_INFO || (debug_mask & subsys));
  int fd = on ? debug_fd : -1;
  pthread_mutex_unlock(&debug_mu);
  return fd;
}

bool emu_info_enabled(unsigned long subsys) { return debug_fd_if(NCCL_LOG_INFO, subsys) >= 0; }

static void info_line(int fd, int device, const char *fmt, va_list ap) {
  char msg[1024], host[256] = "localhost", line[1400];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  gethostname(host, sizeof(host) - 1);
  host[strcspn(host, ".")] = '\0';
  int n = snprintf(line, sizeof(line), "%s:%d:%d [%d] NCCL INFO %s\n", host, (int)getpid(),
                   (int)gettid(), device, msg);
  if (n > (int)sizeof(line) - 1) {
    n = (int)sizeof(line) - 1;
    line[n - 1] = '\n';
  }
  ssize_t ignored = write(fd, line, (size_t)n);
  (void)ignored;
}

void emu_info_dev(int device, unsigned long subsys, const char *fmt, ...) {
  int fd = debug_fd_if(NCCL_LOG_INFO, subsys);
  if (fd < 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  info_line(fd, device, fmt, ap);
  va_end(ap);
}

void emu_info(unsigned long subsys, const char *fmt, ...) {
  int fd = debug_fd_if(NCCL_LOG_INFO, subsys);
  if (fd < 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  info_line(fd, emu_rt_current_device(), fmt, ap);
  va_end(ap);
}

void emu_debug_log(int level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  if (level == NCCL_LOG_WARN) {
    warn_line(emu_rt_current_device(), fmt, ap);
  } else if (level == NCCL_LOG_INFO) {
    int fd = debug_fd_if(NCCL_LOG_INFO, flags);
    if (fd >= 0)
      info_line(fd, emu_rt_current_device(), fmt, ap);
  }
  va_end(ap);
}

/* showVersion: NCCL's banner at the first init, as an INFO line, or bare for rank 0 with
 * NCCL_DEBUG=VERSION or WARN; then, where NCCL names its git version, what the emulator is. */
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static int current_level(void) {
  pthread_mutex_lock(&debug_mu);
  debug_read_locked();
  int level = debug_level;
  pthread_mutex_unlock(&debug_mu);
  return level;
}

static void show_version(void) {
  int level = current_level();
  if (level == NCCL_LOG_VERSION || level == NCCL_LOG_WARN) {
    int fd = debug_fd_if(NCCL_LOG_VERSION, NCCL_ALL);
    char line[128];
    int n = snprintf(line, sizeof(line), "%s\n", EMU_VERSION_STRING);
    ssize_t ignored = write(fd, line, (size_t)n);
    (void)ignored;
  } else {
    emu_info(NCCL_ALL, "%s", EMU_VERSION_STRING);
    emu_info(NCCL_ALL, "NCCLEMU: the CPU emulator of NCCL %d.%d.%d (ncclguard emulator), no GPU",
             NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  }
}

void emu_show_version(int rank) {
  int level = current_level();
  if (level > NCCL_LOG_WARN || (level != NCCL_LOG_NONE && rank == 0))
    pthread_once(&version_once, show_version);
}

void emu_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  warn_line(emu_rt_current_device(), fmt, ap);
  va_end(ap);
}

void emu_warn_dev(int device, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  warn_line(device, fmt, ap);
  va_end(ap);
}

ncclResult_t ncclGetVersion(int *version) {
  NCCL_KNOB("ncclGetVersion");
  if (!version) {
    emu_warn("ncclGetVersion : version argument is NULL");
    return ncclInvalidArgument;
  }
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
NCCL_ALIAS(ncclGetVersion);

const char *ncclGetErrorString(ncclResult_t code) {
  switch (code) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}
NCCL_ALIAS(ncclGetErrorString);

const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm; /* NCCL ignores it too */
  return last_error;
}
NCCL_ALIAS(ncclGetLastError);

/* As NCCL's: NCCL_DEBUG and its companions are read again at the next line. */
void ncclResetDebugInit(void) {
  pthread_mutex_lock(&debug_mu);
  if (debug_fd != STDOUT_FILENO)
    close(debug_fd);
  debug_fd = STDOUT_FILENO;
  debug_read = false;
  pthread_mutex_unlock(&debug_mu);
}
NCCL_ALIAS(ncclResetDebugInit);

/* ---------------------------------------------------------------- NCCL's hashes */

/* eatHash, digestHash and getHash of NVIDIA/nccl src/include/bitops.h (v2.28.3-1 and
 * v2.29.3-1 alike), hashCombine of src/misc/utils.cc: the commHash of a communicator, and so
 * the commId of NCCL's INFO lines and of the profiler plugin, comes out of these. */
void emu_eat_hash(uint64_t acc[2], const void *bytes, size_t size) {
  const char *ptr = bytes;
  acc[0] ^= size;
  while (size != 0) {
    acc[0] += acc[1];
    acc[1] ^= acc[0];
    acc[0] ^= acc[0] >> 31;
    acc[0] *= 0x9de62bbc8cef3ce3ULL;
    acc[1] ^= acc[1] >> 32;
    acc[1] *= 0x485cd6311b599e79ULL;
    size_t chunk = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
    uint64_t x = 0;
    memcpy(&x, ptr, chunk);
    ptr += chunk;
    size -= chunk;
    acc[0] += x;
  }
}

uint64_t emu_digest_hash(const uint64_t acc[2]) {
  uint64_t h = acc[0];
  h ^= h >> 31;
  h *= 0xbac3bd562846de6bULL;
  h += acc[1];
  h ^= h >> 32;
  h *= 0x995a187a14e7b445ULL;
  return h;
}

uint64_t emu_get_hash(const void *bytes, size_t size) {
  uint64_t acc[2] = {1, 1};
  emu_eat_hash(acc, bytes, size);
  return emu_digest_hash(acc);
}

uint64_t emu_hash_combine(uint64_t base, uint64_t value) {
  uint64_t acc[2] = {1, 1};
  emu_eat_hash(acc, &base, sizeof(base));
  emu_eat_hash(acc, &value, sizeof(value));
  return emu_digest_hash(acc);
}

/* ---------------------------------------------------------------- unique ids */

/* The id's first 8 bytes are random, as the magic of NCCL's bootstrap handle is; the marker
 * after them says the emulator made it. */
static const char id_marker[8] = {'N', 'C', 'C', 'L', 'E', 'M', 'U', '1'};
static atomic_ulong id_counter;

bool emu_unique_id_valid(const ncclUniqueId *id) {
  return memcmp(id->internal + offsetof(struct emu_id_fields, marker), id_marker,
                sizeof(id_marker)) == 0;
}

void emu_ident_from_id(struct emu_comm_ident *out, const ncclUniqueId *id, const char *api) {
  /* src/init.cc ncclCommInitRankFunc: commHash = getHash(commId->internal, NCCL_UNIQUE_ID_BYTES),
   * of the first id for ncclCommInitRankScalable; bootstrapInit: magic = the handle's magic */
  memset(out, 0, sizeof(*out));
  out->comm_hash = emu_get_hash(id->internal, NCCL_UNIQUE_ID_BYTES);
  memcpy(&out->magic, id->internal, sizeof(out->magic));
  out->api = api;
}

void emu_id_fields(const ncclUniqueId *id, struct emu_id_fields *out) {
  memcpy(out, id->internal, sizeof(*out));
}

bool emu_id_foreign(const ncclUniqueId *id) {
  struct emu_id_fields f;
  emu_id_fields(id, &f);
  return f.pid != (int32_t)getpid();
}

/* Like NCCL's, the id names the process that made it and where its root listens, so ranks in
 * other processes can join; ranks in this process meet without the network. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  NCCL_KNOB("ncclGetUniqueId");
  if (!uniqueId) {
    emu_warn("ncclGetUniqueId : uniqueId argument is NULL");
    return ncclInvalidArgument;
  }
  emu_make_unique_id(uniqueId, emu_root_port());
  return ncclSuccess;
}
NCCL_ALIAS(ncclGetUniqueId);

void emu_make_unique_id(ncclUniqueId *uniqueId, uint16_t port) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct emu_id_fields fields;
  memset(&fields, 0, sizeof(fields));
  memcpy(fields.marker, id_marker, sizeof(id_marker));
  fields.pid = (int32_t)getpid();
  fields.port = port;
  fields.counter = atomic_fetch_add(&id_counter, 1) + 1;
  fields.sec = now.tv_sec;
  fields.nsec = now.tv_nsec;
  if (getrandom(&fields.magic, sizeof(fields.magic), 0) != (ssize_t)sizeof(fields.magic))
    fields.magic = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ULL ^ fields.counter;
  memset(uniqueId, 0, sizeof(*uniqueId));
  memcpy(uniqueId->internal, &fields, sizeof(fields));
}

/* ---------------------------------------------------------------- cliques and communicators */

/* Cliques whose ranks are still arriving, found by unique id. Lock order: emu_forming_mu, then a
 * clique's mu. */
pthread_mutex_t emu_forming_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_clique *forming; /* guarded by emu_forming_mu */

struct emu_clique *emu_clique_new(int nranks) {
  struct emu_clique *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->comms = calloc((size_t)nranks, sizeof(*c->comms));
  c->gone = calloc((size_t)nranks, 1);
  c->left = calloc((size_t)nranks, 1);
  c->members = calloc((size_t)nranks, sizeof(*c->members));
  if (!c->comms || !c->gone || !c->left || !c->members) {
    free(c->comms);
    free(c->gone);
    free(c->left);
    free(c->members);
    free(c);
    return NULL;
  }
  c->nranks = nranks;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  return c;
}

static void clique_free(struct emu_clique *c) {
  free(c->signals);
  free(c->consumed);
  emu_slots_free(c);
  emu_net_free(c->net);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->comms);
  free(c->gone);
  free(c->left);
  free(c->members);
  free(c);
}

struct emu_clique *emu_forming_find_locked(const unsigned char *id, int nranks, bool create) {
  struct emu_clique *c = forming;
  while (c && memcmp(c->id, id, NCCL_UNIQUE_ID_BYTES) != 0)
    c = c->forming_next;
  if (c || !create)
    return c;
  c = emu_clique_new(nranks);
  if (c) {
    memcpy(c->id, id, NCCL_UNIQUE_ID_BYTES);
    c->forming = true;
    c->forming_next = forming;
    forming = c;
  }
  return c;
}

void emu_forming_remove_locked(struct emu_clique *c) {
  if (!c->forming)
    return;
  struct emu_clique **pp = &forming;
  while (*pp != c)
    pp = &(*pp)->forming_next;
  *pp = c->forming_next;
  c->forming = false;
}

void emu_clique_ref(struct emu_clique *c) {
  pthread_mutex_lock(&c->mu);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
}

void emu_clique_unref(struct emu_clique *c) {
  pthread_mutex_lock(&emu_forming_mu);
  pthread_mutex_lock(&c->mu);
  bool last = --c->refs == 0;
  if (last)
    emu_forming_remove_locked(c);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&emu_forming_mu);
  if (last)
    clique_free(c);
}

bool emu_clique_spans_processes(struct emu_clique *c) {
  pthread_mutex_lock(&c->mu);
  bool spans = c->foreign || c->net || c->remote_joined > 0;
  pthread_mutex_unlock(&c->mu);
  return spans;
}

/* Freed communicators kept for the next ones made, on any thread, as the events' (cuda_event.c):
 * a handle's address comes back at once, as an allocator's reuse makes it in real NCCL, so that
 * tests of what tracks communicators by address see it happen deterministically. */
#define SPARE_COMMS 16
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm *spare[SPARE_COMMS];
static int nspare;

static struct ncclComm *comm_block(void) {
  pthread_mutex_lock(&spare_mu);
  struct ncclComm *comm = nspare > 0 ? spare[--nspare] : NULL;
  pthread_mutex_unlock(&spare_mu);
  if (comm == NULL)
    return calloc(1, sizeof(*comm));
  memset(comm, 0, sizeof(*comm));
  return comm;
}

static void comm_block_free(struct ncclComm *comm) {
  pthread_mutex_lock(&spare_mu);
  if (nspare < SPARE_COMMS) {
    spare[nspare++] = comm;
    comm = NULL;
  }
  pthread_mutex_unlock(&spare_mu);
  free(comm);
}

__attribute__((destructor)) static void spare_comms_freed_at_unload(void) {
  pthread_mutex_lock(&spare_mu);
  while (nspare > 0)
    free(spare[--nspare]);
  pthread_mutex_unlock(&spare_mu);
}

static struct ncclComm *comm_alloc(int rank, int nranks, int device, int blocking,
                                   const struct emu_comm_ident *ident) {
  struct ncclComm *comm = comm_block();
  if (!comm)
    return NULL;
  comm->send_seq = calloc((size_t)nranks, sizeof(uint64_t));
  comm->recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
  if (!comm->send_seq || !comm->recv_seq) {
    free(comm->send_seq);
    free(comm->recv_seq);
    comm_block_free(comm);
    return NULL;
  }
  atomic_init(&comm->obj.refs, 1);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->blocking = blocking;
  comm->state = COMM_LIVE;
  comm->ident = *ident;
  for (size_t i = 0; i < sizeof(comm->seq_number) / sizeof(comm->seq_number[0]); i++)
    atomic_init(&comm->seq_number[i], 0);
  emu_prof_comm_setup(comm);
  return comm;
}

static struct emu_live_info comm_info(const struct ncclComm *comm, bool revoked) {
  return (struct emu_live_info){.device = comm->device,
                                .rank = comm->rank,
                                .nranks = comm->nranks,
                                .comm_id = comm->ident.comm_hash,
                                .flags = revoked ? EMU_LIVE_REVOKED : 0};
}

static void comm_register(struct ncclComm *comm) {
  struct emu_live_info info = comm_info(comm, false);
  emu_rt_live_add(comm, EMU_COMM, &info);
}

void emu_comm_update_report(struct ncclComm *comm) {
  pthread_mutex_lock(&comm->clique->mu);
  struct emu_live_info info = comm_info(comm, comm->revoked);
  pthread_mutex_unlock(&comm->clique->mu);
  emu_rt_live_update(comm, EMU_COMM, &info);
}

static void comm_free(struct ncclComm *comm) {
  struct emu_clique *c = comm->clique;
  if (c) {
    bool unregister = false, stop = false;
    pthread_mutex_lock(&emu_forming_mu);
    pthread_mutex_lock(&c->mu);
    c->comms[comm->rank] = NULL;
    if (!comm->left)
      stop = --c->local_live == 0;
    if (!c->complete)
      c->joined--; /* it left before its peers came; the rank may join again */
    if (!c->tabled) {
      c->members[comm->rank].where = WHERE_UNKNOWN;
      unregister = c->foreign;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&emu_forming_mu);
    if (unregister)
      emu_proxy_unregister(c, comm->rank);
    if (stop)
      emu_proxy_stop(c);
    emu_clique_unref(c);
  }
  /* a comm freed without destroy or abort (an init that failed) ends its plugin state too */
  emu_prof_comm_finalize(comm);
  emu_prof_comm_teardown(comm);
  free(comm->send_seq);
  free(comm->recv_seq);
  comm_block_free(comm);
}

void emu_comm_release(struct ncclComm *comm) {
  if (emu_obj_unref(&comm->obj))
    comm_free(comm);
}

struct ncclComm *emu_comm_new(struct emu_clique *c, int rank, int device, int blocking,
                              const struct emu_comm_ident *ident) {
  struct ncclComm *comm = comm_alloc(rank, c->nranks, device, blocking, ident);
  if (!comm)
    return NULL;
  comm->clique = c;
  pthread_mutex_lock(&c->mu);
  c->comms[rank] = comm;
  c->members[rank].where = WHERE_HERE;
  c->refs++;
  c->local_live++;
  if (++c->joined == c->nranks)
    c->complete = c->tabled = true;
  pthread_mutex_unlock(&c->mu);
  comm_register(comm);
  return comm;
}

/* Ranks in this process meet in the forming table. With a foreign id, the id's root says when
 * every rank (in whichever process) has joined; with one of ours, the last local rank completes
 * the clique unless other processes registered ranks with our root, which then completes it. */
ncclResult_t emu_comm_join(const char *api, const ncclUniqueId *id, int nranks, int rank,
                           int device, int blocking, const struct emu_comm_ident *ident,
                           struct ncclComm **out) {
  struct emu_comm_ident from_id;
  if (!ident) {
    emu_ident_from_id(&from_id, id, api);
    ident = &from_id;
  }
  struct ncclComm *comm = comm_alloc(rank, nranks, device, blocking, ident);
  if (!comm) {
    emu_warn("%s: out of memory", api);
    return ncclSystemError;
  }
  bool foreign = emu_id_foreign(id), wake_root = false;
  ncclResult_t r = ncclSuccess;
  pthread_mutex_lock(&emu_forming_mu);
  struct emu_clique *c = emu_forming_find_locked((const unsigned char *)id->internal, nranks, true);
  if (!c) {
    r = ncclSystemError;
    emu_warn("%s: out of memory", api);
  }
  if (c) {
    pthread_mutex_lock(&c->mu);
    if (c->joined == 0 && c->remote_joined == 0)
      c->foreign = foreign;
    if (foreign && !c->net && !(c->net = emu_net_new())) {
      emu_warn("%s: out of memory", api);
      r = ncclSystemError;
    } else if (c->nranks != nranks) {
      emu_warn("%s: rank %d has nranks %d but the unique id was used with nranks %d", api, rank,
               nranks, c->nranks);
      r = ncclInvalidArgument;
    } else if (c->comms[rank] || c->members[rank].where == WHERE_THERE) {
      emu_warn("%s: rank %d joined this unique id twice", api, rank);
      r = ncclInvalidUsage;
    } else {
      comm->clique = c;
      c->comms[rank] = comm;
      c->members[rank].where = WHERE_HERE;
      c->gone[rank] = 0; /* a rank that left before its peers came may join again */
      c->refs++;
      c->local_live++;
      if (++c->joined + c->remote_joined == nranks && !c->foreign) {
        if (c->remote_joined == 0) {
          /* complete: the id leaves the table, a later init with it starts a new clique */
          c->complete = c->tabled = true;
          emu_forming_remove_locked(c);
          pthread_cond_broadcast(&c->cv);
        } else {
          wake_root = true;
        }
      }
    }
    pthread_mutex_unlock(&c->mu);
  }
  pthread_mutex_unlock(&emu_forming_mu);
  if (r != ncclSuccess) {
    comm_free(comm); /* never attached to the clique */
    return r;
  }
  if (foreign && (r = emu_proxy_register(c, id, rank)) != ncclSuccess) {
    comm_free(comm); /* detaches it again */
    return r;
  }
  if (wake_root)
    emu_root_wake();
  comm_register(comm);
  *out = comm;
  return ncclSuccess;
}

ncclResult_t emu_comm_acquire(ncclComm_t comm, const char *api) {
  if (!comm) {
    emu_warn("%s : comm argument is NULL", api);
    return ncclInvalidArgument;
  }
  if (!emu_rt_live_acquire(comm, EMU_COMM)) {
    emu_warn("%s: comm %p is not a live communicator", api, (void *)comm);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

static atomic_int hung_calls; /* calls inside emu_hang now */

/* NCCLEMU_HANG: block like a call stuck on a peer until the comm is aborted (or released). Says so
 * first, so that a stuck program explains itself. Takes over the caller's reference. */
ncclResult_t emu_hang(struct ncclComm *comm, const char *api) {
  emu_warn("NCCLEMU: %s hangs until comm %p is aborted (NCCLEMU_HANG)", api, (void *)comm);
  atomic_fetch_add(&hung_calls, 1);
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  while (comm->state != COMM_ABORTED && comm->state != COMM_RELEASED)
    pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  atomic_fetch_sub(&hung_calls, 1);
  emu_comm_release(comm);
  return ncclRemoteError;
}

/* NCCLEMU_EXIT_WAITS=1: the library's teardown at process exit waits for the calls stuck inside
 * it, as a real library's teardown can (CUDA's, on work a stuck thread holds): such a process
 * never finishes exit(3). Only _exit(2) ends it. */
__attribute__((destructor)) static void exit_waits_for_hung_calls(void) {
  if (atomic_load(&hung_calls) == 0 || !emu_rt_exit_waits())
    return; /* the runtime is asked only when a call hangs: never a first lookup at exit */
  emu_warn("NCCLEMU: exit waits for %d hung call(s) (NCCLEMU_EXIT_WAITS)", atomic_load(&hung_calls));
  while (atomic_load(&hung_calls) > 0)
    usleep(10000);
}
