/* The CPU engine: convolution through oneDNN, batch norm in training and
 * some of Darknet's loops. The base adapters hook layers onto it and hand
 * it views (mn_conv, mn_bn_layer); it reads no Darknet struct. */
#ifndef MN_ENGINE_H
#define MN_ENGINE_H

#include <stddef.h>
#include "core/mn_core.h"

typedef struct network network;
typedef struct mn_dnnl mn_dnnl;

/* A convolutional layer, made at each call since batch and arrays change.
 * Tensors are Darknet's: NCHW, weights OIHW (GOIHW). */
typedef struct {
    int batch, c, h, w, n, groups, size, out_h, out_w;
    int stride_h, stride_w;
    int dilation;   /* 1: none */
    int pad;        /* top and left; the rest follows from out_h, out_w */
    const float *weights;
    float *delta;
    float *weight_updates;
} mn_conv;

/* What a base's hook did with a layer. */
enum { MN_DNNL_KEEP, MN_DNNL_CONV, MN_DNNL_POOL };
/* A base's side of the engine; state is the network's layer_engine field. */
typedef struct {
    int (*layers)(const network *net);
    int (*hook)(network *net, int i);
    void **(*state)(network *net);
} mn_dnnl_ops;
/* Hooks the layers ops->hook accepts; returns the convolutional ones. */
int mn_dnnl_install(network *net, const mn_comm *c, const mn_dnnl_ops *ops);
/* Frees a network's layer_engine. */
void mn_dnnl_free(void *engine);
/* oneDNN's threads for this rank: 1 unless OMP_NUM_THREADS is set. */
int mn_dnnl_threads(void);
/* Names the convolution engine in use into buf; 1 where it is oneDNN. */
int mn_dnnl_engine(char *buf, size_t n);
/* Describes the network's hooked layers into buf; 0 where none. */
int mn_dnnl_describe(network *net, const mn_dnnl_ops *ops, char *buf, size_t n);

/* out = layer i's convolution of input, no bias; 0 where i is not hooked. */
int mn_dnnl_forward(void *engine, int i, const mn_conv *l, const float *input, float *out);
/* Adds the weight gradient and, where delta is set, the input gradient
 * (over delta when overwrite, as the base does). */
int mn_dnnl_backward(void *engine, int i, const mn_conv *l, const float *input, float *delta, int overwrite);

/* mn_loops.c: Darknet's loops without per-element dispatch. */
void mn_leaky_double(float *x, size_t n);
void mn_leaky_gradient(const float *y, float *delta, size_t n);
void mn_maxpool2(const float *in, float *out, int *indexes, int w, int h, int planes);


/* mn_bn.c: batch norm in training with leaky or linear inside. */
typedef struct {
    float keep, add;    /* running statistics = keep * old + add * the batch's */
    int fork_eps;       /* AlexeyAB's epsilons (1) or pjreddie's (0) */
    int leaky_double;   /* leaky's product in double (pjreddie's) */
} mn_bn_base;
/* The sync_bn=1 hook: averages a and b over the ranks. */
typedef void (*mn_bn_sync)(network *net, float *a, float *b, int n, int gpu);
/* The layer: c planes of size values per image, batch images. */
typedef struct {
    int batch, c, size;
    int leaky;
    float *x, *x_norm, *output, *delta;
    float *mean, *variance, *rolling_mean, *rolling_variance, *scales, *biases;
    float *bias_updates, *scale_updates, *mean_delta, *variance_delta;
    mn_bn_sync sync;       /* NULL without sync_bn */
    network *net;
    int ranks;
} mn_bn_layer;
/* forward_batchnorm_layer in training plus the activation. */
void mn_bn_forward(const mn_bn_base *k, const mn_bn_layer *l);
/* The activation's gradient and backward_batchnorm_layer in training. */
void mn_bn_backward(const mn_bn_base *k, const mn_bn_layer *l);

#endif
