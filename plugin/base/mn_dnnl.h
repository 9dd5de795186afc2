/* Convolutional layers through oneDNN (DNNL=1 builds: MN_DNNL). After the
 * parser, mn_base_dnnl_install swaps a network's convolutional layers'
 * forward and backward for the base adapter's, which run the convolution
 * here, batch norm in training (with leaky or linear) through mn_bn.c, and
 * the rest (bias, other activations, batch norm outside training) through
 * Darknet's own functions or, for leaky, mn_loops.c's loop with the same
 * result; 2x2 stride-2 maxpool layers get mn_loops.c's forward. The state
 * hangs off net->layer_engine (patch 0013, alexeyab 0013). MN_DNNL=0 in the
 * environment keeps Darknet's im2col + gemm path in a DNNL=1 build. */
#ifndef MN_MN_DNNL_H
#define MN_MN_DNNL_H

#include "mn_base.h"

typedef struct mn_dnnl mn_dnnl;

/* A convolution's geometry beyond the fields both bases share. */
typedef struct {
    int stride_h, stride_w;
    int dilation;   /* 1: none */
    int pad;        /* on the top and left; the bottom and right follow from out_h, out_w */
} mn_conv_geom;

/* A base's oneDNN layer functions: refuse says why layer l (convolutional,
 * not binary) stays on Darknet's path (NULL: it can go through oneDNN),
 * with its geometry in g; forward and backward replace its own. pool2 says
 * whether maxpool layer l is a plain 2x2 stride-2 pooling of an even input
 * (mn_maxpool2), pool_forward replaces its forward. */
#ifdef MN_BASE_HANKAI
/* The layer is opaque in C on hank-ai's base (its forward takes C++
 * references); no engine there yet (docs/hankai.md), only the slot's size. */
typedef void (*mn_layer_fn)(void);
#else
typedef __typeof__(((layer *)0)->forward) mn_layer_fn;
#endif
typedef struct {
    const char *(*refuse)(const layer *l, mn_conv_geom *g);
    mn_layer_fn forward, backward;
    int (*pool2)(const layer *l);
    mn_layer_fn pool_forward;
} mn_dnnl_ops;
/* Each adapter's functions (MN_DNNL_OPS defines it); NULL in a DNNL=0 build. */
const mn_dnnl_ops *mn_base_dnnl_ops(void);
#ifdef MN_DNNL
#define MN_DNNL_OPS(r, f, b, p, pf) static const mn_dnnl_ops mn_dnnl_ops_ = {r, f, b, p, pf}; \
    const mn_dnnl_ops *mn_base_dnnl_ops(void) { return &mn_dnnl_ops_; }
#else
#define MN_DNNL_OPS(r, f, b, p, pf) const mn_dnnl_ops *mn_base_dnnl_ops(void) { return NULL; }
#endif
/* Gives the network's convolutional layers that ops->refuse lets through
 * the adapter's oneDNN forward and backward; returns their count (0 in a
 * DNNL=0 build, under MN_DNNL=0, or for none). c names the rank in errors. */
int mn_dnnl_install(network *net, const mn_comm *c, const mn_dnnl_ops *ops);
/* Frees net->layer_engine (mn_base_free calls it). */
void mn_dnnl_free(network *net);
/* oneDNN's threads for this rank: 1, unless OMP_NUM_THREADS is set (it
 * stands); 0 in a DNNL=0 build. */
int mn_dnnl_threads(void);
/* The convolution engine this build and environment give, into buf:
 * "oneDNN 2.6.3", or Darknet's im2col + gemm with why ("built without
 * oneDNN (DNNL=0)", "MN_DNNL=0 set"); 1 where oneDNN is in use. */
int mn_dnnl_engine(char *buf, size_t n);
/* "oneDNN 2.6.3, 1 thread, 3 convolutional layers" into buf; 0 where
 * mn_dnnl_install hooked nothing or was not run. */
int mn_dnnl_describe(const network *net, char *buf, size_t n);

/* For the adapters' hooked functions. out (the layer's output, or its x
 * where mn_bn_forward follows) = layer i's convolution of input (no bias). */
void mn_dnnl_forward(void *engine, int i, const layer *l, const float *input, float *out);
/* l->weight_updates += the weight gradient of l->delta; with delta: the
 * input gradient is added into it, or written over it when overwrite (as
 * the base's own backward does). */
void mn_dnnl_backward(void *engine, int i, const layer *l, const float *input, float *delta, int overwrite);

/* mn_loops.c: Darknet's per-element loops without their per-element
 * dispatch, to the bit on finite values. */
void mn_leaky_double(float *x, size_t n);   /* pjreddie's leaky (the product in double) */
void mn_leaky_gradient(const float *y, float *delta, size_t n);
void mn_maxpool2(const float *in, float *out, int *indexes, int w, int h, int planes);


/* mn_bn.c: a convolutional layer's batch norm in training, with its
 * activation inside where mn_bn_fuses (leaky, linear); for any other the
 * adapter runs its own after the forward and before the backward. Where
 * the bases' formulas differ: */
typedef struct {
    float keep, add;    /* running statistics = keep * old + add * the batch's */
    int fork_eps;       /* 1: forward divides by sqrt(var + 1e-5), normalize_delta by
                           sqrt(var) + 1e-5 (AlexeyAB's); 0: by sqrt(var) + 1e-6 and
                           sqrt(var + 1e-5) (pjreddie's) */
    int leaky_double;   /* leaky's product .1 * x in double (pjreddie's) or .1f * x */
} mn_bn_base;
int mn_bn_fuses(const layer *l);
/* Darknet's forward_batchnorm_layer in training plus the activation: from
 * the convolution in l->x, the batch's statistics (net->bn_sync'ed), the
 * running ones, x_norm and the output. */
void mn_bn_forward(const mn_bn_base *k, const layer *l, network *net);
/* The activation's gradient and backward_batchnorm_layer in training: from
 * l->delta at the output to l->delta at the convolution, with the shift's
 * and the scale's gradients added to bias_updates and scale_updates. */
void mn_bn_backward(const mn_bn_base *k, const layer *l, network *net);

#endif
