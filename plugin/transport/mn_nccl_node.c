/* NCCL in GPU runs (GPU=1 NCCL=1 builds): mn_nccl, one NCCL communicator
 * with this rank's device, stream and ordering event (pure_nccl's and the
 * node legs'), and the node's NCCL legs for hierarchical and two_dimensional.
 * Darknet's device update arrays are packed into one
 * device buffer and reduced inside the node with NCCL (each rank on a GPU
 * of its own, mn_gpu_place; a communicator over c->intra, its own stream), and the inter-node leg goes through MPI from page-locked host
 * memory, since Debian's Open MPI is not CUDA-aware:
 *
 *   hierarchical: ncclReduce to intra-rank 0; it copies the sum to host,
 *     MPI_Allreduce among the node leaders, divides, copies back;
 *     ncclBroadcast in the node.
 *   two_dimensional: ncclReduceScatter in the node (the buffer padded with
 *     zeros to a multiple of the node size); each rank copies its shard to
 *     host, MPI_Allreduce of the shard among equal intra-ranks, divides,
 *     copies back; ncclAllGather in the node.
 *
 * float32 only: a float16 job stays on the host-staged path (c->device_f32
 * is set, c->device_f16 is not). A build without both switches compiles
 * stubs that never open, so the algorithms keep their host paths. */
#include "mn_transport.h"

#if defined(MN_NCCL) && defined(GPU)
#include <stdlib.h>

struct mn_nccl_node {
    mn_nccl nc;             /* over c->intra */
    float *dev, *host;      /* the packed gradient on the device, and its page-locked staging */
    size_t cap;             /* floats in each */
};

void mn_nccl_close(mn_nccl *n)
{
    if (n->has_comm) ncclCommDestroy(n->comm);
    if (n->has_event) cudaEventDestroy(n->ready);
    if (n->has_stream) cudaStreamDestroy(n->stream);
    n->has_comm = n->has_event = n->has_stream = 0;
}

/* The rank's own device, current since mn_gpu_place; set again because the
 * current device is per thread. No call here selects another device, so no
 * context is made anywhere else. */
mn_status mn_nccl_enter(mn_comm *c, const mn_nccl *n)
{
    MN_CUDA_CHECK(c, cudaSetDevice(n->device));
    return MN_OK;
}

static mn_status open_on_device(mn_comm *c, mn_nccl *n)
{
    if (!mn_nccl_usable(c)) {   /* mn_gpu_check refuses this first; kept so no device 0 is ever touched */
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

/* Every step is agreed before the next collective one, so a rank that fails
 * cannot leave the others waiting in MPI_Bcast. */
mn_status mn_nccl_open(mn_comm *c, MPI_Comm over, int size, int rank, mn_nccl *n)
{
    mn_status st = open_on_device(c, n);
    ncclUniqueId id;
    if (st == MN_OK && rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) { mn_error(c, "ncclGetUniqueId failed: %s", ncclGetErrorString(r)); st = MN_ERR_UNAVAILABLE; }
    }
    if ((st = mn_agree(c, st)) == MN_OK) {
        if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, over) != MPI_SUCCESS) st = MN_ERR_MPI;
        else {
            ncclResult_t r = ncclCommInitRank(&n->comm, size, id, rank);
            if (r == ncclSuccess) n->has_comm = 1;
            else { mn_error(c, "ncclCommInitRank failed: %s", ncclGetErrorString(r)); st = MN_ERR_UNAVAILABLE; }
        }
        st = mn_agree(c, st);
    }
    if (st != MN_OK) mn_nccl_close(n);
    return st;
}

mn_status mn_nccl_after_darknet(mn_comm *c, mn_nccl *n)
{
    MN_CUDA_CHECK(c, cudaEventRecord(n->ready, 0));
    MN_CUDA_CHECK(c, cudaStreamWaitEvent(n->stream, n->ready, 0));
    return MN_OK;
}

void mn_nccl_node_close(mn_nccl_node *nn)
{
    if (!nn) return;
    mn_nccl_close(&nn->nc);
    if (nn->dev) cudaFree(nn->dev);
    if (nn->host) cudaFreeHost(nn->host);
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
    if (nn->dev) cudaFree(nn->dev);
    if (nn->host) cudaFreeHost(nn->host);
    nn->dev = nn->host = NULL;
    nn->cap = 0;
    MN_CUDA_CHECK(c, cudaMalloc((void **)&nn->dev, n * sizeof(float)));
    MN_CUDA_CHECK(c, cudaMallocHost((void **)&nn->host, n * sizeof(float)));
    nn->cap = n;
    return MN_OK;
}

/* count floats at dev through host: the sum over c->inter, divided by N. */
static mn_status inter_leg(mn_comm *c, mn_nccl_node *nn, float *dev, size_t count)
{
    MN_CUDA_CHECK(c, cudaMemcpyAsync(nn->host, dev, count * sizeof(float), cudaMemcpyDeviceToHost, nn->nc.stream));
    MN_CUDA_CHECK(c, cudaStreamSynchronize(nn->nc.stream));
    MN_CHECK(mn_sum_floats(c, c->inter, nn->host, count));
    mn_div_floats(nn->host, count, (float)c->size);
    MN_CUDA_CHECK(c, cudaMemcpyAsync(dev, nn->host, count * sizeof(float), cudaMemcpyHostToDevice, nn->nc.stream));
    return MN_OK;
}

static mn_status legs(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional)
{
    size_t total = 0, off = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (!total) return MN_OK;
    size_t m = (size_t)c->intra_size, shard = (total + m - 1) / m, padded = shard * m;
    MN_CHECK(room(c, nn, padded));
    MN_CHECK(mn_nccl_after_darknet(c, &nn->nc));
    for (int i = 0; i < n; off += lens[i], ++i)
        MN_CUDA_CHECK(c, cudaMemcpyAsync(nn->dev + off, dev[i], lens[i] * sizeof(float), cudaMemcpyDeviceToDevice, nn->nc.stream));
    if (two_dimensional) {
        float *mine = nn->dev + (size_t)c->intra_rank * shard;
        MN_CUDA_CHECK(c, cudaMemsetAsync(nn->dev + total, 0, (padded - total) * sizeof(float), nn->nc.stream));
        MN_NCCL_CHECK(c, ncclReduceScatter(nn->dev, mine, shard, ncclFloat32, ncclSum, nn->nc.comm, nn->nc.stream));
        MN_CHECK(inter_leg(c, nn, mine, shard));
        MN_NCCL_CHECK(c, ncclAllGather(mine, nn->dev, shard, ncclFloat32, nn->nc.comm, nn->nc.stream));
    } else {
        MN_NCCL_CHECK(c, ncclReduce(nn->dev, nn->dev, total, ncclFloat32, ncclSum, 0, nn->nc.comm, nn->nc.stream));
        if (c->intra_rank == 0) MN_CHECK(inter_leg(c, nn, nn->dev, total));
        MN_NCCL_CHECK(c, ncclBroadcast(nn->dev, nn->dev, total, ncclFloat32, 0, nn->nc.comm, nn->nc.stream));
    }
    off = 0;
    for (int i = 0; i < n; off += lens[i], ++i)
        MN_CUDA_CHECK(c, cudaMemcpyAsync(dev[i], nn->dev + off, lens[i] * sizeof(float), cudaMemcpyDeviceToDevice, nn->nc.stream));
    MN_CUDA_CHECK(c, cudaStreamSynchronize(nn->nc.stream));
    return MN_OK;
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
