/* Weight prediction for double buffering (mn_dbuf_predict.h). One packed copy
 * w0 of the weights: between steps the weights before the last update;
 * from mn_dbuf_predict_step to mn_dbuf_predict_back the true weights, while the
 * network's arrays hold the prediction. A GPU run keeps both on the device
 * and works through the weights' tables on the base's stream (Darknet's
 * forward, backward and update run there), so nothing waits. */
#include <stdlib.h>
#include <string.h>
#include "train/optimizer/mn_dbuf_predict.h"
#include "base/mn_base.h"
#include "coll/mn_coll.h"
#ifdef GPU
#include "transport/mn_device.h"
#endif

struct mn_dbuf_predict {
    mn_comm *c;
    float k;
    float **weights;          /* the host arrays (a CPU run) */
    const size_t *lens;
    int n;
    size_t total;
    float *w0;                /* packed: host, or device in a GPU run */
    int holds;
#ifdef GPU
    int dev;                  /* a GPU run's: w0 and taken on the device */
    mn_pack_tables tables;    /* the device weights (a GPU run) */
    float *taken;             /* device: the prediction, packed */
    float *pulled;            /* page-locked: w0 for the staged route's compensation */
#endif
};

/* The device's kernel rounds each operation as this does. */
void mn_dbuf_predict_floats(float *w, float *k0, size_t n, float k)
{
    for (size_t j = 0; j < n; ++j) {
        float now = w[j], d = now - k0[j];
        k0[j] = now;
        w[j] = now + k * d;
    }
}

mn_status mn_dbuf_predict_new(mn_comm *c, float **weights, float **weights_gpu, const size_t *lens, int n, float k,
                       mn_dbuf_predict **out)
{
    *out = NULL;
    mn_dbuf_predict *p = calloc(1, sizeof *p);
    if (!p) return MN_ERR_NOMEM;
    *p = (mn_dbuf_predict){.c = c, .k = k, .weights = weights, .lens = lens, .n = n};
    for (int i = 0; i < n; ++i) p->total += lens[i];
    mn_status r = MN_OK;
#ifdef GPU
    if (weights_gpu) {
        size_t bytes = (p->total + 1) * sizeof(float);
        p->dev = 1;
        r = mn_pack_tables_make(c, weights_gpu, lens, n, mn_base_stream(), &p->tables);
        if (r == MN_OK && (!mn_device_ok(c, mn_device_alloc((void **)&p->w0, bytes), "cudaMalloc") ||
                           !mn_device_ok(c, mn_device_alloc((void **)&p->taken, bytes), "cudaMalloc") ||
                           !mn_device_ok(c, mn_device_alloc_host((void **)&p->pulled, bytes), "cudaMallocHost")))
            r = MN_ERR_NOMEM;
        if (r != MN_OK) mn_dbuf_predict_free(p);
        else *out = p;
        return r;
    }
#else
    (void)weights_gpu;
#endif
    if (!(p->w0 = calloc(p->total + 1, sizeof(float)))) r = MN_ERR_NOMEM;
    if (r != MN_OK) mn_dbuf_predict_free(p);
    else *out = p;
    return r;
}

void mn_dbuf_predict_free(mn_dbuf_predict *p)
{
    if (!p) return;
#ifdef GPU
    if (p->dev) {
        float *dev[] = {p->w0, p->taken};
        for (int i = 0; i < 2; ++i)
            if (dev[i]) mn_device_ok(p->c, mn_device_free(dev[i]), "cudaFree");
        if (p->pulled) mn_device_ok(p->c, mn_device_free_host(p->pulled), "cudaFreeHost");
        mn_pack_tables_free(p->c, &p->tables);
        free(p);
        return;
    }
#endif
    free(p->w0);
    free(p);
}

#ifdef GPU
static void must(mn_dbuf_predict *p, int e, const char *what)
{
    mn_device_must(p->c, e, what);
}
#endif

void mn_dbuf_predict_step(mn_dbuf_predict *p, int ahead)
{
#ifdef GPU
    if (p->dev) {
        void *st = mn_base_stream();
        const mn_pack_tables *t = &p->tables;
        if (!ahead) {
            must(p, mn_gpu_pack(p->w0, t->ptrs, t->offs, t->n, 0, p->total, st), "keeping the weights");
            return;
        }
        must(p, mn_gpu_pack(p->taken, t->ptrs, t->offs, t->n, 0, p->total, st), "packing the weights");
        must(p, mn_gpu_predict(p->taken, p->w0, p->total, p->k, st), "the weight prediction");
        must(p, mn_gpu_unpack(t->ptrs, p->taken, t->offs, t->n, p->total, st), "setting the predicted weights");
        p->holds = 1;
        return;
    }
#endif
    for (size_t i = 0, off = 0; i < (size_t)p->n; off += p->lens[i++]) {
        if (ahead) mn_dbuf_predict_floats(p->weights[i], p->w0 + off, p->lens[i], p->k);
        else memcpy(p->w0 + off, p->weights[i], p->lens[i] * sizeof(float));
    }
    p->holds = ahead;
}

void mn_dbuf_predict_back(mn_dbuf_predict *p)
{
    if (!p || !p->holds) return;
    p->holds = 0;
#ifdef GPU
    if (p->dev) {
        must(p, mn_gpu_unpack(p->tables.ptrs, p->w0, p->tables.offs, p->tables.n, p->total, mn_base_stream()),
             "restoring the weights");
        return;
    }
#endif
    for (size_t i = 0, off = 0; i < (size_t)p->n; off += p->lens[i++])
        memcpy(p->weights[i], p->w0 + off, p->lens[i] * sizeof(float));
}

int mn_dbuf_predict_holds(const mn_dbuf_predict *p) { return p && p->holds; }

const float *mn_dbuf_predict_kept(const mn_dbuf_predict *p) { return p->w0; }

const float *mn_dbuf_predict_taken(const mn_dbuf_predict *p)
{
#ifdef GPU
    return p->taken;
#else
    (void)p;
    return NULL;
#endif
}

#ifdef GPU
float *mn_dbuf_predict_pull_kept(mn_dbuf_predict *p)
{
    must(p, mn_device_copy(p->pulled, p->w0, p->total * sizeof(float), MN_TO_HOST, mn_base_stream()),
         "copying the kept weights");
    return p->pulled;
}

/* A checkpoint's copy, waited for. */
static void copy(mn_dbuf_predict *p, void *to, const void *from, mn_copy_way way)
{
    must(p, mn_device_copy(to, from, p->total * sizeof(float), way, mn_base_stream()), "copying the kept weights");
    must(p, mn_device_wait(mn_base_stream()), "copying the kept weights");
}
#endif

void mn_dbuf_predict_get(mn_dbuf_predict *p, float *w0)
{
#ifdef GPU
    if (p->dev) { copy(p, w0, p->w0, MN_TO_HOST); return; }
#endif
    memcpy(w0, p->w0, p->total * sizeof(float));
}

void mn_dbuf_predict_set(mn_dbuf_predict *p, const float *w0)
{
#ifdef GPU
    if (p->dev) { copy(p, p->w0, w0, MN_TO_DEVICE); return; }
#endif
    memcpy(p->w0, w0, p->total * sizeof(float));
}
