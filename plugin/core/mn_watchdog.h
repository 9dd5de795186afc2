/* A collective waiting past collective_timeout ends the job (mn_watchdog.c). */
#ifndef MN_WATCHDOG_H
#define MN_WATCHDOG_H

#include <stddef.h>
#include "core/mn_status.h"

typedef struct mn_watchdog mn_watchdog;
/* Collective; the caller stores it in c->watch. */
mn_status mn_watchdog_start(mn_comm *c, double timeout, mn_watchdog **out);
/* Around the gradient allreduce: rank 0 names late ranks. */
void mn_watchdog_enter(mn_watchdog *w, const char *what, size_t iteration);
void mn_watchdog_leave(mn_watchdog *w);
void mn_watchdog_stop(mn_watchdog *w);
/* Around other collectives, until mn_unguard (nestable); no-op without
 * c->watch. */
void mn_guard(const mn_comm *c, const char *what);
/* Collective: sets c->watch, none for 0 s or one rank. On failure the
 * caller agrees and closes: other ranks may hold one. */
mn_status mn_watchdog_open(mn_comm *c, double timeout);
void mn_watchdog_close(mn_comm *c);
/* Seconds; 0 without one. */
double mn_watchdog_timeout(const mn_comm *c);
void mn_unguard(const mn_comm *c);

#endif
