/* The CPU engine (plugin/engine, DNNL=1 builds: MN_DNNL): convolutional
 * layers through oneDNN (mn_dnnl.c), batch norm in training with leaky or
 * linear inside (mn_bn.c), and Darknet's per-element loops without their
 * dispatch (mn_loops.c). Below the Darknet adapters, which call it: after
 * the parser, mn_dnnl_install lets the base's hooks (mn_dnnl_ops) put a
 * network's layers on the engine. On every base their forward and backward
 * become the adapter's, which run the convolution here, batch norm in
 * training through mn_bn.c, and the rest (bias, other activations, batch
 * norm outside training) through Darknet's own functions or, for leaky,
 * mn_loops.c's loop with the same result; 2x2 stride-2 maxpool layers get
 * mn_loops.c's forward. The state hangs off the network's layer_engine
 * (patches 0013, alexeyab 0013, hankai 0018). MN_DNNL=0 in the environment
 * keeps Darknet's im2col + gemm path in a DNNL=1 build. Nothing here reads
 * a Darknet struct or calls Darknet: the adapters hand it views (mn_conv,
 * mn_bn_layer) and hooks, and a network is an opaque handle. */
#ifndef MN_ENGINE_H
#define MN_ENGINE_H

#include <stddef.h>
#include "mn_core.h"

typedef struct network network;
typedef struct mn_dnnl mn_dnnl;

/* A convolutional layer as the engine sees it, made by the adapter at each
 * call (batch, size and update arrays change: set_batch, resize, the
 * optimizer's arena). Tensors are Darknet's: NCHW, weights OIHW (GOIHW). */
typedef struct {
    int batch, c, h, w, n, groups, size, out_h, out_w;
    int stride_h, stride_w;
    int dilation;   /* 1: none */
    int pad;        /* on the top and left; the bottom and right follow from out_h, out_w */
    const float *weights;
    float *delta;            /* the gradient at the output */
    float *weight_updates;   /* the weight gradient is added here */
} mn_conv;

/* What a base's hook did with a layer (mn_dnnl_ops). */
enum { MN_DNNL_KEEP, MN_DNNL_CONV, MN_DNNL_POOL };
/* A base's side of the engine. layers: the network's layer count. hook:
 * puts layer i on the engine where it fits and says what it did
 * (MN_DNNL_CONV: a convolutional layer whose convolution mn_dnnl_forward
 * and mn_dnnl_backward now run; MN_DNNL_POOL: a 2x2 stride-2 maxpool of an
 * even input, now mn_maxpool2's; MN_DNNL_KEEP: Darknet's path, e.g. for a
 * feature the engine lacks). state: the network's layer_engine field. */
typedef struct {
    int (*layers)(const network *net);
    int (*hook)(network *net, int i);
    void **(*state)(network *net);
} mn_dnnl_ops;
/* Hooks the network's layers that ops->hook puts on the engine; returns
 * how many convolutional layers (0 in a DNNL=0 build, under MN_DNNL=0,
 * ops NULL, or for none). c names the rank in errors. */
int mn_dnnl_install(network *net, const mn_comm *c, const mn_dnnl_ops *ops);
/* Frees an engine's state (a network's layer_engine; mn_base_free). */
void mn_dnnl_free(void *engine);
/* oneDNN's threads for this rank: 1, unless OMP_NUM_THREADS is set (it
 * stands); 0 in a DNNL=0 build. */
int mn_dnnl_threads(void);
/* The convolution engine this build and environment give, into buf:
 * "oneDNN 2.6.3", or Darknet's im2col + gemm with why ("built without
 * oneDNN (DNNL=0)", "MN_DNNL=0 set"); 1 where oneDNN is in use. */
int mn_dnnl_engine(char *buf, size_t n);
/* "oneDNN 2.6.3, 1 thread, 3 convolutional layers" into buf; 0 where
 * mn_dnnl_install hooked nothing or was not run. */
int mn_dnnl_describe(network *net, const mn_dnnl_ops *ops, char *buf, size_t n);

/* For the adapters. out (the layer's output, or its x where mn_bn_forward
 * follows) = layer i's convolution of input (no bias). Returns 0, leaving
 * out alone, where the engine did not take layer i. */
int mn_dnnl_forward(void *engine, int i, const mn_conv *l, const float *input, float *out);
/* l->weight_updates += the weight gradient of l->delta; with delta: the
 * input gradient is added into it, or written over it when overwrite (as
 * the base's own backward does). Returns 0 as mn_dnnl_forward does. */
int mn_dnnl_backward(void *engine, int i, const mn_conv *l, const float *input, float *delta, int overwrite);

/* mn_loops.c: Darknet's per-element loops without their per-element
 * dispatch, to the bit on finite values. */
void mn_leaky_double(float *x, size_t n);   /* pjreddie's leaky (the product in double) */
void mn_leaky_gradient(const float *y, float *delta, size_t n);
void mn_maxpool2(const float *in, float *out, int *indexes, int w, int h, int planes);


/* mn_bn.c: a convolutional layer's batch norm in training, with leaky
 * inside, or linear (for any other activation the adapter runs its own
 * after the forward and before the backward). Where the bases' formulas
 * differ: */
typedef struct {
    float keep, add;    /* running statistics = keep * old + add * the batch's */
    int fork_eps;       /* 1: forward divides by sqrt(var + 1e-5), normalize_delta by
                           sqrt(var) + 1e-5 (AlexeyAB's); 0: by sqrt(var) + 1e-6 and
                           sqrt(var + 1e-5) (pjreddie's) */
    int leaky_double;   /* leaky's product .1 * x in double (pjreddie's) or .1f * x */
} mn_bn_base;
/* The network's batch-norm hook (sync_bn=1), as the base installs it
 * (mn_net_bn_sync): a and b, n floats each, averaged over the ranks. */
typedef void (*mn_bn_sync)(network *net, float *a, float *b, int n, int gpu);
/* The layer as mn_bn.c sees it, made by the adapter at each call from
 * Darknet's arrays (no Darknet struct is read here): C planes of size
 * values per image, batch images. */
typedef struct {
    int batch, c, size;
    int leaky;             /* 1: leaky inside; 0: linear */
    float *x, *x_norm, *output, *delta;
    float *mean, *variance, *rolling_mean, *rolling_variance, *scales, *biases;
    float *bias_updates, *scale_updates, *mean_delta, *variance_delta;
    mn_bn_sync sync;       /* the network's bn_sync hook (sync_bn=1), or NULL */
    network *net;          /* what the hook is called with */
    int ranks;             /* the processes sync averages over */
} mn_bn_layer;
/* Darknet's forward_batchnorm_layer in training plus the activation: from
 * the convolution in x, the batch's statistics (sync'ed), the running
 * ones, x_norm and the output. */
void mn_bn_forward(const mn_bn_base *k, const mn_bn_layer *l);
/* The activation's gradient and backward_batchnorm_layer in training: from
 * delta at the output to delta at the convolution, with the shift's and
 * the scale's gradients added to bias_updates and scale_updates. */
void mn_bn_backward(const mn_bn_base *k, const mn_bn_layer *l);

#endif
