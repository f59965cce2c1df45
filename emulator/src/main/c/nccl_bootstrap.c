/* The root of the unique ids this process makes. Like NCCL's bootstrap root, a thread listens on
 * 127.0.0.1 (the port is in the id) and collects the ranks that other processes register with an
 * id, until every rank of the clique is known; then it answers each registrant with the table of
 * ranks and processes, and the processes connect to each other (nccl_proxy.c). Ranks of this
 * process join the forming clique directly, so a clique that stays in one process never touches
 * a socket. The root thread runs for the life of the process, or of the library: one that has
 * the emulator's libnccl_static.a inside can be dlclosed, and a thread left in poll there would
 * return into unmapped code (or into the next copy mapped at the same place), so the library's
 * destructor stops it and waits for it to end (root_stops_at_unload). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"


struct refused_msg {
  int32_t code;
  char text[236];
};

static pthread_mutex_t root_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t root_pid;        /* guarded by root_mu: whose root it is (a fork's is not) */
static uint16_t root_port;    /* guarded by root_mu */
static int root_wake_w = -1;  /* guarded by root_mu */
static pthread_t root_thread;  /* guarded by root_mu: joinable while root_running */
static bool root_running;      /* guarded by root_mu */
static atomic_bool root_stopping;

/* A connection from another process that registered ranks of one clique; root thread only. */
struct registrant {
  struct registrant *next;
  int fd;
  struct emu_clique *c; /* holds a reference, counted in c->registrants */
  int nranks;           /* ranks it registered */
  int *ranks;
};

struct root {
  int listen_fd;
  int wake_r;
  uint16_t port;
  struct registrant *regs;
};

static void *root_main(void *arg);

uint16_t emu_root_port(void) {
  pthread_mutex_lock(&root_mu);
  if (root_pid != getpid()) {
    /* first use in this process (a forked child inherits the parent's state, not its thread) */
    root_pid = getpid();
    root_port = 0;
    root_wake_w = -1;
    root_running = false;
    struct root *root = calloc(1, sizeof(*root));
    int wake[2] = {-1, -1};
    if (root && pipe2(wake, O_CLOEXEC | O_NONBLOCK) == 0 &&
        (root->listen_fd = emu_net_listen(&root->port)) >= 0) {
      root->wake_r = wake[0];
      /* joinable: the library's unload joins it */
      if (pthread_create(&root_thread, NULL, root_main, root) == 0) {
        root_port = root->port;
        root_wake_w = wake[1];
        root_running = true;
        root = NULL;
      }
    }
    if (root) {
      emu_warn("NCCLEMU: cannot listen on 127.0.0.1: ranks in other processes cannot join "
               "the ids of this process");
      if (root->listen_fd > 0)
        close(root->listen_fd);
      if (wake[0] >= 0) {
        close(wake[0]);
        close(wake[1]);
      }
      free(root);
    }
  }
  uint16_t port = root_port;
  pthread_mutex_unlock(&root_mu);
  return port;
}

void emu_root_wake(void) {
  pthread_mutex_lock(&root_mu);
  int fd = root_pid == getpid() ? root_wake_w : -1;
  pthread_mutex_unlock(&root_mu);
  if (fd >= 0) {
    ssize_t ignored = write(fd, "w", 1);
    (void)ignored;
  }
}

/* ---------------------------------------------------------------- registrations */

static void refuse(int fd, ncclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void refuse(int fd, ncclResult_t code, const char *fmt, ...) {
  struct refused_msg m;
  memset(&m, 0, sizeof(m));
  m.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m.text, sizeof(m.text), fmt, ap);
  va_end(ap);
  emu_net_send(fd, MSG_REFUSED, &m, sizeof(m), NULL, 0);
}

/* Forgets the registrant and the ranks it registered (unless the clique is complete). */
static void drop(struct root *root, struct registrant *reg) {
  struct registrant **pp = &root->regs;
  while (*pp != reg)
    pp = &(*pp)->next;
  *pp = reg->next;
  struct emu_clique *c = reg->c;
  if (c) {
    pthread_mutex_lock(&emu_forming_mu);
    pthread_mutex_lock(&c->mu);
    if (!c->tabled)
      for (int i = 0; i < reg->nranks; i++)
        if (c->members[reg->ranks[i]].where == WHERE_THERE) {
          c->members[reg->ranks[i]].where = WHERE_UNKNOWN;
          c->remote_joined--;
        }
    c->registrants--;
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&emu_forming_mu);
    emu_clique_unref(c);
  }
  emu_net_close(&reg->fd);
  free(reg->ranks);
  free(reg);
}

/* Registers one rank; false when it was refused (the registrant is then to be dropped). */
static bool registered(struct root *root, struct registrant *reg, const struct emu_msg *m) {
  if (m->size != sizeof(struct emu_reg_msg)) {
    refuse(reg->fd, ncclInvalidUsage, "malformed registration");
    return false;
  }
  struct emu_reg_msg r;
  memcpy(&r, m->data, sizeof(r));
  ncclUniqueId id;
  memcpy(id.internal, r.id, sizeof(r.id));
  struct emu_id_fields f;
  emu_id_fields(&id, &f);
  if (!emu_unique_id_valid(&id) || f.pid != (int32_t)getpid() || f.port != root->port) {
    refuse(reg->fd, ncclInvalidArgument, "the unique id was not made by process %d", (int)getpid());
    return false;
  }
  if (r.nranks < 1 || r.rank < 0 || r.rank >= r.nranks) {
    refuse(reg->fd, ncclInvalidArgument, "invalid rank %d for nranks %d", r.rank, r.nranks);
    return false;
  }
  int *grown = realloc(reg->ranks, (size_t)(reg->nranks + 1) * sizeof(int));
  if (!grown) {
    refuse(reg->fd, ncclSystemError, "out of memory");
    return false;
  }
  reg->ranks = grown;
  ncclResult_t code = ncclSuccess;
  char why[200] = "";
  bool orphan = false;
  pthread_mutex_lock(&emu_forming_mu);
  struct emu_clique *c = emu_forming_find_locked(r.id, r.nranks, true);
  if (!c) {
    code = ncclSystemError;
    snprintf(why, sizeof(why), "out of memory");
  } else {
    pthread_mutex_lock(&c->mu);
    if (reg->c && reg->c != c) {
      code = ncclInvalidUsage;
      snprintf(why, sizeof(why), "one connection registered ranks of two unique ids");
    } else if (c->nranks != r.nranks) {
      code = ncclInvalidArgument;
      snprintf(why, sizeof(why), "rank %d has nranks %d but the unique id was used with nranks %d",
               r.rank, r.nranks, c->nranks);
    } else if (c->comms[r.rank] || c->members[r.rank].where != WHERE_UNKNOWN) {
      code = ncclInvalidUsage;
      snprintf(why, sizeof(why), "rank %d joined this unique id twice", r.rank);
    } else {
      c->members[r.rank] = (struct emu_member){.pid = r.pid, .port = r.port, .where = WHERE_THERE};
      c->remote_joined++;
      reg->ranks[reg->nranks++] = r.rank;
      if (!reg->c) {
        reg->c = c;
        c->registrants++;
        c->refs++; /* the root's hold until it answers */
      }
    }
    /* a clique made for a registration that was refused has nobody to end it but us */
    orphan = c->refs == 0;
    if (orphan) {
      emu_forming_remove_locked(c);
      c->refs = 1;
    }
    pthread_mutex_unlock(&c->mu);
  }
  pthread_mutex_unlock(&emu_forming_mu);
  if (orphan)
    emu_clique_unref(c);
  if (code != ncclSuccess) {
    refuse(reg->fd, code, "%s", why);
    return false;
  }
  return true;
}

static void unregistered(struct registrant *reg, const struct emu_msg *m) {
  int32_t rank;
  if (m->size != sizeof(rank) || !reg->c)
    return;
  memcpy(&rank, m->data, sizeof(rank));
  struct emu_clique *c = reg->c;
  for (int i = 0; i < reg->nranks; i++)
    if (reg->ranks[i] == rank) {
      reg->ranks[i] = reg->ranks[--reg->nranks];
      pthread_mutex_lock(&c->mu);
      if (!c->tabled && c->members[rank].where == WHERE_THERE) {
        c->members[rank].where = WHERE_UNKNOWN;
        c->remote_joined--;
      }
      pthread_mutex_unlock(&c->mu);
      return;
    }
}

/* When every rank of the clique is known: the service thread of this process's ranks (if any)
 * starts listening, and each registrant gets the table. Answers whether it was complete. */
static bool complete_if_ready(struct root *root, struct emu_clique *c) {
  pthread_mutex_lock(&emu_forming_mu);
  pthread_mutex_lock(&c->mu);
  bool ready = !c->tabled && c->registrants > 0 && c->joined + c->remote_joined == c->nranks;
  bool here = c->joined > 0;
  int nranks = c->nranks;
  if (ready) {
    c->tabled = true;
    c->refs++; /* ours while we work: local ranks may leave meanwhile */
    emu_forming_remove_locked(c);
    if (here && !c->net)
      c->net = emu_net_new();
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&emu_forming_mu);
  if (!ready)
    return false;
  uint16_t port = 0;
  ncclResult_t r = here ? emu_proxy_listen(c, &port) : ncclSuccess;
  size_t table_bytes = sizeof(int32_t) + (size_t)nranks * sizeof(struct emu_member);
  unsigned char *table = malloc(table_bytes);
  if (!table && r == ncclSuccess)
    r = ncclSystemError;
  pthread_mutex_lock(&c->mu);
  for (int i = 0; i < nranks; i++)
    if (c->members[i].where == WHERE_HERE)
      c->members[i] = (struct emu_member){.pid = getpid(), .port = port, .where = WHERE_HERE};
  if (table) {
    int32_t n = nranks;
    memcpy(table, &n, sizeof(n));
    memcpy(table + sizeof(n), c->members, (size_t)n * sizeof(struct emu_member));
  }
  if (r != ncclSuccess) {
    c->init_error = r;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  for (struct registrant *reg = root->regs, *next; reg; reg = next) {
    next = reg->next;
    if (reg->c != c)
      continue;
    if (r == ncclSuccess)
      emu_net_send(reg->fd, MSG_TABLE, table, table_bytes, NULL, 0);
    else
      refuse(reg->fd, r, "the root could not set up the connections of this clique");
    drop(root, reg);
  }
  free(table);
  if (here && r == ncclSuccess)
    emu_proxy_serve(c);
  emu_clique_unref(c);
  return true;
}

static void complete_all(struct root *root) {
  struct registrant *reg = root->regs;
  while (reg)
    if (reg->c && complete_if_ready(root, reg->c))
      reg = root->regs; /* it dropped registrants: start over */
    else
      reg = reg->next;
}

/* ---------------------------------------------------------------- the root thread */

static void accept_one(struct root *root) {
  int fd = accept4(root->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  struct registrant *reg = calloc(1, sizeof(*reg));
  if (!reg) {
    close(fd);
    return;
  }
  /* a registrant that stops in the middle of a message must not stall the root */
  struct timeval timeout = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  reg->fd = fd;
  reg->next = root->regs;
  root->regs = reg;
}

static void serve(struct registrant *reg, struct root *root) {
  struct emu_msg m;
  int r = emu_net_recv(reg->fd, &m);
  bool keep = r == 0;
  if (keep) {
    if (m.type == MSG_REGISTER)
      keep = registered(root, reg, &m);
    else if (m.type == MSG_UNREGISTER)
      unregistered(reg, &m);
    else
      keep = false;
    free(m.data);
  }
  if (!keep)
    drop(root, reg);
}

static void *root_main(void *arg) {
  struct root *root = arg;
  struct pollfd *fds = NULL;
  struct registrant **who = NULL;
  size_t cap = 0;
  for (;;) {
    size_t n = 2;
    for (struct registrant *reg = root->regs; reg; reg = reg->next)
      n++;
    if (n > cap) {
      cap = n * 2;
      struct pollfd *f = realloc(fds, cap * sizeof(*fds));
      struct registrant **w = f ? realloc(who, cap * sizeof(*who)) : NULL;
      if (f)
        fds = f;
      if (!w) {
        sleep(1); /* out of memory: try again later */
        continue;
      }
      who = w;
    }
    fds[0] = (struct pollfd){.fd = root->listen_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = root->wake_r, .events = POLLIN};
    size_t i = 2;
    for (struct registrant *reg = root->regs; reg; reg = reg->next, i++) {
      fds[i] = (struct pollfd){.fd = reg->fd, .events = POLLIN};
      who[i] = reg;
    }
    if (poll(fds, n, -1) < 0)
      continue;
    if (fds[1].revents) {
      char buf[64];
      while (read(root->wake_r, buf, sizeof(buf)) > 0) {
      }
      if (atomic_load(&root_stopping))
        break;
    }
    for (i = 2; i < n; i++)
      if (fds[i].revents)
        serve(who[i], root);
    if (fds[0].revents)
      accept_one(root);
    complete_all(root);
  }
  /* the library is going: its registrants' connections close with the process, as at an exit */
  free(fds);
  free(who);
  close(root->listen_fd);
  close(root->wake_r);
  return NULL;
}

/* At the library's unload, and at the process's exit (where it changes nothing another process
 * could see: the sockets close a moment later anyway): the root thread is told to stop and joined,
 * 1 s at most (a root busy with a registrant that never finishes its message is left as before). */
__attribute__((destructor)) static void root_stops_at_unload(void) {
  pthread_mutex_lock(&root_mu);
  bool mine = root_running && root_pid == getpid(); /* a fork's child has no root thread */
  pthread_t t = root_thread;
  int wake_w = root_wake_w;
  if (mine) {
    root_running = false;
    root_wake_w = -1;
    root_port = 0;
  }
  pthread_mutex_unlock(&root_mu);
  if (!mine)
    return;
  atomic_store(&root_stopping, true);
  ssize_t ignored = write(wake_w, "s", 1);
  (void)ignored;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  pthread_timedjoin_np(t, NULL, &until);
  close(wake_w);
}
