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
#include "train/optimizer/mn_optimizer.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/observe/mn_observe.h"
#include "train/optimizer/mn_sync.h"
#include "train/optimizer/mn_rescue_gpu.h"
#include "train/optimizer/mn_bn_ways.h"
#include "train/optimizer/mn_optimizer_gpu.h"
#include "transport/mn_shm.h"
#include "core/mn_watchdog.h"

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
    int skip;             /* nonfinite=skip */
    mn_bn_arrays bn;      /* the running statistics (mn_bn_ways.h) */
    float *stats_saved;   /* their values before this step's forward */
    int is_aside;
    mn_route route;       /* where the mean is taken (mn_sync_route) */
    struct mn_optimizer_gpu *gpu; /* the device twin in a GPU run, else NULL */
    int own_watch;        /* watch was started here */
    float **weights;      /* the parameters each array updates */
    float **weights_gpu;  /* their device copies */
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
    struct mn_rescue_gpu *held; /* a GPU run's copies of it */
    pthread_mutex_t hold;
    int holding, done;    /* the hook holds it; the step's update is done */
    uint64_t snap_it, snap_seen;
    double snap_time;
    mn_bn_ways *ways;        /* mn_optimizer_ways, or NULL */
    int in_step;          /* between begin_step and end_step */
    mn_profile *prof;     /* MN_GPU_PROFILE=1, or NULL */
};

/* NaN or Inf anywhere: x*0 is 0 for every finite x, NaN otherwise. */
static int all_finite(const float *p, size_t n)
{
    float acc = 0;
    for (size_t i = 0; i < n; ++i) acc += p[i] * 0.0f;
    return acc == 0;
}

/* The running statistics as they were before this step's forward pass (a
 * non-finite batch has already folded NaN into them). */
static void stats_copy(mn_optimizer *o, int restore)
{
    if (restore) mn_optimizer_drain(o);
    mn_bn_arrays_copy(&o->bn, o->stats_saved, restore);
}

/* The arena's mean: Inf/NaN found, the momentum part back. */
static void finish_mean(mn_optimizer *o)
{
    o->nonfinite = !all_finite(o->arena, o->total);
    if (o->nonfinite && o->is_aside) memcpy(o->arena, o->aside, o->total * sizeof(float));
    else if (o->nonfinite) memset(o->arena, 0, o->total * sizeof(float));
    else if (o->is_aside)
        for (size_t i = 0; i < o->total; ++i) o->arena[i] += o->aside[i];
}

/* The hook's value: non-zero skips Darknet's update. */
static int after_mean(mn_optimizer *o)
{
    if (!o->nonfinite) return 0;
    if (o->skip) stats_copy(o, 1);
    if (o->skip && o->ways) mn_bn_ways_rewind(o->ways);
    return 1;
}

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

/* The core's finish of a mode's mean, where the mode left it: a finite
 * mean gets the momentum part back; a non-finite one is dropped and the
 * update skipped, alike on every rank. */
static int finish(mn_optimizer *o, mn_mean_at at, int bad)
{
    if (at == MN_MEAN_HOST) finish_mean(o);
    else if (at == MN_MEAN_STAGED) {   /* after the host allreduce: the mean goes up */
        o->nonfinite = !all_finite(o->arena, o->total);
        mn_optimizer_gpu_up(o->gpu, o->nonfinite, o->is_aside);
    } else if (at == MN_MEAN_DEVICE) o->nonfinite = mn_optimizer_gpu_check(o->gpu, bad, o->is_aside);
    else mn_optimizer_gpu_finish(o->gpu, o->nonfinite = bad, o->is_aside);
    o->is_aside = 0;
    return after_mean(o);
}

static int sync_all(network *net, mn_optimizer *o)
{
    int poison = !isfinite(mn_base_cost(net)) && o->total > 0, bad = 0, skip = 0;
    mn_mean_at at = o->mode->mean(o->mode_state, &o->x, net, poison, &bad, &skip);
    return finish(o, at, bad) || skip;
}

/* Nonzero: Darknet skips this update (a non-finite mean, or double
 * buffering's first stale step). */
static int sync_hook(network *net)
{
    mn_optimizer *o = mn_net_hook_arg(net);
    end_backward(o);
    double arrive = mn_now();
    mn_profile_mark(o->prof, 0);
    int skip = sync_all(net, o);
    mn_profile_mark(o->prof, 1);
    /* The update from here to the step's end changes what a rescue reads. */
    if (o->rescue && !o->holding) { pthread_mutex_lock(&o->hold); o->holding = 1; }
    o->mark = mn_now();
    mn_timeline_add(o->tl, 0, MN_TL_WAIT_COMM, arrive, o->mark, 0, 0, 0);
    mn_timeline_sync(o->tl, arrive, o->mark - arrive);
    return skip;
}

static void free_optimizer(mn_optimizer *o)
{
    if (o->mode && o->mode->stop) o->mode->stop(o->mode_state);
    mn_profile_free(o->prof, o->route == MN_ROUTE_STAGED ? "staged" : o->route == MN_ROUTE_DEVICE ? "device" : "local");
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
    mn_bn_arrays_free(&o->bn);
    free(o->stats_saved);
    mn_bn_ways_free(o->ways);
#ifdef GPU
    mn_rescue_gpu_free(o->held);
#endif
    mn_optimizer_gpu_free(o->gpu);   /* before the arena its staging page-locked */
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

/* What the host keeps beside the arena: the momentum part set aside
 * (float16, double buffering, nonfinite=skip, a CPU run's rescue) and the
 * statistics saved. */
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
    return MN_OK;
}

/* The route (mn_sync_route) and what it needs on the device. Our own
 * allocations, checked (Darknet's cuda_make_array never returns NULL: it
 * aborts), so that running out is agreed and said. */
static mn_status device_state(mn_comm *c, network *net, const mn_options *opt, mn_optimizer *o)
{
#ifdef GPU
    int on_gpu = mn_net_get(net).gpu >= 0;
    o->route = on_gpu && opt->double_buffering ? mn_sync_dbuf_route(c)
                                               : mn_sync_route(on_gpu, c->size, mn_comm_device_mean(c));
    if (on_gpu)
        MN_CHECK(mn_optimizer_gpu_new(c, o->route, o->arrays_gpu, o->lens, o->n, o->total, o->aside != NULL,
                                      opt->nonfinite_skip, &o->gpu));
    /* rescue=1: the update's state reaches the host on a copy stream (a
     * CPU run's rescue reads the host arrays it keeps, host_state). */
    if (on_gpu && opt->rescue && !opt->double_buffering && c->size > 1) {
        char why[256];
        mn_status r = mn_rescue_gpu_new(c, net, o->arrays_gpu, o->lens, o->n, &o->held, why, sizeof why);
        if (r != MN_OK) return r;
        if (!o->held) printf("darknet-mn: rank %d: rescue=1 is off on this rank: %s\n", c->rank, why);
    }
#else
    (void)c, (void)net, (void)opt;
    o->route = MN_ROUTE_HOST;
#endif
    return MN_OK;
}

/* Collective, every rank or none: the watchdog, the arena's window, the
 * staged route's tables and the sync mode. */
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
    if (st == MN_OK && o->gpu) st = mn_agree(c, mn_optimizer_gpu_stage(o->gpu, o->arena));
    /* One rank on a GPU has no mean to take (MN_ROUTE_LOCAL): nothing to hide. */
    o->mode = opt->double_buffering ? &mn_sync_dbuf
              : opt->overlap && o->route != MN_ROUTE_LOCAL ? &mn_sync_overlap : &mn_sync_blocking;
    for (size_t i = 0, off = 0; o->arena && i < (size_t)o->n; off += o->lens[i++]) o->arrays[i] = o->arena + off;
    o->x = (mn_sync_ctx){c, o->watch, o->route, o->arena, o->total, o->arrays, o->arrays_gpu, o->lens, o->layer_of,
                         o->weights, o->weights_gpu, o->n, mn_optimizer_gpu_staging(o->gpu), o->tl};
    if (st == MN_OK && o->mode->start) st = o->mode->start(&o->x, net, opt, &o->mode_state);
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
    if (o->route != MN_ROUTE_HOST) o->prof = mn_profile_new(c);
    o->hooks = (mn_net_hooks){.ranks = c->size, .sync = sync_hook, .backward = o->mode->ready ? backward_hook : NULL,
                              .arg = o};
    mn_net_set_hooks(net, &o->hooks);
    if (c->rank == 0 && o->mode->say) o->mode->say(o->mode_state, opt);
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
    if (o->in_step && i == mn_net_layers(net) - 1) mn_bn_ways_pass(o->ways);
}

mn_status mn_optimizer_ways(mn_comm *c, mn_optimizer *o, network *net, int ways, int *kept)
{
    *kept = 0;
    if (ways < 2 || !o->bn.n || o->ways) return MN_OK;
#ifdef GPU
    if (mn_base_gpu() >= 0) return MN_OK;   /* the forward hook runs on the CPU alone */
#endif
    if (!(o->ways = mn_bn_ways_new(&o->bn, ways))) {
        mn_error(c, "out of memory for %d copies of the batch-norm statistics", ways);
        return MN_ERR_NOMEM;
    }
    o->hooks.forward = forward_hook;
    mn_net_set_hooks(net, &o->hooks);
    *kept = 1;
    return MN_OK;
}

mn_bn_ways *mn_optimizer_ways_of(mn_optimizer *o) { return o ? o->ways : NULL; }

void mn_optimizer_drain(mn_optimizer *o)
{
#ifdef GPU
    if (o && o->held) mn_rescue_gpu_drain(o->held);
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
 * set aside (on the device in a GPU run), the momentum part stays float32
 * under float16, and a rescue can read the last completed update while
 * this step runs. */
static void set_aside(mn_optimizer *o)
{
    if (mn_optimizer_gpu_aside(o->gpu)) {
        o->is_aside = 1;
        return;
    }
    if (!o->aside) return;
    memcpy(o->aside, o->arena, o->total * sizeof(float));
    memset(o->arena, 0, o->total * sizeof(float));
    o->is_aside = 1;
}

void mn_optimizer_begin_step(mn_optimizer *o, const network *net)
{
#ifdef GPU
    if (o->held) mn_rescue_gpu_before(o->held);
#endif
    if (o->rescue) mn_optimizer_end_step(o, net);   /* a caller that trains without calling it */
    o->mark = mn_now();
    o->seg = -1;
    o->in_step = 1;
    if (o->mode->begin) o->mode->begin(o->mode_state, net);
    if (o->skip && o->ways) mn_bn_ways_mark(o->ways);
    if (!o->rescue) {
        if (o->skip) stats_copy(o, 0);
        set_aside(o);
        return;
    }
    pthread_mutex_lock(&o->hold);
    stats_copy(o, 0);
    set_aside(o);
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
        mn_rescue_gpu_after(o->held, mn_base_iteration((network *)net), mn_net_seen(net), mn_now());
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
        mn_rescue_gpu_state h;
        if (mn_rescue_gpu_read(o->held, 200000, &h) != 0) {   /* no copy complete within 0.2 s */
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
    o->nonfinite |= mn_optimizer_gpu_late(o->gpu);
    return o->nonfinite;
}

/* The device update arrays hold the momentum in a GPU run; the arena is
 * only the staging copy of the last allreduce. */
static void device_momentum(mn_optimizer *o, int to_device)
{
    if (!o->gpu) return;
    if (to_device) mn_optimizer_drain(o);
    mn_optimizer_gpu_momentum(o->gpu, o->arrays, to_device);
}

float *mn_optimizer_host_state(mn_optimizer *o, const network *net, int to_device, size_t *n)
{
    if (!to_device) device_momentum(o, 0);
    if (o->mode->state) o->mode->state(o->mode_state, net, to_device);
    if (to_device) device_momentum(o, 1);   /* after the mode's state reached the arena */
    return mn_optimizer_arena(o, n);
}

mn_status mn_optimizer_align(mn_comm *c, network *net, mn_optimizer *o)
{
    if (!o || !o->mode->drifts || !o->mode->drifts(o->mode_state) || c->size < 2) return MN_OK;
    int n = mn_params_trained(net, NULL, NULL, NULL) + 1;   /* the running statistics stay each rank's own */
    float *p = malloc((mn_params_count(net) + 1) * sizeof(float)), **arrays = malloc((size_t)n * sizeof *arrays);
    size_t *lens = malloc((size_t)n * sizeof *lens);
    mn_status s = mn_agree(c, p && arrays && lens ? MN_OK : MN_ERR_NOMEM);
    if (s == MN_OK) {
        mn_params_pack(net, p);
        device_momentum(o, 0);
        mn_params_trained(net, p, arrays, lens);
        arrays[n - 1] = o->arena, lens[n - 1] = o->total;
        int half = mn_comm_half(c);   /* the model in float32, whatever the gradient travels in */
        s = mn_comm_set_dtype(c, 0);
        if (s == MN_OK) s = mn_comm_mean_grad(c, arrays, lens, n);
        mn_comm_set_dtype(c, half);
        s = mn_agree(c, s);
    }
    if (s == MN_OK) {
        mn_params_unpack(net, p);
        device_momentum(o, 1);
        o->mode->aligned(o->mode_state);
    }
    free(p);
    free(arrays);
    free(lens);
    return s;
}

float *mn_optimizer_arena(mn_optimizer *o, size_t *n)
{
    if (o->mode->slots) return o->mode->slots(o->mode_state, n);
    *n = o->total;
    return o->arena;
}

void mn_optimizer_rescale(mn_optimizer *o, const network *net, float k)
{
    size_t n;
    float *st = mn_optimizer_host_state(o, net, 0, &n);
    for (size_t i = 0; i < o->total; ++i) st[i] *= k;   /* the momentum, first in the mode's slots too */
    if (o->mode->rescale) o->mode->rescale(o->mode_state, k);
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
