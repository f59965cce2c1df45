/* A small test harness for the emulator. Each case runs in its own child process, with its own
 * environment: the emulator reads its knobs once per process and writes its report at exit, and a
 * crash or a hang must fail one case, not the run. A case may name a check that runs in the
 * parent after the child exited (to read the child's exit report). */
#ifndef NCCLEMU_TEST_H
#define NCCLEMU_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl_api.h"

struct test_case {
  const char *name;
  void (*run)(void);
  /* "KEY=VALUE KEY=VALUE"; '@' in a value is the case's scratch directory */
  const char *env;
  /* runs in the parent after the child exited; returns the number of failures */
  int (*after)(int status, const char *dir);
};

static int test_failures; /* incremented atomically: rank threads check concurrently */
#define FAILED() __atomic_fetch_add(&test_failures, 1, __ATOMIC_SEQ_CST)

#define CHECK(cond)                                                                               \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                    \
      FAILED();                                                                                   \
    }                                                                                             \
  } while (0)

#define CHECK_EQ(actual, expected)                                                                \
  do {                                                                                            \
    long long a_ = (long long)(actual), e_ = (long long)(expected);                               \
    if (a_ != e_) {                                                                               \
      fprintf(stderr, "%s:%d: %s is %lld, expected %s (%lld)\n", __FILE__, __LINE__, #actual, a_, \
              #expected, e_);                                                                     \
      FAILED();                                                                                   \
    }                                                                                             \
  } while (0)

/* A failure after which the case cannot go on. */
#define REQUIRE_EQ(actual, expected)                                                              \
  do {                                                                                            \
    int before_ = __atomic_load_n(&test_failures, __ATOMIC_SEQ_CST);                              \
    CHECK_EQ(actual, expected);                                                                   \
    if (__atomic_load_n(&test_failures, __ATOMIC_SEQ_CST) != before_)                             \
      exit(1);                                                                                    \
  } while (0)

static inline const char *test_dir(void) { return getenv("NCCLEMU_TEST_DIR"); }

static inline char *test_path(const char *name) {
  static __thread char buf[512];
  snprintf(buf, sizeof(buf), "%s/%s", test_dir(), name);
  return buf;
}

/* Reads a whole file; NULL when it does not exist. The caller frees. */
static inline char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap)
      buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Whether text matches a pattern in which '*' stands for one hex number (0x...): for the
 * commIds of an exit report, which cases that are not about them leave open. */
static inline bool matches_with_hex(const char *text, const char *pattern) {
  for (; *pattern; pattern++) {
    if (*pattern == '*') {
      if (strncmp(text, "0x", 2) != 0)
        return false;
      text += 2;
      const char *start = text;
      while ((*text >= '0' && *text <= '9') || (*text >= 'a' && *text <= 'f'))
        text++;
      if (text == start)
        return false;
    } else if (*text++ != *pattern) {
      return false;
    }
  }
  return *text == '\0';
}

/*
 * An after-exit check: the emulator's exit report (NCCLEMU_REPORT=<dir>/report) equals the file
 * <dir>/expected that the case wrote while it ran ('*' in it: any hex number). Returns the
 * number of failures (0 or 1).
 */
static inline int exit_report_is_as_expected(int status, const char *dir) {
  (void)status;
  char path[512];
  snprintf(path, sizeof(path), "%s/report", dir);
  char *report = read_file(path);
  snprintf(path, sizeof(path), "%s/expected", dir);
  char *expected = read_file(path);
  int failures = !report || !expected || !matches_with_hex(report, expected);
  if (failures)
    fprintf(stderr, "report:\n%s\nexpected:\n%s\n", report ? report : "(none)",
            expected ? expected : "(none)");
  free(report);
  free(expected);
  return failures;
}

static inline int count_lines(const char *s) {
  int n = 0;
  for (; s && *s; s++)
    n += *s == '\n';
  return n;
}

/* ---------------------------------------------------------------- reading logs */

static inline int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* The nth (from 0) line holding needle, copied into a static buffer; "" when there is none. */
static inline const char *line_with(const char *text, const char *needle, int nth) {
  static __thread char line[2048];
  line[0] = '\0';
  for (const char *p = text; p && *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len < sizeof(line)) {
      memcpy(line, p, len);
      line[len] = '\0';
      if (strstr(line, needle) && nth-- == 0)
        return line;
    }
    p = end ? end + 1 : NULL;
  }
  line[0] = '\0';
  return line;
}

/* The nth line holding both a and b. */
static inline const char *line_with2(const char *text, const char *a, const char *b, int nth) {
  for (int i = 0;; i++) {
    const char *line = line_with(text, a, i);
    if (!*line || (strstr(line, b) && nth-- == 0))
      return line;
  }
}

/* The value of key= in a line ("" when absent). */
static inline const char *field(const char *line, const char *key) {
  static __thread char value[32]; /* short values: numbers, names, handles */
  char pat[64];
  snprintf(pat, sizeof(pat), " %s=", key);
  const char *p = strstr(line, pat);
  value[0] = '\0';
  if (p) {
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    if (n >= sizeof(value))
      n = sizeof(value) - 1;
    memcpy(value, p, n);
    value[n] = '\0';
  }
  return value;
}

static inline unsigned long long hex_field(const char *line, const char *key) {
  return strtoull(field(line, key), NULL, 16);
}

/* ---------------------------------------------------------------- NCCL's hashes, for checking */

/* eatHash / digestHash / getHash as NVIDIA/nccl v2.29.3-1 src/include/bitops.h has them,
 * transcribed here independently of the emulator; test_nccl_profiler.c checks this copy
 * against values computed by compiling NCCL's own header (hashes_match_nccls_own_code). */
static inline void eat_hash(uint64_t acc[2], const void *bytes, size_t size) {
  const char *ptr = bytes;
  acc[0] ^= size;
  while (size != 0) {
    acc[0] += acc[1];
    acc[1] ^= acc[0];
    acc[0] ^= acc[0] >> 31;
    acc[0] *= 0x9de62bbc8cef3ce3ULL;
    acc[1] ^= acc[1] >> 32;
    acc[1] *= 0x485cd6311b599e79ULL;
    size_t chunk = size < 8 ? size : 8;
    uint64_t x = 0;
    memcpy(&x, ptr, chunk);
    ptr += chunk;
    size -= chunk;
    acc[0] += x;
  }
}

static inline uint64_t digest_hash(const uint64_t acc[2]) {
  uint64_t h = acc[0];
  h ^= h >> 31;
  h *= 0xbac3bd562846de6bULL;
  h += acc[1];
  h ^= h >> 32;
  h *= 0x995a187a14e7b445ULL;
  return h;
}

static inline uint64_t id_hash(const ncclUniqueId *id) {
  uint64_t acc[2] = {1, 1};
  eat_hash(acc, id->internal, sizeof(id->internal));
  return digest_hash(acc);
}

/* a child's hash: (parent hash, split count, color), as src/init.cc for split and shrink */
static inline uint64_t child_hash(uint64_t parent, int count, int color) {
  uint64_t acc[2] = {1, 1};
  eat_hash(acc, &parent, sizeof(parent));
  eat_hash(acc, &count, sizeof(count));
  eat_hash(acc, &color, sizeof(color));
  return digest_hash(acc);
}

static inline uint64_t hash_combine(uint64_t base, uint64_t value) {
  uint64_t acc[2] = {1, 1};
  eat_hash(acc, &base, sizeof(base));
  eat_hash(acc, &value, sizeof(value));
  return digest_hash(acc);
}

/* ---------------------------------------------------------------- stderr capture */

static int saved_stderr = -1;

static inline void capture_stderr(void) {
  fflush(stderr);
  saved_stderr = dup(2);
  int fd = open(test_path("stderr"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  dup2(fd, 2);
  close(fd);
}

/* Restores stderr and returns what was written meanwhile (the caller frees). */
static inline char *captured_stderr(void) {
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  char *s = read_file(test_path("stderr"));
  fputs(s ? s : "", stderr); /* still visible in the test log */
  return s;
}

/* One NCCL warning line: host:pid:tid [dev] NCCL WARN <message>, and nothing else. */
static inline bool is_one_warn_line(const char *s, const char *message) {
  if (!s || count_lines(s) != 1)
    return false;
  const char *w = strstr(s, " NCCL WARN ");
  if (!w)
    return false;
  int pid, tid, dev;
  const char *colon = strchr(s, ':');
  if (!colon || colon > w || sscanf(colon, ":%d:%d [%d]", &pid, &tid, &dev) != 3 ||
      pid != getpid())
    return false;
  return strncmp(w + strlen(" NCCL WARN "), message, strlen(message)) == 0;
}

/* Runs call with stderr captured; checks the result and that exactly one WARN line starting with
 * the message (formatted with the handle) was written. */
#define EXPECT_ONE_WARN(call, result, ...)                                                        \
  do {                                                                                            \
    char msg_[256];                                                                               \
    snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                                    \
    capture_stderr();                                                                             \
    ncclResult_t r_ = (call);                                                                     \
    char *err_ = captured_stderr();                                                               \
    CHECK_EQ(r_, result);                                                                         \
    if (!is_one_warn_line(err_, msg_)) {                                                          \
      fprintf(stderr, "%s:%d: expected one line '... NCCL WARN %s', got:\n%s", __FILE__,          \
              __LINE__, msg_, err_ ? err_ : "(nothing)\n");                                       \
      FAILED();                                                                                   \
    }                                                                                             \
    free(err_);                                                                                   \
  } while (0)

/* ---------------------------------------------------------------- threads and gates */

struct gate {
  sem_t sem;
};

static inline void gate_init(struct gate *g) { sem_init(&g->sem, 0, 0); }
static inline void gate_open(struct gate *g) { sem_post(&g->sem); }

/* A host function that holds a stream until the gate opens: a deterministic pending state. */
static inline void wait_at_gate(void *arg) {
  struct gate *g = arg;
  while (sem_wait(&g->sem) != 0 && errno == EINTR) {
  }
}

static inline void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs fn(0..n-1) on n threads and joins them. */
static inline void run_threads(int n, void *(*fn)(void *)) {
  pthread_t t[64];
  for (long i = 0; i < n; i++)
    pthread_create(&t[i], NULL, fn, (void *)i);
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
}

/* ---------------------------------------------------------------- the runner */

static inline void apply_env(const char *env, const char *dir) {
  if (!env)
    return;
  char *copy = strdup(env), *save = NULL;
  for (char *kv = strtok_r(copy, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
    char value[1024], *eq = strchr(kv, '=');
    size_t n = 0;
    *eq = '\0';
    for (const char *p = eq + 1; *p && n < sizeof(value) - 256; p++) {
      if (*p == '@')
        n += (size_t)snprintf(value + n, sizeof(value) - n, "%s", dir);
      else
        value[n++] = *p;
    }
    value[n] = '\0';
    setenv(kv, value, 1);
  }
  free(copy);
}

static inline void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char path[1024];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(dir);
}

/* argv[1], when given, selects the cases whose name contains it. */
static inline int run_cases(const struct test_case *cases, int n, int argc, char **argv) {
  int failed = 0, ran = 0;
  for (int i = 0; i < n; i++) {
    const struct test_case *c = &cases[i];
    if (argc > 1 && !strstr(c->name, argv[1]))
      continue;
    char dir[] = "/tmp/ncclemu-test-XXXXXX";
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      return 2;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      setenv("NCCLEMU_TEST_DIR", dir, 1);
      apply_env(c->env, dir);
      alarm(90); /* a hung case is killed and fails */
      c->run();
      fflush(stdout);
      exit(__atomic_load_n(&test_failures, __ATOMIC_SEQ_CST) ? 1 : 0); /* exit, not _exit: the emulator's exit report runs */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int failures = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (WIFSIGNALED(status))
        fprintf(stderr, "  killed by signal %d%s\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (timeout: hung)" : "");
      failures++;
    }
    if (c->after)
      failures += c->after(status, dir);
    remove_dir(dir);
    printf("%s %s\n", failures ? "FAIL" : "ok  ", c->name);
    failed += failures != 0;
    ran++;
  }
  printf("%d of %d cases passed\n", ran - failed, ran);
  return failed ? 1 : 0;
}

#define TEST_MAIN(cases)                                                                          \
  int main(int argc, char **argv) {                                                               \
    setvbuf(stdout, NULL, _IOLBF, 0);                                                             \
    return run_cases(cases, (int)(sizeof(cases) / sizeof(cases[0])), argc, argv);                 \
  }

#endif
