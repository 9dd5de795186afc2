/* The collective watchdog (mn_watchdog.c): a collective that waits longer
 * than collective_timeout for a stalled or dead rank ends the job. */
#ifndef MN_WATCHDOG_H
#define MN_WATCHDOG_H

#include <stddef.h>
#include "mn_status.h"

typedef struct mn_watchdog mn_watchdog;
/* Collective over c->world; the caller stores it in c->watch. */
mn_status mn_watchdog_start(mn_comm *c, double timeout, mn_watchdog **out);
/* Around the gradient allreduce: rank 0 names the ranks that did not
 * arrive in time. */
void mn_watchdog_enter(mn_watchdog *w, const char *what, size_t iteration);
void mn_watchdog_leave(mn_watchdog *w);
void mn_watchdog_stop(mn_watchdog *w);
/* Around every other collective, until mn_unguard; nested guards extend
 * the outermost. No-ops without c->watch. */
void mn_guard(const mn_comm *c, const char *what);
/* Collective: a watchdog of timeout seconds in c->watch, none for 0 or one
 * rank. The caller agrees on the status and closes on failure: other ranks
 * may hold one. */
mn_status mn_watchdog_open(mn_comm *c, double timeout);
void mn_watchdog_close(mn_comm *c);
/* c->watch's timeout in seconds, 0 without one. */
double mn_watchdog_timeout(const mn_comm *c);
void mn_unguard(const mn_comm *c);

#endif
