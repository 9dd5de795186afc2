/* The optimizer core's device twin (mn_optimizer_gpu.h). */
#ifdef GPU
#include <stdio.h>
#include <stdlib.h>
#include "train/optimizer/mn_optimizer_gpu.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/optimizer/mn_grad_stage.h"
#include "transport/mn_device.h"

struct mn_optimizer_gpu {
    mn_comm *comm;
    mn_route route;
    float **arrays;
    const size_t *lens;
    int n;
    float *aside;        /* the momentum part, or NULL */
    int *flag;           /* device: the mean is not finite */
    int *flag_host;      /* its page-locked copy */
    void *checked;       /* nonfinite=stop: an event after that copy */
    int pending;         /* recorded, not yet read */
    mn_grad_stage *stage;
};

mn_status mn_optimizer_gpu_new(mn_comm *c, mn_route route, float **arrays, const size_t *lens, int n, size_t total,
                               int aside, int skip, mn_optimizer_gpu **out)
{
    mn_optimizer_gpu *g = calloc(1, sizeof *g);
    *out = g;
    if (!g) return MN_ERR_NOMEM;
    *g = (mn_optimizer_gpu){.comm = c, .route = route, .arrays = arrays, .lens = lens, .n = n};
    int checks = route == MN_ROUTE_DEVICE || route == MN_ROUTE_LOCAL;
    if (checks && (!mn_device_ok(c, mn_device_alloc((void **)&g->flag, sizeof(int)), "cudaMalloc") ||
                   !mn_device_ok(c, mn_device_alloc_host((void **)&g->flag_host, sizeof(int)), "cudaMallocHost")))
        return MN_ERR_NOMEM;
    if (checks && !skip && !mn_device_ok(c, mn_device_event_new(&g->checked, 0), "cudaEventCreateWithFlags"))
        return MN_ERR_UNAVAILABLE;
    /* The momentum part waits on the device in every GPU run that sets it aside. */
    if (aside && !mn_device_ok(c, mn_device_alloc((void **)&g->aside, (total + 1) * sizeof(float)), "cudaMalloc"))
        return MN_ERR_NOMEM;
    return MN_OK;
}

/* Every GPU route: the device arrays' tables; the staged route also the
 * copies' buffer and the arena page-locked where allowed. */
mn_status mn_optimizer_gpu_stage(mn_optimizer_gpu *g, float *arena)
{
    mn_comm *c = g->comm;
    int pinned = 0, staged = g->route == MN_ROUTE_STAGED;
    mn_status st = mn_grad_stage_new(c, g->arrays, g->lens, g->n, staged ? arena : NULL, &pinned, &g->stage);
    if (st == MN_ERR_NOMEM) mn_error(c, "out of device memory staging the gradient");
    if (st == MN_OK && staged && c->rank == 0)
        printf("darknet-mn: GPU run, communicator %s: gradients staged through %s host memory (MPI %s CUDA-aware)\n",
               mn_comm_name(c), pinned ? "page-locked" : "pageable", mn_mpi_cuda_aware() ? "is" : "is not");
    return st;
}

struct mn_grad_stage *mn_optimizer_gpu_staging(mn_optimizer_gpu *g) { return g ? g->stage : NULL; }

int mn_optimizer_gpu_aside(mn_optimizer_gpu *g)
{
    if (!g || !g->aside) return 0;
    for (size_t i = 0, off = 0; i < (size_t)g->n; off += g->lens[i++]) {
        mn_base_copy_gpu((int)g->lens[i], g->arrays[i], g->aside + off);
        mn_base_fill_gpu((int)g->lens[i], 0, g->arrays[i]);
    }
    return 1;
}

void mn_optimizer_gpu_finish(mn_optimizer_gpu *g, int bad, int is_aside)
{
    for (size_t i = 0, off = 0; i < (size_t)g->n; off += g->lens[i++]) {
        int n = (int)g->lens[i];
        if (bad && is_aside) mn_base_copy_gpu(n, g->aside + off, g->arrays[i]);
        else if (bad) mn_base_fill_gpu(n, 0, g->arrays[i]);
        else if (is_aside)
            mn_device_must(g->comm, mn_gpu_add(g->arrays[i], g->aside + off, g->lens[i], mn_base_stream()),
                           "adding the momentum part back");
    }
}

void mn_optimizer_gpu_up(mn_optimizer_gpu *g, int bad, int is_aside)
{
    mn_grad_stage_up(g->stage);
    mn_optimizer_gpu_finish(g, bad, is_aside);
}

int mn_optimizer_gpu_check(mn_optimizer_gpu *g, int bad, int is_aside)
{
    void *st = mn_base_stream();
    mn_device_must(g->comm, mn_device_zero(g->flag, sizeof(int), st), "clearing the Inf/NaN flag");
    mn_grad_stage_nonfinite(g->stage, g->flag, st);
    mn_device_must(g->comm, mn_device_copy(g->flag_host, g->flag, sizeof(int), MN_TO_HOST, st),
                   "reading the Inf/NaN check");
    if (g->checked) {
        mn_device_must(g->comm, mn_device_event_record(g->checked, st), "recording the Inf/NaN check");
        g->pending = 1;
    } else {
        mn_device_must(g->comm, mn_device_wait(st), "the Inf/NaN check");
        bad = bad || *g->flag_host;
    }
    mn_optimizer_gpu_finish(g, bad, is_aside);
    return bad;
}

int mn_optimizer_gpu_late(mn_optimizer_gpu *g)
{
    if (!g || !g->pending) return 0;
    mn_device_must(g->comm, mn_device_event_wait(g->checked), "the Inf/NaN check");
    g->pending = 0;
    return *g->flag_host;
}

void mn_optimizer_gpu_momentum(mn_optimizer_gpu *g, float **host, int to_device)
{
    for (int i = 0; i < g->n; ++i) {
        if (to_device) mn_base_push(g->arrays[i], host[i], g->lens[i]);
        else mn_base_pull(g->arrays[i], host[i], g->lens[i]);
    }
}

void mn_optimizer_gpu_free(mn_optimizer_gpu *g)
{
    if (!g) return;
    mn_comm *c = g->comm;
    mn_grad_stage_free(g->stage);
    if (g->pending)   /* the flag's copy lands before its memory goes */
        mn_device_ok(c, mn_device_event_wait(g->checked), "the Inf/NaN check");
    if (g->checked) mn_device_ok(c, mn_device_event_free(g->checked), "cudaEventDestroy");
    if (g->flag_host) mn_device_ok(c, mn_device_free_host(g->flag_host), "cudaFreeHost");
    void *dev[] = {g->aside, g->flag};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; ++i)
        if (dev[i]) mn_device_ok(c, mn_device_free(dev[i]), "cudaFree");
    free(g);
}
#endif
