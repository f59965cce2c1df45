/* Native backtraces of creations on threads with no Java frames (ng_bt.c). */
#ifndef NG_BT_H
#define NG_BT_H

#include <stdint.h>

#include "ng_caller.h"

#pragma GCC visibility push(hidden)

/* The site of a creation: a backtrace on threads with no Java frames, else the caller's plain site. */
ng_site *ng_site_of(ng_caller *c);
void ng_bt_init(void);
/* Formatted for Java, on request: malloc'ed, the caller frees. */
char *ng_site_backtrace(ng_site *s);
/* The same for a site as Java names it (long caller); NULL for none. */
char *ng_bt_of_caller(int64_t caller);

#pragma GCC visibility pop

#endif
