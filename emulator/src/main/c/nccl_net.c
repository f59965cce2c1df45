/* Loopback sockets and the framed messages that the processes of a clique exchange: a header
 * (type, size) then the payload. Every process of a clique is on this host, so integers travel in
 * host order. Sends never raise SIGPIPE: a peer that is gone is an error code, not a signal. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emu.h"

struct wire_hdr {
  uint32_t type;
  uint32_t pad;
  uint64_t size;
};

/* Larger messages are refused: no operation of a test or a sample comes near. */
#define MAX_MESSAGE ((uint64_t)1 << 34)

static void loopback(struct sockaddr_in *a, uint16_t port) {
  memset(a, 0, sizeof(*a));
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a->sin_port = htons(port);
}

int emu_net_listen(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a;
  loopback(&a, 0);
  socklen_t len = sizeof(a);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

int emu_net_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a;
  loopback(&a, port);
  int r;
  while ((r = connect(fd, (struct sockaddr *)&a, sizeof(a))) != 0 && errno == EINTR) {
  }
  if (r != 0) {
    close(fd);
    return -1;
  }
  int one = 1; /* small control messages must not wait for Nagle */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

static int send_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int emu_net_send(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
  if (fd < 0)
    return -1;
  struct wire_hdr h = {.type = type, .size = (uint64_t)alen + blen};
  if (send_all(fd, &h, sizeof(h)) != 0 || (alen && send_all(fd, a, alen) != 0) ||
      (blen && send_all(fd, b, blen) != 0))
    return -1;
  return 0;
}

/* 0: all read; 1: the connection closed before the first byte; -1: error or closed midway. */
static int recv_all(int fd, void *buf, size_t len) {
  char *p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t n = recv(fd, p + got, len - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      return got == 0 ? 1 : -1;
    if (n < 0)
      return -1;
    got += (size_t)n;
  }
  return 0;
}

int emu_net_recv(int fd, struct emu_msg *m) {
  struct wire_hdr h;
  m->data = NULL;
  int r = recv_all(fd, &h, sizeof(h));
  if (r != 0)
    return r;
  if (h.size > MAX_MESSAGE)
    return -1;
  m->type = h.type;
  m->size = h.size;
  if (h.size == 0)
    return 0;
  m->data = malloc(h.size);
  if (!m->data || recv_all(fd, m->data, h.size) != 0) {
    free(m->data);
    m->data = NULL;
    return -1;
  }
  return 0;
}

void emu_net_close(int *fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}
