/* double_buffering=1: the allreduce of step t's gradient runs on a thread of
 * its own while the main thread computes step t+1; the update of step t+1
 * applies the mean of step t (one step stale, as in ChainerMN), and the first
 * step applies nothing. At the hook, mn_dbuf_exchange waits for the previous
 * mean, swaps it with the fresh gradient in one pass (the arena gets the
 * mean, the send buffer the gradient) and starts the thread again.
 *
 * With double_buffering_local=1 (the default; Zhu et al.'s delayed gradient
 * averaging) the update of step t+1 applies this rank's own gradient of
 * step t+1 fresh, plus step t's mean less this rank's own gradient of step
 * t: what the rank took alone one step early is replaced by its share of the
 * mean one step late. The ranks' models drift apart by their own recent
 * gradients (each rank's difference decays with the momentum), while their
 * average follows fresh steps; averaged before each save (mn_optimizer_align),
 * they are one model again. A stale mean alone is stable only on curvature
 * 38 times lower at momentum 0.9 (docs/internals.md); this keeps the fresh
 * bound: the demo's detector lost 0.5 mAP points where the stale mean with
 * its three corrections lost 3.4 (docs/benchmarks.md).
 *
 * The thread has its own communicator (the same algorithm and dtype, a dup
 * of the world), so its collectives never meet the main thread's; it needs
 * MPI_THREAD_MULTIPLE. Its send buffer is that communicator's arena, so the
 * one-node shared-memory allreduce still reads it in place. The main thread
 * blocks only in mn_dbuf_exchange, mn_dbuf_pending and mn_dbuf_stop, inside
 * the watchdog's window where the caller has one. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "train/optimizer/mn_dbuf.h"
#include "train/optimizer/mn_optimizer.h"
#include "coll/mn_coll.h"
#include "transport/mn_shm.h"

struct mn_dbuf {
    mn_comm *comm;          /* the thread's */
    float *send;            /* the gradient in flight, then its mean */
    float *own;             /* local: this rank's gradient of the last exchange; else NULL */
    float **arrays;         /* send cut like the arena */
    const size_t *lens;     /* the optimizer's */
    int n;
    size_t total;
    int has_mean;           /* send holds a finished mean not yet applied */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int busy, quit, started;
};

static void *run(void *arg)
{
    mn_dbuf *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->busy && !d->quit) pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit) break;
        pthread_mutex_unlock(&d->mu);
        if (mn_comm_mean_grad(d->comm, d->arrays, d->lens, d->n) != MN_OK)
            mn_abort(d->comm, "gradient allreduce failed (double buffering)");
        pthread_mutex_lock(&d->mu);
        d->busy = 0;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void wait_idle(mn_dbuf *d)
{
    pthread_mutex_lock(&d->mu);
    while (d->busy) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

mn_status mn_dbuf_start(mn_comm *c, const size_t *lens, int n, size_t total, int local, mn_dbuf **out)
{
    *out = NULL;
    mn_status st;
    mn_comm *tc = mn_comm_for_thread(c, "double_buffering=1", &st);
    if (st != MN_OK) return st;
    mn_dbuf *d = calloc(1, sizeof *d);
    if (d) d->arrays = calloc((size_t)n + 1, sizeof *d->arrays);
    if (d && local) d->own = calloc(total + 1, sizeof(float));
    /* Agreed before each collective step, so that no rank waits in one alone. */
    st = mn_agree(c, d && d->arrays && (d->own || !local) ? MN_OK : MN_ERR_NOMEM);
    if (d) d->comm = tc;
    else mn_comm_free(tc);
    if (st == MN_OK) st = mn_comm_arena_alloc(d->comm, total, &d->send);
    if (st == MN_OK) {
        d->lens = lens;
        d->n = n;
        d->total = total;
        size_t off = 0;
        for (int i = 0; i < n; off += lens[i], ++i) d->arrays[i] = d->send + off;
        pthread_mutex_init(&d->mu, NULL);
        pthread_cond_init(&d->cv, NULL);
        d->started = pthread_create(&d->thread, NULL, run, d) == 0;
        if (!d->started) { mn_error(c, "could not start the double-buffering thread"); st = MN_ERR_NOMEM; }
    }
    st = mn_agree(c, st);
    if (st != MN_OK) {
        mn_dbuf_stop(d);
        return st;
    }
    *out = d;
    return MN_OK;
}

int mn_dbuf_exchange(mn_dbuf *d, float *arena)
{
    wait_idle(d);
    float *s = d->send;
    int had = d->has_mean;
    if (d->own)
        for (size_t i = 0; i < d->total; ++i) {
            float g = arena[i];
            arena[i] = mn_dbuf_local(g, s[i], &d->own[i], had);
            s[i] = g;
        }
    else
        for (size_t i = 0; i < d->total; ++i) {
            float t = had ? s[i] : 0;
            s[i] = arena[i];
            arena[i] = t;
        }
    d->has_mean = 1;
    pthread_mutex_lock(&d->mu);
    d->busy = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return had;
}

float *mn_dbuf_pending(mn_dbuf *d, int *has_mean)
{
    wait_idle(d);
    *has_mean = d->has_mean;
    return d->send;
}

void mn_dbuf_set_pending(mn_dbuf *d, int has_mean)
{
    wait_idle(d);
    d->has_mean = has_mean;
    mn_dbuf_align(d);
}

void mn_dbuf_align(mn_dbuf *d)
{
    wait_idle(d);
    if (d->own && d->has_mean) memcpy(d->own, d->send, d->total * sizeof(float));
}

void mn_dbuf_stop(mn_dbuf *d)
{
    if (!d) return;
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        while (d->busy) pthread_cond_wait(&d->cv, &d->mu);
        d->quit = 1;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
    }
    if (d->comm) {
        mn_comm_arena_free(d->comm, d->send);
        mn_comm_free(d->comm);
    }
    free(d->arrays);
    free(d->own);
    free(d);
}

void mn_dbuf_compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda, int apply)
{
    for (size_t j = 0; j < n; ++j) {
        float q = 0.95f * v[j] + 0.05f * u[j] * u[j];
        if (apply && isfinite(q)) {   /* a NaN or Inf mean (which nonfinite=skip drops) would stay in v for good */
            v[j] = q;
            float d = q > 0 ? lambda * u[j] * u[j] / sqrtf(q) * (w[j] - prev[j]) : 0, lim = fabsf(u[j]);
            u[j] -= fminf(fmaxf(d, -lim), lim);
        }
        prev[j] = eval[j];
    }
}
