/* What the test plugin (user_plugin.c) logs. */
#ifndef NG_USER_PLUGIN_H
#define NG_USER_PLUGIN_H

#include <stdint.h>

enum { NGP_INIT = 1, NGP_START, NGP_STOP, NGP_RECORD, NGP_FINALIZE };
#define NGP_MAX 1024

typedef struct {
  int what;
  uint64_t comm_id;
  int nranks, rank, state;
  const char *name;
  void *context;
  uint64_t type;
  void *parent; /* start: the parent given; stop, record: the handle given */
  unsigned char descr[160];
} ngp_call;

#endif
