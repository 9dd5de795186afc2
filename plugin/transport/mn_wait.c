/* The GPU paths' host logic as plain functions (mn_wait.h): compiled in
 * every build, so tests/unit/test_gpu_logic.c runs it without a GPU. */
#include "mn_transport.h"

/* With no timeout, errors are still polled for. */
mn_poll mn_wait(const mn_waiter *w, double timeout)
{
    double start = w->now(w->arg);
    for (;;) {
        mn_poll p = w->poll(w->arg);
        if (p == MN_POLL_DONE) return p;
        double waited = w->now(w->arg) - start;
        if (p == MN_POLL_PENDING && timeout > 0 && waited > timeout) p = MN_POLL_TIMEOUT;
        if (p != MN_POLL_PENDING) {   /* an error, or out of time: nothing may go on using it */
            w->abort(w->arg);
            return p == MN_POLL_TIMEOUT ? p : MN_POLL_ERROR;
        }
        w->pause(w->arg, waited);
    }
}

/* One node needs no inter-node leg: one ncclAllReduce(ncclAvg) is the mean.
 * Else hierarchical: ncclReduce, the leaders' MPI allreduce, ncclBroadcast;
 * two_dimensional: ncclReduceScatter, MPI allreduce of shards, ncclAllGather. */
mn_legs mn_nccl_legs(int nodes, int two_dimensional)
{
    if (nodes <= 1) return MN_LEGS_NODE_AVG;
    return two_dimensional ? MN_LEGS_SCATTER_GATHER : MN_LEGS_REDUCE_BCAST;
}

mn_route mn_sync_route(int gpu, int ranks, int device_mean)
{
    if (!gpu) return MN_ROUTE_HOST;
    if (ranks <= 1) return MN_ROUTE_LOCAL;
    return device_mean ? MN_ROUTE_DEVICE : MN_ROUTE_STAGED;
}

size_t mn_pack_offsets(const size_t *lens, int n, size_t *offs)
{
    size_t off = 0;
    for (int k = 0; k < n; ++k) {
        offs[k] = off;
        off += lens[k];
    }
    offs[n] = off;
    return off;
}

/* cuDNN 9 counts major*10000 + minor*100 + patch, older major*1000 + minor*100 + patch. */
void mn_cudnn_version(size_t v, int *major, int *minor, int *patch)
{
    int nine = v >= 90000;
    *major = (int)(nine ? v / 10000 : v / 1000);
    *minor = (int)(nine ? v / 100 % 100 : v / 100 % 10);
    *patch = (int)(v % 100);
}
