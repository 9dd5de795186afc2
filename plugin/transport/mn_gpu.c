/* GPU placement: which device each rank uses, by a pure function of what
 * it sees (mn_gpu_select). Until a rank's device is chosen only queries
 * that create no context run: any other call would make a context on
 * device 0 in every rank, which EXCLUSIVE_PROCESS mode refuses to all but
 * one. A tolerated CUDA error is cleared, or Darknet's next check aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "transport/mn_transport.h"
#ifdef GPU
#include <cuda_runtime.h>
#endif
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* Pure. Ranks beyond the visible devices share them; a rank owns its
 * device where its group fits and no overlapping visible set shares it
 * (sharers, counted once chosen). */
void mn_gpu_select(const mn_gpu_in *in, mn_gpu_out *out)
{
    out->device = in->nogpu || in->visible <= 0 || in->local_size <= 0 ? -1 : in->local_rank % in->visible;
    out->own = out->device >= 0 && in->local_size <= in->visible && in->sharers <= 1;
}

const mn_gpu_in *mn_gpu_placement(const mn_comm *c)
{
    return &c->transport->gpu;
}

int mn_gpu_device(const mn_comm *c)
{
    mn_gpu_out o;
    mn_gpu_select(&c->transport->gpu, &o);
    return o.device;
}

int mn_nccl_usable(const mn_comm *c)
{
    mn_gpu_out o;
    mn_gpu_select(&c->transport->gpu, &o);
    return c->transport->gpu.nccl && o.own;
}

#ifdef GPU
/* A device's UUID, hashed, into *h (a query that creates no context). */
static cudaError_t device_key(int d, uint64_t *h)
{
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, d);
    if (e == cudaSuccess) *h = mn_fnv1a(*h, p.uuid.bytes, sizeof p.uuid.bytes);
    return e;
}

/* The visible devices and a hash of their UUIDs. A GPU build needs one
 * even with -nogpu: Darknet's layers keep device buffers regardless. */
static mn_status visible_devices(int *count, uint64_t *key, const char **why)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n == 0) e = cudaErrorNoDevice;
    uint64_t h = MN_FNV_SEED;
    for (int d = 0; e == cudaSuccess && d < n; ++d) e = device_key(d, &h);
    if (e != cudaSuccess) {
        *why = cudaGetErrorString(e);
        (void)cudaGetLastError();
        return MN_ERR_UNAVAILABLE;
    }
    *count = n;
    *key = h;
    return MN_OK;
}

/* The context is made here, so a busy or broken device is named now. */
static mn_status use_device(mn_comm *c, int device, int visible)
{
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaFree(0);
    if (e == cudaSuccess) return MN_OK;
    mn_error(c, "cannot use CUDA device %d (of %d visible): %s", device, visible, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return MN_ERR_UNAVAILABLE;
}
#endif

/* This rank's place among the ranks of its host with the same key. */
static mn_status group(mn_comm *c, uint64_t key, int *local_rank, int *local_size)
{
    MPI_Comm host;
    MN_MPI(c, MPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &host));
    int r, n;
    MPI_Comm_rank(host, &r);
    MPI_Comm_size(host, &n);
    uint64_t *keys = malloc(sizeof *keys * (size_t)n);
    int e = keys ? MPI_Allgather(&key, 1, MPI_UINT64_T, keys, 1, MPI_UINT64_T, host) : MPI_SUCCESS;
    *local_rank = *local_size = 0;
    for (int i = 0; keys && e == MPI_SUCCESS && i < n; ++i) {
        if (keys[i] != key) continue;
        *local_rank += i < r;
        ++*local_size;
    }
    free(keys);
    MPI_Comm_free(&host);
    if (!keys) { mn_error(c, "out of memory placing ranks on GPUs"); return MN_ERR_NOMEM; }
    if (e != MPI_SUCCESS) { mn_error(c, "MPI_Allgather failed (MPI error %d) placing ranks on GPUs", e); return MN_ERR_MPI; }
    return MN_OK;
}

mn_status mn_gpu_place(mn_comm *c, int nogpu)
{
    mn_gpu_in *g = &c->transport->gpu;
    memset(g, 0, sizeof *g);
    uint64_t key = 0;
    const char *why = "";
    mn_status st = MN_OK;
#ifdef GPU
#ifdef MN_NCCL
    g->nccl = 1;
#endif
    st = visible_devices(&g->visible, &key, &why);
#endif
    if (mn_first_with(c, st != MN_OK))
        mn_error(c, "this GPU build needs a CUDA device, also with -nogpu (Darknet's layers keep device buffers), "
                    "and CUDA has none usable: %s; run the CPU build (make) instead", why);
    MN_CHECK(mn_agree(c, st));
    MN_CHECK(mn_agree(c, group(c, key, &g->local_rank, &g->local_size)));
    /* With -nogpu Darknet computes on the CPU, but a GPU build's layers still
     * allocate on the current device: the rank's own, never GPU 0 for all. */
    mn_gpu_out home, o;
    mn_gpu_select(g, &home);
#ifdef GPU
    uint64_t on = MN_FNV_SEED;   /* the physical device, which overlapping visible sets may share */
    int unused;
    if (device_key(home.device, &on) != cudaSuccess) {   /* then counted alone */
        (void)cudaGetLastError();
        on = mn_fnv1a(on, &c->rank, sizeof c->rank);
    }
    MN_CHECK(mn_agree(c, group(c, on, &unused, &g->sharers)));
    st = use_device(c, home.device, g->visible);
#endif
    g->nogpu = nogpu != 0;
    mn_gpu_select(g, &o);
    mn_base_set_gpu(o.device);   /* Darknet's: networks parsed from now on compute there (-1: the CPU) */
    MN_CHECK(mn_agree(c, st));
    if (mn_first_with(c, o.device >= 0 && !o.own))
        printf("darknet-mn: rank %d (%s): %d ranks of this host use its GPU (device %d of the %d it sees; "
               "rank k of the ranks that see the same devices takes device k mod %d)\n",
               c->rank, c->host, g->sharers, o.device, g->visible, g->visible);
    fflush(stdout);
    return MN_OK;
}

int mn_mpi_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

/* One node needs no inter-node leg: one ncclAllReduce(ncclAvg) is the mean.
 * Else hierarchical: ncclReduce, the leaders' MPI allreduce, ncclBroadcast;
 * two_dimensional: ncclReduceScatter, MPI allreduce of shards, ncclAllGather. */
mn_legs mn_nccl_legs(int nodes, int two_dimensional)
{
    if (nodes <= 1) return MN_LEGS_NODE_AVG;
    return two_dimensional ? MN_LEGS_SCATTER_GATHER : MN_LEGS_REDUCE_BCAST;
}

/* cuDNN 9 counts major*10000 + minor*100 + patch, older major*1000 + minor*100 + patch. */
void mn_cudnn_version(size_t v, int *major, int *minor, int *patch)
{
    int nine = v >= 90000;
    *major = (int)(nine ? v / 10000 : v / 1000);
    *minor = (int)(nine ? v / 100 % 100 : v / 100 % 10);
    *patch = (int)(v % 100);
}
