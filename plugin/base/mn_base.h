/* The Darknet underneath: pjreddie's, AlexeyAB's fork and hank-ai's C++
 * Darknet V5 behind one interface, one adapter per base (the Makefile's
 * DARKNET= picks its files). The rest of the plugin holds a network * and
 * calls only these, never Darknet (tests/static/boundary.py --link checks), so a
 * C++ base can define them all with extern "C". docs/forks.md compares
 * the bases. */
#ifndef MN_MN_BASE_H
#define MN_MN_BASE_H

#include <stddef.h>
#include <stdint.h>
#ifdef MN_BASE_HANKAI
#include "base/mn_base_hankai.h"
#else
#include "darknet.h"
#endif
#include "core/mn_core.h"
#include "engine/mn_engine.h"
#ifdef MN_BASE_ALEXEYAB
/* The fork keeps these types out of darknet.h. */
#include "list.h"
#include "data.h"
#include "box.h"
#endif

/* An image: c planes of h rows of w floats in [0, 1]; the adapters convert
 * to and from the base's own. Freed by mn_base_free_image. */
typedef struct {
    int w, h, c;
    float *data;
} mn_image;

/* A batch of rows in the base's own struct (own, read only in base/): row
 * i's inputs at x[i], its truths at y[i]. */
typedef struct {
    int rows, x_cols, y_cols;
    float **x, **y;
    void *own;
} mn_batch;

/* ---------------------------------------- the network and its layers */
/* A copy of the network's fields, read in one call instead of a getter
 * each; read it again after a resize or set_batch. */
typedef struct {
    int batch;                   /* images per pass on this rank */
    int subdivisions;            /* passes per update */
    int max_batches, burn_in;    /* the schedule, in global iterations */
    float learning_rate, momentum, decay;
    int adam;
    int w, h, c;
    int inputs, outputs;         /* floats per image */
    int gpu;                     /* gpu_index: < 0 on the CPU */
    tree *hierarchy;
} mn_net_info;
mn_net_info mn_net_get(const network *net);
/* The layers; the last is the network's output. */
int mn_net_layers(const network *net);
layer *mn_net_layer(const network *net, int i);
layer *mn_net_last(const network *net);
/* The layer kinds the plugin tells apart, numbered its own way since the
 * bases number LAYER_TYPE differently. */
typedef enum {
    MN_LAYER_OTHER,
    MN_LAYER_CONVOLUTIONAL,
    MN_LAYER_DECONVOLUTIONAL,
    MN_LAYER_CONNECTED,
    MN_LAYER_BATCHNORM,
    MN_LAYER_YOLO,
    MN_LAYER_REGION,
    MN_LAYER_DETECTION,
} mn_layer_kind;
/* Indexes of mn_layer_info's updates and params. */
enum { MN_UPDATE_WEIGHTS, MN_UPDATE_BIASES, MN_UPDATE_SCALES, MN_UPDATES };
/* A copy of a layer's fields, like mn_net_info; the arrays are Darknet's. */
typedef struct {
    mn_layer_kind kind;
    const char *name;                 /* for messages */
    int batch, inputs, outputs;
    int out_w, out_h, n;
    double flops;                     /* an image's forward, convolutional or connected */
    int batch_normalize, dontsave, dontload, dontloadscales;
    int classes, coords, max_boxes;   /* an output layer's */
    float jitter, random;
    float *rolling_mean, *rolling_variance;
    float *rolling_mean_gpu, *rolling_variance_gpu;
    float *updates[MN_UPDATES], *updates_gpu[MN_UPDATES];
    float *params[MN_UPDATES], *params_gpu[MN_UPDATES];
} mn_layer_info;
mn_layer_info mn_layer_get(const network *net, int i);
mn_layer_info mn_layer_last(const network *net);
/* Points layer i's update array `which` at p (the optimizer's arena). */
void mn_layer_set_update(network *net, int i, int which, float *p);
/* GPU runs: pushes the layer's parameters and statistics to the device or
 * pulls them back. */
void mn_layer_move(const layer *l, int to_device);
/* Images trained on so far over all ranks (patch 0001). */
uint64_t mn_net_seen(const network *net);
void mn_net_set_seen(network *net, uint64_t seen);
/* A resume on fewer ranks raises it to keep the global batch. */
void mn_net_set_subdivisions(network *net, int subdivisions);
/* For bench step, which runs the passes itself. */
void mn_net_set_train(network *net, int train);

/* ---------------------------------- its parameters, handed over once */
/* One parameter array and its update array (NULL where not trained). */
typedef struct {
    float *data;
    float *grad;
    size_t n;
} mn_param;
#define MN_MAX_LAYER_PARAMS 48
/* A walk over every layer's parameter arrays in weights-file order, each
 * with what it is for, so no caller matches pointers against a layer's:
 *     for (mn_view v; mn_views_next(&it, &v);) ...
 * Layers darknet-mn cannot train have none. */
typedef struct {
    float *data;
    float *grad;        /* NULL where not trained */
    float *data_gpu;    /* device copies, or NULL */
    float *grad_gpu;
    size_t n;
    int layer;
    int index;          /* 0 starts a layer */
    int stat;           /* a running statistic: averaged, never trained */
    int update;         /* MN_UPDATE_*, or -1 */
} mn_view;
typedef struct {
    const network *net;
    int layer, k, j;
    int cap;            /* MN_MAX_LAYER_PARAMS; a test lowers it */
    mn_layer_info info;
    mn_param p[MN_MAX_LAYER_PARAMS];
} mn_views;
mn_views mn_net_views(const network *net);
/* 0 after the last. */
int mn_views_next(mn_views *it, mn_view *v);
/* Over that walk: the floats in all, and copies to and from one buffer. */
size_t mn_params_count(const network *net);
void mn_params_pack(network *net, float *buf);
void mn_params_unpack(network *net, const float *buf);
/* The arrays of such a buffer that training updates (all but the running
 * statistics), where arrays is set; returns their count. */
int mn_params_trained(network *net, float *buf, float **arrays, size_t *lens);
/* Each array to fn, the running statistics taken from stats if set. */
void mn_params_each(network *net, const float *stats, void (*fn)(const float *p, size_t n, void *arg), void *arg);
/* NULL where darknet-mn can train layer i, else what the layer is for the
 * message; *averaged: 1 where its arrays are known all the same. */
const char *mn_net_layer_refused(const network *net, int i, int *averaged);

/* ------------------------------------------------------------- hooks */
/* The update hooks of patches 0001, 0008 and 0015, set together since they
 * share arg; NULL removes them. */
typedef struct {
    int ranks;                              /* seen counts all their images */
    int (*sync)(network *net);              /* before the update; nonzero skips it */
    void (*backward)(network *net, int i);  /* after layer i's backward, and i = layers before the first */
    void (*forward)(network *net, int i);   /* after layer i's forward on the CPU */
    void *arg;
} mn_net_hooks;
void mn_net_set_hooks(network *net, const mn_net_hooks *h);
void *mn_net_hook_arg(const network *net);
/* Batch norm's statistics hook (patch 0005, sync_bn=1). */
typedef mn_bn_sync mn_net_bn_sync;
void mn_net_set_bn_sync(network *net, mn_net_bn_sync f, void *arg);
void *mn_net_bn_sync_arg(const network *net);
/* The loader's hooks (patches 0010, 0011, 0014): an image file's decoding
 * (1 where it filled *out), the labels' path where the base's rule finds
 * none, and which label lines are read (0 drops one). NULL removes each. */
typedef int (*mn_base_image_hook)(void *ctx, char *path, int channels, mn_image *out);
void mn_base_set_image_hook(mn_base_image_hook f, void *ctx);
void mn_base_set_label_path_hook(void (*f)(void *ctx, const char *image, char *labelpath), void *ctx);
void mn_base_set_box_line_hook(int (*f)(void *ctx, const char *line), void *ctx);

/* -------------------------------------------------- a network's life */
/* Once a process, before any network. */
void mn_base_init(void);
/* Seeds every random source of the base, so a seed gives the same weights
 * and batches. */
void mn_base_seed(unsigned seed);
const char *mn_base_name(void);
network *mn_base_parse(const char *cfgfile);
void mn_base_free(network *net);
/* The network evaluation during training runs on, parsed at batch 1 so its
 * cuDNN descriptors and workspace fit one image; set_batch_network would
 * leave some at the old batch. */
network *mn_base_parse_batch1(const char *cfgfile);
void mn_base_load_weights(network *net, const char *path);
void mn_base_resize(network *net, int w, int h);
void mn_base_set_batch(network *net, int batch);
/* Saves the first cutoff layers. */
void mn_base_save_weights(network *net, const char *path, int cutoff);
float *mn_base_predict(network *net, float *input);
/* The global iteration and its learning rate. */
size_t mn_base_iteration(const network *net);
float mn_base_rate(const network *net);
/* The base's own counters of a resumed iteration, beside seen. */
void mn_base_set_iteration(network *net, size_t it);
/* One update over b's rows; returns the loss. */
float mn_base_train(network *net, const mn_batch *b);
/* This rank's loss on its last subdivision. */
float mn_base_cost(const network *net);
/* One pass alone, for bench step; nonzero where the base cannot run it
 * alone (the forks on a GPU). */
int mn_base_forward(network *net, const float *input);
int mn_base_backward(network *net, const float *input);
int mn_base_update(network *net);
/* Readies a network for inference as the base's commands do. */
void mn_base_inference(network *net);

/* --------------------------------------------------------- detection */
/* The detector's input for im as the base's validation makes it. */
mn_image mn_base_detector_input(const network *net, mn_image im, int *letter);
/* Boxes of a w x h image; in pixels only after mn_base_nms. */
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num);
/* The base detector's own non-maximum suppression. */
void mn_base_nms(const network *net, detection *dets, int n, int classes, float thresh, int w, int h, int relative);
void mn_base_hierarchy(float *pred, int n, tree *hier);
/* The base's path of an image's labels; 0 for pjreddie's rule. */
int mn_base_label_path(const char *path, char *out, size_t cap);
/* Floats per truth box, and an image's boxes as the loader writes them. */
int mn_base_truth_size(const network *net);
void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes);

/* ----------------------------------------------- the training loader */
/* The base's own loader threads and augmentation, one update's rows at a
 * time: a classifier's one-hot classes or a detector's truth boxes. */
typedef struct mn_base_loader mn_base_loader;
typedef struct {
    char **paths;         /* this rank's images */
    int n;
    int threads;
    int detector;
    int classes;
    char **labels;
} mn_base_loader_cfg;
/* NULL when out of memory. */
mn_base_loader *mn_base_loader_create(network *net, const mn_base_loader_cfg *cfg);
/* Starts loading the next rows, at w x h when w > 0. One at a time. */
void mn_base_loader_start(mn_base_loader *ld, int w, int h);
/* The rows started last; empty when none was started. */
mn_batch mn_base_loader_wait(mn_base_loader *ld);
/* Waits for rows still loading and frees them and the loader. */
void mn_base_loader_free(mn_base_loader *ld);
/* Zeroed rows, for deterministic batches. */
mn_batch mn_base_make_batch(int rows, int x_cols, int y_cols);
/* Frees and empties b. */
void mn_base_free_batch(mn_batch *b);

/* --------------------------------------------- what the base accepts */
/* The names the base's parser takes, NULL-terminated, for the cfg check. */
extern const char *const mn_base_sections[];
extern const char *const mn_base_activations[];
extern const char *const mn_base_policies[];
/* 1 where a shortcut's inputs must be of one size. */
int mn_base_shortcut_same_size(void);
/* Why this base cannot run the features asked in this build, or NULL. net
 * is NULL on a first call before the parse, since a fork's parser may stop
 * on a cfg it cannot train before a refusal gives the reason. */
const char *mn_base_refuse(const network *net, int sync_bn, int detector);

/* -------------------------------------------------------- the device */
/* The cudaStream_t Darknet computes on (NULL: the legacy stream). The
 * fork's does not synchronise with the legacy stream, so every device call
 * of the plugin goes on it or on a stream ordered after it by an event. */
void *mn_base_stream(void);
/* gpu_index for networks parsed from now on; -1: the CPU. */
int mn_base_gpu(void);
void mn_base_set_gpu(int device);
#ifdef GPU
/* The base's copies and blas kernels, on its stream. */
void mn_base_push(float *dev, float *host, size_t n);
void mn_base_pull(float *dev, float *host, size_t n);
void mn_base_fill_gpu(int n, float value, float *x);
void mn_base_copy_gpu(int n, const float *x, float *y);
#endif

/* -------------------------------------------------------- the engine */
/* The engine's hooks into this base; NULL in a DNNL=0 build. */
const mn_dnnl_ops *mn_base_dnnl_ops(void);

#endif
