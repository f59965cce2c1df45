/* NCCL's profiler plugin, what Java reads of it (ng_prof.c). */
#ifndef NG_PROF_H
#define NG_PROF_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* At load: the fork handler (a fork's child makes the locks here anew). */
void ng_prof_init(void);
/* Test mode only: takes (1) or lets go of (0) every lock here, as a thread caught by a fork holds one. */
void ng_prof_hold_locks(int hold);
/* The application's NCCL_PROFILER_PLUGIN (NULL: unset, "none": none); 0 and the last error set
 * if it cannot be loaded. */
int ng_prof_user_plugin(const char *name);
/* The profiler records of communicator inits on this thread between mark and take. */
void ng_prof_mark(void);
void ng_prof_take(int *first, int *count);
int ng_prof_inits_since(int64_t seq, int64_t *out, int n);
int ng_prof_comms(int64_t *out, int n);
void ng_prof_claim(int64_t record);
int ng_prof_in_flight(int64_t record, int64_t *out, int n);
int ng_prof_in_flight_names(int64_t record, const char **func, const char **datatype);
const char *ng_prof_comm_name(int64_t record);
#define NG_PROF_RECORD_LONGS 10

#pragma GCC visibility pop

#endif
