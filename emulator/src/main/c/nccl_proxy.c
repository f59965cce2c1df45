/* The service thread of a communicator whose ranks are in several processes, like NCCL's proxy
 * service: one per clique and process. It holds a connection to and from every other process of
 * the clique (each process sends on the connection it opened, and reads the one it accepted),
 * carries each local rank's part of an operation, with its input, to the processes that take part
 * (each process then computes the result itself, nccl_coll.c), and the goodbyes of ranks that
 * destroy or abort. A process that disappears without its goodbye leaves its connection closed
 * under the service thread, which says so on stderr in NCCL's words; one that said goodbye does
 * not. On a foreign id's clique it also registers the local ranks with the id's root and waits
 * for the root's table of ranks and processes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "emu.h"

struct peer {
  int32_t pid;
  uint16_t port;
  pthread_mutex_t send_mu; /* one message at a time on out_fd */
  int out_fd;              /* guarded by send_mu; what we send to it */
  int in_fd;               /* service thread only; what it sends to us */
  bool in_seen;            /* service thread only: its hello came */
  bool bye;                /* service thread only: it said goodbye, its end of in_fd is no loss */
};

struct hello_msg {
  unsigned char id[NCCL_UNIQUE_ID_BYTES];
  int32_t pid;
  int32_t pad;
};

struct part_msg {
  int32_t func, rank, root, dtype, op, pad;
  uint64_t seq, count;
};

struct left_msg {
  int32_t rank, how;
};

/* A connection accepted before its process is known from the table. */
struct stray {
  int fd;
  int32_t pid;
};

struct emu_net {
  struct emu_net *next_served; /* in the list of served nets, under served_mu */
  atomic_int open_ins;         /* connections from peers not yet closed */
  pthread_mutex_t mu;          /* guards the fields up to the comment below */
  bool started;
  int reg_fd;         /* foreign clique: the connection to the root (writes under mu) */
  int listen_fd;
  uint16_t port;
  int wake[2];
  /* set by the service thread before the clique is complete, read-only afterwards by senders
   * (who first see complete under the clique's mu); npeers and peers also under mu for stop */
  int npeers;
  struct peer *peers;
  int *rank_peer; /* rank -> index in peers, -1 for ranks of this process */
  atomic_bool stopping;
  /* service thread only */
  int device; /* what its warnings say, as NCCL's say the device of the rank */
  int rank;   /* the proxy's own rank in them: this process's first rank */
  bool connected_out;
  struct stray *strays;
  int nstrays;
};

/* Every net whose service thread runs, for the goodbye-less close at process exit. */
static pthread_mutex_t served_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_net *served; /* guarded by served_mu */

struct emu_net *emu_net_new(void) {
  struct emu_net *net = calloc(1, sizeof(*net));
  if (!net)
    return NULL;
  atomic_init(&net->open_ins, 0);
  pthread_mutex_init(&net->mu, NULL);
  net->reg_fd = net->listen_fd = net->wake[0] = net->wake[1] = -1;
  atomic_init(&net->stopping, false);
  return net;
}

void emu_net_free(struct emu_net *net) {
  if (!net)
    return;
  pthread_mutex_lock(&served_mu);
  for (struct emu_net **pp = &served; *pp; pp = &(*pp)->next_served)
    if (*pp == net) {
      *pp = net->next_served;
      break;
    }
  pthread_mutex_unlock(&served_mu);
  emu_net_close(&net->reg_fd);
  emu_net_close(&net->listen_fd);
  emu_net_close(&net->wake[0]);
  emu_net_close(&net->wake[1]);
  for (int i = 0; i < net->npeers; i++) {
    emu_net_close(&net->peers[i].out_fd);
    emu_net_close(&net->peers[i].in_fd);
    pthread_mutex_destroy(&net->peers[i].send_mu);
  }
  for (int i = 0; i < net->nstrays; i++)
    close(net->strays[i].fd);
  free(net->strays);
  free(net->peers);
  free(net->rank_peer);
  pthread_mutex_destroy(&net->mu);
  free(net);
}

static struct emu_net *net_of(struct emu_clique *c) {
  pthread_mutex_lock(&c->mu);
  struct emu_net *net = c->net;
  pthread_mutex_unlock(&c->mu);
  return net;
}

static void *service_main(void *arg);
static void complete_if_connected(struct emu_clique *c, struct emu_net *net);

/* Under net->mu: the listener, the wake pipe and the thread, once. Takes a clique reference for
 * the thread. */
static ncclResult_t start_locked(struct emu_clique *c, struct emu_net *net) {
  if (net->started)
    return ncclSuccess;
  if (net->listen_fd < 0 && (net->listen_fd = emu_net_listen(&net->port)) < 0) {
    emu_warn("NCCLEMU: cannot listen on 127.0.0.1: %s", strerror(errno));
    return ncclSystemError;
  }
  if (net->wake[0] < 0 && pipe2(net->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    emu_warn("NCCLEMU: cannot make a pipe: %s", strerror(errno));
    return ncclSystemError;
  }
  emu_clique_ref(c);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int e = pthread_create(&t, &attr, service_main, c);
  pthread_attr_destroy(&attr);
  if (e != 0) {
    emu_warn("NCCLEMU: cannot start a service thread: %s", strerror(e));
    emu_clique_unref(c);
    return ncclSystemError;
  }
  net->started = true;
  return ncclSuccess;
}

/* ---------------------------------------------------------------- registration (foreign ids) */


ncclResult_t emu_proxy_register(struct emu_clique *c, const ncclUniqueId *id, int rank) {
  struct emu_net *net = net_of(c);
  struct emu_id_fields f;
  emu_id_fields(id, &f);
  pthread_mutex_lock(&net->mu);
  ncclResult_t r = ncclSuccess;
  if (net->reg_fd < 0 && (f.port == 0 || (net->reg_fd = emu_net_connect(f.port)) < 0)) {
    emu_warn("NCCLEMU: cannot reach the root of the unique id in process %d (port %u): %s; it must "
             "run until every rank has joined",
             (int)f.pid, (unsigned)f.port, f.port ? strerror(errno) : "it could not listen");
    r = ncclSystemError;
  }
  if (r == ncclSuccess)
    r = start_locked(c, net);
  if (r == ncclSuccess) {
    struct emu_reg_msg m;
    memset(&m, 0, sizeof(m));
    memcpy(m.id, id->internal, sizeof(m.id));
    m.nranks = c->nranks;
    m.rank = rank;
    m.pid = getpid();
    m.port = net->port;
    if (emu_net_send(net->reg_fd, MSG_REGISTER, &m, sizeof(m), NULL, 0) != 0) {
      emu_warn("NCCLEMU: the root of the unique id in process %d closed its connection",
               (int)f.pid);
      r = ncclSystemError;
    }
  }
  pthread_mutex_unlock(&net->mu);
  return r;
}

void emu_proxy_unregister(struct emu_clique *c, int rank) {
  struct emu_net *net = net_of(c);
  if (!net)
    return;
  int32_t r = rank;
  pthread_mutex_lock(&net->mu);
  emu_net_send(net->reg_fd, MSG_UNREGISTER, &r, sizeof(r), NULL, 0);
  pthread_mutex_unlock(&net->mu);
}

/* ---------------------------------------------------------------- root side */

ncclResult_t emu_proxy_listen(struct emu_clique *c, uint16_t *port) {
  struct emu_net *net = net_of(c);
  if (!net)
    return ncclSystemError;
  pthread_mutex_lock(&net->mu);
  if (net->listen_fd < 0)
    net->listen_fd = emu_net_listen(&net->port);
  *port = net->port;
  bool ok = net->listen_fd >= 0;
  pthread_mutex_unlock(&net->mu);
  if (!ok)
    emu_warn("NCCLEMU: cannot listen on 127.0.0.1: %s", strerror(errno));
  return ok ? ncclSuccess : ncclSystemError;
}

void emu_proxy_serve(struct emu_clique *c) {
  struct emu_net *net = net_of(c);
  pthread_mutex_lock(&net->mu);
  ncclResult_t r = start_locked(c, net);
  pthread_mutex_unlock(&net->mu);
  if (r != ncclSuccess) {
    pthread_mutex_lock(&c->mu);
    c->init_error = r;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
}

/* ---------------------------------------------------------------- sending */

/* The clique's connections once it is complete; NULL when it spans no other process or never
 * completed (nothing can be told then). */
static struct emu_net *connected(struct emu_clique *c) {
  pthread_mutex_lock(&c->mu);
  struct emu_net *net = c->net && c->complete ? c->net : NULL;
  pthread_mutex_unlock(&c->mu);
  return net;
}

static void send_to(struct peer *peer, uint32_t type, const void *a, size_t alen, const void *b,
                    size_t blen) {
  pthread_mutex_lock(&peer->send_mu);
  if (peer->out_fd >= 0 && emu_net_send(peer->out_fd, type, a, alen, b, blen) != 0)
    emu_net_close(&peer->out_fd); /* gone: its service thread is what tells us */
  pthread_mutex_unlock(&peer->send_mu);
}

void emu_proxy_announce(struct emu_part *p) {
  struct ncclComm *comm = p->comm;
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  if (!c->net) {
    pthread_mutex_unlock(&c->mu);
    return;
  }
  /* work enqueued on a nonblocking communicator before its init finished waits for it */
  while (!c->complete && !c->init_error && comm->state != COMM_ABORTED)
    pthread_cond_wait(&c->cv, &c->mu);
  struct emu_net *net = c->complete ? c->net : NULL;
  int nranks = c->nranks;
  pthread_mutex_unlock(&c->mu);
  if (!net)
    return;
  struct part_msg m = {.func = p->func,
                       .rank = comm->rank,
                       .root = p->root,
                       .dtype = p->dtype,
                       .op = p->op,
                       .seq = p->seq,
                       .count = p->count};
  size_t bytes = emu_part_input_bytes(p, nranks);
  const void *input = bytes ? p->sendbuff : NULL;
  if (p->func == F_SEND || p->func == F_RECV) {
    int peer = net->rank_peer[p->root];
    if (peer >= 0)
      send_to(&net->peers[peer], MSG_PART, &m, sizeof(m), input, bytes);
    return;
  }
  for (int i = 0; i < net->npeers; i++)
    send_to(&net->peers[i], MSG_PART, &m, sizeof(m), input, bytes);
}

void emu_proxy_left(struct emu_clique *c, int rank, enum emu_left how) {
  struct emu_net *net = connected(c);
  if (!net)
    return;
  struct left_msg m = {.rank = rank, .how = how};
  for (int i = 0; i < net->npeers; i++)
    send_to(&net->peers[i], MSG_LEFT, &m, sizeof(m), NULL, 0);
}

void emu_proxy_stop(struct emu_clique *c) {
  struct emu_net *net = net_of(c);
  if (!net)
    return;
  pthread_mutex_lock(&net->mu);
  for (int i = 0; i < net->npeers; i++) {
    struct peer *peer = &net->peers[i];
    pthread_mutex_lock(&peer->send_mu);
    if (peer->out_fd >= 0) {
      emu_net_send(peer->out_fd, MSG_BYE, NULL, 0, NULL, 0);
      shutdown(peer->out_fd, SHUT_WR);
    }
    pthread_mutex_unlock(&peer->send_mu);
  }
  atomic_store(&net->stopping, true);
  if (net->wake[1] >= 0) {
    ssize_t ignored = write(net->wake[1], "s", 1);
    (void)ignored;
  }
  pthread_mutex_unlock(&net->mu);
}

/* ---------------------------------------------------------------- the service thread */

static void fail_init(struct emu_clique *c, ncclResult_t r) {
  pthread_mutex_lock(&c->mu);
  if (!c->complete && !c->init_error)
    c->init_error = r;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static struct peer *peer_by_pid(struct emu_net *net, int32_t pid) {
  for (int i = 0; i < net->npeers; i++)
    if (net->peers[i].pid == pid)
      return &net->peers[i];
  return NULL;
}

static void attach_in(struct emu_net *net, int fd, int32_t pid) {
  struct peer *peer = peer_by_pid(net, pid);
  if (peer && !peer->in_seen) {
    peer->in_fd = fd;
    peer->in_seen = true;
    atomic_fetch_add(&net->open_ins, 1);
    return;
  }
  if (peer) {
    close(fd); /* a second connection from one process: not from a sane peer */
    return;
  }
  struct stray *grown = realloc(net->strays, (size_t)(net->nstrays + 1) * sizeof(*grown));
  if (!grown) {
    close(fd);
    return;
  }
  net->strays = grown;
  net->strays[net->nstrays++] = (struct stray){.fd = fd, .pid = pid};
}

static void accept_peer(struct emu_clique *c, struct emu_net *net) {
  int fd = accept4(net->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  struct timeval timeout = {.tv_sec = 10}; /* for the hello only */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  struct emu_msg m;
  struct hello_msg h;
  if (emu_net_recv(fd, &m) != 0 || m.type != MSG_HELLO || m.size != sizeof(h)) {
    if (m.data)
      free(m.data);
    close(fd);
    return;
  }
  memcpy(&h, m.data, sizeof(h));
  free(m.data);
  if (memcmp(h.id, c->id, sizeof(h.id)) != 0) {
    close(fd);
    return;
  }
  struct timeval none = {0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  attach_in(net, fd, h.pid);
  complete_if_connected(c, net);
}

/* The root's table: the ranks here must be ours, every other process becomes a peer. */
static ncclResult_t apply_table(struct emu_clique *c, struct emu_net *net,
                                const struct emu_msg *m) {
  int32_t n;
  if (m->size < sizeof(n))
    return ncclInternalError;
  memcpy(&n, m->data, sizeof(n));
  if (n != c->nranks || m->size != sizeof(n) + (size_t)n * sizeof(struct emu_member))
    return ncclInternalError;
  struct emu_member *table = malloc((size_t)n * sizeof(*table));
  int *rank_peer = malloc((size_t)n * sizeof(int));
  struct peer *peers = calloc((size_t)n, sizeof(*peers));
  if (!table || !rank_peer || !peers) {
    free(table);
    free(rank_peer);
    free(peers);
    return ncclSystemError;
  }
  memcpy(table, m->data + sizeof(n), (size_t)n * sizeof(*table));
  int npeers = 0;
  for (int r = 0; r < n; r++) {
    rank_peer[r] = -1;
    if (table[r].pid == (int32_t)getpid())
      continue;
    int i = 0;
    while (i < npeers && peers[i].pid != table[r].pid)
      i++;
    if (i == npeers) {
      peers[i] = (struct peer){
          .pid = table[r].pid, .port = table[r].port, .out_fd = -1, .in_fd = -1};
      pthread_mutex_init(&peers[i].send_mu, NULL);
      npeers++;
    }
    rank_peer[r] = i;
  }
  ncclResult_t result = ncclSuccess;
  pthread_mutex_lock(&emu_forming_mu);
  pthread_mutex_lock(&c->mu);
  for (int r = 0; r < n; r++) {
    bool ours = table[r].pid == (int32_t)getpid();
    if (ours != (c->comms[r] != NULL))
      result = ncclInternalError; /* a rank that left while the table was made */
    c->members[r] = table[r];
    c->members[r].where = ours ? WHERE_HERE : WHERE_THERE;
  }
  c->tabled = true;
  emu_forming_remove_locked(c);
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&emu_forming_mu);
  pthread_mutex_lock(&net->mu);
  net->peers = peers;
  net->npeers = npeers;
  net->rank_peer = rank_peer;
  pthread_mutex_unlock(&net->mu);
  free(table);
  for (int i = 0; i < net->nstrays; i++)
    attach_in(net, net->strays[i].fd, net->strays[i].pid);
  free(net->strays);
  net->strays = NULL;
  net->nstrays = 0;
  return result;
}

/* The tables of the root side are already in members: the same, from there. */
static ncclResult_t table_from_members(struct emu_clique *c, struct emu_net *net) {
  pthread_mutex_lock(&c->mu);
  int n = c->nranks;
  size_t bytes = sizeof(int32_t) + (size_t)n * sizeof(struct emu_member);
  unsigned char *data = malloc(bytes);
  if (data) {
    int32_t n32 = n;
    memcpy(data, &n32, sizeof(n32));
    memcpy(data + sizeof(n32), c->members, (size_t)n * sizeof(struct emu_member));
  }
  pthread_mutex_unlock(&c->mu);
  if (!data)
    return ncclSystemError;
  struct emu_msg m = {.type = MSG_TABLE, .size = bytes, .data = data};
  ncclResult_t r = apply_table(c, net, &m);
  free(data);
  return r;
}

static ncclResult_t connect_peers(struct emu_clique *c, struct emu_net *net) {
  struct hello_msg h;
  memset(&h, 0, sizeof(h));
  memcpy(h.id, c->id, sizeof(h.id));
  h.pid = getpid();
  for (int i = 0; i < net->npeers; i++) {
    struct peer *peer = &net->peers[i];
    int fd = emu_net_connect(peer->port);
    if (fd < 0 || emu_net_send(fd, MSG_HELLO, &h, sizeof(h), NULL, 0) != 0) {
      emu_warn_dev(net->device, "NCCLEMU: cannot connect to process %d of this communicator "
                                "(port %u): %s",
                   (int)peer->pid, (unsigned)peer->port, strerror(errno));
      if (fd >= 0)
        close(fd);
      return ncclSystemError;
    }
    pthread_mutex_lock(&peer->send_mu);
    peer->out_fd = fd;
    pthread_mutex_unlock(&peer->send_mu);
  }
  return ncclSuccess;
}

/* Like NCCL's init, complete only once every process is connected both ways: a rank whose init
 * returned can exit at once, and its peers still get its connection (and then its end). */
static void complete_if_connected(struct emu_clique *c, struct emu_net *net) {
  if (!net->connected_out)
    return;
  for (int i = 0; i < net->npeers; i++)
    if (!net->peers[i].in_seen)
      return;
  pthread_mutex_lock(&c->mu);
  if (!c->init_error)
    c->complete = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void on_table(struct emu_clique *c, struct emu_net *net, const struct emu_msg *m) {
  ncclResult_t r = m ? apply_table(c, net, m) : table_from_members(c, net);
  if (r == ncclSuccess)
    r = connect_peers(c, net);
  if (r != ncclSuccess) {
    if (r == ncclInternalError)
      emu_warn_dev(net->device, "NCCLEMU: the root's table of ranks does not match the ranks "
                                "that joined here");
    fail_init(c, r);
    return;
  }
  net->connected_out = true;
  complete_if_connected(c, net);
}

static void on_root_message(struct emu_clique *c, struct emu_net *net) {
  struct emu_msg m;
  int r = emu_net_recv(net->reg_fd, &m);
  if (r == 0 && m.type == MSG_TABLE) {
    on_table(c, net, &m);
  } else if (r == 0 && m.type == MSG_REFUSED && m.size >= sizeof(int32_t) + 1) {
    int32_t code;
    memcpy(&code, m.data, sizeof(code));
    m.data[m.size - 1] = '\0';
    emu_warn_dev(net->device, "NCCLEMU: the root of the unique id refused a rank: %s",
                 (const char *)m.data + sizeof(code));
    fail_init(c, (ncclResult_t)code);
  } else {
    emu_warn_dev(net->device, "NCCLEMU: the root of the unique id closed its connection before "
                              "every rank had joined (the process that called ncclGetUniqueId "
                              "must run until then)");
    fail_init(c, ncclRemoteError);
  }
  free(m.data);
  /* the root's part is done either way */
  pthread_mutex_lock(&net->mu);
  emu_net_close(&net->reg_fd);
  pthread_mutex_unlock(&net->mu);
}

static int peer_rank_of(struct emu_net *net, const struct peer *peer, int rank, int nranks) {
  if (rank < 0 || rank >= nranks || net->rank_peer[rank] < 0)
    return -1;
  return &net->peers[net->rank_peer[rank]] == peer ? rank : -1;
}

static void on_part(struct emu_clique *c, struct emu_net *net, struct peer *peer,
                    struct emu_msg *m) {
  struct part_msg h;
  if (m->size < sizeof(h))
    return;
  memcpy(&h, m->data, sizeof(h));
  if (peer_rank_of(net, peer, h.rank, c->nranks) < 0 || h.func < F_ALLREDUCE || h.func > F_RECV)
    return;
  struct emu_part *p = calloc(1, sizeof(*p));
  if (!p)
    return;
  size_t bytes = m->size - sizeof(h);
  if (bytes) {
    memmove(m->data, m->data + sizeof(h), bytes); /* the input, at the start of its buffer */
    p->sendbuff = m->data;
    m->data = NULL;
  }
  p->func = (enum emu_func)h.func;
  p->api = "(a rank of another process)";
  p->remote = true;
  p->rank = h.rank;
  p->clique = c;
  p->root = h.root;
  p->dtype = (ncclDataType_t)h.dtype;
  p->op = (ncclRedOp_t)h.op;
  p->seq = h.seq;
  p->count = h.count;
  emu_part_arrive(p); /* owns p from here */
}

static void on_left(struct emu_clique *c, struct emu_net *net, struct peer *peer,
                    const struct emu_msg *m) {
  struct left_msg h;
  if (m->size != sizeof(h))
    return;
  memcpy(&h, m->data, sizeof(h));
  if (peer_rank_of(net, peer, h.rank, c->nranks) < 0)
    return;
  pthread_mutex_lock(&c->mu);
  c->left[h.rank] = h.how == LEFT_ABORTED ? LEFT_ABORTED : LEFT_DESTROYED;
  c->gone[h.rank] = 1;
  /* What still needs the rank fails. A part of it that came before the goodbye (on this same
   * connection) holds a copy of its input, so its operation can still complete here, and must:
   * the rank may have seen that operation complete before it aborted (its peers' parts had all
   * come to it), while a part of this process was announced but not yet in its slot. Unlike a
   * rank of this process, whose buffers an abort may free, nothing here needs the aborted rank. */
  emu_fail_slots_missing_locked(c, h.rank);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* The process is gone without a goodbye: what NCCL's proxy says when a peer process exits with
 * its communicator alive, and its ranks are gone for the work that needs them. */
static void on_closed(struct emu_clique *c, struct emu_net *net, struct peer *peer) {
  emu_net_close(&peer->in_fd);
  atomic_fetch_sub(&net->open_ins, 1);
  if (peer->bye || atomic_load(&net->stopping))
    return;
  for (int r = 0; r < c->nranks; r++) {
    if (peer_rank_of(net, peer, r, c->nranks) < 0)
      continue;
    pthread_mutex_lock(&c->mu);
    bool silent = c->left[r] != LEFT_NOT;
    c->gone[r] = 1;
    emu_fail_slots_missing_locked(c, r);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (silent)
      continue;
    emu_warn_dev(net->device, "[Service thread] Connection closed by localRank %d", r);
    emu_warn_dev(net->device, "[Service thread] Could not receive type from localRank %d, res=3, "
                              "closed=1", r);
    emu_warn_dev(net->device, "[Proxy Service %d] Failed to execute operation Close from rank %d, "
                              "retcode 3", net->rank, r);
  }
}

static void on_peer_message(struct emu_clique *c, struct emu_net *net, struct peer *peer) {
  struct emu_msg m;
  int r = emu_net_recv(peer->in_fd, &m);
  if (r != 0) {
    on_closed(c, net, peer);
    return;
  }
  switch (m.type) {
  case MSG_PART:
    on_part(c, net, peer, &m);
    break;
  case MSG_LEFT:
    on_left(c, net, peer, &m);
    break;
  case MSG_BYE:
    peer->bye = true;
    break;
  default:
    break;
  }
  free(m.data);
}

/* The first rank of this process: its device and rank are what the warnings name. */
static void first_rank(struct emu_clique *c, struct emu_net *net) {
  pthread_mutex_lock(&c->mu);
  net->device = net->rank = 0;
  for (int r = 0; r < c->nranks; r++)
    if (c->comms[r]) {
      net->device = c->comms[r]->device;
      net->rank = r;
      break;
    }
  pthread_mutex_unlock(&c->mu);
}

static void *service_main(void *arg) {
  struct emu_clique *c = arg;
  struct emu_net *net = net_of(c);
  /* here, not where the thread starts: lock order served_mu, then a net's mu */
  pthread_mutex_lock(&served_mu);
  net->next_served = served;
  served = net;
  pthread_mutex_unlock(&served_mu);
  first_rank(c, net);
  pthread_mutex_lock(&c->mu);
  bool tabled = c->tabled;
  pthread_mutex_unlock(&c->mu);
  if (tabled)
    on_table(c, net, NULL); /* the root is in this process: it filled members */
  struct pollfd *fds = NULL;
  size_t cap = 0;
  while (!atomic_load(&net->stopping)) {
    pthread_mutex_lock(&net->mu);
    int reg_fd = net->reg_fd;
    pthread_mutex_unlock(&net->mu);
    size_t n = 3 + (size_t)net->npeers;
    if (n > cap) {
      struct pollfd *grown = realloc(fds, n * sizeof(*fds));
      if (!grown) {
        usleep(100000); /* out of memory: try again */
        continue;
      }
      fds = grown;
      cap = n;
    }
    fds[0] = (struct pollfd){.fd = net->wake[0], .events = POLLIN};
    fds[1] = (struct pollfd){.fd = net->listen_fd, .events = POLLIN};
    fds[2] = (struct pollfd){.fd = reg_fd, .events = POLLIN};
    for (int i = 0; i < net->npeers; i++)
      fds[3 + i] = (struct pollfd){.fd = net->peers[i].in_fd, .events = POLLIN};
    if (poll(fds, n, -1) < 0)
      continue;
    if (atomic_load(&net->stopping))
      break;
    if (fds[2].revents)
      on_root_message(c, net);
    for (int i = 0; i < net->npeers && i + 3 < (int)n; i++)
      if (fds[3 + i].revents && net->peers[i].in_fd >= 0)
        on_peer_message(c, net, &net->peers[i]);
    if (fds[1].revents)
      accept_peer(c, net);
  }
  free(fds);
  emu_clique_unref(c);
  return NULL;
}

/* A process that exits with communicators alive: its connections close without a goodbye, as when
 * a real process exits, and the exit waits (1 s at most) until the peers' connections have closed
 * as well, so that every process's service thread sees the others go and says so, however close
 * together the processes exit. A process that released its communicators has nothing here. */
__attribute__((destructor)) static void close_without_goodbye_at_exit(void) {
  pthread_mutex_lock(&served_mu);
  bool any = false;
  for (struct emu_net *net = served; net; net = net->next_served) {
    if (atomic_load(&net->stopping))
      continue;
    pthread_mutex_lock(&net->mu);
    for (int i = 0; i < net->npeers; i++) {
      pthread_mutex_lock(&net->peers[i].send_mu);
      if (net->peers[i].out_fd >= 0) {
        shutdown(net->peers[i].out_fd, SHUT_WR);
        any = true;
      }
      pthread_mutex_unlock(&net->peers[i].send_mu);
    }
    pthread_mutex_unlock(&net->mu);
  }
  for (int waited_ms = 0; any && waited_ms < 1000; waited_ms += 5) {
    bool open = false;
    for (struct emu_net *net = served; net; net = net->next_served)
      open |= !atomic_load(&net->stopping) && atomic_load(&net->open_ins) > 0;
    if (!open)
      break;
    usleep(5000);
  }
  pthread_mutex_unlock(&served_mu);
}
