/* Host logic of the GPU paths, kept as plain functions so that the CPU
 * build compiles and tests them (mn_wait.c, tests/unit/test_gpu_logic.c): the
 * wait loop every NCCL wait goes through, the plan of the node legs, and
 * the index maths of packing many device arrays into one buffer (shared
 * with mn_kernels.cu). No CUDA, no MPI. */
#ifndef MN_WAIT_H
#define MN_WAIT_H

#include <stddef.h>

/* The state of something awaited (a NCCL communicator, a stream). */
typedef enum { MN_POLL_DONE, MN_POLL_PENDING, MN_POLL_ERROR, MN_POLL_TIMEOUT } mn_poll;

/* What mn_wait polls, through functions so a test can stub them. */
typedef struct {
    mn_poll (*poll)(void *arg);            /* DONE, PENDING or ERROR */
    void (*abort)(void *arg);              /* on ERROR or TIMEOUT: cancel it (ncclCommAbort) */
    double (*now)(void *arg);              /* seconds */
    void (*pause)(void *arg, double waited);   /* between two polls */
    void *arg;
} mn_waiter;

/* Polls until DONE, ERROR, or timeout seconds have passed (0: no limit,
 * errors are still read); aborts once on ERROR and TIMEOUT. Returns DONE,
 * ERROR or TIMEOUT. */
mn_poll mn_wait(const mn_waiter *w, double timeout);

/* How the node legs of hierarchical and two_dimensional average a packed
 * gradient on the device: with one node there is no inter-node leg, and
 * one ncclAllReduce with ncclAvg over the node is the whole mean. */
typedef enum {
    MN_LEGS_NODE_AVG,        /* one node: ncclAllReduce(ncclAvg) over the node */
    MN_LEGS_REDUCE_BCAST,    /* hierarchical: ncclReduce, leaders' MPI allreduce, ncclBroadcast */
    MN_LEGS_SCATTER_GATHER   /* two_dimensional: ncclReduceScatter, MPI allreduce of shards, ncclAllGather */
} mn_legs;
mn_legs mn_nccl_legs(int nodes, int two_dimensional);

/* Where an update step averages the gradient (mn_optimizer.c). */
typedef enum {
    MN_ROUTE_HOST,     /* CPU run: the host arena through the communicator */
    MN_ROUTE_LOCAL,    /* GPU run on one rank: no mean to take, only the Inf/NaN check on the device */
    MN_ROUTE_DEVICE,   /* GPU run whose communicator averages device arrays (NCCL) */
    MN_ROUTE_STAGED    /* GPU run through MPI: packed on the device, one copy down and one up */
} mn_route;
mn_route mn_sync_route(int gpu, int ranks, int device_mean);

/* Packing: offs[k] is where array k starts in the packed buffer (n + 1
 * entries, offs[n] the total). mn_pack_offsets fills it from lens. */
size_t mn_pack_offsets(const size_t *lens, int n, size_t *offs);

#ifdef __CUDACC__
#define MN_HOST_DEVICE __host__ __device__
#else
#define MN_HOST_DEVICE
#endif
/* The array holding packed element i (offs[k] <= i < offs[k + 1]; empty
 * arrays never hold one): a binary search, run by the pack kernels for
 * every element. i < offs[n]. */
static inline MN_HOST_DEVICE int mn_pack_find(const size_t *offs, int n, size_t i)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {   /* the last k with offs[k] <= i */
        int mid = (lo + hi + 1) / 2;
        if (offs[mid] <= i) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* cuDNN's version number as major, minor, patch: cuDNN 9 counts
 * major*10000 + minor*100 + patch, cuDNN 8 and older major*1000 + minor*100 + patch. */
void mn_cudnn_version(size_t v, int *major, int *minor, int *patch);

#endif
