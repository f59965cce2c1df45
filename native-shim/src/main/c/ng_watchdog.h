/* The exit watchdog (ng_watchdog.c). */
#ifndef NG_WATCHDOG_H
#define NG_WATCHDOG_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Armed by the exit hook when a call never returned: _exit(status) in millis ms unless exit(3)
 * ends the process first. Once: 1 if armed (now or before), 0 if no thread could be started. */
int ng_watchdog_arm(int64_t millis, int status);

#pragma GCC visibility pop

#endif
