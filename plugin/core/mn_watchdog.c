/* The collective watchdog. Before each gradient allreduce every rank sends
 * rank 0 an arrival token on a private communicator, so that rank 0 can
 * name the ranks that did not arrive; the collective then runs under a
 * timer thread that aborts the job past the deadline. Other collectives
 * get the timer alone: tokens for sync_bn's many small allreduces would
 * cost more than they tell. The timer thread never calls MPI
 * (MPI_THREAD_FUNNELED): mn_die ends the process, and the launcher the job. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/mn_core.h"
#include "core/mn_fault.h"
#include "core/mn_watchdog.h"

struct mn_watchdog {
    mn_comm *comm;
    MPI_Comm tokens;
    double timeout;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int depth, quit;      /* depth: guards entered and not left; armed while > 0 */
    double deadline;
    size_t step;          /* the newest gradient allreduce's iteration */
    int in_step;          /* armed by that allreduce, not by a guard */
    const char *what;
    MPI_Request *reqs;    /* rank 0: one Irecv per other rank */
    unsigned long long *incoming;   /* their receive buffers */
    unsigned long long *got;        /* the newest token of each rank */
    char *hosts;          /* rank 0: each rank's host, to name a late one */
};

static void *timer_main(void *arg)
{
    mn_watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->quit) {
        if (w->depth == 0) { pthread_cond_wait(&w->wake, &w->lock); continue; }
        double left = w->deadline - mn_now();
        if (left <= 0) {
            char when[80];
            if (w->in_step) snprintf(when, sizeof when, "at iteration %zu", w->step);
            else if (w->step) snprintf(when, sizeof when, "after iteration %zu's gradient allreduce", w->step);
            else snprintf(when, sizeof when, "before the first gradient allreduce");
            mn_error(w->comm, "%s %s did not complete in time (collective_timeout=%.0f s): "
                     "another rank stalled or died; aborting the job", w->what, when, w->timeout);
            mn_die(MN_EXIT_RERUN);
        }
        struct timespec ts;   /* the condition's clock is monotonic too */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double until = ts.tv_sec + ts.tv_nsec * 1e-9 + (left < 0.5 ? left : 0.5);
        ts.tv_sec = (time_t)until;
        ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&w->wake, &w->lock, &ts);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void free_watchdog(mn_watchdog *w)
{
    free(w->reqs);
    free(w->incoming);
    free(w->got);
    free(w->hosts);
    free(w);
}

mn_status mn_watchdog_start(mn_comm *c, double timeout, mn_watchdog **out)
{
    *out = NULL;
    mn_watchdog *w = calloc(1, sizeof *w);
    if (!w) return MN_ERR_NOMEM;
    w->comm = c;
    w->timeout = timeout;
    w->what = "a collective";
    if (MPI_Comm_dup(c->world, &w->tokens) != MPI_SUCCESS) {
        mn_error(c, "MPI_Comm_dup failed starting the collective watchdog");
        free(w);
        return MN_ERR_MPI;
    }
    w->reqs = calloc((size_t)c->size, sizeof *w->reqs);
    w->incoming = calloc((size_t)c->size, sizeof *w->incoming);
    w->got = calloc((size_t)c->size, sizeof *w->got);
    if (c->rank == 0 && !(w->hosts = calloc((size_t)c->size, sizeof c->host)))
        mn_abort(c, "no memory for the watchdog's %d host names", c->size);   /* the others wait in the gather */
    MPI_Gather(c->host, sizeof c->host, MPI_CHAR, w->hosts, sizeof c->host, MPI_CHAR, 0, w->tokens);
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (!w->reqs || !w->incoming || !w->got || pthread_create(&w->thread, NULL, timer_main, w) != 0) {
        mn_error(c, "cannot start the collective watchdog");
        MPI_Comm_free(&w->tokens);
        free_watchdog(w);
        return MN_ERR_NOMEM;
    }
    for (int r = 1; c->rank == 0 && r < c->size; ++r)
        MPI_Irecv(&w->incoming[r], 1, MPI_UNSIGNED_LONG_LONG, r, 0, w->tokens, &w->reqs[r]);
    *out = w;
    return MN_OK;
}

/* Rank 0: wait for every token of this iteration, naming the late ranks. */
static void wait_tokens(mn_watchdog *w, size_t iteration)
{
    unsigned long long token = iteration + 1;   /* as mn_watchdog_enter sends it */
    mn_comm *c = w->comm;
    double deadline = mn_now() + w->timeout;
    for (;;) {
        int done = 1;
        for (int r = 1; r < c->size; ++r) {
            int flag = 0;
            MPI_Test(&w->reqs[r], &flag, MPI_STATUS_IGNORE);
            if (flag) {
                w->got[r] = w->incoming[r];
                MPI_Irecv(&w->incoming[r], 1, MPI_UNSIGNED_LONG_LONG, r, 0, w->tokens, &w->reqs[r]);
            }
            /* A token is this iteration's once got[r] reached it. */
            if (w->got[r] < token) done = 0;
        }
        if (done) return;
        if (mn_now() > deadline) {
            char late[1024] = "";
            size_t n = 0;
            int count = 0;
            for (int r = 1; r < c->size; ++r)
                if (w->got[r] < token) {
                    ++count;
                    if (n < sizeof late - 80)
                        n += (size_t)snprintf(late + n, sizeof late - n, "%s%d (%s)", n ? ", " : "", r,
                                              w->hosts + (size_t)r * sizeof c->host);
                }
            mn_error(c, "%s at iteration %zu: rank%s %s did not arrive within %.0f s (collective_timeout); aborting the job",
                     w->what, iteration, count > 1 ? "s" : "", late, w->timeout);
            mn_die(MN_EXIT_RERUN);
        }
        /* Poll, as MPI's blocking wait does: a sleep would delay every step. */
        sched_yield();
    }
}

/* Arms the timer; the outermost guard sets what, in_step and the deadline. */
static void arm(mn_watchdog *w, const char *what, int in_step, double timeout)
{
    pthread_mutex_lock(&w->lock);
    if (w->depth++ == 0) {
        w->what = what;
        w->in_step = in_step;
        w->deadline = mn_now() + timeout;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

static void disarm(mn_watchdog *w)
{
    pthread_mutex_lock(&w->lock);
    if (w->depth > 0) --w->depth;
    pthread_mutex_unlock(&w->lock);
}

void mn_watchdog_enter(mn_watchdog *w, const char *what, size_t iteration)
{
    if (!w) return;
    mn_comm *c = w->comm;
    w->what = what;
    /* Tokens count iterations from 1 so that 0 means "none yet". */
    unsigned long long token = iteration + 1;
    if (c->rank != 0) MPI_Send(&token, 1, MPI_UNSIGNED_LONG_LONG, 0, 0, w->tokens);
    else wait_tokens(w, iteration);
    pthread_mutex_lock(&w->lock);
    w->step = iteration;
    pthread_mutex_unlock(&w->lock);
    /* Other ranks give rank 0, which can name the late ranks, time to report first. */
    arm(w, what, 1, c->rank == 0 ? w->timeout : 1.5 * w->timeout + 2);
}

void mn_watchdog_leave(mn_watchdog *w)
{
    if (w) disarm(w);
}

void mn_guard(const mn_comm *c, const char *what)
{
    if (c && c->watch) arm(c->watch, what, 0, c->watch->timeout);
}

mn_status mn_watchdog_open(mn_comm *c, double timeout)
{
    if (timeout <= 0 || c->size < 2) return MN_OK;
    return mn_watchdog_start(c, timeout, &c->watch);
}

void mn_watchdog_close(mn_comm *c)
{
    mn_watchdog *w = c->watch;
    c->watch = NULL;
    mn_watchdog_stop(w);
}

double mn_watchdog_timeout(const mn_comm *c)
{
    return c && c->watch ? c->watch->timeout : 0;
}

void mn_unguard(const mn_comm *c)
{
    if (c && c->watch) disarm(c->watch);
}

void mn_watchdog_stop(mn_watchdog *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    for (int r = 1; w->comm->rank == 0 && r < w->comm->size; ++r) {
        MPI_Cancel(&w->reqs[r]);
        MPI_Request_free(&w->reqs[r]);
    }
    MPI_Comm_free(&w->tokens);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    free_watchdog(w);
}
