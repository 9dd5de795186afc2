/* The collective watchdog (mn_watchdog.c): no collective of a training job
 * waits longer than collective_timeout for a rank that stalled or died. */
#ifndef MN_WATCHDOG_H
#define MN_WATCHDOG_H

#include <stddef.h>
#include "mn_status.h"

typedef struct mn_watchdog mn_watchdog;
/* Collective over c->world; the caller stores it in c->watch for mn_guard. */
mn_status mn_watchdog_start(mn_comm *c, double timeout, mn_watchdog **out);
/* The gradient allreduce: every rank sends rank 0 an arrival token, rank 0
 * waits for all of them and names the late ranks; then the timer is armed
 * until leave. */
void mn_watchdog_enter(mn_watchdog *w, const char *what, size_t iteration);
void mn_watchdog_leave(mn_watchdog *w);
void mn_watchdog_stop(mn_watchdog *w);
/* Every other collective of the training loop (sync_bn, the loss, the resize
 * broadcast, evaluation, saves, agreements): the timer alone, armed from
 * entry to exit, so a rank that never arrives ends the job after the
 * timeout. Nested guards extend the outermost one. No-ops when c->watch is
 * NULL (no training job, or collective_timeout=0). */
void mn_guard(const mn_comm *c, const char *what);
/* Collective: a watchdog of timeout seconds in c->watch (none for timeout
 * 0 or one rank), so the command's collectives can be guarded; the caller
 * agrees on the status (and closes on failure: the others may hold one);
 * close stops it. The training driver, info and bench allreduce/replica
 * use these. */
mn_status mn_watchdog_open(mn_comm *c, double timeout);
void mn_watchdog_close(mn_comm *c);
/* c->watch's timeout in seconds; 0 without one (collective_timeout=0). */
double mn_watchdog_timeout(const mn_comm *c);
void mn_unguard(const mn_comm *c);

#endif
