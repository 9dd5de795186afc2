/* The blocking mode: the whole mean at the hook, by the route. A rank whose
 * loss is not finite makes it NaN, so every rank drops the update. */
#include <math.h>
#include "train/optimizer/mn_sync.h"
#include "base/mn_base.h"
#include "train/optimizer/mn_grad_stage.h"
#include "core/mn_watchdog.h"

/* The route every mode takes the mean by (a double-buffered GPU run picks
 * its own, mn_sync_dbuf_route). */
mn_route mn_sync_route(int gpu, int ranks, int device_mean)
{
    if (!gpu) return MN_ROUTE_HOST;
    if (ranks <= 1) return MN_ROUTE_LOCAL;
    return device_mean ? MN_ROUTE_DEVICE : MN_ROUTE_STAGED;
}

static mn_mean_at blocking_mean(void *state, const mn_sync_ctx *x, network *net, int poison, int *bad, int *skip)
{
    (void)state;
    *bad = *skip = 0;
#ifdef GPU
    if (x->route == MN_ROUTE_LOCAL) {   /* one rank: its gradient is the mean */
        *bad = poison;
        return MN_MEAN_DEVICE;
    }
    if (x->route == MN_ROUTE_DEVICE) {
        if (poison) mn_base_fill_gpu(1, NAN, x->arrays_gpu[0]);
        mn_watchdog_enter(x->watch, "gradient allreduce", mn_base_iteration(net));
        if (mn_comm_mean_grad_device(x->comm, x->arrays_gpu, x->lens, x->n) != MN_OK)
            mn_abort(x->comm, "gradient allreduce failed");
        mn_watchdog_leave(x->watch);
        return MN_MEAN_DEVICE;
    }
    if (x->route == MN_ROUTE_STAGED) mn_grad_stage_down(x->stage);
#endif
    if (poison) x->arena[0] = NAN;
    mn_watchdog_enter(x->watch, "gradient allreduce", mn_base_iteration(net));
    if (mn_comm_mean_grad(x->comm, x->arrays, x->lens, x->n) != MN_OK) mn_abort(x->comm, "gradient allreduce failed");
    mn_watchdog_leave(x->watch);
    return x->route == MN_ROUTE_STAGED ? MN_MEAN_STAGED : MN_MEAN_HOST;
}

const mn_sync_ops mn_sync_blocking = {.name = "blocking", .mean = blocking_mean};
