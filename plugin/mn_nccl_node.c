/* The node's NCCL legs for hierarchical and two_dimensional in GPU runs
 * (GPU=1 NCCL=1 builds): Darknet's device update arrays are packed into one
 * device buffer and reduced inside the node with NCCL (one GPU per
 * intra-rank, device = intra_rank, a communicator over c->intra, its own
 * stream), and the inter-node leg goes through MPI from page-locked host
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
#include "mn_internal.h"

#if defined(MN_NCCL) && defined(GPU)
#include <stdlib.h>
#include <cuda_runtime.h>
#include <nccl.h>

struct mn_nccl_node {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready;
    float *dev, *host;      /* the packed gradient on the device, and its page-locked staging */
    size_t cap;             /* floats in each */
    int device, has_comm, has_stream, has_event;
};


void mn_nccl_node_close(mn_nccl_node *nn)
{
    if (!nn) return;
    if (nn->has_comm) ncclCommDestroy(nn->comm);
    if (nn->dev) cudaFree(nn->dev);
    if (nn->host) cudaFreeHost(nn->host);
    if (nn->has_event) cudaEventDestroy(nn->ready);
    if (nn->has_stream) cudaStreamDestroy(nn->stream);
    free(nn);
}

static mn_status open_on_device(mn_comm *c, mn_nccl_node *nn)
{
    nn->device = c->intra_rank;
    MN_CUDA_CHECK(c, cudaSetDevice(nn->device));
    MN_CUDA_CHECK(c, cudaStreamCreateWithFlags(&nn->stream, cudaStreamNonBlocking));
    nn->has_stream = 1;
    MN_CUDA_CHECK(c, cudaEventCreateWithFlags(&nn->ready, cudaEventDisableTiming));
    nn->has_event = 1;
    return MN_OK;
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
    int prev = 0;
    cudaGetDevice(&prev);
    mn_status st = nn ? open_on_device(c, nn) : MN_ERR_NOMEM;
    ncclUniqueId id;
    if (st == MN_OK && c->intra_rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) st = MN_ERR_UNAVAILABLE;
    if ((st = mn_agree(c, st)) == MN_OK) {
        if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->intra) != MPI_SUCCESS) st = MN_ERR_MPI;
        else if (ncclCommInitRank(&nn->comm, c->intra_size, id, c->intra_rank) != ncclSuccess) st = MN_ERR_UNAVAILABLE;
        else nn->has_comm = 1;
        st = mn_agree(c, st);
    }
    cudaSetDevice(prev);
    if (st != MN_OK) {
        if (c->rank == 0) mn_error(c, "could not set up NCCL inside the nodes for '%s'", c->ops->name);
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
    MN_CUDA_CHECK(c, cudaMemcpyAsync(nn->host, dev, count * sizeof(float), cudaMemcpyDeviceToHost, nn->stream));
    MN_CUDA_CHECK(c, cudaStreamSynchronize(nn->stream));
    MN_CHECK(mn_sum_floats(c, c->inter, nn->host, count));
    mn_div_floats(nn->host, count, (float)c->size);
    MN_CUDA_CHECK(c, cudaMemcpyAsync(dev, nn->host, count * sizeof(float), cudaMemcpyHostToDevice, nn->stream));
    return MN_OK;
}

static mn_status legs(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional)
{
    size_t total = 0, off = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (!total) return MN_OK;
    size_t m = (size_t)c->intra_size, shard = (total + m - 1) / m, padded = shard * m;
    MN_CHECK(room(c, nn, padded));
    MN_CUDA_CHECK(c, cudaEventRecord(nn->ready, 0));   /* Darknet's backward pass is on the default stream */
    MN_CUDA_CHECK(c, cudaStreamWaitEvent(nn->stream, nn->ready, 0));
    for (int i = 0; i < n; off += lens[i], ++i)
        MN_CUDA_CHECK(c, cudaMemcpyAsync(nn->dev + off, dev[i], lens[i] * sizeof(float), cudaMemcpyDeviceToDevice, nn->stream));
    if (two_dimensional) {
        float *mine = nn->dev + (size_t)c->intra_rank * shard;
        MN_CUDA_CHECK(c, cudaMemsetAsync(nn->dev + total, 0, (padded - total) * sizeof(float), nn->stream));
        MN_NCCL_CHECK(c, ncclReduceScatter(nn->dev, mine, shard, ncclFloat32, ncclSum, nn->comm, nn->stream));
        MN_CHECK(inter_leg(c, nn, mine, shard));
        MN_NCCL_CHECK(c, ncclAllGather(mine, nn->dev, shard, ncclFloat32, nn->comm, nn->stream));
    } else {
        MN_NCCL_CHECK(c, ncclReduce(nn->dev, nn->dev, total, ncclFloat32, ncclSum, 0, nn->comm, nn->stream));
        if (c->intra_rank == 0) MN_CHECK(inter_leg(c, nn, nn->dev, total));
        MN_NCCL_CHECK(c, ncclBroadcast(nn->dev, nn->dev, total, ncclFloat32, 0, nn->comm, nn->stream));
    }
    off = 0;
    for (int i = 0; i < n; off += lens[i], ++i)
        MN_CUDA_CHECK(c, cudaMemcpyAsync(dev[i], nn->dev + off, lens[i] * sizeof(float), cudaMemcpyDeviceToDevice, nn->stream));
    MN_CUDA_CHECK(c, cudaStreamSynchronize(nn->stream));
    return MN_OK;
}

mn_status mn_nccl_node_mean(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional)
{
    int prev = 0;
    cudaGetDevice(&prev);
    if (prev != nn->device) cudaSetDevice(nn->device);
    mn_status st = legs(c, nn, dev, lens, n, two_dimensional);
    if (prev != nn->device) cudaSetDevice(prev);
    return st;
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
