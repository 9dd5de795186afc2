/* The multi-node optimizer. mn_attach moves every update array into one
 * arena (reduced in place) and hooks Darknet's update: each update array
 * becomes its mean over all ranks, so the step is one process's step with
 * the global batch; seen counts every rank's images, so the schedule
 * advances once per global update. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mn_optimizer.h"
#include "mn_coll.h"
#include "mn_base.h"
#include "mn_observe.h"
#include "mn_sync.h"
#include "mn_dbuf.h"
#include "mn_dbuf_gpu.h"
#include "mn_held.h"
#include "mn_ways.h"
#include "mn_stage.h"
#include "mn_ahead.h"
#include "mn_device.h"

struct mn_optimizer {
    mn_comm *comm;
    mn_net_hooks hooks;   /* installed on the network while attached */
    float *arena;
    size_t total;
    int n;
    float **arrays;       /* host arrays inside the arena, in layer order */
    float **arrays_gpu;   /* their device arrays */
    size_t *lens;
    int nonfinite;        /* the last mean was not finite */
    mn_watchdog *watch;   /* NULL when collective_timeout=0 */
    float *aside;         /* the momentum part, set aside during backward */
    float *aside_gpu;     /* the same on the device */
    int skip;             /* nonfinite=skip */
    mn_bn_arrays bn;      /* the running statistics (mn_ways.h) */
    float *stats_saved;   /* their values before this step's forward */
    int *flag_gpu;        /* device: the mean is not finite */
    int *flag_host;       /* its page-locked copy */
    void *checked;        /* nonfinite=stop: an event after that copy */
    int check_pending;    /* recorded, not yet read */
    int is_aside;
    mn_route route;       /* where the mean is taken (mn_sync_route) */
    struct mn_stage *stage;   /* the device arrays' tables, and the staged copies */
    int own_watch;        /* watch was started here */
    int dbuf_on;          /* double_buffering=1 */
    mn_dbuf *dbuf;        /* its host thread, or NULL */
    struct mn_dbuf_gpu *dbuf_gpu; /* or its device twin */
    size_t fresh_until;   /* iterations averaged fresh */
    size_t ramp;          /* stale means scaled (stale_scale) */
    double ramp_from;     /* from this fraction of the rate */
    float *state;         /* double buffering's, for checkpoints (state_arrays) */
    double dc;            /* compensation's lambda0; 0: none */
    double pk;            /* prediction's k; 0: none */
    int local;            /* double_buffering_local=1 */
    mn_ahead *pred;       /* made where pk is set */
    int primed;           /* pred holds the weights before the last update */
    float **weights;      /* the parameters each array updates */
    float **weights_gpu;  /* their device copies */
    float *weights_host;  /* compensation: the device weights, pulled */
    struct mn_stage *weights_stage;
    int *layer_of;        /* the layer owning each array */
    const mn_sync_ops *mode;   /* how the mean is taken (mn_sync.h), picked at attach */
    void *mode_state;
    mn_sync_ctx x;        /* what the mode works on */
    mn_timeline *tl;
    double mark;          /* the end of the last phase seen */
    double seg;           /* the backward group's start; < 0 none */
    int seg_hi, low;      /* its highest layer, the lowest done */
    int handover, poison; /* this backward hands buckets over; the loss is not finite */
    /* rescue=1: the last completed update's state (mn_optimizer_hold),
     * under `hold` from the mean to the step's end. */
    int rescue;
    struct mn_held *held; /* a GPU run's copies of it */
    pthread_mutex_t hold;
    int holding, done;    /* the hook holds it; the step's update is done */
    uint64_t snap_it, snap_seen;
    double snap_time;
    mn_ways *ways;        /* mn_optimizer_ways, or NULL */
    int in_step;          /* between begin_step and end_step */
    void *prof[2];        /* MN_GPU_PROFILE=1: events around the hook */
    double prof_ms;
    long prof_steps;
    int prof_pending;     /* the last pair is not yet read */
};

/* NaN or Inf anywhere: x*0 is 0 for every finite x, NaN otherwise. */
static int all_finite(const float *p, size_t n)
{
    float acc = 0;
    for (size_t i = 0; i < n; ++i) acc += p[i] * 0.0f;
    return acc == 0;
}

#ifdef GPU
/* finish_mean on the device, on the base's stream. */
static void finish_mean_gpu(mn_optimizer *o, int bad)
{
    size_t off = 0;
    o->nonfinite = bad;
    for (int i = 0; i < o->n; off += o->lens[i], ++i) {
        int n = (int)o->lens[i];
        if (bad && o->is_aside) mn_base_copy_gpu(n, o->aside_gpu + off, o->arrays_gpu[i]);
        else if (bad) mn_base_fill_gpu(n, 0, o->arrays_gpu[i]);
        else if (o->is_aside)
            mn_device_must(o->comm, mn_gpu_add(o->arrays_gpu[i], o->aside_gpu + off, o->lens[i], mn_base_stream()),
                           "adding the momentum part back");
    }
    o->is_aside = 0;
}

/* The device mean's Inf/NaN check, then finish_mean_gpu. nonfinite=skip
 * waits for the flag here; nonfinite=stop reads it once the update is
 * queued (mn_optimizer_nonfinite), so the hook does not idle the GPU. */
static void check_on_device(mn_optimizer *o, int bad)
{
    void *st = mn_base_stream();
    mn_device_must(o->comm, mn_device_zero(o->flag_gpu, sizeof(int), st), "clearing the Inf/NaN flag");
    mn_stage_nonfinite(o->stage, o->flag_gpu, st);
    mn_device_must(o->comm, mn_device_copy(o->flag_host, o->flag_gpu, sizeof(int), MN_TO_HOST, st),
                   "reading the Inf/NaN check");
    if (o->checked) {
        mn_device_must(o->comm, mn_device_event_record(o->checked, st), "recording the Inf/NaN check");
        o->check_pending = 1;
        finish_mean_gpu(o, bad);
        return;
    }
    mn_device_must(o->comm, mn_device_wait(st), "the Inf/NaN check");
    finish_mean_gpu(o, bad || *o->flag_host);
}

#endif

/* The running statistics as they were before this step's forward pass (a
 * non-finite batch has already folded NaN into them). */
static void stats_copy(mn_optimizer *o, int restore)
{
    size_t off = 0;
    if (restore) mn_optimizer_drain(o);
    for (int i = 0; i < o->bn.n; off += o->bn.lens[i], ++i) {
        float *live = o->bn.host[i], *saved = o->stats_saved + off;
        size_t n = o->bn.lens[i];
#ifdef GPU
        if (mn_base_gpu() >= 0) {   /* the device copies are the live ones */
            if (restore) mn_base_push(o->bn.dev[i], saved, n);
            else mn_base_pull(o->bn.dev[i], saved, n);
            continue;
        }
#endif
        if (restore) memcpy(live, saved, n * sizeof(float));
        else memcpy(saved, live, n * sizeof(float));
    }
}

/* A finite mean gets the momentum part back; a non-finite one is dropped
 * and the update skipped, alike on every rank. */
static void finish_mean(mn_optimizer *o)
{
    o->nonfinite = !all_finite(o->arena, o->total);
    if (o->nonfinite && o->is_aside) memcpy(o->arena, o->aside, o->total * sizeof(float));
    else if (o->nonfinite) memset(o->arena, 0, o->total * sizeof(float));
    else if (o->is_aside)
        for (size_t i = 0; i < o->total; ++i) o->arena[i] += o->aside[i];
    o->is_aside = 0;
}

/* The hook's value: non-zero skips Darknet's update. */
static int after_mean(mn_optimizer *o)
{
    if (!o->nonfinite) return 0;
    if (o->skip) stats_copy(o, 1);
    if (o->skip && o->ways) mn_ways_rewind(o->ways);
    return 1;
}

#ifdef GPU
/* MN_ROUTE_STAGED, after the host allreduce: the mean goes up, and the
 * momentum part set aside on the device comes back. */
static int after_stage(mn_optimizer *o)
{
    o->nonfinite = !all_finite(o->arena, o->total);
    mn_stage_up(o->stage);
    finish_mean_gpu(o, o->nonfinite);
    return after_mean(o);
}
#endif

/* The backward group being timed ends with its last layer done. */
static void end_backward(mn_optimizer *o)
{
    if (o->seg >= 0 && o->low <= o->seg_hi) mn_timeline_add(o->tl, 0, MN_TL_BACKWARD, o->seg, o->mark, 0, o->low, o->seg_hi);
    o->seg = -1;
}

/* After each layer's backward (i = n: before the first): the timeline, and
 * overlap's buckets whose layers are done, in the last subdivision only. */
static void backward_hook(network *net, int i)
{
    mn_optimizer *o = mn_net_hook_arg(net);
    double now = mn_now();
    if (i == mn_net_layers(net)) {   /* forward is done */
        end_backward(o);
        mn_timeline_add(o->tl, 0, MN_TL_FORWARD, o->mark, now, 0, 0, 0);
        o->seg = o->mark = now;
        o->seg_hi = o->low = i - 1;
        mn_net_info in = mn_net_get(net);
        o->handover = o->mode->ready && (mn_net_seen(net) / ((size_t)in.batch * o->hooks.ranks)) % in.subdivisions == 0;
        o->poison = o->handover && !isfinite(mn_base_cost(net)) && o->total > 0;
        return;
    }
    o->mark = now;
    o->low = i;
    if (o->handover && o->mode->ready(o->mode_state, i, o->poison) > 0) {
        end_backward(o);
        o->seg = now;
        o->seg_hi = o->low = i - 1;
    }
}

/* The core's finish of a mode's mean, where the mode left it. */
static int finish(mn_optimizer *o, mn_mean_at at, int bad)
{
#ifdef GPU
    if (at == MN_MEAN_STAGED) return after_stage(o);
    if (at == MN_MEAN_DEVICE) {
        check_on_device(o, bad);
        return after_mean(o);
    }
#else
    (void)at, (void)bad;
#endif
    finish_mean(o);
    return after_mean(o);
}

/* A heavy-ball step is stable while r*h < 2(1+m), a stale one while
 * r*h < 1-m: the ratio of the two bounds. */
static double stale_ratio(double m)
{
    return (1 - m) / (2 * (1 + m));
}

/* What double buffering costs, said at start (docs/internals.md). */
static void dbuf_cost(float momentum, int local)
{
    double m = momentum;
    if (local) {
        printf("darknet-mn: double_buffering=1 against one process, measured: docs/benchmarks.md, double buffering "
               "and accuracy\n");
        return;
    }
    if (m >= 1 || m < 0) return;
    printf("darknet-mn: double_buffering=1 costs accuracy: with momentum %g a stale step stays stable only on curvature "
           "%.0fx lower than a fresh one tolerates, so a rate tuned without it can diverge once the stale steps start "
           "(what it cost, measured: docs/benchmarks.md, double buffering and accuracy); overlap=1 hides the allreduce "
           "without staleness\n",
           m, 1 / stale_ratio(m));
}

/* The first fresh_until iterations (burn_in by default) are averaged fresh
 * (docs/benchmarks.md); a mean in flight (a resumed run) keeps it stale. */
static int fresh_step(network *net, mn_optimizer *o)
{
    int pending = 0;
    if (mn_base_iteration(net) > o->fresh_until) return 0;
#ifdef GPU
    if (o->dbuf_gpu) return !mn_dbuf_gpu_pending(o->dbuf_gpu);
#endif
    mn_dbuf_pending(o->dbuf, &pending);
    return !pending;
}

/* mn_dbuf_compensate, array by array; its state lives in `state`, so a
 * checkpoint carries it. kept: the true weights while the arrays hold a
 * prediction, else NULL. */
static void compensate(mn_optimizer *o, int apply, const float *kept)
{
    if (!o->dc) return;
    float *prev = o->state + 2 * o->total, *v = prev + o->total;
    for (size_t i = 0, off = 0; i < (size_t)o->n; off += o->lens[i++]) {
        const float *w = kept ? kept + off : o->weights[i];
        mn_dbuf_compensate(o->arena + off, w, o->weights[i], prev + off, v + off, o->lens[i], (float)o->dc, apply);
    }
}

/* double_buffering_handover=K: the k-th stale mean is scaled by
 * s0^(1 - k/K), s0 = stale_ratio(m), so the rate climbs back geometrically
 * (docs/benchmarks.md). The momentum part, added after, is not scaled. */
static float stale_rate(network *net, const mn_optimizer *o)
{
    size_t it = mn_base_iteration(net);
    if (!o->ramp || it <= o->fresh_until || it - o->fresh_until > o->ramp) return 1;
    return (float)pow(o->ramp_from, 1 - (double)(it - o->fresh_until) / (double)o->ramp);
}

static void stale_scale(network *net, mn_optimizer *o)
{
    float s = stale_rate(net, o);
    if (s != 1)
        for (size_t i = 0; i < o->total; ++i) o->arena[i] *= s;
}

#ifdef GPU
/* A stale step on the device (mn_dbuf_gpu): the same corrections, there. */
static int stale_on_device(network *net, mn_optimizer *o, int poison)
{
    int bad = 0;
    mn_watchdog_enter(o->watch, "gradient allreduce", mn_base_iteration(net));
    int held = mn_ahead_holds(o->pred);
    int apply = mn_dbuf_gpu_exchange(o->dbuf_gpu, poison, (float)o->dc, stale_rate(net, o),
                                     held ? mn_ahead_kept(o->pred) : NULL, held ? mn_ahead_taken(o->pred) : NULL, &bad);
    mn_watchdog_leave(o->watch);
    finish_mean_gpu(o, bad);
    return after_mean(o) || !apply;
}
#endif

static int sync_all(network *net, mn_optimizer *o)
{
    int poison = !isfinite(mn_base_cost(net)) && o->total > 0, bad = 0;
    if (o->dbuf_on && !fresh_step(net, o)) {
        const float *kept = mn_ahead_holds(o->pred) ? mn_ahead_kept(o->pred) : NULL;   /* the host's, in a CPU run */
#ifdef GPU
        if (o->dbuf_gpu) return stale_on_device(net, o, poison);
        if (o->weights_stage) mn_stage_pack_into(o->weights_stage, o->weights_host, mn_base_stream());   /* done when the gradient is */
        if (o->weights_stage && kept) kept = mn_ahead_pull_kept(o->pred);   /* the device's, to the host with them */
        if (o->route == MN_ROUTE_STAGED) mn_stage_down(o->stage);
#endif
        if (poison) o->arena[0] = NAN;
        mn_watchdog_enter(o->watch, "gradient allreduce", mn_base_iteration(net));
        int apply = mn_dbuf_exchange(o->dbuf, o->arena) || o->local;   /* local: the own gradient at least */
        mn_watchdog_leave(o->watch);
        compensate(o, apply, kept);
        if (apply) stale_scale(net, o);
        return finish(o, o->route == MN_ROUTE_STAGED ? MN_MEAN_STAGED : MN_MEAN_HOST, 0) || !apply;
    }
    mn_mean_at at = o->mode->mean(o->mode_state, &o->x, net, poison, &bad);
    return finish(o, at, bad);
}

#ifdef GPU
/* MN_GPU_PROFILE=1: the base's stream's time through the hook, read a step
 * later so that the reading never waits; rank 0 prints the mean. */
static void profile_mark(mn_optimizer *o, int end)
{
    if (!o->prof[0]) return;
    void *e0 = o->prof[0], *e1 = o->prof[1];
    if (!end && o->prof_pending) {
        float ms = 0;
        mn_device_must(o->comm, mn_device_event_wait(e1), "MN_GPU_PROFILE's event");
        mn_device_must(o->comm, mn_device_event_ms(&ms, e0, e1), "MN_GPU_PROFILE's elapsed time");
        o->prof_ms += ms;
        ++o->prof_steps;
        o->prof_pending = 0;
    }
    mn_device_must(o->comm, mn_device_event_record(end ? e1 : e0, mn_base_stream()), "MN_GPU_PROFILE's event");
    o->prof_pending = end;
}

static void profile_start(mn_comm *c, mn_optimizer *o)
{
    const char *v = getenv("MN_GPU_PROFILE");
    if (!v || strcmp(v, "1") || o->route == MN_ROUTE_HOST) return;
    void *e[2] = {NULL, NULL};
    if (mn_device_ok(c, mn_device_event_new(&e[0], 1), "cudaEventCreate") &&
        mn_device_ok(c, mn_device_event_new(&e[1], 1), "cudaEventCreate")) {
        o->prof[0] = e[0];
        o->prof[1] = e[1];
    } else if (e[0]) {   /* both or none: no profile, and the run goes on */
        mn_device_ok(c, mn_device_event_free(e[0]), "cudaEventDestroy");
    }
}

static void profile_stop(mn_optimizer *o)
{
    if (o->prof[0] && o->comm->rank == 0)
        printf("darknet-mn: MN_GPU_PROFILE: the averaging hook held the base's stream %.3f ms a step on average "
               "(%ld steps, rank 0, route %s)\n", o->prof_steps ? o->prof_ms / (double)o->prof_steps : 0.0,
               o->prof_steps, o->route == MN_ROUTE_STAGED ? "staged" : o->route == MN_ROUTE_DEVICE ? "device" : "local");
    for (int i = 0; i < 2; ++i)
        if (o->prof[i]) mn_device_ok(o->comm, mn_device_event_free(o->prof[i]), "cudaEventDestroy");
}
#endif

/* Nonzero: Darknet skips this update (double buffering's first step). */
static int sync_hook(network *net)
{
    mn_optimizer *o = mn_net_hook_arg(net);
    end_backward(o);
    double arrive = mn_now();
#ifdef GPU
    profile_mark(o, 0);
#endif
    int skip = sync_all(net, o);
    mn_ahead_back(o->pred);   /* Darknet's update starts from the weights, not their prediction */
#ifdef GPU
    profile_mark(o, 1);
#endif
    /* The update from here to the step's end changes what a rescue reads. */
    if (o->rescue && !o->holding) { pthread_mutex_lock(&o->hold); o->holding = 1; }
    o->mark = mn_now();
    mn_timeline_add(o->tl, 0, MN_TL_WAIT_COMM, arrive, o->mark, 0, 0, 0);
    mn_timeline_sync(o->tl, arrive, o->mark - arrive);
    return skip;
}

static void free_optimizer(mn_optimizer *o)
{
    mn_dbuf_stop(o->dbuf);
#ifdef GPU
    mn_dbuf_gpu_free(o->dbuf_gpu);
#endif
    if (o->mode && o->mode->stop) o->mode->stop(o->mode_state);
    mn_ahead_free(o->pred);
    free(o->layer_of);
    free(o->weights);
    free(o->weights_gpu);
    if (o->own_watch) {
        if (o->comm->watch == o->watch) o->comm->watch = NULL;
        mn_watchdog_stop(o->watch);
    }
    if (o->holding) pthread_mutex_unlock(&o->hold);
    pthread_mutex_destroy(&o->hold);
    free(o->aside);
    free(o->state);
    mn_bn_arrays_free(&o->bn);
    free(o->stats_saved);
    mn_ways_free(o->ways);
#ifdef GPU
    profile_stop(o);
    mn_held_free(o->held);
    mn_stage_free(o->weights_stage);
    if (o->weights_host) mn_device_ok(o->comm, mn_device_free_host(o->weights_host), "cudaFreeHost");
    mn_stage_free(o->stage);   /* before the arena it page-locked */
    if (o->check_pending)   /* the flag's copy lands before its memory goes */
        mn_device_ok(o->comm, mn_device_event_wait(o->checked), "the Inf/NaN check");
    if (o->checked) mn_device_ok(o->comm, mn_device_event_free(o->checked), "cudaEventDestroy");
    if (o->flag_host) mn_device_ok(o->comm, mn_device_free_host(o->flag_host), "cudaFreeHost");
    void *dev[] = {o->aside_gpu, o->flag_gpu};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; ++i)
        if (dev[i]) mn_device_ok(o->comm, mn_device_free(dev[i]), "cudaFree");
#endif
    mn_comm_arena_free(o->comm, o->arena);
    free(o->arrays);
    free(o->arrays_gpu);
    free(o->lens);
    free(o);
}

/* The update arrays, each with which of its layer's (MN_UPDATE_*) it is, in
 * *which; their sizes and layers. */
static mn_status collect_arrays(mn_comm *c, network *net, mn_optimizer *o, int **which)
{
    int cap = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) cap += v.grad != NULL;
    *which = calloc((size_t)cap + 1, sizeof **which);
    o->arrays = calloc((size_t)cap + 1, sizeof *o->arrays);
    o->arrays_gpu = calloc((size_t)cap + 1, sizeof *o->arrays_gpu);
    o->lens = calloc((size_t)cap + 1, sizeof *o->lens);
    o->layer_of = calloc((size_t)cap + 1, sizeof *o->layer_of);
    o->weights = calloc((size_t)cap + 1, sizeof *o->weights);
    o->weights_gpu = calloc((size_t)cap + 1, sizeof *o->weights_gpu);
    if (!*which || !o->arrays || !o->arrays_gpu || !o->lens || !o->layer_of || !o->weights || !o->weights_gpu)
        return MN_ERR_NOMEM;
    it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) {
        if (!v.grad) continue;
        if (v.update < 0) {   /* the adapter's views and its layer disagree: nothing to move the array with */
            mn_error(c, "layer %d: an update array that is none of the layer's own (%s Darknet's adapter)", v.layer,
                     mn_base_name());
            return MN_ERR_UNAVAILABLE;
        }
        (*which)[o->n] = v.update;
        o->arrays_gpu[o->n] = v.grad_gpu;   /* NULL in CPU builds */
        o->lens[o->n] = v.n;
        o->weights[o->n] = v.data;
        o->weights_gpu[o->n] = v.data_gpu;
        o->layer_of[o->n++] = v.layer;
    }
    for (int i = 0; i < o->n; ++i) o->total += o->lens[i];   /* arrays_gpu: Darknet's, kept; only host arrays move */
    return MN_OK;
}

/* Double buffering's state, in arrays of the arena's size: the arena, the
 * mean in flight, compensation's previous weights and mean square, and
 * prediction's weights before the last update (mn_optimizer_arena). */
static size_t state_arrays(const mn_optimizer *o)
{
    return 2 + (o->dc ? 2 : 0) + (o->pk ? 1 : 0);
}

/* What the host keeps beside the arena: the momentum part set aside
 * (float16, double buffering, nonfinite=skip, a CPU run's rescue), the
 * statistics saved, and double buffering's state. */
static mn_status host_state(mn_comm *c, network *net, const mn_options *opt, mn_optimizer *o)
{
#ifdef GPU
    int cpu_run = mn_net_get(net).gpu < 0;
#else
    int cpu_run = 1;   /* Darknet's gpu_index field is meaningless here */
#endif
    if (opt->grad_dtype_half) MN_CHECK(mn_comm_set_dtype(c, 1));
    o->skip = opt->nonfinite_skip;
    o->rescue = opt->rescue && !opt->double_buffering && cpu_run && c->size > 1;
    if ((opt->grad_dtype_half || opt->double_buffering || o->skip || o->rescue) &&
        !(o->aside = calloc(o->total + 1, sizeof(float))))
        return MN_ERR_NOMEM;
    MN_CHECK(mn_bn_arrays_list(net, &o->bn));
    if ((o->skip || o->rescue) && !(o->stats_saved = calloc(o->bn.total + 1, sizeof(float)))) return MN_ERR_NOMEM;
    if (opt->overlap && opt->double_buffering) {
        if (c->rank == 0) mn_error(c, "overlap=1 and double_buffering=1 exclude each other: overlap averages this "
                                      "step's gradient during backward, double buffering the previous one; choose one");
        return MN_ERR_USER;
    }
    o->dc = opt->double_buffering && opt->dbuf_compensation > 0 ? opt->dbuf_compensation : 0;
    o->pk = opt->double_buffering && opt->dbuf_prediction > 0 ? opt->dbuf_prediction : 0;
    o->local = opt->double_buffering && opt->dbuf_local;
    if (opt->double_buffering && !(o->state = calloc(state_arrays(o) * o->total + 1, sizeof(float)))) return MN_ERR_NOMEM;
    return MN_OK;
}

#ifdef GPU
/* double_buffering=1 in a GPU run: on the device where the communicator
 * has mean_packed (pure_nccl, as ChainerMN), else staged through the host. */
static mn_route dbuf_route(const mn_comm *c)
{
    int packed = c->ops->mean_packed && (c->half ? c->device_f16 : c->device_f32);
    return packed ? MN_ROUTE_DEVICE : MN_ROUTE_STAGED;
}

/* The device copy of every array's weights, which key works on. */
static mn_status device_weights(mn_comm *c, const mn_optimizer *o, const char *key)
{
    for (int i = 0; i < o->n; ++i)
        if (!o->weights_gpu[i]) {
            mn_error(c, "layer %d: %s needs the device copy of the weights it updates, which %s Darknet's adapter "
                     "does not give", o->layer_of[i], key, mn_base_name());
            return MN_ERR_UNAVAILABLE;
        }
    return MN_OK;
}

/* Compensation needs the weights as they are: packed on the device route,
 * pulled beside the gradient on the staged one. */
static mn_status compensation_weights(mn_comm *c, mn_optimizer *o)
{
    MN_CHECK(device_weights(c, o, "double_buffering_compensation"));
    if (o->route == MN_ROUTE_DEVICE) return MN_OK;
    mn_status r = mn_stage_packer(c, o->weights_gpu, o->lens, o->n, &o->weights_stage);
    if (r != MN_OK) return r;
    if (!mn_device_ok(c, mn_device_alloc_host((void **)&o->weights_host, (o->total + 1) * sizeof(float)), "cudaMallocHost"))
        return MN_ERR_NOMEM;
    for (size_t i = 0, off = 0; i < (size_t)o->n; off += o->lens[i++]) o->weights[i] = o->weights_host + off;
    return MN_OK;
}
#endif

/* double_buffering_prediction: on the device in a GPU run (whatever the
 * route: Darknet's weights live there), else on the host. Not collective. */
static mn_status start_predict(mn_comm *c, network *net, mn_optimizer *o)
{
    if (!o->pk) return MN_OK;
    float **dev = NULL;
#ifdef GPU
    if (mn_net_get(net).gpu >= 0) {
        MN_CHECK(device_weights(c, o, "double_buffering_prediction"));
        dev = o->weights_gpu;
    }
#else
    (void)net;
#endif
    return mn_ahead_new(c, o->weights, dev, o->lens, o->n, (float)o->pk, &o->pred);
}

/* The route (mn_sync_route) and what it needs on the device. Our own
 * allocations, checked (Darknet's cuda_make_array never returns NULL: it
 * aborts), so that running out is agreed and said. */
static mn_status device_state(mn_comm *c, network *net, const mn_options *opt, mn_optimizer *o)
{
#ifdef GPU
    int on_gpu = mn_net_get(net).gpu >= 0;
    int device_mean = c->ops->mean_grad_device && (c->half ? c->device_f16 : c->device_f32);
    o->route = on_gpu && opt->double_buffering ? dbuf_route(c) : mn_sync_route(on_gpu, c->size, device_mean);
    if (on_gpu && o->dc) MN_CHECK(compensation_weights(c, o));
    if ((o->route == MN_ROUTE_DEVICE || o->route == MN_ROUTE_LOCAL) &&
        (!mn_device_ok(c, mn_device_alloc((void **)&o->flag_gpu, sizeof(int)), "cudaMalloc") ||
         !mn_device_ok(c, mn_device_alloc_host((void **)&o->flag_host, sizeof(int)), "cudaMallocHost")))
        return MN_ERR_NOMEM;
    void *e = NULL;   /* check_on_device's late read: nonfinite=stop */
    if ((o->route == MN_ROUTE_DEVICE || o->route == MN_ROUTE_LOCAL) && !opt->nonfinite_skip) {
        if (!mn_device_ok(c, mn_device_event_new(&e, 0), "cudaEventCreateWithFlags"))
            return MN_ERR_UNAVAILABLE;
        o->checked = e;
    }
    /* rescue=1: the update's state reaches the host on a copy stream (a
     * CPU run's rescue reads the host arrays it keeps, host_state). */
    if (on_gpu && opt->rescue && !opt->double_buffering && c->size > 1) {
        char why[256];
        mn_status r = mn_held_new(c, net, o->arrays_gpu, o->lens, o->n, &o->held, why, sizeof why);
        if (r != MN_OK) return r;
        if (!o->held) printf("darknet-mn: rank %d: rescue=1 is off on this rank: %s\n", c->rank, why);
    }
    /* The momentum part waits on the device in every GPU run that sets it aside. */
    if (on_gpu && o->aside && !mn_device_ok(c, mn_device_alloc((void **)&o->aside_gpu, (o->total + 1) * sizeof(float)), "cudaMalloc"))
        return MN_ERR_NOMEM;
#else
    (void)c, (void)net, (void)opt;
    o->route = MN_ROUTE_HOST;
#endif
    return MN_OK;
}

#ifdef GPU
/* Every GPU route: the device arrays' tables; the staged route also the
 * copies' buffer and the arena page-locked where allowed (mn_stage.h). */
static mn_status start_stage(mn_comm *c, mn_optimizer *o)
{
    int pinned = 0, staged = o->route == MN_ROUTE_STAGED;
    mn_status st = mn_stage_new(c, o->arrays_gpu, o->lens, o->n, staged ? o->arena : NULL, &pinned, &o->stage);
    if (st == MN_ERR_NOMEM) mn_error(c, "out of device memory staging the gradient");
    if (st == MN_OK && staged && c->rank == 0)
        printf("darknet-mn: GPU run, communicator %s: gradients staged through %s host memory (MPI %s CUDA-aware)\n",
               c->ops->name, pinned ? "page-locked" : "pageable", mn_mpi_cuda_aware() ? "is" : "is not");
    return st;
}

#endif

/* double_buffering=1: on the device (dbuf_route), or the host's thread. Collective. */
static mn_status start_dbuf(mn_comm *c, mn_optimizer *o)
{
#ifdef GPU
    if (o->route == MN_ROUTE_DEVICE)
        return mn_agree(c, mn_dbuf_gpu_new(c, o->arrays_gpu, o->dc ? o->weights_gpu : NULL, o->lens, o->n, o->local,
                                           &o->dbuf_gpu));
#endif
    return mn_dbuf_start(c, o->lens, o->n, o->total, o->local, &o->dbuf);
}

/* Collective, every rank or none: the watchdog, the arena's window, and
 * double buffering's and overlap's threads. */
static mn_status start_collectives(mn_comm *c, network *net, const mn_options *opt, mn_optimizer *o)
{
    mn_status sw = MN_OK;
    /* The training driver starts the watchdog before its setup (mn_train);
     * a caller that did not (tests, bench step) gets one here. */
    o->watch = c->watch;
    if (!o->watch && opt->collective_timeout > 0 && c->size > 1) {
        sw = mn_watchdog_start(c, opt->collective_timeout, &o->watch);
        o->own_watch = o->watch != NULL;
    }
    c->watch = o->watch;   /* every collective of the training loop is guarded from here on */
    mn_status sa = mn_comm_arena_alloc(c, o->total, &o->arena);
    mn_status st = mn_agree(c, sw != MN_OK ? sw : sa);
    o->dbuf_on = opt->double_buffering;
    if (st == MN_OK && o->dbuf_on) st = start_dbuf(c, o);
    if (o->dbuf_on) o->fresh_until = opt->dbuf_fresh < 0 ? (size_t)mn_net_get(net).burn_in : (size_t)opt->dbuf_fresh;
    float m = mn_net_get(net).momentum;
    o->ramp = o->dbuf_on && m < 1 && opt->dbuf_handover > 0 ? (size_t)opt->dbuf_handover : 0;
    o->ramp_from = stale_ratio(m);
#ifdef GPU
    if (st == MN_OK && o->route != MN_ROUTE_HOST) st = mn_agree(c, start_stage(c, o));
#endif
    /* One rank on a GPU has no mean to take (MN_ROUTE_LOCAL): nothing to hide. */
    o->mode = opt->overlap && o->route != MN_ROUTE_LOCAL ? &mn_sync_overlap : &mn_sync_blocking;
    for (size_t i = 0, off = 0; o->arena && i < (size_t)o->n; off += o->lens[i++]) o->arrays[i] = o->arena + off;
    o->x = (mn_sync_ctx){c, o->watch, o->route, o->arena, o->arrays, o->arrays_gpu, o->lens, o->layer_of, o->n,
                         o->stage, o->tl};
    if (st == MN_OK && o->mode->start) st = o->mode->start(&o->x, opt, &o->mode_state);
    return st;
}

/* Darknet's host update arrays move into the arena, their contents kept. */
static void move_into_arena(network *net, mn_optimizer *o, const int *which)
{
    size_t off = 0;
    for (int i = 0; i < o->n; ++i) {
        float *old = mn_layer_get(net, o->layer_of[i]).updates[which[i]];
        memcpy(o->arena + off, old, o->lens[i] * sizeof(float));
        free(old);
        mn_layer_set_update(net, o->layer_of[i], which[i], o->arena + off);
        o->arrays[i] = o->arena + off;
        off += o->lens[i];
    }
}

/* Rank 0 says what double buffering and overlap do in this run. */
static void say_options(const mn_comm *c, network *net, const mn_options *opt, const mn_optimizer *o)
{
    if (c->rank != 0) return;
    if (o->dbuf_gpu)
        printf("darknet-mn: double_buffering=1 on the device: two packed gradient buffers, each averaged by %s on its "
               "own stream while the next step computes\n", c->ops->name);
    if (o->dbuf_on && o->fresh_until)
        printf("darknet-mn: double_buffering=1: iterations 1-%zu averaged fresh (double_buffering_fresh), then each "
               "step's mean is applied one step late\n", o->fresh_until);
    else if (o->dbuf_on)
        printf("darknet-mn: double_buffering=1: each step's mean is applied one step late, from the first iteration\n");
    if (o->ramp)
        printf("darknet-mn: double_buffering_handover=%zu: the first %zu stale steps' rate climbs from %.3g of the cfg's "
               "to all of it\n", o->ramp, o->ramp, o->ramp_from);
    if (o->dc)
        printf("darknet-mn: double_buffering_compensation=%g: each stale mean is corrected to the weights it is applied "
               "at\n", o->dc);
    if (o->pk)
        printf("darknet-mn: double_buffering_prediction=%g: each gradient that goes stale is taken at the weights plus "
               "%g times the last update, nearer those it is applied at\n", o->pk, o->pk);
    if (o->local)
        printf("darknet-mn: double_buffering_local=1: each update applies this rank's own gradient fresh and the "
               "previous step's mean less this rank's previous gradient; the ranks' models are averaged before each "
               "save\n");
    if (o->dbuf_on) dbuf_cost(mn_net_get(net).momentum, o->local);
    if (o->mode->say) o->mode->say(o->mode_state, opt);
}

mn_status mn_attach(mn_comm *c, network *net, const mn_options *opt, mn_optimizer **out)
{
    mn_optimizer *o = calloc(1, sizeof *o);
    if (!o) return mn_agree(c, MN_ERR_NOMEM);   /* the others wait in their first agreement */
    pthread_mutex_init(&o->hold, NULL);
    o->comm = c;
    o->seg = -1;
    int *which = NULL;
    mn_status st = collect_arrays(c, net, o, &which);
    if (st == MN_OK) st = host_state(c, net, opt, o);
    if (st == MN_OK) st = device_state(c, net, opt, o);
    if (st == MN_OK) st = start_predict(c, net, o);
    if (st == MN_ERR_NOMEM) mn_error(c, "out of memory attaching the optimizer");
    /* The collective part: every rank goes on to it, or none. */
    if ((st = mn_agree(c, st)) == MN_OK) st = start_collectives(c, net, opt, o);
    if (st != MN_OK) {
        free(which);
        free_optimizer(o);
        return st;
    }
    move_into_arena(net, o, which);
    free(which);
#ifdef GPU
    profile_start(c, o);
#endif
    o->hooks = (mn_net_hooks){.ranks = c->size, .sync = sync_hook, .backward = o->mode->ready ? backward_hook : NULL,
                              .arg = o};
    mn_net_set_hooks(net, &o->hooks);
    say_options(c, net, opt, o);
    *out = o;
    return MN_OK;
}

void mn_optimizer_set_timeline(mn_optimizer *o, network *net, mn_timeline *tl)
{
    o->tl = o->x.tl = tl;
    if (!mn_timeline_file(tl)) return;
    o->hooks.backward = backward_hook;
    mn_net_set_hooks(net, &o->hooks);
}

/* After a layer's forward on the CPU: a training pass ends with its last. */
static void forward_hook(network *net, int i)
{
    mn_optimizer *o = mn_net_hook_arg(net);
    if (o->in_step && i == mn_net_layers(net) - 1) mn_ways_pass(o->ways);
}

mn_status mn_optimizer_ways(mn_comm *c, mn_optimizer *o, network *net, int ways, int *kept)
{
    *kept = 0;
    if (ways < 2 || !o->bn.n || o->ways) return MN_OK;
#ifdef GPU
    if (mn_base_gpu() >= 0) return MN_OK;   /* the forward hook runs on the CPU alone */
#endif
    if (!(o->ways = mn_ways_new(&o->bn, ways))) {
        mn_error(c, "out of memory for %d copies of the batch-norm statistics", ways);
        return MN_ERR_NOMEM;
    }
    o->hooks.forward = forward_hook;
    mn_net_set_hooks(net, &o->hooks);
    *kept = 1;
    return MN_OK;
}

mn_ways *mn_optimizer_ways_of(mn_optimizer *o) { return o ? o->ways : NULL; }

void mn_optimizer_drain(mn_optimizer *o)
{
#ifdef GPU
    if (o && o->held) mn_held_drain(o->held);
#else
    (void)o;
#endif
}

double mn_optimizer_synced_at(const mn_optimizer *o)
{
    return o->mark;
}

/* The counters of the state the arrays hold now, as a snapshot's. */
static void snap_counters(mn_optimizer *o, const network *net)
{
    o->snap_it = mn_base_iteration((network *)net);
    o->snap_seen = mn_net_seen(net);
    o->snap_time = mn_now();
}

/* The update arrays hold momentum*update, and backward adds the gradient:
 * set aside, the momentum part stays float32 under float16, and a rescue
 * can read the last completed update while this step runs. */
/* The momentum part out of the update arrays, on the device or the host. */
static void set_aside(mn_optimizer *o, const network *net)
{
#ifdef GPU
    if (o->aside_gpu && mn_net_get(net).gpu >= 0) {   /* the same on the device */
        size_t off = 0;
        for (int i = 0; i < o->n; off += o->lens[i], ++i) {
            mn_base_copy_gpu((int)o->lens[i], o->arrays_gpu[i], o->aside_gpu + off);
            mn_base_fill_gpu((int)o->lens[i], 0, o->arrays_gpu[i]);
        }
        o->is_aside = 1;
        return;
    }
#endif
    if (!o->aside) return;
    (void)net;   /* CPU builds: Darknet's gpu_index field is meaningless (often 0) */
    memcpy(o->aside, o->arena, o->total * sizeof(float));
    memset(o->arena, 0, o->total * sizeof(float));
    o->is_aside = 1;
}

void mn_optimizer_begin_step(mn_optimizer *o, const network *net)
{
#ifdef GPU
    if (o->held) mn_held_before(o->held);
#endif
    if (o->rescue) mn_optimizer_end_step(o, net);   /* a caller that trains without calling it */
    o->mark = mn_now();
    o->seg = -1;
    o->in_step = 1;
    /* The iteration is one less than at this step's hook, whose mean goes
     * stale past fresh_until (fresh_step): the gradient taken now is. */
    if (o->pred) mn_ahead_step(o->pred, o->primed && mn_base_iteration((network *)net) >= o->fresh_until);
    o->primed = 1;
    if (o->skip && o->ways) mn_ways_mark(o->ways);
    if (!o->rescue) {
        if (o->skip) stats_copy(o, 0);
        set_aside(o, net);
        return;
    }
    pthread_mutex_lock(&o->hold);
    stats_copy(o, 0);
    set_aside(o, net);
    snap_counters(o, net);
    o->done = 0;
    pthread_mutex_unlock(&o->hold);
}

void mn_optimizer_end_step(mn_optimizer *o, const network *net)
{
    o->in_step = 0;
#ifdef GPU
    if (o->held) {   /* a rescue reading a slot finishes first */
        pthread_mutex_lock(&o->hold);
        mn_held_after(o->held, mn_base_iteration((network *)net), mn_net_seen(net), mn_now());
        pthread_mutex_unlock(&o->hold);
        return;
    }
#endif
    if (!o->holding) return;
    snap_counters(o, net);
    o->done = 1;
    o->holding = 0;
    pthread_mutex_unlock(&o->hold);
}

int mn_optimizer_rescues(const mn_optimizer *o) { return o->rescue || o->held; }

int mn_optimizer_hold(mn_optimizer *o, mn_snapshot *s)
{
    if (!mn_optimizer_rescues(o)) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;   /* an update takes milliseconds; longer, the rank is stuck inside it */
    if (pthread_mutex_timedlock(&o->hold, &ts) != 0) return -1;
#ifdef GPU
    if (o->held) {
        mn_held_state h;
        if (mn_held_read(o->held, 200000, &h) != 0) {   /* no copy complete within 0.2 s */
            pthread_mutex_unlock(&o->hold);
            return -1;
        }
        *s = (mn_snapshot){h.iteration, h.seen, h.done, h.momentum, h.nmomentum, NULL, h.params};
        return 0;
    }
#endif
    *s = (mn_snapshot){o->snap_it, o->snap_seen, o->snap_time, o->done ? o->arena : o->aside, o->total,
                       o->done ? NULL : o->stats_saved, NULL};
    return 0;
}

void mn_optimizer_release(mn_optimizer *o)
{
    pthread_mutex_unlock(&o->hold);
}

int mn_optimizer_nonfinite(mn_optimizer *o)
{
#ifdef GPU
    if (o->check_pending) {   /* check_on_device's flag, late */
        mn_device_must(o->comm, mn_device_event_wait(o->checked), "the Inf/NaN check");
        o->check_pending = 0;
        o->nonfinite |= *o->flag_host;
    }
#endif
    return o->nonfinite;
}

/* The device update arrays hold the momentum in a GPU run; the arena is
 * only the staging copy of the last allreduce. */
static void device_momentum(mn_optimizer *o, const network *net, int to_device)
{
#ifdef GPU
    if (mn_net_get(net).gpu >= 0) {
        if (to_device) mn_optimizer_drain(o);
        for (int i = 0; i < o->n; ++i) {
            if (to_device) mn_base_push(o->arrays_gpu[i], o->arrays[i], o->lens[i]);
            else mn_base_pull(o->arrays_gpu[i], o->arrays[i], o->lens[i]);
        }
    }
#else
    (void)o, (void)net, (void)to_device;
#endif
}

float *mn_optimizer_host_state(mn_optimizer *o, const network *net, int to_device, size_t *n)
{
    /* A mean is in flight only past fresh_until: a fresh step's zeros are
     * not applied as a mean. */
    int in_flight = mn_base_iteration(net) > o->fresh_until;
    if (!to_device) device_momentum(o, net, 0);
#ifdef GPU
    if (o->dbuf_gpu) {   /* as below, the mean in flight and compensation's state on the device */
        float *mean = o->state + o->total, *prev = o->dc ? mean + o->total : NULL, *v = prev ? prev + o->total : NULL;
        if (to_device) {
            memcpy(o->arena, o->state, o->total * sizeof(float));
            mn_dbuf_gpu_set(o->dbuf_gpu, in_flight ? mean : NULL, prev, v);
        } else {
            memcpy(o->state, o->arena, o->total * sizeof(float));
            mn_dbuf_gpu_get(o->dbuf_gpu, mean, prev, v);
        }
    } else
#endif
    if (o->dbuf) {   /* the arena and the mean in flight, which the next step applies */
        int has;
        float *pending = mn_dbuf_pending(o->dbuf, &has);
        if (to_device) {
            memcpy(o->arena, o->state, o->total * sizeof(float));
            memcpy(pending, o->state + o->total, o->total * sizeof(float));
            mn_dbuf_set_pending(o->dbuf, in_flight);
        } else {
            memcpy(o->state, o->arena, o->total * sizeof(float));
            if (has) memcpy(o->state + o->total, pending, o->total * sizeof(float));
            else memset(o->state + o->total, 0, o->total * sizeof(float));
        }
    }
    if (o->pred) {   /* the last array of the state */
        float *w0 = o->state + (state_arrays(o) - 1) * o->total;
        if (to_device) mn_ahead_set(o->pred, w0);
        else mn_ahead_get(o->pred, w0);
        o->primed |= to_device;
    }
    if (to_device) device_momentum(o, net, 1);   /* after double buffering's state reached the arena */
    return mn_optimizer_arena(o, n);
}

/* The arrays of buf (mn_params_pack's order) that training updates: the
 * running statistics stay each rank's own, as without double buffering. */
static int trained_views(network *net, float *buf, float **arrays, size_t *lens)
{
    int k = 0;
    size_t off = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v); off += v.n)
        if (!v.stat) {
            if (arrays) arrays[k] = buf + off, lens[k] = v.n;
            ++k;
        }
    return k;
}

mn_status mn_optimizer_align(mn_comm *c, network *net, mn_optimizer *o)
{
    if (!o || !o->local || c->size < 2) return MN_OK;
    int n = trained_views(net, NULL, NULL, NULL) + 1;
    float *p = malloc((mn_params_count(net) + 1) * sizeof(float)), **arrays = malloc((size_t)n * sizeof *arrays);
    size_t *lens = malloc((size_t)n * sizeof *lens);
    mn_status s = mn_agree(c, p && arrays && lens ? MN_OK : MN_ERR_NOMEM);
    if (s == MN_OK) {
        mn_params_pack(net, p);
        device_momentum(o, net, 0);
        trained_views(net, p, arrays, lens);
        arrays[n - 1] = o->arena, lens[n - 1] = o->total;
        int half = c->half;   /* the model in float32, whatever the gradient travels in */
        s = mn_comm_set_dtype(c, 0);
        if (s == MN_OK) s = mn_comm_mean_grad(c, arrays, lens, n);
        mn_comm_set_dtype(c, half);
        s = mn_agree(c, s);
    }
    if (s == MN_OK) {
        mn_params_unpack(net, p);
        device_momentum(o, net, 1);
#ifdef GPU
        if (o->dbuf_gpu) mn_dbuf_gpu_align(o->dbuf_gpu);
#endif
        if (o->dbuf) mn_dbuf_align(o->dbuf);
    }
    free(p);
    free(arrays);
    free(lens);
    return s;
}

float *mn_optimizer_arena(mn_optimizer *o, size_t *n)
{
    *n = o->dbuf_on ? state_arrays(o) * o->total : o->total;
    return o->dbuf_on ? o->state : o->arena;
}

void mn_optimizer_rescale(mn_optimizer *o, const network *net, float k)
{
    size_t n;
    float *st = mn_optimizer_host_state(o, net, 0, &n);
    size_t sums = o->dbuf_on ? 2 * o->total : o->total;   /* the momentum and the mean in flight */
    for (size_t i = 0; i < sums; ++i) st[i] *= k;
    if (o->dc)   /* compensation's mean square of the mean; its weights stay, as prediction's do */
        for (size_t i = 0, v = 3 * o->total; i < o->total; ++i) st[v + i] *= k * k;
    mn_optimizer_host_state(o, net, 1, &n);
}

/* Give every update array its own allocation again, so free_network works. */
void mn_detach(network *net, mn_optimizer *o)
{
    if (!o) return;
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        for (int s = 0; s < MN_UPDATES; ++s) {
            float *p = l.updates[s];
            if (p >= o->arena && p < o->arena + o->total + 1) {
                size_t n = 0;
                for (int j = 0; j < o->n; ++j) if (o->arrays[j] == p) n = o->lens[j];
                float *own = calloc(n + 1, sizeof(float));
                if (own) memcpy(own, p, n * sizeof(float));
                mn_layer_set_update(net, i, s, own);
            }
        }
    }
    mn_net_set_hooks(net, NULL);
    free_optimizer(o);
}
