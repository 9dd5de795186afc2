/* double_buffering=1 (docs/internals.md): each step sends its gradient and
 * applies the previous step's mean, so the allreduce runs beside the next
 * step's compute. The first fresh_until iterations are averaged fresh, as
 * the blocking mode does; a stale mean is then corrected to the weights it
 * is applied at (compensation), scaled while the rate climbs back
 * (handover), and taken at predicted weights (prediction), where asked.
 * In a GPU run the device twin (mn_dbuf_gpu) serves communicators that pack
 * on the device; the rest stage the gradient through the host's thread. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/optimizer/mn_sync.h"
#include "base/mn_base.h"
#include "train/optimizer/mn_dbuf.h"
#include "train/optimizer/mn_dbuf_gpu.h"
#include "train/optimizer/mn_dbuf_predict.h"
#include "train/optimizer/mn_grad_stage.h"
#include "transport/mn_device.h"
#include "core/mn_watchdog.h"

typedef struct {
    const mn_sync_ctx *x;
    mn_dbuf *host;                /* the host's thread, or NULL */
    struct mn_dbuf_gpu *dev;      /* or the device twin */
    size_t fresh_until;           /* iterations averaged fresh */
    size_t ramp;                  /* double_buffering_handover */
    double ramp_from;             /* its first stale step's fraction of the rate */
    double dc, pk;                /* compensation's lambda0, prediction's k; 0: none */
    int local;                    /* double_buffering_local=1 */
    float momentum;
    float **weights;              /* what compensation reads as each array's weights */
    float *weights_host;          /* the staged route's: the device weights, pulled */
    struct mn_grad_stage *weights_stage;
    mn_dbuf_predict *pred;               /* made where pk is set */
    int primed;                   /* pred holds the weights before the last update */
    float *state;                 /* checkpoints' slots (slots) */
} dbuf;

/* A checkpoint's slots, each of the arena's size: the momentum, the mean
 * in flight, compensation's previous weights and mean square, and
 * prediction's weights before the last update. */
static size_t slots(const dbuf *d)
{
    return 2 + (d->dc ? 2 : 0) + (d->pk ? 1 : 0);
}

/* A heavy-ball step is stable while r*h < 2(1+m), a stale one while
 * r*h < 1-m: the ratio of the two bounds. */
static double stale_ratio(double m)
{
    return (1 - m) / (2 * (1 + m));
}

/* The first fresh_until iterations (burn_in by default) are averaged fresh;
 * a mean in flight (a resumed run) keeps the step stale. */
static int fresh_step(network *net, const dbuf *d)
{
    int pending = 0;
    if (mn_base_iteration(net) > d->fresh_until) return 0;
#ifdef GPU
    if (d->dev) return !mn_dbuf_gpu_pending(d->dev);
#endif
    mn_dbuf_pending(d->host, &pending);
    return !pending;
}

/* double_buffering_handover=K: the k-th stale mean is scaled by
 * s0^(1 - k/K), s0 = stale_ratio(m), so the rate climbs back geometrically
 * (docs/benchmarks.md). The momentum part, added after, is not scaled. */
static float stale_rate(network *net, const dbuf *d)
{
    size_t it = mn_base_iteration(net);
    if (!d->ramp || it <= d->fresh_until || it - d->fresh_until > d->ramp) return 1;
    return (float)pow(d->ramp_from, 1 - (double)(it - d->fresh_until) / (double)d->ramp);
}

/* mn_dbuf_compensate, array by array, its state in the checkpoint's slots.
 * kept: the true weights while the arrays hold a prediction, else NULL. */
static void compensate(dbuf *d, int apply, const float *kept)
{
    const mn_sync_ctx *x = d->x;
    if (!d->dc) return;
    float *prev = d->state + 2 * x->total, *v = prev + x->total;
    for (size_t i = 0, off = 0; i < (size_t)x->n; off += x->lens[i++]) {
        const float *w = kept ? kept + off : d->weights[i];
        mn_dbuf_compensate(x->arena + off, w, d->weights[i], prev + off, v + off, x->lens[i], (float)d->dc, apply);
    }
}

/* A stale step: this gradient goes, the previous mean comes back,
 * corrected and scaled. *skip: no mean came (the first stale step). */
static mn_mean_at stale_mean(dbuf *d, network *net, int poison, int *bad, int *skip)
{
    const mn_sync_ctx *x = d->x;
    int held = mn_dbuf_predict_holds(d->pred), apply;
    const float *kept = held ? mn_dbuf_predict_kept(d->pred) : NULL;   /* the host's, in a CPU run */
#ifdef GPU
    if (d->dev) {   /* the same corrections, on the device; it checks the result for Inf/NaN */
        mn_watchdog_enter(x->watch, "gradient allreduce", mn_base_iteration(net));
        apply = mn_dbuf_gpu_exchange(d->dev, poison, (float)d->dc, stale_rate(net, d), kept,
                                     held ? mn_dbuf_predict_taken(d->pred) : NULL, bad);
        mn_watchdog_leave(x->watch);
        *skip = !apply;
        return MN_MEAN_CHECKED;
    }
    if (d->weights_stage) mn_grad_stage_pack_into(d->weights_stage, d->weights_host, mn_base_stream());   /* done when the gradient is */
    if (d->weights_stage && kept) kept = mn_dbuf_predict_pull_kept(d->pred);   /* the device's, to the host with them */
    if (x->route == MN_ROUTE_STAGED) mn_grad_stage_down(x->stage);
#endif
    if (poison) x->arena[0] = NAN;
    mn_watchdog_enter(x->watch, "gradient allreduce", mn_base_iteration(net));
    apply = mn_dbuf_exchange(d->host, x->arena) || d->local;   /* local: the own gradient at least */
    mn_watchdog_leave(x->watch);
    compensate(d, apply, kept);
    float s = apply ? stale_rate(net, d) : 1;
    if (s != 1)
        for (size_t i = 0; i < x->total; ++i) x->arena[i] *= s;
    *skip = !apply;
    return x->route == MN_ROUTE_STAGED ? MN_MEAN_STAGED : MN_MEAN_HOST;
}

static mn_mean_at dbuf_mean(void *state, const mn_sync_ctx *x, network *net, int poison, int *bad, int *skip)
{
    dbuf *d = state;
    mn_mean_at at = fresh_step(net, d) ? mn_sync_blocking.mean(NULL, x, net, poison, bad, skip)
                                       : stale_mean(d, net, poison, bad, skip);
    mn_dbuf_predict_back(d->pred);   /* Darknet's update starts from the weights, not their prediction */
    return at;
}

/* Before forward. The iteration is one less than at this step's hook, whose
 * mean goes stale past fresh_until: the gradient taken now is. */
static void dbuf_begin(void *state, const network *net)
{
    dbuf *d = state;
    if (d->pred) mn_dbuf_predict_step(d->pred, d->primed && mn_base_iteration((network *)net) >= d->fresh_until);
    d->primed = 1;
}

static float *dbuf_slots(void *state, size_t *n)
{
    dbuf *d = state;
    *n = slots(d) * d->x->total;
    return d->state;
}

/* The slots from the arena and the exchange (in=0), or back (in=1). A
 * mean is in flight only past fresh_until: a fresh step's zeros are not
 * applied as a mean. */
static void dbuf_state(void *state, const network *net, int in)
{
    dbuf *d = state;
    size_t t = d->x->total, bytes = t * sizeof(float);
    float *mean = d->state + t;
    int in_flight = mn_base_iteration((network *)net) > d->fresh_until;
    if (in) memcpy(d->x->arena, d->state, bytes);
    else memcpy(d->state, d->x->arena, bytes);
#ifdef GPU
    if (d->dev) {   /* the mean in flight and compensation's state are on the device */
        float *prev = d->dc ? mean + t : NULL, *v = prev ? prev + t : NULL;
        if (in) mn_dbuf_gpu_set(d->dev, in_flight ? mean : NULL, prev, v);
        else mn_dbuf_gpu_get(d->dev, mean, prev, v);
    }
#endif
    if (d->host) {
        int has;
        float *pending = mn_dbuf_pending(d->host, &has);
        if (in) memcpy(pending, mean, bytes), mn_dbuf_set_pending(d->host, in_flight);
        else if (has) memcpy(mean, pending, bytes);
        else memset(mean, 0, bytes);
    }
    if (d->pred) {   /* the last slot */
        float *w0 = d->state + (slots(d) - 1) * t;
        if (in) mn_dbuf_predict_set(d->pred, w0);
        else mn_dbuf_predict_get(d->pred, w0);
        d->primed |= in;
    }
}

/* The mean in flight times k, compensation's mean square k^2; its weights
 * stay, as prediction's do. */
static void dbuf_rescale(void *state, float k)
{
    dbuf *d = state;
    size_t t = d->x->total;
    for (size_t i = t; i < 2 * t; ++i) d->state[i] *= k;
    if (d->dc)
        for (size_t i = 3 * t; i < 4 * t; ++i) d->state[i] *= k * k;
}

static int dbuf_drifts(void *state) { return ((dbuf *)state)->local; }

static void dbuf_aligned(void *state)
{
    dbuf *d = state;
#ifdef GPU
    if (d->dev) mn_dbuf_gpu_align(d->dev);
#endif
    if (d->host) mn_dbuf_align(d->host);
}

#ifdef GPU
mn_route mn_sync_dbuf_route(const mn_comm *c)
{
    return mn_comm_device_packed(c) ? MN_ROUTE_DEVICE : MN_ROUTE_STAGED;
}

/* The device copy of every array's weights, which key works on. */
static mn_status device_weights(const mn_sync_ctx *x, const char *key)
{
    for (int i = 0; i < x->n; ++i)
        if (!x->weights_gpu[i]) {
            mn_error(x->comm, "layer %d: %s needs the device copy of the weights it updates, which %s Darknet's "
                     "adapter does not give", x->layer_of[i], key, mn_base_name());
            return MN_ERR_UNAVAILABLE;
        }
    return MN_OK;
}

/* Compensation needs the weights as they are: packed on the device route,
 * pulled beside the gradient on the staged one. */
static mn_status compensation_weights(dbuf *d)
{
    const mn_sync_ctx *x = d->x;
    MN_CHECK(device_weights(x, "double_buffering_compensation"));
    if (x->route == MN_ROUTE_DEVICE) return MN_OK;
    MN_CHECK(mn_grad_stage_packer(x->comm, x->weights_gpu, x->lens, x->n, &d->weights_stage));
    if (!mn_device_ok(x->comm, mn_device_alloc_host((void **)&d->weights_host, (x->total + 1) * sizeof(float)),
                      "cudaMallocHost"))
        return MN_ERR_NOMEM;
    for (size_t i = 0, off = 0; i < (size_t)x->n; off += x->lens[i++]) d->weights[i] = d->weights_host + off;
    return MN_OK;
}
#endif

/* What each rank makes alone: the slots, compensation's weights and
 * prediction (on the device in a GPU run: Darknet's weights live there). */
static mn_status prepare(dbuf *d, network *net)
{
    const mn_sync_ctx *x = d->x;
    float **dev = NULL;
    d->weights = calloc((size_t)x->n + 1, sizeof *d->weights);
    d->state = calloc(slots(d) * x->total + 1, sizeof(float));
    if (!d->weights || !d->state) return MN_ERR_NOMEM;
    memcpy(d->weights, x->weights, (size_t)x->n * sizeof *d->weights);
#ifdef GPU
    if (mn_net_get(net).gpu >= 0 && d->dc) MN_CHECK(compensation_weights(d));
    if (mn_net_get(net).gpu >= 0 && d->pk) {
        MN_CHECK(device_weights(x, "double_buffering_prediction"));
        dev = x->weights_gpu;
    }
#else
    (void)net;
#endif
    return d->pk ? mn_dbuf_predict_new(x->comm, d->weights, dev, x->lens, x->n, (float)d->pk, &d->pred) : MN_OK;
}

/* Collective: on the device (mn_sync_dbuf_route), or the host's thread. */
static mn_status dbuf_start(const mn_sync_ctx *x, network *net, const mn_options *opt, void **state)
{
    dbuf *d = calloc(1, sizeof *d);
    *state = d;
    if (!d) return mn_agree(x->comm, MN_ERR_NOMEM);
    d->x = x;
    d->dc = opt->dbuf_compensation > 0 ? opt->dbuf_compensation : 0;
    d->pk = opt->dbuf_prediction > 0 ? opt->dbuf_prediction : 0;
    d->local = opt->dbuf_local;
    d->momentum = mn_net_get(net).momentum;
    d->fresh_until = opt->dbuf_fresh < 0 ? (size_t)mn_net_get(net).burn_in : (size_t)opt->dbuf_fresh;
    d->ramp = d->momentum < 1 && opt->dbuf_handover > 0 ? (size_t)opt->dbuf_handover : 0;
    d->ramp_from = stale_ratio(d->momentum);
    mn_status st = prepare(d, net);
    if (st == MN_ERR_NOMEM) mn_error(x->comm, "out of memory starting double buffering");
    if ((st = mn_agree(x->comm, st)) != MN_OK) return st;
#ifdef GPU
    if (x->route == MN_ROUTE_DEVICE)
        return mn_agree(x->comm, mn_dbuf_gpu_new(x->comm, x->arrays_gpu, d->dc ? x->weights_gpu : NULL, x->lens, x->n,
                                                 d->local, &d->dev));
#endif
    return mn_dbuf_start(x->comm, x->lens, x->n, x->total, d->local, &d->host);
}

/* What double buffering does in this run and what it costs
 * (docs/internals.md; the figures: docs/benchmarks.md). */
static void dbuf_say(void *state, const mn_options *opt)
{
    dbuf *d = state;
    double m = d->momentum;
    (void)opt;
    if (d->dev)
        printf("darknet-mn: double_buffering=1 on the device: two packed gradient buffers, each averaged by %s on its "
               "own stream while the next step computes\n", mn_comm_name(d->x->comm));
    if (d->fresh_until)
        printf("darknet-mn: double_buffering=1: iterations 1-%zu averaged fresh (double_buffering_fresh), then each "
               "step's mean is applied one step late\n", d->fresh_until);
    else
        printf("darknet-mn: double_buffering=1: each step's mean is applied one step late, from the first iteration\n");
    if (d->ramp)
        printf("darknet-mn: double_buffering_handover=%zu: the first %zu stale steps' rate climbs from %.3g of the cfg's "
               "to all of it\n", d->ramp, d->ramp, d->ramp_from);
    if (d->dc)
        printf("darknet-mn: double_buffering_compensation=%g: each stale mean is corrected to the weights it is applied "
               "at\n", d->dc);
    if (d->pk)
        printf("darknet-mn: double_buffering_prediction=%g: each gradient that goes stale is taken at the weights plus "
               "%g times the last update, nearer those it is applied at\n", d->pk, d->pk);
    if (d->local) {
        printf("darknet-mn: double_buffering_local=1: each update applies this rank's own gradient fresh and the "
               "previous step's mean less this rank's previous gradient; the ranks' models are averaged before each "
               "save\n");
        printf("darknet-mn: double_buffering=1 against one process, measured: docs/benchmarks.md, double buffering "
               "and accuracy\n");
    } else if (m < 1 && m >= 0) {
        printf("darknet-mn: double_buffering=1 costs accuracy: with momentum %g a stale step stays stable only on "
               "curvature %.0fx lower than a fresh one tolerates, so a rate tuned without it can diverge once the stale "
               "steps start (what it cost, measured: docs/benchmarks.md, double buffering and accuracy); overlap=1 "
               "hides the allreduce without staleness\n", m, 1 / stale_ratio(m));
    }
}

/* Waits for the mean in flight. */
static void dbuf_stop(void *state)
{
    dbuf *d = state;
    if (!d) return;
    mn_dbuf_stop(d->host);
#ifdef GPU
    mn_dbuf_gpu_free(d->dev);
    mn_grad_stage_free(d->weights_stage);
    if (d->weights_host) mn_device_ok(d->x->comm, mn_device_free_host(d->weights_host), "cudaFreeHost");
#endif
    mn_dbuf_predict_free(d->pred);
    free(d->weights);
    free(d->state);
    free(d);
}

const mn_sync_ops mn_sync_dbuf = {.name = "double buffering", .start = dbuf_start, .mean = dbuf_mean,
                                  .begin = dbuf_begin, .slots = dbuf_slots, .state = dbuf_state,
                                  .rescale = dbuf_rescale, .drifts = dbuf_drifts, .aligned = dbuf_aligned,
                                  .say = dbuf_say, .stop = dbuf_stop};
