/* The GPU paths' host logic, built in every build (mn_wait.c). No CUDA,
 * no MPI. */
#ifndef MN_WAIT_H
#define MN_WAIT_H

#include <stddef.h>

/* The state of something awaited. */
typedef enum { MN_POLL_DONE, MN_POLL_PENDING, MN_POLL_ERROR, MN_POLL_TIMEOUT } mn_poll;

/* What mn_wait polls; a test stubs them. */
typedef struct {
    mn_poll (*poll)(void *arg);            /* DONE, PENDING or ERROR */
    void (*abort)(void *arg);              /* on ERROR or TIMEOUT */
    double (*now)(void *arg);              /* seconds */
    void (*pause)(void *arg, double waited);   /* between two polls */
    void *arg;
} mn_waiter;

/* Polls until DONE, ERROR or timeout seconds (0: none); aborts once on
 * ERROR or TIMEOUT. Returns DONE, ERROR or TIMEOUT. */
mn_poll mn_wait(const mn_waiter *w, double timeout);

/* How hierarchical and two_dimensional average on the device. */
typedef enum {
    MN_LEGS_NODE_AVG,        /* one node: ncclAllReduce(ncclAvg) */
    MN_LEGS_REDUCE_BCAST,    /* hierarchical */
    MN_LEGS_SCATTER_GATHER   /* two_dimensional */
} mn_legs;
mn_legs mn_nccl_legs(int nodes, int two_dimensional);

/* Where an update step averages the gradient (mn_optimizer.c). */
typedef enum {
    MN_ROUTE_HOST,     /* CPU run: the host arena */
    MN_ROUTE_LOCAL,    /* GPU run on one rank: the Inf/NaN check alone */
    MN_ROUTE_DEVICE,   /* GPU run averaging device arrays (NCCL) */
    MN_ROUTE_STAGED    /* GPU run through MPI: via the host arena */
} mn_route;
mn_route mn_sync_route(int gpu, int ranks, int device_mean);

/* offs[k]: where array k starts packed (n + 1 entries); returns offs[n]. */
size_t mn_pack_offsets(const size_t *lens, int n, size_t *offs);

#ifdef __CUDACC__
#define MN_HOST_DEVICE __host__ __device__
#else
#define MN_HOST_DEVICE
#endif
/* The array k holding packed element i < offs[n] (empty arrays never do). */
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

/* cuDNN's version number as major, minor, patch. */
void mn_cudnn_version(size_t v, int *major, int *minor, int *patch);

#endif
