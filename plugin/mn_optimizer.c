/* The multi-node optimizer. mn_attach moves every update array of the network
 * into one contiguous arena (so `flat` reduces it in place with no copy) and
 * installs a hook that Darknet's update_network runs before the layers
 * update: the hook replaces each update array by its mean over all ranks.
 * Darknet then divides by its local batch*subdivisions, so the step equals
 * one process's step with the global batch. net->ranks makes seen count the
 * images of all ranks, so the iteration counter and learning-rate schedule
 * advance once per global update. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mn_internal.h"
#ifdef GPU
#include "cuda.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
/* Whether this MPI takes device pointers (asked at run time where Open MPI
 * can say; 0 elsewhere). Gradients are staged through host memory either
 * way; the answer is reported, not assumed. */
static int mpi_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}
#endif

struct mn_optimizer {
    mn_comm *comm;
    float *arena;
    size_t total;
    int n;
    float **arrays;       /* host arrays inside the arena, in layer order */
    float **arrays_gpu;   /* matching device arrays (GPU build) */
    size_t *lens;
    int nonfinite;        /* the last averaged gradient held NaN or Inf */
    mn_watchdog *watch;   /* NULL when collective_timeout=0 */
    float *aside;         /* float16: the momentum part, set aside during backward */
    float *aside_gpu;     /* the same on the device, for a device-side allreduce */
    int *flag_gpu;        /* device: a gradient held Inf or NaN */
    int is_aside;
    int on_device;        /* GPU run whose communicator averages device arrays */
    int pinned;           /* the arena is page-locked for the device copies */
    mn_dbuf *dbuf;        /* double_buffering=1, else NULL */
    float *state;         /* double buffering: the arena, then the mean in flight (checkpoints) */
};

/* NaN or Inf anywhere: x*0 is 0 for every finite x, NaN otherwise. */
static int all_finite(const float *p, size_t n)
{
    float acc = 0;
    for (size_t i = 0; i < n; ++i) acc += p[i] * 0.0f;
    return acc == 0;
}

/* The update arrays of layer l and the slot in struct layer that holds each. */
static int layer_grads(layer *l, float ***slots, float ***slots_gpu, size_t *lens)
{
    mn_param p[MN_MAX_LAYER_PARAMS];
    int k = mn_layer_params(l, p, MN_MAX_LAYER_PARAMS), m = 0;
    for (int i = 0; i < k; ++i) {
        if (!p[i].grad) continue;
        float **slot = p[i].grad == l->weight_updates ? &l->weight_updates
                     : p[i].grad == l->bias_updates ? &l->bias_updates : &l->scale_updates;
        slots[m] = slot;
#ifdef GPU
        slots_gpu[m] = slot == &l->weight_updates ? &l->weight_updates_gpu
                     : slot == &l->bias_updates ? &l->bias_updates_gpu : &l->scale_updates_gpu;
#else
        slots_gpu[m] = NULL;
#endif
        lens[m++] = p[i].n;
    }
    return m;
}

#ifdef GPU
/* A GPU run whose communicator set up device legs (pure_nccl; hierarchical
 * and two_dimensional in float32): Darknet's device update arrays are
 * averaged where they are; the host arena is only filled for checkpoints. */
static void sync_on_device(network *net, mn_optimizer *o)
{
    mn_watchdog_enter(o->watch, "gradient allreduce", get_current_batch(net));
    if (o->comm->ops->mean_grad_device(o->comm, o->arrays_gpu, o->lens, o->n) != MN_OK)
        mn_abort(o->comm, "gradient allreduce failed");
    mn_watchdog_leave(o->watch);
    int bad = 0;
    size_t off = 0;
    if (cudaMemset(o->flag_gpu, 0, sizeof(int)) != cudaSuccess)
        mn_abort(o->comm, "clearing the Inf/NaN flag failed: %s", cudaGetErrorString(cudaGetLastError()));
    for (int i = 0; i < o->n; off += o->lens[i], ++i) {
        if (o->is_aside && mn_gpu_add(o->arrays_gpu[i], o->aside_gpu + off, o->lens[i], NULL))
            mn_abort(o->comm, "adding the momentum part back failed to launch");
        if (mn_gpu_floats_nonfinite(o->arrays_gpu[i], o->lens[i], o->flag_gpu, NULL))
            mn_abort(o->comm, "the Inf/NaN check failed to launch");
    }
    o->is_aside = 0;
    if (cudaMemcpy(&bad, o->flag_gpu, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
        mn_abort(o->comm, "reading the Inf/NaN check failed: %s", cudaGetErrorString(cudaGetLastError()));
    o->nonfinite = bad;
    if (bad)
        for (int i = 0; i < o->n; ++i) fill_gpu((int)o->lens[i], 0, o->arrays_gpu[i], 1);
}
#endif

/* After the allreduce: the momentum part back, and a non-finite mean zeroed
 * (momentum too) so that Darknet's update cannot write NaN into the weights.
 * Every rank holds the same mean, so every rank decides alike. */
static void finish_mean(mn_optimizer *o)
{
    if (o->is_aside) {
        for (size_t i = 0; i < o->total; ++i) o->arena[i] += o->aside[i];
        o->is_aside = 0;
    }
    o->nonfinite = !all_finite(o->arena, o->total);
    if (o->nonfinite) memset(o->arena, 0, o->total * sizeof(float));
}

/* Nonzero: Darknet skips this update (double buffering's first step). */
static int sync_hook(network *net)
{
    mn_optimizer *o = net->sync_arg;
    if (o->dbuf) {
        mn_watchdog_enter(o->watch, "gradient allreduce", get_current_batch(net));
        int apply = mn_dbuf_exchange(o->dbuf, o->arena);
        mn_watchdog_leave(o->watch);
        finish_mean(o);
        return !apply;
    }
#ifdef GPU
    if (o->on_device) {
        sync_on_device(net, o);
        return 0;
    }
    /* Debian's Open MPI is not CUDA-aware: stage device gradients through host. */
    if (net->gpu_index >= 0)
        for (int i = 0; i < o->n; ++i) cuda_pull_array(o->arrays_gpu[i], o->arrays[i], o->lens[i]);
#endif
    mn_watchdog_enter(o->watch, "gradient allreduce", get_current_batch(net));
    if (mn_comm_mean_grad(o->comm, o->arrays, o->lens, o->n) != MN_OK)
        mn_abort(o->comm, "gradient allreduce failed");
    mn_watchdog_leave(o->watch);
    finish_mean(o);
#ifdef GPU
    if (net->gpu_index >= 0)
        for (int i = 0; i < o->n; ++i) cuda_push_array(o->arrays_gpu[i], o->arrays[i], o->lens[i]);
#endif
    return 0;
}

static void free_optimizer(mn_optimizer *o)
{
    mn_dbuf_stop(o->dbuf);
    mn_watchdog_stop(o->watch);
    free(o->aside);
    free(o->state);
#ifdef GPU
    if (o->pinned) cudaHostUnregister(o->arena);
    if (o->aside_gpu) cuda_free(o->aside_gpu);
    if (o->flag_gpu) cudaFree(o->flag_gpu);
#endif
    mn_comm_arena_free(o->comm, o->arena);
    free(o->arrays);
    free(o->arrays_gpu);
    free(o->lens);
    free(o);
}

mn_status mn_attach(mn_comm *c, network *net, const mn_options *opt, mn_optimizer **out)
{
    mn_optimizer *o = calloc(1, sizeof *o);
    if (!o) return mn_agree(c, MN_ERR_NOMEM);   /* the others wait in their first agreement */
    o->comm = c;
    int cap = 0;
    for (int i = 0; i < net->n; ++i) {
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(&net->layers[i], p, MN_MAX_LAYER_PARAMS);
        for (int j = 0; j < k; ++j) cap += p[j].grad != NULL;
    }
    float ***slots = calloc((size_t)cap + 1, sizeof *slots);
    float ***slots_gpu = calloc((size_t)cap + 1, sizeof *slots_gpu);
    o->arrays = calloc((size_t)cap + 1, sizeof *o->arrays);
    o->arrays_gpu = calloc((size_t)cap + 1, sizeof *o->arrays_gpu);
    o->lens = calloc((size_t)cap + 1, sizeof *o->lens);
    mn_status st = MN_OK;
    if (!slots || !slots_gpu || !o->arrays || !o->arrays_gpu || !o->lens) st = MN_ERR_NOMEM;
    for (int i = 0; st == MN_OK && i < net->n; ++i)
        o->n += layer_grads(&net->layers[i], slots + o->n, slots_gpu + o->n, o->lens + o->n);
    for (int i = 0; i < o->n; ++i) o->total += o->lens[i];
    if (st == MN_OK && opt->grad_dtype_half) st = mn_comm_set_dtype(c, 1);
    /* float16 and double buffering send the fresh gradient alone: the
     * momentum part waits in aside (mn_optimizer_begin_step). */
    if (st == MN_OK && (opt->grad_dtype_half || opt->double_buffering) &&
        !(o->aside = calloc(o->total + 1, sizeof(float)))) st = MN_ERR_NOMEM;
    if (st == MN_OK && opt->double_buffering && !(o->state = calloc(2 * o->total + 1, sizeof(float)))) st = MN_ERR_NOMEM;
#ifdef GPU
    if (st == MN_OK && opt->double_buffering && net->gpu_index >= 0) {
        if (c->rank == 0) mn_error(c, "double_buffering=1 is not available with a GPU in this version (CPU runs only)");
        st = MN_ERR_UNAVAILABLE;
    }
    o->on_device = net->gpu_index >= 0 && c->size > 1 && c->ops->mean_grad_device &&
                   (c->half ? c->device_f16 : c->device_f32);
    if (st == MN_OK && o->on_device) {
        if (cudaMalloc((void **)&o->flag_gpu, sizeof(int)) != cudaSuccess) st = MN_ERR_NOMEM;
        if (st == MN_OK && opt->grad_dtype_half && !(o->aside_gpu = cuda_make_array(NULL, o->total + 1))) st = MN_ERR_NOMEM;
    }
#endif
    if (st == MN_ERR_NOMEM) mn_error(c, "out of memory attaching the optimizer");
    /* The watchdog and the arena's window are collective: every rank goes
     * on to them, or none. */
    if ((st = mn_agree(c, st)) == MN_OK) {
        mn_status sw = MN_OK;
        if (opt->collective_timeout > 0 && c->size > 1) sw = mn_watchdog_start(c, opt->collective_timeout, &o->watch);
        mn_status sa = mn_comm_arena_alloc(c, o->total, &o->arena);
        st = mn_agree(c, sw != MN_OK ? sw : sa);
        if (st == MN_OK && opt->double_buffering) st = mn_dbuf_start(c, o->lens, o->n, o->total, &o->dbuf);
    }
    if (st != MN_OK) {
        free(slots);
        free(slots_gpu);
        free_optimizer(o);
        return st;
    }
    size_t off = 0;
    for (int i = 0; i < o->n; ++i) {
        float *old = *slots[i];
        memcpy(o->arena + off, old, o->lens[i] * sizeof(float));
        free(old);
        *slots[i] = o->arena + off;
        o->arrays[i] = o->arena + off;
        o->arrays_gpu[i] = slots_gpu[i] ? *slots_gpu[i] : NULL;
        off += o->lens[i];
    }
    free(slots);
    free(slots_gpu);
#ifdef GPU
    /* Host-staged GPU runs copy the gradient down and up every step: from
     * page-locked memory those copies are DMA, not bounced. Best effort: a
     * refusal (e.g. the locked-memory limit) is cleared, or Darknet's next
     * check_error would abort on it. */
    if (net->gpu_index >= 0 && !o->on_device && c->size > 1) {
        o->pinned = cudaHostRegister(o->arena, (o->total + 1) * sizeof(float), cudaHostRegisterPortable) == cudaSuccess;
        if (!o->pinned) (void)cudaGetLastError();
        if (c->rank == 0)
            printf("darknet-mn: GPU run, communicator %s: gradients staged through %s host memory (MPI %s CUDA-aware)\n",
                   c->ops->name, o->pinned ? "page-locked" : "pageable", mpi_cuda_aware() ? "is" : "is not");
    }
#endif
    net->ranks = c->size;
    net->sync = sync_hook;
    net->sync_arg = o;
    *out = o;
    return MN_OK;
}

/* Darknet leaves momentum*update in the update arrays and backward adds the
 * new gradient on top. Under float16 that momentum part would be rounded to
 * half on every step; setting it aside before backward (and adding it back
 * after the allreduce) keeps it in float32, exactly as every rank holds it. */
void mn_optimizer_begin_step(mn_optimizer *o, const network *net)
{
#ifdef GPU
    if (o->on_device && o->aside_gpu) {   /* the same on the device */
        size_t off = 0;
        for (int i = 0; i < o->n; off += o->lens[i], ++i) {
            copy_gpu((int)o->lens[i], o->arrays_gpu[i], 1, o->aside_gpu + off, 1);
            fill_gpu((int)o->lens[i], 0, o->arrays_gpu[i], 1);
        }
        o->is_aside = 1;
        return;
    }
#endif
    if (!o->aside) return;
#ifdef GPU
    if (net->gpu_index >= 0) return;   /* host-staged device arrays: their momentum still travels in half */
#else
    (void)net;   /* CPU builds: Darknet's gpu_index field is meaningless (often 0) */
#endif
    memcpy(o->aside, o->arena, o->total * sizeof(float));
    memset(o->arena, 0, o->total * sizeof(float));
    o->is_aside = 1;
}

int mn_optimizer_nonfinite(const mn_optimizer *o)
{
    return o->nonfinite;
}

float *mn_optimizer_host_state(mn_optimizer *o, const network *net, int to_device, size_t *n)
{
#ifdef GPU
    /* The device update arrays hold the momentum in a GPU run; the arena is
     * only the staging copy of the last allreduce. */
    if (net->gpu_index >= 0)
        for (int i = 0; i < o->n; ++i) {
            if (to_device) cuda_push_array(o->arrays_gpu[i], o->arrays[i], o->lens[i]);
            else cuda_pull_array(o->arrays_gpu[i], o->arrays[i], o->lens[i]);
        }
#else
    (void)net;
    (void)to_device;
#endif
    if (o->dbuf) {   /* the arena and the mean in flight, which the next step applies */
        int has;
        float *pending = mn_dbuf_pending(o->dbuf, &has);
        if (to_device) {
            memcpy(o->arena, o->state, o->total * sizeof(float));
            memcpy(pending, o->state + o->total, o->total * sizeof(float));
            mn_dbuf_set_pending(o->dbuf, 1);
        } else {
            memcpy(o->state, o->arena, o->total * sizeof(float));
            if (has) memcpy(o->state + o->total, pending, o->total * sizeof(float));
            else memset(o->state + o->total, 0, o->total * sizeof(float));
        }
    }
    return mn_optimizer_arena(o, n);
}

float *mn_optimizer_arena(mn_optimizer *o, size_t *n)
{
    *n = o->dbuf ? 2 * o->total : o->total;
    return o->dbuf ? o->state : o->arena;
}

/* Give every update array its own allocation again, so free_network works. */
void mn_detach(network *net, mn_optimizer *o)
{
    if (!o) return;
    for (int i = 0; i < net->n; ++i) {
        layer *l = &net->layers[i];
        float **slots[3] = {&l->weight_updates, &l->bias_updates, &l->scale_updates};
        for (int s = 0; s < 3; ++s) {
            float *p = *slots[s];
            if (p >= o->arena && p < o->arena + o->total + 1) {
                size_t n = 0;
                for (int j = 0; j < o->n; ++j) if (o->arrays[j] == p) n = o->lens[j];
                *slots[s] = calloc(n + 1, sizeof(float));
                if (*slots[s]) memcpy(*slots[s], p, n * sizeof(float));
            }
        }
    }
    net->sync = NULL;
    net->sync_arg = NULL;
    net->ranks = 1;
    free_optimizer(o);
}
