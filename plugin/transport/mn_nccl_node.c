/* NCCL in GPU=1 NCCL=1 builds: mn_nccl, a communicator with this rank's
 * device, stream and ordering event, and the node legs of hierarchical and
 * two_dimensional: the packed device gradient is reduced inside the node
 * with NCCL, the inter-node leg goes through MPI from page-locked memory
 * (MPI need not be CUDA-aware).
 *   hierarchical: ncclReduce to the leader, MPI among leaders, divide,
 *     ncclBroadcast.
 *   two_dimensional: ncclReduceScatter (padded to the node size), MPI of
 *     the shard among equal intra-ranks, divide, ncclAllGather.
 * float32 only. Other builds compile stubs that never open. */
#include "transport/mn_transport.h"
#include "transport/mn_nccl.h"

#if defined(MN_NCCL) && defined(GPU)
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "transport/mn_gpu.h"
#include "transport/mn_wait.h"
#include "core/mn_watchdog.h"

struct mn_nccl_node {
    mn_nccl nc;             /* over c->intra */
    float *dev, *host;      /* the packed gradient on the device, and its page-locked staging */
    size_t cap;             /* floats in each */
};

/* The rank's own device, set again as it is per thread. */
mn_status mn_nccl_enter(mn_comm *c, const mn_nccl *n)
{
    MN_CUDA_CHECK(c, cudaSetDevice(n->device));
    return MN_OK;
}

/* mn_wait's view of a communicator (and its stream with with_stream). */
static mn_poll nccl_poll(void *arg)
{
    mn_nccl *n = arg;
    ncclResult_t state = ncclSuccess, r = ncclCommGetAsyncError(n->comm, &state);
    if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
        n->nccl_err = r != ncclSuccess ? r : state;
        return MN_POLL_ERROR;
    }
    if (state == ncclInProgress) return MN_POLL_PENDING;
    if (!n->with_stream) return MN_POLL_DONE;
    cudaError_t e = cudaStreamQuery(n->stream);
    if (e == cudaErrorNotReady) return MN_POLL_PENDING;
    if (e == cudaSuccess) return MN_POLL_DONE;
    n->cuda_err = e;
    return MN_POLL_ERROR;
}

/* After an error or the deadline nothing may use the communicator: abort
 * frees it and stops its kernels, so the stream drains. */
static void nccl_abort(void *arg)
{
    mn_nccl *n = arg;
    ncclResult_t r = ncclCommAbort(n->comm);
    if (r != ncclSuccess) mn_error(n->c, "ncclCommAbort failed: %s", ncclGetErrorString(r));
    n->has_comm = 0;
}

static double nccl_now(void *arg)
{
    (void)arg;
    return mn_now();
}

/* Spin for a millisecond (a step's waits are short), then sleep a little. */
static void nccl_pause(void *arg, double waited)
{
    (void)arg;
    if (waited < 1e-3) { sched_yield(); return; }
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

/* NCCL's own account of its last error, as ": text", or "" (asked with
 * NULL: NCCL keeps it past an abort, when no communicator is left). */
static const char *nccl_detail(char *buf, size_t cap)
{
    const char *last = ncclGetLastError(NULL);
    snprintf(buf, cap, "%s%s", last && *last ? ": " : "", last ? last : "");
    return buf;
}

/* Polls n until it settles (and its stream drains with with_stream); the
 * failure is reported with NCCL's or CUDA's reason before the abort. */
static mn_status nccl_wait(const mn_comm *c, mn_nccl *n, int with_stream, double timeout, const char *what)
{
    n->with_stream = with_stream;
    n->nccl_err = ncclSuccess;
    n->cuda_err = cudaSuccess;
    char detail[512];
    mn_waiter w = {nccl_poll, nccl_abort, nccl_now, nccl_pause, n};
    mn_poll p = mn_wait(&w, timeout);
    if (p == MN_POLL_DONE) return MN_OK;
    if (p == MN_POLL_TIMEOUT)
        mn_error(c, "%s: NCCL did not complete within %.0f s (collective_timeout); another rank stalled or died; "
                 "the NCCL communicator was aborted", what, timeout);
    else if (n->cuda_err != cudaSuccess)
        mn_error(c, "%s: the CUDA stream failed: %s; the NCCL communicator was aborted", what,
                 cudaGetErrorString(n->cuda_err));
    else
        mn_error(c, "%s: NCCL failed: %s%s; the NCCL communicator was aborted", what, ncclGetErrorString(n->nccl_err),
                 nccl_detail(detail, sizeof detail));
    (void)cudaGetLastError();
    return MN_ERR_UNAVAILABLE;
}

mn_status mn_nccl_result(const mn_comm *c, mn_nccl *n, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess) return MN_OK;
    if (r == ncclInProgress) return nccl_wait(c, n, 0, n->timeout, what);
    char detail[512];
    mn_error(c, "%s failed: %s%s; the NCCL communicator was aborted", what, ncclGetErrorString(r),
             nccl_detail(detail, sizeof detail));
    nccl_abort(n);
    return MN_ERR_UNAVAILABLE;
}

mn_status mn_nccl_sync(mn_comm *c, mn_nccl *n, const char *what)
{
    return nccl_wait(c, n, 1, n->timeout, what);
}

/* Finalized (polled with the deadline), then destroyed; one that failed
 * was aborted already (has_comm cleared). */
void mn_nccl_close(mn_nccl *n)
{
    if (n->has_comm && mn_nccl_result(n->c, n, ncclCommFinalize(n->comm), "ncclCommFinalize") == MN_OK) {
        ncclResult_t r = ncclCommDestroy(n->comm);
        if (r != ncclSuccess) mn_error(n->c, "ncclCommDestroy failed: %s", ncclGetErrorString(r));
    }
    if (n->has_event) mn_cuda_ok(n->c, cudaEventDestroy(n->ready), "cudaEventDestroy");
    if (n->has_stream) mn_cuda_ok(n->c, cudaStreamDestroy(n->stream), "cudaStreamDestroy");
    n->has_comm = n->has_event = n->has_stream = 0;
}

static mn_status open_on_device(mn_comm *c, mn_nccl *n)
{
    if (!mn_nccl_usable(c)) {   /* pure_nccl's query refuses this first; kept so no device 0 is ever touched */
        mn_error(c, "NCCL needs a GPU of its own per rank, and this rank has none");
        return MN_ERR_UNAVAILABLE;
    }
    n->device = mn_gpu_device(c);
    MN_CHECK(mn_nccl_enter(c, n));
    MN_CUDA_CHECK(c, cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    n->has_stream = 1;
    MN_CUDA_CHECK(c, cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming));
    n->has_event = 1;
    return MN_OK;
}

/* Non-blocking creation, polled until ready, failed or past the deadline
 * (then aborted): a rank whose peer failed never waits for ever. */
static mn_status init_rank(mn_comm *c, mn_nccl *n, int size, ncclUniqueId id, int rank)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&n->comm, size, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        char detail[512];
        mn_error(c, "ncclCommInitRankConfig failed: %s%s", ncclGetErrorString(r), nccl_detail(detail, sizeof detail));
        return MN_ERR_UNAVAILABLE;
    }
    n->has_comm = 1;
    return nccl_wait(c, n, 0, mn_watchdog_timeout(c) / 2, "creating the NCCL communicator");
}

/* Every step is agreed before the next collective one, so a rank that fails
 * cannot leave the others waiting in MPI_Bcast. */
mn_status mn_nccl_open(mn_comm *c, MPI_Comm over, int size, int rank, mn_nccl *n)
{
    n->c = c;
    /* A wait outlasts the watchdog (2 t + 5 s against its t and 1.5 t + 2 s),
     * which names the late ranks; it bounds what no guard covers. */
    double t = mn_watchdog_timeout(c);
    n->timeout = t > 0 ? 2 * t + 5 : 0;
    mn_status st = open_on_device(c, n);
    ncclUniqueId id;
    if (st == MN_OK && rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) { mn_error(c, "ncclGetUniqueId failed: %s", ncclGetErrorString(r)); st = MN_ERR_UNAVAILABLE; }
    }
    if ((st = mn_agree(c, st)) == MN_OK) {
        if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, over) != MPI_SUCCESS) st = MN_ERR_MPI;
        else st = init_rank(c, n, size, id, rank);
        st = mn_agree(c, st);
    }
    if (st != MN_OK) mn_nccl_close(n);
    return st;
}

mn_status mn_nccl_after_darknet(mn_comm *c, mn_nccl *n)
{
    if (c->device_ordered) return MN_OK;
    MN_CUDA_CHECK(c, cudaEventRecord(n->ready, MN_STREAM()));
    MN_CUDA_CHECK(c, cudaStreamWaitEvent(n->stream, n->ready, 0));
    return MN_OK;
}

void *mn_nccl_node_stream(mn_nccl_node *nn)
{
    return nn->nc.stream;
}

static void free_buffers(mn_nccl_node *nn)
{
    if (nn->dev) mn_cuda_ok(nn->nc.c, cudaFree(nn->dev), "cudaFree");
    if (nn->host) mn_cuda_ok(nn->nc.c, cudaFreeHost(nn->host), "cudaFreeHost");
    nn->dev = nn->host = NULL;
    nn->cap = 0;
}

void mn_nccl_node_close(mn_nccl_node *nn)
{
    if (!nn) return;
    mn_nccl_close(&nn->nc);
    free_buffers(nn);
    free(nn);
}

/* Collective. NULL (with MN_OK) unless every rank has a GPU of its own on a
 * node of more than one rank. */
mn_status mn_nccl_node_open(mn_comm *c, mn_nccl_node **out)
{
    *out = NULL;
    int usable = c->intra_size > 1 && mn_nccl_usable(c);
    MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, c->world));
    if (!usable) return MN_OK;
    mn_nccl_node *nn = calloc(1, sizeof *nn);
    mn_status st = mn_agree(c, nn ? MN_OK : MN_ERR_NOMEM);
    if (st == MN_OK) st = mn_nccl_open(c, c->intra, c->intra_size, c->intra_rank, &nn->nc);
    if (st != MN_OK) {
        if (c->rank == 0) mn_error(c, "could not set up NCCL inside the nodes");
        mn_nccl_node_close(nn);
        return st;
    }
    *out = nn;
    return MN_OK;
}

static mn_status room(mn_comm *c, mn_nccl_node *nn, size_t n)
{
    if (n <= nn->cap) return MN_OK;
    free_buffers(nn);
    MN_CUDA_CHECK(c, cudaMalloc((void **)&nn->dev, n * sizeof(float)));
    MN_CUDA_CHECK(c, cudaMallocHost((void **)&nn->host, n * sizeof(float)));
    nn->cap = n;
    return MN_OK;
}

/* count floats at dev through host: the sum over c->inter, divided by N. */
static mn_status inter_leg(mn_comm *c, mn_nccl_node *nn, float *dev, size_t count)
{
    MN_CUDA_CHECK(c, cudaMemcpyAsync(nn->host, dev, count * sizeof(float), cudaMemcpyDeviceToHost, nn->nc.stream));
    MN_CHECK(mn_nccl_sync(c, &nn->nc, "the node's NCCL leg"));
    MN_CHECK(mn_sum_floats(c, c->inter, nn->host, count));
    mn_div_floats(nn->host, count, (float)c->size);
    MN_CUDA_CHECK(c, cudaMemcpyAsync(dev, nn->host, count * sizeof(float), cudaMemcpyHostToDevice, nn->nc.stream));
    return MN_OK;
}

static mn_status legs(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional)
{
    mn_nccl *nc = &nn->nc;
    size_t total = 0, off = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (!total) return MN_OK;
    size_t m = (size_t)c->intra_size, shard = (total + m - 1) / m, padded = shard * m;
    MN_CHECK(room(c, nn, padded));
    MN_CHECK(mn_nccl_after_darknet(c, nc));
    for (int i = 0; i < n; off += lens[i], ++i)
        MN_CUDA_CHECK(c, cudaMemcpyAsync(nn->dev + off, dev[i], lens[i] * sizeof(float), cudaMemcpyDeviceToDevice, nc->stream));
    switch (mn_nccl_legs(c->nodes, two_dimensional)) {
    case MN_LEGS_NODE_AVG:   /* one node: no leg through the host */
        MN_NCCL_CALL(c, nc, ncclAllReduce(nn->dev, nn->dev, total, ncclFloat32, ncclAvg, nc->comm, nc->stream));
        break;
    case MN_LEGS_SCATTER_GATHER: {
        float *mine = nn->dev + (size_t)c->intra_rank * shard;
        MN_CUDA_CHECK(c, cudaMemsetAsync(nn->dev + total, 0, (padded - total) * sizeof(float), nc->stream));
        MN_NCCL_CALL(c, nc, ncclReduceScatter(nn->dev, mine, shard, ncclFloat32, ncclSum, nc->comm, nc->stream));
        MN_CHECK(inter_leg(c, nn, mine, shard));
        MN_NCCL_CALL(c, nc, ncclAllGather(mine, nn->dev, shard, ncclFloat32, nc->comm, nc->stream));
        break;
    }
    case MN_LEGS_REDUCE_BCAST:
        MN_NCCL_CALL(c, nc, ncclReduce(nn->dev, nn->dev, total, ncclFloat32, ncclSum, 0, nc->comm, nc->stream));
        if (c->intra_rank == 0) MN_CHECK(inter_leg(c, nn, nn->dev, total));
        MN_NCCL_CALL(c, nc, ncclBroadcast(nn->dev, nn->dev, total, ncclFloat32, 0, nc->comm, nc->stream));
        break;
    }
    off = 0;
    for (int i = 0; i < n; off += lens[i], ++i)
        MN_CUDA_CHECK(c, cudaMemcpyAsync(dev[i], nn->dev + off, lens[i] * sizeof(float), cudaMemcpyDeviceToDevice, nc->stream));
    return mn_nccl_sync(c, nc, "the node's NCCL legs");
}

mn_status mn_nccl_node_mean(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional)
{
    MN_CHECK(mn_nccl_enter(c, &nn->nc));
    return legs(c, nn, dev, lens, n, two_dimensional);
}

#else /* no NCCL or no GPU: never opened */

mn_status mn_nccl_node_open(mn_comm *c, mn_nccl_node **out)
{
    (void)c;
    *out = NULL;
    return MN_OK;
}

void mn_nccl_node_close(mn_nccl_node *nn) { (void)nn; }

mn_status mn_nccl_node_mean(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional)
{
    (void)nn; (void)dev; (void)lens; (void)n; (void)two_dimensional;
    mn_error(c, "NCCL node legs are not built in");
    return MN_ERR_UNAVAILABLE;
}
#endif
