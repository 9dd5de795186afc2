/* What the C adapters share, private to base/: the load_args functions,
 * whose fields differ by base, and the engine's hooks and views. */
#ifndef MN_BASE_C_IMPL_H
#define MN_BASE_C_IMPL_H

#include "base/mn_base_impl.h"
#ifdef MN_BASE_ALEXEYAB
/* Out of the fork's darknet.h; its network.h would bring colliding names. */
int resize_network(network *net, int w, int h);
#ifdef GPU
/* pjreddie's names of the fork's blas kernels and device arrays. */
#include "dark_cuda.h"
void fill_ongpu(int N, float ALPHA, float *X, int INCX);
void copy_ongpu(int N, float *X, int INCX, float *Y, int INCY);
static inline void fill_gpu(int n, float a, float *x, int incx) { fill_ongpu(n, a, x, incx); }
static inline void copy_gpu(int n, float *x, int incx, float *y, int incy) { copy_ongpu(n, x, incx, y, incy); }
#endif
char *get_layer_string(LAYER_TYPE a);
void load_weights(network *net, char *filename);
#endif

#if defined MN_DNNL && !defined MN_BASE_HANKAI
/* The C bases' engine ops: refuse(l) keeps a convolutional layer on
 * Darknet's path, pool2(l) accepts a maxpool; the others replace passes. */
#define MN_DNNL_OPS(refuse, conv_fwd, conv_bwd, pool2, pool_fwd) \
    static int mn_dnnl_layers_(const network *net) { return net->n; } \
    static void **mn_dnnl_state_(network *net) { return &net->layer_engine; } \
    static int mn_dnnl_hook_(network *net, int i) \
    { \
        layer *l = &net->layers[i]; \
        if (l->type == MAXPOOL && pool2(l)) { \
            l->forward = pool_fwd; \
            return MN_DNNL_POOL; \
        } \
        if (l->type != CONVOLUTIONAL || l->xnor || l->binary || refuse(l)) return MN_DNNL_KEEP; \
        l->forward = conv_fwd; \
        l->backward = conv_bwd; \
        return MN_DNNL_CONV; \
    } \
    static const mn_dnnl_ops mn_dnnl_ops_ = {mn_dnnl_layers_, mn_dnnl_hook_, mn_dnnl_state_}; \
    const mn_dnnl_ops *mn_base_dnnl_ops(void) { return &mn_dnnl_ops_; }
#elif !defined MN_DNNL
#define MN_DNNL_OPS(refuse, conv_fwd, conv_bwd, pool2, pool_fwd) \
    const mn_dnnl_ops *mn_base_dnnl_ops(void) { return NULL; }
#endif

#ifdef MN_DNNL
/* Whether mn_bn.c runs l's activation inside its batch norm. */
static inline int mn_bn_fuses(const layer *l) { return l->activation == LEAKY || l->activation == LINEAR; }
/* mn_bn.c's view of l in a pass of net, whose bn_sync hook it calls. */
static inline mn_bn_layer mn_bn_view(const layer *l, network *net)
{
    mn_bn_layer v = {
        .batch = l->batch, .c = l->out_c, .size = l->out_h * l->out_w, .leaky = l->activation == LEAKY,
        .x = l->x, .x_norm = l->x_norm, .output = l->output, .delta = l->delta,
        .mean = l->mean, .variance = l->variance, .rolling_mean = l->rolling_mean,
        .rolling_variance = l->rolling_variance, .scales = l->scales, .biases = l->biases,
        .bias_updates = l->bias_updates, .scale_updates = l->scale_updates,
        .mean_delta = l->mean_delta, .variance_delta = l->variance_delta,
        .sync = net->bn_sync, .net = net, .ranks = net->ranks,
    };
    return v;
}
#endif

/* The base's own loader arguments on top of get_base_args. */
void mn_base_detector_args(network *net, load_args *a);
void mn_base_classifier_args(network *net, load_args *a);

#endif
