/* The environment knobs, read once: NCCLEMU_DEVICES, NCCLEMU_OP_DELAY_US,
 * NCCLEMU_DESTROY_TIMEOUT_MS, NCCLEMU_EXIT_WAITS, NCCLEMU_FAIL=fn[:nth]=code[,...] and
 * NCCLEMU_HANG=fn[:nth][,...]. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu.h"

#define MAX_KNOBS 64

struct knob {
  char fn[64];
  long nth; /* 0: every call */
  enum emu_knob kind;
  int code;
  atomic_long calls;
};

/* Written once under pthread_once, read-only afterwards; only the call counters change. */
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;
static struct knob knobs[MAX_KNOBS];
static int nknobs;
static unsigned op_delay_us;
static unsigned destroy_timeout_ms;
static bool exit_waits;
static int device_count = 8;

static const struct {
  const char *name;
  int code;
} code_names[] = {
    {"ncclSuccess", ncclSuccess},
    {"ncclUnhandledCudaError", ncclUnhandledCudaError},
    {"ncclSystemError", ncclSystemError},
    {"ncclInternalError", ncclInternalError},
    {"ncclInvalidArgument", ncclInvalidArgument},
    {"ncclInvalidUsage", ncclInvalidUsage},
    {"ncclRemoteError", ncclRemoteError},
    {"ncclInProgress", ncclInProgress},
    {"cudaSuccess", cudaSuccess},
    {"cudaErrorInvalidValue", cudaErrorInvalidValue},
    {"cudaErrorMemoryAllocation", cudaErrorMemoryAllocation},
    {"cudaErrorInitializationError", cudaErrorInitializationError},
    {"cudaErrorInvalidDevicePointer", cudaErrorInvalidDevicePointer},
    {"cudaErrorInvalidMemcpyDirection", cudaErrorInvalidMemcpyDirection},
    {"cudaErrorNoDevice", cudaErrorNoDevice},
    {"cudaErrorInvalidDevice", cudaErrorInvalidDevice},
    {"cudaErrorInvalidResourceHandle", cudaErrorInvalidResourceHandle},
    {"cudaErrorIllegalState", cudaErrorIllegalState},
    {"cudaErrorNotReady", cudaErrorNotReady},
    {"cudaErrorNotSupported", cudaErrorNotSupported},
    {"cudaErrorUnknown", cudaErrorUnknown},
};

static void knob_warn(const char *var, const char *item) {
  fprintf(stderr, "NCCLEMU: ignoring bad %s entry '%s'\n", var, item);
}

static bool parse_long(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end)
    return false;
  *out = v;
  return true;
}

static bool parse_code(const char *s, int *out) {
  long v;
  if (parse_long(s, &v)) {
    *out = (int)v;
    return true;
  }
  for (size_t i = 0; i < sizeof(code_names) / sizeof(code_names[0]); i++)
    if (strcmp(s, code_names[i].name) == 0) {
      *out = code_names[i].code;
      return true;
    }
  return false;
}

/* One entry: fn[:nth][=code]; code is required for FAIL and absent for HANG. */
static void parse_entry(const char *var, const char *entry, enum emu_knob kind) {
  if (nknobs == MAX_KNOBS)
    return;
  struct knob *k = &knobs[nknobs];
  char item[256];
  if (strlen(entry) >= sizeof(item)) {
    knob_warn(var, entry);
    return;
  }
  strcpy(item, entry);
  char *eq = strchr(item, '=');
  if ((kind == EMU_KNOB_FAIL) != (eq != NULL)) {
    knob_warn(var, entry);
    return;
  }
  if (eq) {
    *eq = '\0';
    if (!parse_code(eq + 1, &k->code)) {
      knob_warn(var, entry);
      return;
    }
  }
  char *colon = strchr(item, ':');
  k->nth = 0;
  if (colon) {
    *colon = '\0';
    if (!parse_long(colon + 1, &k->nth) || k->nth < 1) {
      knob_warn(var, entry);
      return;
    }
  }
  if (!*item || strlen(item) >= sizeof(k->fn)) {
    knob_warn(var, entry);
    return;
  }
  strcpy(k->fn, item);
  k->kind = kind;
  atomic_init(&k->calls, 0);
  nknobs++;
}

static void parse_list(const char *var, enum emu_knob kind) {
  const char *v = getenv(var);
  if (!v || !*v)
    return;
  char *copy = strdup(v);
  if (!copy)
    return;
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    while (isspace((unsigned char)*item))
      item++;
    parse_entry(var, item, kind);
  }
  free(copy);
}

static void knobs_init(void) {
  long v;
  const char *s = getenv("NCCLEMU_DEVICES");
  if (s && *s) {
    if (parse_long(s, &v) && v >= 0 && v <= 1024)
      device_count = (int)v;
    else
      knob_warn("NCCLEMU_DEVICES", s);
  }
  s = getenv("NCCLEMU_OP_DELAY_US");
  if (s && *s) {
    if (parse_long(s, &v) && v >= 0 && v <= 600000000L)
      op_delay_us = (unsigned)v;
    else
      knob_warn("NCCLEMU_OP_DELAY_US", s);
  }
  s = getenv("NCCLEMU_DESTROY_TIMEOUT_MS");
  if (s && *s) {
    if (parse_long(s, &v) && v >= 0 && v <= 86400000L)
      destroy_timeout_ms = (unsigned)v;
    else
      knob_warn("NCCLEMU_DESTROY_TIMEOUT_MS", s);
  }
  s = getenv("NCCLEMU_EXIT_WAITS");
  if (s && *s) {
    if (strcmp(s, "0") == 0 || strcmp(s, "1") == 0)
      exit_waits = s[0] == '1';
    else
      knob_warn("NCCLEMU_EXIT_WAITS", s);
  }
  parse_list("NCCLEMU_FAIL", EMU_KNOB_FAIL);
  parse_list("NCCLEMU_HANG", EMU_KNOB_HANG);
}

enum emu_knob emu_rt_knob(const char *fn, int *code) {
  pthread_once(&knobs_once, knobs_init);
  enum emu_knob result = EMU_KNOB_NONE;
  for (int i = 0; i < nknobs; i++) {
    struct knob *k = &knobs[i];
    if (strcmp(k->fn, fn) != 0)
      continue;
    long call = atomic_fetch_add(&k->calls, 1) + 1;
    if (k->nth != 0 && k->nth != call)
      continue;
    /* a failure wins over a hang when both match the same call */
    if (k->kind == EMU_KNOB_FAIL) {
      *code = k->code;
      result = EMU_KNOB_FAIL;
    } else if (result == EMU_KNOB_NONE) {
      result = EMU_KNOB_HANG;
    }
  }
  return result;
}

unsigned emu_rt_op_delay_us(void) {
  pthread_once(&knobs_once, knobs_init);
  return op_delay_us;
}

bool emu_rt_exit_waits(void) {
  pthread_once(&knobs_once, knobs_init);
  return exit_waits;
}

unsigned emu_rt_destroy_timeout_ms(void) {
  pthread_once(&knobs_once, knobs_init);
  return destroy_timeout_ms;
}

int emu_rt_device_count(void) {
  pthread_once(&knobs_once, knobs_init);
  return device_count;
}

void emu_nanosleep_us(unsigned us) {
  struct timespec ts = {.tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
