/* Double buffering on the device (mn_dbuf_gpu.h), ChainerMN's for pure_nccl.
 * At step t's hook the gradient is packed into buffer t % 2 on the base's
 * stream; the communicator's stream waits for it, reduces it in place and
 * checks it for Inf/NaN into a page-locked flag, while step t+1 computes.
 * At step t+1's hook the host waits for that stream, reads the flag, and
 * step t's mean is compensated, scaled and unpacked into Darknet's update
 * arrays on the base's stream. double_buffering_local=1 also keeps the
 * gradient (fresh) and applies fresh + (mean - own), checked before the
 * update. Who waits for what: mn_dbuf_order (tests/unit/test_queue.c). */
#ifdef GPU
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/optimizer/mn_dbuf_gpu.h"
#include "base/mn_base.h"
#include "coll/mn_coll.h"
#include "transport/mn_device.h"
#include "train/optimizer/mn_gpu_order.h"
#include "transport/mn_queue.h"

typedef struct {
    struct mn_dbuf_gpu *d;
    int b;
    int poison;
} buf_arg;

struct mn_dbuf_gpu {
    mn_comm *c;
    size_t total;
    mn_pack_tables grads, weights;   /* device tables; weights empty without compensation */
    float *buf[2];          /* device: the packed gradients, then their means */
    float *w, *prev, *v;    /* compensation: the weights now and then, the mean square */
    float *fresh, *own;     /* local: this step's gradient, packed; the last one's */
    int *flag[3];           /* device: buffer b's mean is not finite; [2]: local's update */
    int *flag_host;         /* their page-locked copies, three ints */
    buf_arg args[2];
    mn_queue *base_q, *comm_q;
    mn_dbuf_order order;
    int has_order;
};

static void must(mn_dbuf_gpu *d, int e, const char *what)
{
    mn_device_must(d->c, e, what);
}

static int alloc(mn_dbuf_gpu *d, void *p, size_t bytes)
{
    return mn_device_ok(d->c, mn_device_alloc((void **)p, bytes), "cudaMalloc");
}

mn_status mn_dbuf_gpu_new(mn_comm *c, float **grads, float **weights, const size_t *lens, int n, int local,
                          mn_dbuf_gpu **out)
{
    *out = NULL;
    mn_dbuf_gpu *d = calloc(1, sizeof *d);
    if (!d) return MN_ERR_NOMEM;
    d->c = c;
    mn_status r = mn_pack_tables_make(c, grads, lens, n, mn_base_stream(), &d->grads);
    if (r == MN_OK && weights) r = mn_pack_tables_make(c, weights, lens, n, mn_base_stream(), &d->weights);
    d->total = d->grads.total;
    size_t bytes = (d->total + 1) * sizeof(float);
    if (r == MN_OK && (!alloc(d, &d->buf[0], bytes) || !alloc(d, &d->buf[1], bytes) ||
                       !alloc(d, &d->flag[0], sizeof(int)) || !alloc(d, &d->flag[1], sizeof(int)) ||
                       !alloc(d, &d->flag[2], sizeof(int)) ||
                       !mn_device_ok(c, mn_device_alloc_host((void **)&d->flag_host, 3 * sizeof(int)), "cudaMallocHost")))
        r = MN_ERR_NOMEM;
    if (r == MN_OK && local && (!alloc(d, &d->fresh, bytes) || !alloc(d, &d->own, bytes))) r = MN_ERR_NOMEM;
    if (r == MN_OK && weights) {   /* zeros, as the host route's calloc'd state */
        if (!alloc(d, &d->w, bytes) || !alloc(d, &d->prev, bytes) || !alloc(d, &d->v, bytes)) r = MN_ERR_NOMEM;
        else if (!mn_device_ok(c, mn_device_zero(d->prev, bytes, mn_base_stream()), "cudaMemsetAsync") ||
                 !mn_device_ok(c, mn_device_zero(d->v, bytes, mn_base_stream()), "cudaMemsetAsync") ||
                 !mn_device_ok(c, mn_device_wait(mn_base_stream()), "cudaStreamSynchronize"))
            r = MN_ERR_UNAVAILABLE;
    }
    if (r == MN_OK) {
        d->base_q = mn_queue_device(c, mn_base_stream());
        d->comm_q = mn_queue_device(c, mn_comm_device_stream(c));
        if (!d->base_q || !d->comm_q) r = MN_ERR_NOMEM;
    }
    if (r == MN_OK && (r = mn_dbuf_order_init(&d->order, d->base_q, d->comm_q)) == MN_OK) d->has_order = 1;
    for (int b = 0; b < 2; ++b) d->args[b] = (buf_arg){d, b, 0};
    if (r != MN_OK) {
        mn_dbuf_gpu_free(d);
        return r;
    }
    *out = d;
    return MN_OK;
}

int mn_dbuf_gpu_pending(const mn_dbuf_gpu *d)
{
    return d->order.steps > 0;
}

/* The mean in flight complete, its flag landed. */
static void wait_mean(mn_dbuf_gpu *d)
{
    if (mn_dbuf_gpu_pending(d) && mn_comm_device_wait(d->c, "double buffering's allreduce") != MN_OK)
        mn_abort(d->c, "gradient allreduce failed (double buffering)");
}

void mn_dbuf_gpu_free(mn_dbuf_gpu *d)
{
    if (!d) return;
    if (d->has_order) {
        wait_mean(d);
        mn_dbuf_order_free(&d->order);
    }
    mn_queue_free(d->base_q);
    mn_queue_free(d->comm_q);
    float *bufs[] = {d->buf[0], d->buf[1], d->w, d->prev, d->v, d->fresh, d->own};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; ++i)
        if (bufs[i]) mn_device_ok(d->c, mn_device_free(bufs[i]), "cudaFree");
    for (int b = 0; b < 3; ++b)
        if (d->flag[b]) mn_device_ok(d->c, mn_device_free(d->flag[b]), "cudaFree");
    if (d->flag_host) mn_device_ok(d->c, mn_device_free_host(d->flag_host), "cudaFreeHost");
    mn_pack_tables_free(d->c, &d->grads);
    mn_pack_tables_free(d->c, &d->weights);
    free(d);
}

/* On the base's stream, after backward: the gradient into buffer b. */
static void fill(void *arg, void *stream)
{
    buf_arg *a = arg;
    mn_dbuf_gpu *d = a->d;
    must(d, mn_gpu_pack(d->buf[a->b], d->grads.ptrs, d->grads.offs, d->grads.n, 0, d->total, stream), "packing the gradient");
    if (d->fresh)   /* before the reduce overwrites it */
        must(d, mn_device_copy(d->fresh, d->buf[a->b], d->total * sizeof(float), MN_ON_DEVICE, stream),
             "copying the gradient aside");
    if (a->poison) mn_base_fill_gpu(1, NAN, d->buf[a->b]);   /* Darknet's fill, on the base's stream too */
}

/* On the communicator's stream, once the buffer is filled: its mean, checked. */
static void reduce(void *arg, void *stream)
{
    buf_arg *a = arg;
    mn_dbuf_gpu *d = a->d;
    must(d, mn_device_zero(d->flag[a->b], sizeof(int), stream), "clearing the Inf/NaN flag");
    if (mn_comm_mean_packed(d->c, d->buf[a->b], d->total) != MN_OK)
        mn_abort(d->c, "gradient allreduce failed (double buffering)");
    must(d, mn_gpu_floats_nonfinite(d->buf[a->b], d->total, d->flag[a->b], stream), "the Inf/NaN check");
    must(d, mn_device_copy(d->flag_host + a->b, d->flag[a->b], sizeof(int), MN_TO_HOST, stream),
         "reading the Inf/NaN check");
}

/* Compensation at the weights as they are (w packed; or those kept, w,
 * while the arrays hold a prediction, eval), then the correction (apply 0:
 * prev = eval alone, as at the first stale step on the host). */
static void compensate(mn_dbuf_gpu *d, float *u, float lambda, int apply, const float *w, const float *eval)
{
    void *st = mn_base_stream();
    if (!w) {
        must(d, mn_gpu_pack(d->w, d->weights.ptrs, d->weights.offs, d->weights.n, 0, d->total, st), "packing the weights");
        w = eval = d->w;
    }
    must(d, mn_gpu_compensate(u, w, eval, d->prev, d->v, d->total, lambda, apply, st), "the delay compensation");
}

/* double_buffering_local=1, after the send: fresh + (buffer b's mean - own)
 * into the update arrays, or where no mean came (b < 0) fresh as they hold
 * it; own = fresh. The host waits for the check of what the update applies. */
static int local_step(mn_dbuf_gpu *d, int b, int *bad)
{
    void *st = mn_base_stream();
    float *u = b < 0 ? d->fresh : d->buf[b];
    must(d, mn_gpu_local(u, d->fresh, d->own, d->total, b >= 0, st), "the local step");
    must(d, mn_device_zero(d->flag[2], sizeof(int), st), "clearing the Inf/NaN flag");
    must(d, mn_gpu_floats_nonfinite(u, d->total, d->flag[2], st), "the Inf/NaN check");
    must(d, mn_device_copy(d->flag_host + 2, d->flag[2], sizeof(int), MN_TO_HOST, st),
         "reading the Inf/NaN check");
    if (b >= 0) must(d, mn_gpu_unpack(d->grads.ptrs, u, d->grads.offs, d->grads.n, d->total, st), "unpacking the update");
    must(d, mn_device_wait(st), "the Inf/NaN check");
    *bad = d->flag_host[2];
    return 1;
}

int mn_dbuf_gpu_exchange(mn_dbuf_gpu *d, int poison, float lambda, float scale, const float *w, const float *eval, int *bad)
{
    void *st = mn_base_stream();
    *bad = 0;
    wait_mean(d);
    int sent = (int)(d->order.steps % 2);
    d->args[sent].poison = poison;
    void *const args[2] = {&d->args[0], &d->args[1]};
    mn_dbuf_order_send(&d->order, fill, reduce, args);
    int b = mn_dbuf_order_take(&d->order);
    if (d->own) {   /* fresh was copied before the poison */
        int r = local_step(d, b, bad);
        *bad |= poison;
        return r;
    }
    if (b < 0) {   /* the first stale step: nothing to apply; the other buffer is idle */
        float *idle = d->buf[1 - sent];
        if (d->prev && lambda > 0) compensate(d, idle, lambda, 0, w, eval);
        must(d, mn_device_zero(idle, d->total * sizeof(float), st), "clearing the update arrays");
        must(d, mn_gpu_unpack(d->grads.ptrs, idle, d->grads.offs, d->grads.n, d->total, st), "clearing the update arrays");
        return 0;
    }
    *bad = d->flag_host[b];
    if (d->prev && lambda > 0) compensate(d, d->buf[b], lambda, 1, w, eval);
    if (scale != 1) must(d, mn_gpu_scale(d->buf[b], d->total, scale, st), "scaling the stale mean");
    must(d, mn_gpu_unpack(d->grads.ptrs, d->buf[b], d->grads.offs, d->grads.n, d->total, st), "unpacking the mean");
    return 1;
}

/* A device copy on the base's stream, waited for (checkpoints only). */
static void copy(mn_dbuf_gpu *d, void *to, const void *from, mn_copy_way way)
{
    void *st = mn_base_stream();
    must(d, mn_device_copy(to, from, d->total * sizeof(float), way, st), "copying double buffering's state");
    must(d, mn_device_wait(st), "copying double buffering's state");
}

void mn_dbuf_gpu_get(mn_dbuf_gpu *d, float *mean, float *prev, float *v)
{
    wait_mean(d);
    if (mn_dbuf_gpu_pending(d)) copy(d, mean, d->buf[(d->order.steps - 1) % 2], MN_TO_HOST);
    else memset(mean, 0, d->total * sizeof(float));
    if (d->prev && prev) copy(d, prev, d->prev, MN_TO_HOST);
    if (d->v && v) copy(d, v, d->v, MN_TO_HOST);
}

void mn_dbuf_gpu_align(mn_dbuf_gpu *d)
{
    wait_mean(d);
    if (d->own && mn_dbuf_gpu_pending(d)) copy(d, d->own, d->buf[(d->order.steps - 1) % 2], MN_ON_DEVICE);
}

void mn_dbuf_gpu_set(mn_dbuf_gpu *d, const float *mean, const float *prev, const float *v)
{
    wait_mean(d);
    if (d->prev && prev) copy(d, d->prev, prev, MN_TO_DEVICE);
    if (d->v && v) copy(d, d->v, v, MN_TO_DEVICE);
    if (!mean) return;   /* none in flight */
    copy(d, d->buf[0], mean, MN_TO_DEVICE);
    if (d->own) copy(d, d->own, mean, MN_TO_DEVICE);   /* as mn_dbuf_set_pending */
    /* Checked as a mean just reduced would be (the next exchange reads the flag). */
    void *st = mn_base_stream();
    must(d, mn_device_zero(d->flag[0], sizeof(int), st), "clearing the Inf/NaN flag");
    must(d, mn_gpu_floats_nonfinite(d->buf[0], d->total, d->flag[0], st), "the Inf/NaN check");
    must(d, mn_device_copy(d->flag_host, d->flag[0], sizeof(int), MN_TO_HOST, st), "reading the Inf/NaN check");
    must(d, mn_device_wait(st), "reading the Inf/NaN check");
    mn_dbuf_order_resume(&d->order);
}
#endif
