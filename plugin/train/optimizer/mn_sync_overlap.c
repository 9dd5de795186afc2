/* overlap=1 (mn_overlap.c): buckets averaged on a thread during backward;
 * at the hook the rest go and the update waits for the last. */
#include <math.h>
#include <stdio.h>
#include "train/optimizer/mn_sync.h"
#include "base/mn_base.h"
#include "train/optimizer/mn_overlap.h"
#include "train/optimizer/mn_grad_stage.h"
#include "core/mn_watchdog.h"

#ifdef GPU
/* A non-finite loss: a NaN in the first array before its bucket goes. */
static void poison_device(void *arg, int k, size_t off, size_t len, int poison)
{
    const mn_sync_ctx *x = arg;
    (void)k, (void)off, (void)len;
    if (poison) mn_base_fill_gpu(1, NAN, x->arrays_gpu[0]);
}
#endif

static mn_status overlap_start(const mn_sync_ctx *x, network *net, const mn_options *opt, void **state)
{
    (void)net;
    mn_overlap_gpu g = {0};
#ifdef GPU
    if (x->route == MN_ROUTE_DEVICE) g = (mn_overlap_gpu){.dev = x->arrays_gpu, .handed = poison_device, .arg = (void *)x};
    else g = (mn_overlap_gpu){.handed = mn_grad_stage_handed, .ready = mn_grad_stage_ready, .arg = x->stage};
#endif
    mn_overlap *ov = NULL;
    mn_status st = mn_overlap_start(x->comm, x->arrays, x->lens, x->layer_of, x->n, opt->bucket_mb,
                                    x->route == MN_ROUTE_HOST ? NULL : &g, &ov);
    *state = ov;
#ifdef GPU
    if (st == MN_OK && x->route == MN_ROUTE_STAGED) st = mn_agree(x->comm, mn_grad_stage_buckets(x->stage, mn_overlap_buckets(ov)));
#endif
    return st;
}

static int overlap_ready(void *state, int layer, int poison) { return mn_overlap_ready(state, layer, poison); }

static mn_mean_at overlap_mean(void *state, const mn_sync_ctx *x, network *net, int poison, int *bad, int *skip)
{
    mn_overlap *ov = state;
    *bad = *skip = 0;
    mn_watchdog_enter(x->watch, "gradient allreduce", mn_base_iteration(net));
    mn_overlap_finish(ov, poison);
    mn_watchdog_leave(x->watch);
    for (int k = 0, nb = mn_overlap_buckets(ov); x->tl && k < nb; ++k) {
        size_t floats;
        double tq, t0, t1;
        mn_overlap_bucket(ov, k, &floats, &tq, &t0, &t1);
        mn_timeline_add(x->tl, 1, MN_TL_QUEUED, tq, t0, 0, 0, 0);
        mn_timeline_add(x->tl, 1, MN_TL_BUCKET, t0, t1, floats * (mn_comm_half(x->comm) ? 2 : 4), 0, 0);
    }
    /* The device route's thread waited for each bucket's NCCL work. */
    return x->route == MN_ROUTE_STAGED ? MN_MEAN_STAGED : x->route == MN_ROUTE_DEVICE ? MN_MEAN_DEVICE : MN_MEAN_HOST;
}

static void overlap_say(void *state, const mn_options *opt)
{
    int nb = mn_overlap_buckets(state);
    printf("darknet-mn: overlap=1: %d bucket%s of at most %g MiB, averaged during backward\n", nb, nb == 1 ? "" : "s",
           opt->bucket_mb);
}

static void overlap_stop(void *state) { mn_overlap_stop(state); }

const mn_sync_ops mn_sync_overlap = {.name = "overlap", .start = overlap_start, .ready = overlap_ready,
                                     .mean = overlap_mean, .say = overlap_say, .stop = overlap_stop};
