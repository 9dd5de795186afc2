/* What the C adapters share inside base/ and nothing above it includes:
 * the functions that take Darknet's load_args, whose fields differ between
 * the bases (the loader in mn_base_net.c calls them; mn_base.h's
 * mn_base_loader is what the rest of the plugin sees), and the engine's
 * hooks and views over their struct layer (MN_DNNL_OPS, mn_bn_view). */
#ifndef MN_BASE_C_IMPL_H
#define MN_BASE_C_IMPL_H

#include "mn_base_impl.h"
#ifdef MN_BASE_ALEXEYAB
/* The fork keeps these out of darknet.h (its network.h would bring utils.h,
 * whose names collide with the plugin's). */
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
/* The C bases' ops, whose struct layer and network agree: refuse(l) says
 * why convolutional layer l stays on Darknet's path (NULL: it goes),
 * conv_fwd and conv_bwd replace its forward and backward; pool2(l) whether
 * maxpool layer l is a plain 2x2 stride-2 pooling of an even input,
 * pool_fwd replaces its forward. */
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
/* mn_bn.c's view of convolutional layer l in a pass of net (the pass's own
 * network, whose bn_sync hook sync_bn installed). */
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

/* The base's own detector loader arguments (augmentation keys of [net] and
 * the last layer) on top of get_base_args and the last layer's coords,
 * classes, jitter and max_boxes. */
void mn_base_detector_args(network *net, load_args *a);
/* The base's classifier loader arguments (crop range, flip, size) on top of
 * get_base_args: pjreddie scales min_ratio/max_ratio by the width, the fork
 * reads min_crop/max_crop (its get_base_args already did) and has no ratios. */
void mn_base_classifier_args(network *net, load_args *a);

#endif
