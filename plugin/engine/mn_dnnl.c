/* oneDNN convolution for every base. Each primitive picks its own (blocked,
 * fast) layouts and reorders move Darknet's plain tensors in and out. A
 * primitive takes the pass's whole batch: one image of a deep layer is too
 * small for oneDNN's kernels. oneDNN sums the batch's weight gradient in its
 * own order, so N ranks x b images match 1 x N*b only to rounding. Where its
 * backward-weights kernel is slow one sgemm replaces it (docs/benchmarks.md,
 * "Where a step goes"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/mn_engine.h"
#ifdef MN_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

/* One tensor of a primitive: user wraps Darknet's array, inner the
 * primitive's layout (NULL where they agree). shared: inner is another
 * arg's, already reordered in this call or by the forward before it. */
typedef struct {
    dnnl_memory_t user, inner;
    dnnl_primitive_t reorder;
    int shared;
} arg;

typedef struct {
    int key[13];     /* the mn_conv sizes the primitives were made for */
    int ready;
    dnnl_primitive_t fwd, bwd_data, bwd_weights;
    arg f_src, f_wei, f_dst;
    arg d_src, d_wei, d_dst;   /* backward data: diff_src, weights, diff_dst */
    arg w_src, w_wei, w_dst;   /* backward weights: src, diff_weights, diff_dst */
    float *dw;   /* gradients before they are added to Darknet's */
    float *dx;
    int gemm;    /* the weight gradient by gemm_weights */
    float *rows; /* gemm_weights' input patches and output gradient */
    float *dy;
} conv;

struct mn_dnnl {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    const mn_comm *comm;
    int n, hooked;
    int pools;
    conv *convs;
    char *on;    /* layer i is hooked */
};

static void check(const mn_dnnl *d, int i, const char *what, dnnl_status_t s)
{
    if (s != dnnl_success)
        mn_abort(d->comm, "layer %d (convolutional): oneDNN %s failed: %s", i, what, dnnl_status2str(s));
}

static void arg_free(arg *a)
{
    if (a->reorder) dnnl_primitive_destroy(a->reorder);
    if (a->inner && !a->shared) dnnl_memory_destroy(a->inner);
    if (a->user) dnnl_memory_destroy(a->user);
    memset(a, 0, sizeof *a);
}

static void conv_free(conv *v)
{
    if (v->fwd) dnnl_primitive_destroy(v->fwd);
    if (v->bwd_data) dnnl_primitive_destroy(v->bwd_data);
    if (v->bwd_weights) dnnl_primitive_destroy(v->bwd_weights);
    arg *all[] = {&v->f_src, &v->f_wei, &v->f_dst, &v->d_src, &v->d_wei, &v->d_dst, &v->w_src, &v->w_wei, &v->w_dst};
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k) arg_free(all[k]);
    free(v->dw);
    free(v->dx);
    free(v->rows);
    free(v->dy);
    memset(v, 0, sizeof *v);
}

/* Makes the arg for plain memory at pd's query q; out: the primitive writes
 * it. like: an arg of the same tensor whose inner is reused if it fits. */
static void arg_make(mn_dnnl *d, int i, arg *a, const dnnl_memory_desc_t *plain, const_dnnl_primitive_desc_t pd,
                     dnnl_query_t q, int out, const arg *like)
{
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, q, 0);
    if (!want) mn_abort(d->comm, "layer %d (convolutional): oneDNN primitive has no memory for query %d", i, (int)q);
    check(d, i, "memory_create", dnnl_memory_create(&a->user, plain, d->eng, DNNL_MEMORY_NONE));
    if (dnnl_memory_desc_equal(want, plain)) return;
    if (like && like->inner) {
        const dnnl_memory_desc_t *had;
        check(d, i, "memory_get_memory_desc", dnnl_memory_get_memory_desc(like->inner, &had));
        if (dnnl_memory_desc_equal(want, had)) {
            a->inner = like->inner;
            a->shared = 1;
            return;
        }
    }
    check(d, i, "memory_create", dnnl_memory_create(&a->inner, want, d->eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    check(d, i, "reorder_primitive_desc_create",
          out ? dnnl_reorder_primitive_desc_create(&rpd, want, d->eng, plain, d->eng, NULL)
              : dnnl_reorder_primitive_desc_create(&rpd, plain, d->eng, want, d->eng, NULL));
    check(d, i, "primitive_create (reorder)", dnnl_primitive_create(&a->reorder, rpd));
    dnnl_primitive_desc_destroy(rpd);
}

static void run(mn_dnnl *d, int i, const char *what, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args)
{
    check(d, i, what, dnnl_primitive_execute(p, d->stream, nargs, args));
}

/* Points a at Darknet's p and reorders it in. */
static dnnl_memory_t arg_in(mn_dnnl *d, int i, arg *a, const float *p)
{
    check(d, i, "memory_set_data_handle", dnnl_memory_set_data_handle(a->user, (void *)p));
    if (!a->inner) return a->user;
    if (!a->shared) {
        dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->user}, {DNNL_ARG_TO, a->inner}};
        run(d, i, "reorder", a->reorder, 2, r);
    }
    return a->inner;
}

static dnnl_memory_t arg_out(mn_dnnl *d, int i, arg *a, float *p)
{
    check(d, i, "memory_set_data_handle", dnnl_memory_set_data_handle(a->user, p));
    return a->inner ? a->inner : a->user;
}

static void arg_done(mn_dnnl *d, int i, arg *a)
{
    if (!a->inner) return;
    dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->inner}, {DNNL_ARG_TO, a->user}};
    run(d, i, "reorder", a->reorder, 2, r);
}

static size_t conv_inputs(const mn_conv *l) { return (size_t)l->c * l->h * l->w; }
static size_t conv_nweights(const mn_conv *l) { return (size_t)l->c / l->groups * l->n * l->size * l->size; }

/* Whether l's weight gradient goes through gemm_weights: where it measured
 * faster than oneDNN's kernel. Copying the patches costs the same for any
 * filter count, so it needs many filters to pay. */
static int conv_gemm(const mn_conv *l)
{
    return l->groups == 1 && l->size > 1 && l->n >= 512 && l->c * l->size * l->size >= 2048 &&
           l->out_h * l->out_w <= 256;
}

/* The images gemm_weights takes at once, its patches within 16 MB. */
static int gemm_images(const mn_conv *l)
{
    int per = (int)((4u << 20) / ((size_t)l->out_h * l->out_w * (conv_nweights(l) / l->n)));
    return per < 1 ? 1 : per > l->batch ? l->batch : per;
}

/* dW[n x R] += dY[n x Q] rows[Q x R] over runs of images: Q a run's output
 * pixels, R = c x size x size each pixel's zero-padded input patch. */
static void gemm_weights(mn_dnnl *d, int i, const mn_conv *l, conv *v, const float *input)
{
    int hw = l->out_h * l->out_w, ks = l->size, r = l->c * ks * ks, run = gemm_images(l);
    for (int b0 = 0; b0 < l->batch; b0 += run) {
        int imgs = l->batch - b0 < run ? l->batch - b0 : run, q = imgs * hw;
        for (int b = 0; b < imgs; ++b)
            for (int o = 0; o < l->n; ++o)
                memcpy(v->dy + (size_t)o * q + (size_t)b * hw, l->delta + ((size_t)(b0 + b) * l->n + o) * hw,
                       sizeof(float) * hw);
        for (int b = 0; b < imgs; ++b) {
            const float *x = input + (size_t)(b0 + b) * conv_inputs(l);
            float *row = v->rows + (size_t)b * hw * r;
            for (int y = 0; y < l->out_h; ++y)
                for (int xo = 0; xo < l->out_w; ++xo)
                    for (int c = 0; c < l->c; ++c)
                        for (int ky = 0; ky < ks; ++ky) {
                            int iy = y * l->stride_h - l->pad + ky * l->dilation;
                            for (int kx = 0; kx < ks; ++kx) {
                                int ix = xo * l->stride_w - l->pad + kx * l->dilation;
                                int in = iy >= 0 && iy < l->h && ix >= 0 && ix < l->w;
                                *row++ = in ? x[((size_t)c * l->h + iy) * l->w + ix] : 0;
                            }
                        }
        }
        check(d, i, "sgemm (weight gradient)",
              dnnl_sgemm('N', 'N', l->n, r, q, 1, v->dy, q, v->rows, r, 1, l->weight_updates, r));
    }
}

/* The three primitives of layer i at its current shape. */
static void conv_make(mn_dnnl *d, int i, const mn_conv *l, conv *v)
{
    int gr = l->groups;
    dnnl_dims_t sd = {l->batch, l->c, l->h, l->w}, dd = {l->batch, l->n, l->out_h, l->out_w};
    dnnl_dims_t wd = {gr, l->n / gr, l->c / gr, l->size, l->size};
    dnnl_dims_t wd4 = {l->n, l->c, l->size, l->size};
    int ext = (l->size - 1) * l->dilation + 1;
    dnnl_dims_t st = {l->stride_h, l->stride_w}, dl = {l->dilation - 1, l->dilation - 1}, pl = {l->pad, l->pad};
    dnnl_dims_t pr = {(l->out_h - 1) * l->stride_h + ext - l->h - l->pad, (l->out_w - 1) * l->stride_w + ext - l->w - l->pad};
    dnnl_memory_desc_t s, w, o, sa, wa, oa;
    check(d, i, "memory_desc_init", dnnl_memory_desc_init_by_tag(&s, 4, sd, dnnl_f32, dnnl_nchw));
    check(d, i, "memory_desc_init", dnnl_memory_desc_init_by_tag(&o, 4, dd, dnnl_f32, dnnl_nchw));
    check(d, i, "memory_desc_init", gr > 1 ? dnnl_memory_desc_init_by_tag(&w, 5, wd, dnnl_f32, dnnl_goihw)
                                           : dnnl_memory_desc_init_by_tag(&w, 4, wd4, dnnl_f32, dnnl_oihw));
    check(d, i, "memory_desc_init", dnnl_memory_desc_init_by_tag(&sa, 4, sd, dnnl_f32, dnnl_format_tag_any));
    check(d, i, "memory_desc_init", dnnl_memory_desc_init_by_tag(&oa, 4, dd, dnnl_f32, dnnl_format_tag_any));
    check(d, i, "memory_desc_init", gr > 1 ? dnnl_memory_desc_init_by_tag(&wa, 5, wd, dnnl_f32, dnnl_format_tag_any)
                                           : dnnl_memory_desc_init_by_tag(&wa, 4, wd4, dnnl_f32, dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t fpd, dpd, wpd;
    check(d, i, "convolution_forward_desc_init",
          dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &sa, &wa, NULL,
                                                     &oa, st, dl, pl, pr));
    check(d, i, "primitive_desc_create (forward)", dnnl_primitive_desc_create(&fpd, &cd, NULL, d->eng, NULL));
    check(d, i, "convolution_backward_data_desc_init",
          dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &sa, &wa, &oa, st, dl, pl, pr));
    check(d, i, "primitive_desc_create (backward data)", dnnl_primitive_desc_create(&dpd, &cd, NULL, d->eng, fpd));
    check(d, i, "convolution_backward_weights_desc_init",
          dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &sa, &wa, NULL, &oa, st, dl,
                                                              pl, pr));
    check(d, i, "primitive_desc_create (backward weights)", dnnl_primitive_desc_create(&wpd, &cd, NULL, d->eng, fpd));

    v->gemm = conv_gemm(l);
    check(d, i, "primitive_create (forward)", dnnl_primitive_create(&v->fwd, fpd));
    check(d, i, "primitive_create (backward data)", dnnl_primitive_create(&v->bwd_data, dpd));
    if (!v->gemm) check(d, i, "primitive_create (backward weights)", dnnl_primitive_create(&v->bwd_weights, wpd));
    arg_make(d, i, &v->f_src, &s, fpd, dnnl_query_src_md, 0, NULL);
    arg_make(d, i, &v->f_wei, &w, fpd, dnnl_query_weights_md, 0, NULL);
    arg_make(d, i, &v->f_dst, &o, fpd, dnnl_query_dst_md, 1, NULL);
    /* Backward reuses forward's reordered input and weights (Darknet's
     * backward follows its forward and changes weights only in the update);
     * diff_dst is reordered once for both backward primitives. */
    if (!v->gemm) {
        arg_make(d, i, &v->w_dst, &o, wpd, dnnl_query_diff_dst_md, 0, NULL);
        arg_make(d, i, &v->w_src, &s, wpd, dnnl_query_src_md, 0, &v->f_src);
        arg_make(d, i, &v->w_wei, &w, wpd, dnnl_query_diff_weights_md, 1, NULL);
    }
    arg_make(d, i, &v->d_dst, &o, dpd, dnnl_query_diff_dst_md, 0, v->gemm ? NULL : &v->w_dst);
    arg_make(d, i, &v->d_wei, &w, dpd, dnnl_query_weights_md, 0, &v->f_wei);
    arg_make(d, i, &v->d_src, &s, dpd, dnnl_query_diff_src_md, 1, NULL);
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(dpd);
    dnnl_primitive_desc_destroy(wpd);
    size_t q = (size_t)gemm_images(l) * l->out_h * l->out_w;
    v->dw = v->gemm ? NULL : malloc(sizeof(float) * conv_nweights(l));
    v->rows = v->gemm ? malloc(sizeof(float) * q * conv_nweights(l) / l->n) : NULL;
    v->dy = v->gemm ? malloc(sizeof(float) * q * l->n) : NULL;
    v->dx = malloc(sizeof(float) * conv_inputs(l) * l->batch);
    if ((v->gemm ? !v->rows || !v->dy : !v->dw) || !v->dx)
        mn_abort(d->comm, "layer %d (convolutional): no memory for oneDNN's gradients", i);
}

/* Layer i's primitives, made or remade for its current size. */
static conv *conv_of(mn_dnnl *d, int i, const mn_conv *l)
{
    conv *v = &d->convs[i];
    int key[13] = {l->batch, l->c, l->h, l->w, l->n, l->out_h, l->out_w, l->groups, l->size,
                   l->stride_h, l->stride_w, l->dilation, l->pad};
    if (v->ready && !memcmp(v->key, key, sizeof key)) return v;
    conv_free(v);
    conv_make(d, i, l, v);
    memcpy(v->key, key, sizeof key);
    v->ready = 1;
    return v;
}

int mn_dnnl_forward(void *engine, int i, const mn_conv *l, const float *input, float *out)
{
    mn_dnnl *d = engine;
    if (!d || i < 0 || i >= d->n || !d->on[i]) return 0;
    conv *v = conv_of(d, i, l);
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, arg_in(d, i, &v->f_src, input)},
                            {DNNL_ARG_WEIGHTS, arg_in(d, i, &v->f_wei, l->weights)},
                            {DNNL_ARG_DST, arg_out(d, i, &v->f_dst, out)}};
    run(d, i, "convolution forward", v->fwd, 3, a);
    arg_done(d, i, &v->f_dst);
    return 1;
}

int mn_dnnl_backward(void *engine, int i, const mn_conv *l, const float *input, float *delta, int overwrite)
{
    mn_dnnl *d = engine;
    if (!d || i < 0 || i >= d->n || !d->on[i]) return 0;
    conv *v = conv_of(d, i, l);
    size_t inputs = conv_inputs(l) * l->batch, nweights = conv_nweights(l);
    if (v->gemm) {
        gemm_weights(d, i, l, v, input);
    } else {
        dnnl_exec_arg_t w[3] = {{DNNL_ARG_SRC, arg_in(d, i, &v->w_src, input)},
                                {DNNL_ARG_DIFF_DST, arg_in(d, i, &v->w_dst, l->delta)},
                                {DNNL_ARG_DIFF_WEIGHTS, arg_out(d, i, &v->w_wei, v->dw)}};
        run(d, i, "convolution backward weights", v->bwd_weights, 3, w);
        arg_done(d, i, &v->w_wei);
        for (size_t k = 0; k < nweights; ++k) l->weight_updates[k] += v->dw[k];
    }
    if (!delta) return 1;
    float *dx = overwrite ? delta : v->dx;
    dnnl_exec_arg_t x[3] = {{DNNL_ARG_DIFF_DST, arg_in(d, i, &v->d_dst, l->delta)},
                            {DNNL_ARG_WEIGHTS, arg_in(d, i, &v->d_wei, l->weights)},
                            {DNNL_ARG_DIFF_SRC, arg_out(d, i, &v->d_src, dx)}};
    run(d, i, "convolution backward data", v->bwd_data, 3, x);
    arg_done(d, i, &v->d_src);
    if (!overwrite)
        for (size_t k = 0; k < inputs; ++k) delta[k] += dx[k];
    return 1;
}

int mn_dnnl_install(network *net, const mn_comm *c, const mn_dnnl_ops *ops)
{
    const char *off = getenv("MN_DNNL");
    if (!ops || (off && !strcmp(off, "0"))) return 0;
    int n = ops->layers(net);
    mn_dnnl *d = calloc(1, sizeof *d);
    if (d) d->convs = calloc((size_t)n, sizeof *d->convs);
    if (d) d->on = calloc((size_t)n, 1);
    if (!d || !d->convs || !d->on) mn_abort(c, "no memory for oneDNN's state of %d layers", n);
    d->comm = c;
    d->n = n;
    for (int i = 0; i < n; ++i) {
        int what = ops->hook(net, i);
        if (what == MN_DNNL_POOL) d->pools++;
        if (what != MN_DNNL_CONV) continue;
        if (!d->eng) {
            check(d, i, "engine_create", dnnl_engine_create(&d->eng, dnnl_cpu, 0));
            check(d, i, "stream_create", dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags));
        }
        d->on[i] = 1;
        d->hooked++;
    }
    *ops->state(net) = d;
    return d->hooked;
}

void mn_dnnl_free(void *engine)
{
    mn_dnnl *d = engine;
    if (!d) return;
    for (int i = 0; i < d->n; ++i) conv_free(&d->convs[i]);
    if (d->stream) dnnl_stream_destroy(d->stream);
    if (d->eng) dnnl_engine_destroy(d->eng);
    free(d->convs);
    free(d->on);
    free(d);
}

int mn_dnnl_threads(void)
{
    /* Without OMP_NUM_THREADS every rank would start a thread per core. */
    if (!getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
    return omp_get_max_threads();
}

int mn_dnnl_engine(char *buf, size_t n)
{
    const char *off = getenv("MN_DNNL");
    if (off && !strcmp(off, "0")) {
        snprintf(buf, n, "Darknet's im2col + gemm (oneDNN built in, off: MN_DNNL=0)");
        return 0;
    }
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, n, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return 1;
}

int mn_dnnl_describe(network *net, const mn_dnnl_ops *ops, char *buf, size_t n)
{
    const mn_dnnl *d = ops ? *ops->state(net) : NULL;
    if (!d || !d->hooked) return 0;
    const dnnl_version_t *v = dnnl_version();
    int k = snprintf(buf, n, "oneDNN %d.%d.%d, %d thread%s, %d convolutional layer%s", v->major, v->minor, v->patch,
                     omp_get_max_threads(), omp_get_max_threads() > 1 ? "s" : "", d->hooked, d->hooked == 1 ? "" : "s");
    if (d->pools && k >= 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "; 2x2 maxpool unrolled on %d layer%s", d->pools, d->pools == 1 ? "" : "s");
    return 1;
}

#else
int mn_dnnl_install(network *net, const mn_comm *c, const mn_dnnl_ops *ops)
{
    (void)net, (void)c, (void)ops;
    return 0;
}
void mn_dnnl_free(void *engine) { (void)engine; }
int mn_dnnl_threads(void) { return 0; }
int mn_dnnl_describe(network *net, const mn_dnnl_ops *ops, char *buf, size_t n)
{
    (void)net, (void)ops, (void)buf, (void)n;
    return 0;
}
int mn_dnnl_engine(char *buf, size_t n)
{
    snprintf(buf, n, "Darknet's im2col + gemm (built without oneDNN: DNNL=0, or libdnnl-dev missing)");
    return 0;
}
#endif
