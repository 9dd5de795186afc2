/* pure_nccl: one ncclAllReduce over all ranks, each on a GPU of its own;
 * NCCL builds its rings and trees over NVLink, PCIe and the network itself,
 * which is why ChainerMN recommends it wherever NCCL is.
 *
 * Device arrays (mean_grad_device): float32 as one group of in-place
 * ncclAvg allreduces; float16 cast with the 1/N scale into one half buffer,
 * reduced, checked for Inf/NaN and cast back, or redone in float32 from the
 * untouched arrays. Our stream waits for Darknet's through an event, and the
 * host polls it with a deadline (mn_nccl_sync). Host arrays (mean_grad)
 * pass through a page-locked stage. Double buffering (mean_packed) issues
 * one packed buffer's mean and returns; device_wait waits a step later, and
 * an overflowed half is dropped as a non-finite mean. The communicator,
 * stream and event are mn_nccl's (mn_nccl_node.c). Builds without NCCL=1
 * GPU=1 compile the stub at the end. */
#include <stdio.h>
#include "coll/mn_coll.h"

#if defined(MN_NCCL) && defined(GPU)
#define NOT_BUILT "NCCL needs a GPU of its own per rank, and this rank has none"   /* placed nowhere yet */
#elif defined(MN_NCCL)
#define NOT_BUILT "communicator 'pure_nccl' needs a build with GPU=1 NCCL=1 (this build has NCCL=1 but no GPU)"
#else
#define NOT_BUILT "communicator 'pure_nccl' needs a build with NCCL=1 (this build has none)"
#endif

/* Ranked first where every rank has a GPU of its own in an NCCL build; a
 * rank on the CPU or a shared GPU refuses, saying why. */
static void pure_nccl_query(const mn_comm_shape *s, mn_comm_answer *a)
{
    const mn_gpu_in *g = &s->gpu;
    const char *they = g->visible > 1 ? "s" : "";
    a->priority = 50;
    a->refused = MN_ERR_USER;
    if (!g->nccl) {
        a->refused = MN_ERR_UNAVAILABLE;
        snprintf(a->why, sizeof a->why, "%s", NOT_BUILT);
        return;
    }
    a->needs = "a GPU of its own on every rank";
    if (s->device < 0)
        snprintf(a->why, sizeof a->why, "communicator 'pure_nccl' needs a GPU per rank; this rank runs on the CPU (%s)",
                 g->nogpu ? "-nogpu" : "no CUDA device visible");
    else if (g->local_size > g->visible)
        snprintf(a->why, sizeof a->why,
                 "communicator 'pure_nccl' needs a GPU of its own per rank: %d ranks of this host share %d visible GPU%s; "
                 "start at most %d rank%s per host, or use flat, hierarchical or two_dimensional",
                 g->local_size, g->visible, they, g->visible, they);
    else if (!s->own)
        snprintf(a->why, sizeof a->why,
                 "communicator 'pure_nccl' needs a GPU of its own per rank: %d ranks of this host are on this rank's GPU "
                 "(their CUDA_VISIBLE_DEVICES overlap); give each rank other devices, or use flat, hierarchical or "
                 "two_dimensional", g->sharers);
    else {
        a->refused = MN_OK;
        snprintf(a->why, sizeof a->why, "%s, each rank on a GPU of its own in an NCCL build: NCCL's allreduce; "
                                         "not simulated", s->said);
    }
}

#if defined(MN_NCCL) && defined(GPU)
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "transport/mn_device.h"
#include "transport/mn_gpu.h"
#include "transport/mn_nccl.h"
#include "transport/mn_queue.h"

typedef struct {
    mn_nccl nc;
    void *dev;              /* one piece, or the float16 buffer */
    size_t dev_bytes;
    void *host;             /* page-locked: a copy to pageable memory would block past the deadline */
    size_t host_bytes;
    int *flag;              /* a reduced half was Inf or NaN */
    int *flag_host;
    /* float16: the device tables of each set of arrays seen */
    struct half_tables {
        float **seen;
        mn_pack_tables tab;
    } *tabs;
    int ntabs;
    void *packed_half;      /* in flight until device_wait */
    size_t packed_bytes;
} pure_nccl;

static void forget_tables(mn_comm *c, pure_nccl *s)
{
    for (int i = 0; i < s->ntabs; ++i) {
        mn_pack_tables_free(c, &s->tabs[i].tab);
        free(s->tabs[i].seen);
    }
    free(s->tabs);
    s->tabs = NULL;
    s->ntabs = 0;
}

static void pure_nccl_teardown(mn_comm *c)
{
    pure_nccl *s = c->coll->state;
    if (!s) return;
    mn_nccl_close(&s->nc);
    if (s->dev) mn_cuda_ok(c, cudaFree(s->dev), "cudaFree");
    if (s->host) mn_cuda_ok(c, cudaFreeHost(s->host), "cudaFreeHost");
    if (s->flag) mn_cuda_ok(c, cudaFree(s->flag), "cudaFree");
    if (s->flag_host) mn_cuda_ok(c, cudaFreeHost(s->flag_host), "cudaFreeHost");
    if (s->packed_half) mn_cuda_ok(c, cudaFree(s->packed_half), "cudaFree");
    forget_tables(c, s);
    free(s);
    c->coll->state = NULL;
}

static mn_status pure_nccl_setup(mn_comm *c)
{
    pure_nccl *s = calloc(1, sizeof *s);
    c->coll->state = s;
    MN_CHECK(mn_agree(c, s ? MN_OK : MN_ERR_NOMEM));
    MN_CHECK(mn_nccl_open(c, c->world, c->size, c->rank, &s->nc));
    MN_CUDA_CHECK(c, cudaMalloc((void **)&s->flag, sizeof(int)));
    MN_CUDA_CHECK(c, cudaMallocHost((void **)&s->flag_host, sizeof(int)));
    c->coll->device_f32 = c->coll->device_f16 = 1;
    return MN_OK;
}

/* *buf grown to bytes: device memory, or page-locked where pinned. */
static mn_status grow(mn_comm *c, void **buf, size_t *cap, size_t bytes, int pinned)
{
    if (bytes <= *cap) return MN_OK;
    void *old = *buf;
    *buf = NULL;
    *cap = 0;
    if (old) MN_CUDA_CHECK(c, pinned ? cudaFreeHost(old) : cudaFree(old));
    MN_CUDA_CHECK(c, pinned ? cudaMallocHost(buf, bytes) : cudaMalloc(buf, bytes));
    *cap = bytes;
    return MN_OK;
}

static mn_status device_buffer(mn_comm *c, pure_nccl *s, size_t bytes)
{
    return grow(c, &s->dev, &s->dev_bytes, bytes, 0);
}

/* Host -> stage -> device, allreduce, and back: the host waits only in
 * mn_nccl_sync, which a lost peer cannot stall. */
static mn_status reduce_on_device(mn_comm *c, pure_nccl *s, void *buf, int count, const mn_wire *w)
{
    size_t bytes = (size_t)count * (w->half ? 2 : 4);
    MN_CHECK(device_buffer(c, s, bytes));
    MN_CHECK(grow(c, &s->host, &s->host_bytes, bytes, 1));
    memcpy(s->host, buf, bytes);
    MN_CUDA_CHECK(c, cudaMemcpyAsync(s->dev, s->host, bytes, cudaMemcpyHostToDevice, s->nc.stream));
    MN_NCCL_CALL(c, &s->nc, ncclAllReduce(s->dev, s->dev, (size_t)count, w->half ? ncclFloat16 : ncclFloat32,
                                         ncclSum, s->nc.comm, s->nc.stream));
    MN_CUDA_CHECK(c, cudaMemcpyAsync(s->host, s->dev, bytes, cudaMemcpyDeviceToHost, s->nc.stream));
    MN_CHECK(mn_nccl_sync(c, &s->nc, "pure_nccl allreduce"));
    memcpy(buf, s->host, bytes);
    mn_wire_div(w, buf, count);
    return MN_OK;
}

static mn_status pure_nccl_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    pure_nccl *s = c->coll->state;
    MN_CHECK(mn_nccl_enter(c, &s->nc));
    return reduce_on_device(c, s, buf, count, w);
}

/* One piece: one ncclAllReduce per update. */
static mn_status pure_nccl_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    return mn_mean_by_pieces(c, arrays, lens, n, INT_MAX, pure_nccl_sum);
}

/* The group is ended also after a failed call inside it. */
static mn_status mean_float32(mn_comm *c, pure_nccl *s, float **dev, const size_t *lens, int n)
{
    MN_NCCL_CALL(c, &s->nc, ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); ++i)
        if (lens[i]) r = ncclAllReduce(dev[i], dev[i], lens[i], ncclFloat32, ncclAvg, s->nc.comm, s->nc.stream);
    ncclResult_t end = ncclGroupEnd();
    MN_NCCL_CALL(c, &s->nc, r != ncclSuccess && r != ncclInProgress ? r : end);
    return MN_OK;
}

/* A launch's error, already cleared. */
static mn_status launched(mn_comm *c, int e, const char *what)
{
    if (e == cudaSuccess) return MN_OK;
    mn_error(c, "the %s kernel failed to launch: %s", what, cudaGetErrorString((cudaError_t)e));
    return MN_ERR_UNAVAILABLE;
}

/* Past it (arrays moved by a resize) all tables are made anew. */
#define MAX_HALF_TABLES 256

/* The n arrays' device tables, kept: the same sets come every step, and
 * making them waits for the stream. */
static mn_status tables(mn_comm *c, pure_nccl *s, float **dev, const size_t *lens, int n, const mn_pack_tables **out)
{
    for (int i = 0; i < s->ntabs; ++i)
        if (s->tabs[i].tab.n == n && !memcmp(s->tabs[i].seen, dev, (size_t)n * sizeof *dev)) {
            *out = &s->tabs[i].tab;
            return MN_OK;
        }
    if (s->ntabs == MAX_HALF_TABLES) forget_tables(c, s);
    struct half_tables *grown = realloc(s->tabs, (size_t)(s->ntabs + 1) * sizeof *grown);
    if (grown) s->tabs = grown;
    float **seen = grown ? malloc((size_t)(n + 1) * sizeof *seen) : NULL;
    mn_status r = seen ? MN_OK : MN_ERR_NOMEM;
    if (r == MN_OK) {
        struct half_tables *t = &s->tabs[s->ntabs];
        memcpy(seen, dev, (size_t)n * sizeof *dev);
        r = mn_pack_tables_make(c, dev, lens, n, s->nc.stream, &t->tab);
        if (r == MN_OK) {
            t->seen = seen;
            *out = &t->tab;
            ++s->ntabs;
        } else free(seen);
    }
    if (r == MN_ERR_NOMEM) mn_error(c, "out of memory for the float16 cast's tables");
    return r;
}

/* x/N to halves, reduce, check, cast back; float32 on Inf/NaN. */
static mn_status mean_float16(mn_comm *c, pure_nccl *s, float **dev, const size_t *lens, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (!total) return MN_OK;
    MN_CHECK(device_buffer(c, s, total * 2));
    const mn_pack_tables *tab;
    MN_CHECK(tables(c, s, dev, lens, n, &tab));
    uint16_t *h = s->dev;
    const float scale = 1.0f / (float)c->size;
    MN_CHECK(launched(c, mn_gpu_pack_halves(h, tab->ptrs, tab->offs, n, total, scale, s->nc.stream), "float16 cast"));
    MN_NCCL_CALL(c, &s->nc, ncclAllReduce(h, h, total, ncclFloat16, ncclSum, s->nc.comm, s->nc.stream));
    MN_CUDA_CHECK(c, cudaMemsetAsync(s->flag, 0, sizeof(int), s->nc.stream));
    MN_CHECK(launched(c, mn_gpu_halves_nonfinite(h, total, s->flag, s->nc.stream), "float16 Inf/NaN check"));
    MN_CUDA_CHECK(c, cudaMemcpyAsync(s->flag_host, s->flag, sizeof(int), cudaMemcpyDeviceToHost, s->nc.stream));
    MN_CHECK(mn_nccl_sync(c, &s->nc, "pure_nccl float16 allreduce"));
    if (*s->flag_host) return mean_float32(c, s, dev, lens, n);   /* every rank holds the same halves */
    return launched(c, mn_gpu_unpack_halves(tab->ptrs, h, tab->offs, n, total, s->nc.stream), "float32 cast");
}

static mn_status pure_nccl_mean_grad_device(mn_comm *c, float **dev, const size_t *lens, int n)
{
    pure_nccl *s = c->coll->state;
    MN_CHECK(mn_nccl_enter(c, &s->nc));
    MN_CHECK(mn_nccl_after_darknet(c, &s->nc));
    MN_CHECK(c->coll->half ? mean_float16(c, s, dev, lens, n) : mean_float32(c, s, dev, lens, n));
    return mn_nccl_sync(c, &s->nc, "the device allreduce");
}

static void *pure_nccl_device_stream(mn_comm *c)
{
    return ((pure_nccl *)c->coll->state)->nc.stream;
}

/* The half buffer is reused only after device_wait. */
static mn_status pure_nccl_mean_packed(mn_comm *c, float *dev, size_t count)
{
    pure_nccl *s = c->coll->state;
    MN_CHECK(mn_nccl_enter(c, &s->nc));
    if (!count) return MN_OK;
    if (!c->coll->half) {
        MN_NCCL_CALL(c, &s->nc, ncclAllReduce(dev, dev, count, ncclFloat32, ncclAvg, s->nc.comm, s->nc.stream));
        return MN_OK;
    }
    MN_CHECK(grow(c, &s->packed_half, &s->packed_bytes, count * sizeof(uint16_t), 0));
    MN_CHECK(launched(c, mn_gpu_halves(s->packed_half, dev, count, 1.0f / (float)c->size, 1, s->nc.stream), "float16 cast"));
    MN_NCCL_CALL(c, &s->nc, ncclAllReduce(s->packed_half, s->packed_half, count, ncclFloat16, ncclSum, s->nc.comm, s->nc.stream));
    return launched(c, mn_gpu_halves(s->packed_half, dev, count, 1, 0, s->nc.stream), "float32 cast");
}

static mn_status pure_nccl_device_wait(mn_comm *c, const char *what)
{
    pure_nccl *s = c->coll->state;
    MN_CHECK(mn_nccl_enter(c, &s->nc));
    return mn_nccl_sync(c, &s->nc, what);
}

const mn_comm_ops mn_comm_pure_nccl_ops = {
    .name = "pure_nccl",
    .query = pure_nccl_query,
    .setup = pure_nccl_setup,
    .mean_grad = pure_nccl_mean_grad,
    .mean_grad_device = pure_nccl_mean_grad_device,
    .device_stream = pure_nccl_device_stream,
    .mean_packed = pure_nccl_mean_packed,
    .device_wait = pure_nccl_device_wait,
    .teardown = pure_nccl_teardown,
};

#else /* no NCCL: the algorithm is named, and its query refuses it */

static mn_status pure_nccl_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    (void)arrays; (void)lens; (void)n;
    mn_error(c, "communicator 'pure_nccl' is not built in");
    return MN_ERR_UNAVAILABLE;
}

const mn_comm_ops mn_comm_pure_nccl_ops = {
    .name = "pure_nccl",
    .query = pure_nccl_query,
    .mean_grad = pure_nccl_mean_grad,
};
#endif
