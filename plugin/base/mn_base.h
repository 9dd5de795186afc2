/* The Darknet underneath: what differs between pjreddie's Darknet (Debian's
 * package), AlexeyAB's fork and hank-ai's C++ Darknet V5, behind one
 * interface, in nine parts: the network and its layers (read in one call
 * each), its parameters (handed over once), the hooks the patches add, a
 * network's life (parse, weights, passes, inference), detection, the
 * training loader, what the base accepts, the device, the engine's hooks.
 * One adapter per base implements it (mn_base_pjreddie.c and
 * mn_base_alexeyab.c over the C bases' shared mn_base_net.c and
 * mn_base_params.c; mn_base_hankai.cpp); the Makefile's DARKNET= picks the
 * adapter's files, the one place a base is chosen (MN_BASE_ALEXEYAB and
 * MN_BASE_HANKAI only tell the headers apart). Darknet's utilities the
 * plugin borrows are in mn_base_util.h, what only the adapters share in
 * mn_base_impl.h. The rest of the plugin holds a network * and calls these,
 * never a Darknet function (tests/boundary.py --link checks the objects),
 * so that a C++ base's adapter can define them all with extern "C". */
#ifndef MN_MN_BASE_H
#define MN_MN_BASE_H

#include <stddef.h>
#include <stdint.h>
#ifdef MN_BASE_HANKAI
#include "mn_base_hankai.h"   /* C++ headers: the types alone, network and layer opaque */
#else
#include "darknet.h"
#endif
#include "mn_core.h"
#include "mn_engine.h"   /* the CPU engine, below the adapters */
#ifdef MN_BASE_ALEXEYAB
/* The fork keeps these types out of darknet.h: list (mn_base_util.h's options), data and box_label (the adapters'). */
#include "list.h"
#include "data.h"
#include "box.h"
#endif

/* An image as the plugin holds it: c planes of h rows of w floats in
 * [0, 1], data to be freed by mn_base_free_image. Every base's image has
 * these four fields; the adapters convert, so no base's layout is read. */
typedef struct {
    int w, h, c;
    float *data;
} mn_image;

/* A batch of rows, the base's own (made by its loader or mn_base_make_batch,
 * freed by mn_base_free_batch): the plugin fills and reads row i's x_cols
 * inputs at x[i] and its y_cols truths at y[i], and hands it back whole to
 * mn_base_train; own is the base's struct, which nothing above base/ reads,
 * so that no base's layout is copied. */
typedef struct {
    int rows, x_cols, y_cols;
    float **x, **y;
    void *own;
} mn_batch;

/* What the plugin reads and writes of a network and its layers, so that
 * nothing above base/ touches Darknet's struct network or struct layer
 * (mn_base_net.c for both C bases, whose fields agree; a C++ base's adapter
 * defines the same functions over its own network and layer classes). A
 * layer * is still handed through (to mn_layer_move), never read above
 * base/. */

/* ---------------------------------------- the network and its layers */
/* The network as its cfg and the last resize made it, read at once: one
 * call fills what a caller reads, so callers keep one local (`mn_net_info
 * in = mn_net_get(net);`) instead of a getter per field. A copy: read it
 * again after set_batch_network or resize_network. */
typedef struct {
    int batch;                   /* images per forward pass on this rank (the cfg's batch / subdivisions) */
    int subdivisions;            /* passes per update */
    int max_batches, burn_in;    /* the schedule, in global iterations */
    float learning_rate, momentum, decay;
    int adam;
    int w, h, c;                 /* input image size; random=1 changes w and h */
    int inputs, outputs;         /* floats per image into the first layer, out of the last */
    int gpu;                     /* Darknet's gpu_index: < 0 on the CPU (meaningless in CPU builds) */
    tree *hierarchy;             /* a classifier's label tree, or NULL */
} mn_net_info;
mn_net_info mn_net_get(const network *net);
/* The layers, 0 .. mn_net_layers(net) - 1; the last one is the detector's
 * or classifier's output, read for classes, boxes and its type. */
int mn_net_layers(const network *net);
layer *mn_net_layer(const network *net, int i);
layer *mn_net_last(const network *net);
/* The layer kinds the plugin tells apart, its own numbering: the bases
 * number Darknet's LAYER_TYPE differently (and hank-ai's is an enum
 * class), so nothing above base/ names theirs. */
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
/* The update arrays of a layer, the index into mn_layer_info's updates. */
enum { MN_UPDATE_WEIGHTS, MN_UPDATE_BIASES, MN_UPDATE_SCALES, MN_UPDATES };
/* A layer as the plugin reads it, filled at once like mn_net_info: callers
 * read kind, sizes and arrays together. A copy of the fields; the arrays
 * are Darknet's own (the optimizer moves the update arrays with
 * mn_layer_set_update). */
typedef struct {
    mn_layer_kind kind;
    const char *name;                 /* the base's name of its type, for messages ("convolutional") */
    int batch, inputs, outputs;       /* images per pass; floats per image in and out */
    int out_w, out_h, n;              /* output size; filters of a convolutional layer */
    double flops;                     /* an image's forward multiply-adds x 2 (convolutional, connected; else 0) */
    int batch_normalize, dontsave, dontload, dontloadscales;
    /* An output layer's: what the detector's loader and evaluation read. */
    int classes, coords, max_boxes;
    float jitter, random;             /* random: an int on pjreddie's, a float on the fork; nonzero resizes */
    float *rolling_mean, *rolling_variance;            /* batch norm's statistics, or NULL */
    float *rolling_mean_gpu, *rolling_variance_gpu;    /* their device copies (NULL in CPU builds) */
    float *updates[MN_UPDATES], *updates_gpu[MN_UPDATES];  /* weight, bias, scale updates, or NULL */
    float *params[MN_UPDATES], *params_gpu[MN_UPDATES];    /* the weights, biases and scales they update, or NULL */
} mn_layer_info;
mn_layer_info mn_layer_get(const network *net, int i);
mn_layer_info mn_layer_last(const network *net);
/* Layer i's update array `which` (MN_UPDATE_*) becomes p (host memory). */
void mn_layer_set_update(network *net, int i, int which, float *p);
/* GPU runs (gpu_index >= 0): the layer's parameters and statistics to the
 * device (to_device) or from it, with the base's push and pull functions;
 * nothing in CPU builds or runs. */
void mn_layer_move(const layer *l, int to_device);
/* Images trained on so far, over all ranks (patch 0001): the iteration,
 * checkpoints and resume read and set it. size_t on pjreddie's, uint64_t
 * on the fork. */
uint64_t mn_net_seen(const network *net);
void mn_net_set_seen(network *net, uint64_t seen);
/* Passes per update (the cfg's subdivisions): a resume on fewer ranks
 * raises it to keep the global batch, before the loader is made. */
void mn_net_set_subdivisions(network *net, int subdivisions);
/* The train flag: bench step runs the passes itself. */
void mn_net_set_train(network *net, int train);

/* ---------------------------------- its parameters, handed over once */
/* An adapter's view of one parameter array (mn_base_impl.h's mn_layer_params
 * fills a layer's, in weights-file order): grad is the matching update array
 * when the layer is trained, else NULL. */
typedef struct {
    float *data;
    float *grad;
    size_t n;
} mn_param;
#define MN_MAX_LAYER_PARAMS 48
/* The network's parameters handed over once: every layer's arrays in
 * weights-file order (the adapter's mn_layer_params), each with what it is
 * for, so that no caller asks the adapter layer by layer or matches
 * pointers against a layer's own (mn_net_params.c). A walk:
 *     mn_views it = mn_net_views(net);
 *     for (mn_view v; mn_views_next(&it, &v);) ...
 * Layers darknet-mn cannot train (mn_layer_params -1) have no arrays. */
typedef struct {
    float *data;        /* the array (host memory) */
    float *grad;        /* its update array when the layer is trained, else NULL */
    float *data_gpu;    /* its device copy (GPU builds; a statistic's or one of params_gpu), else NULL */
    float *grad_gpu;    /* the update array's device copy (GPU builds), else NULL */
    size_t n;
    int layer;
    int index;          /* its place among its layer's arrays: 0 starts the layer */
    int stat;           /* a batch-norm running mean or variance: averaged or broadcast, never trained */
    int update;         /* grad's MN_UPDATE_* in its layer, or -1 */
} mn_view;
typedef struct {
    const network *net;
    int layer, k, j;
    int cap;            /* arrays a layer may list: MN_MAX_LAYER_PARAMS (a test lowers it to reach the limit) */
    mn_layer_info info;
    mn_param p[MN_MAX_LAYER_PARAMS];
} mn_views;
mn_views mn_net_views(const network *net);
/* The next array into *v: 0 after the last. */
int mn_views_next(mn_views *it, mn_view *v);
/* Over that walk: the floats of every array, and copies of them all to and
 * from one flat buffer (pulled from or pushed to the GPU in a GPU run). */
size_t mn_params_count(const network *net);
void mn_params_pack(network *net, float *buf);
void mn_params_unpack(network *net, const float *buf);
/* Each array to fn (pulled from the GPU first in a GPU run), the running
 * statistics taken from stats (their values in that order) where stats is
 * not NULL. */
void mn_params_each(network *net, const float *stats, void (*fn)(const float *p, size_t n, void *arg), void *arg);
/* Whether darknet-mn can train layer i on this base: NULL, or what the layer
 * is, for the message ("an lstm layer", "a shortcut layer with weights");
 * *averaged is 0 where its arrays are unknown (none can be averaged), 1
 * where they are but the base cannot train it in this build. */
const char *mn_net_layer_refused(const network *net, int i, int *averaged);

/* ------------------------------------------------------------- hooks */
/* The update hooks the patches add (0001, 0008), installed together
 * because they share one argument; the hooks find it with mn_net_hook_arg.
 * mn_net_set_hooks(net, NULL) removes them (ranks 1). */
typedef struct {
    int ranks;                              /* processes sharing every update: seen counts all their images */
    int (*sync)(network *net);              /* before any layer updates; nonzero skips this update */
    void (*backward)(network *net, int i);  /* after layer i's backward, and with i = layers before the first; or NULL */
    void (*forward)(network *net, int i);   /* after layer i's forward on the CPU (patch 0015); or NULL */
    void *arg;
} mn_net_hooks;
void mn_net_set_hooks(network *net, const mn_net_hooks *h);
void *mn_net_hook_arg(const network *net);
/* Batch norm's statistics hook (patch 0005), installed apart from the
 * update hooks (by mn_bn_sync.c, with sync_bn=1): f replaces a (and b
 * unless NULL), n floats each, device memory when gpu, by their means over
 * the ranks; NULL removes it. */
typedef mn_bn_sync mn_net_bn_sync;   /* the engine's batch norm calls it too */
void mn_net_set_bn_sync(network *net, mn_net_bn_sync f, void *arg);
void *mn_net_bn_sync_arg(const network *net);
/* The base's loader hooks (patches 0010, 0011, 0014 and the fork's own),
 * installed for a training or evaluation run and removed with NULL: how an
 * image file becomes an image (the decoded-image cache; returns 1 when it
 * filled *out), where an image's labels are when the base's rule finds none
 * (4096 bytes at labelpath), and which lines of a label file are read
 * (bad_labels=skip; 0 drops the line). */
typedef int (*mn_base_image_hook)(void *ctx, char *path, int channels, mn_image *out);
void mn_base_set_image_hook(mn_base_image_hook f, void *ctx);
void mn_base_set_label_path_hook(void (*f)(void *ctx, const char *image, char *labelpath), void *ctx);
void mn_base_set_box_line_hook(int (*f)(void *ctx, const char *line), void *ctx);

/* -------------------------------------------------- a network's life */
/* Once a process, before any network: the base's own settings (hank-ai's:
 * its fatal errors through mn_fatal, no CPU training prompt). */
void mn_base_init(void);
/* Seeds the base's random numbers (rand() on the C bases; the fork's
 * per-thread engines too on hank-ai's, its loader threads on streams of
 * their own), so that a seed gives the same weights and batches. */
void mn_base_seed(unsigned seed);
/* "pjreddie", "AlexeyAB's" or "hank-ai's". */
const char *mn_base_name(void);
/* parse_network_cfg on the heap (the fork returns the network by value). */
network *mn_base_parse(const char *cfgfile);
void mn_base_free(network *net);
/* The network evaluation during training runs on: parsed from cfgfile at
 * batch 1, so that its cuDNN descriptors and workspace are made for one
 * image by Darknet's own parser, and the training network's are never
 * touched (pjreddie's set_batch_network leaves a deconvolutional layer's
 * dstTensorDesc at N=1 and keeps the workspace size of the batch it was
 * parsed at). */
network *mn_base_parse_batch1(const char *cfgfile);
/* The network beyond its parse: weights read into it (load_weights), its
 * input size changed (random=1) or its batch (bench step). */
void mn_base_load_weights(network *net, const char *path);
void mn_base_resize(network *net, int w, int h);
void mn_base_set_batch(network *net, int batch);
/* Darknet's save_weights_upto: the first cutoff layers (net->n: all). */
void mn_base_save_weights(network *net, const char *path, int cutoff);
float *mn_base_predict(network *net, float *input);
/* The global iteration (seen / (batch * subdivisions * ranks)) and its
 * learning rate. */
size_t mn_base_iteration(const network *net);
float mn_base_rate(const network *net);
/* The base's own counters of a resumed iteration (beside seen, set by the caller). */
void mn_base_set_iteration(network *net, size_t it);
/* One update: the rows of d in subdivisions of net->batch; returns the loss. */
float mn_base_train(network *net, const mn_batch *b);
/* This rank's loss on its last subdivision (read in the update hook). */
float mn_base_cost(const network *net);
/* One forward, backward or update pass, timed apart by bench step, on
 * input (batch * inputs floats) and no truth boxes; nonzero where the base
 * runs no pass alone (the forks on a GPU: their device passes take a state
 * their train_network_datum_gpu makes). */
int mn_base_forward(network *net, const float *input);
int mn_base_backward(network *net, const float *input);
int mn_base_update(network *net);
/* A network loaded for evaluation or prediction only, made as the base's
 * own commands make it (the fork folds batch norm into the weights). */
void mn_base_inference(network *net);

/* --------------------------------------------------------- detection */
/* The input a detector sees for im, as the base's own validation makes it
 * (pjreddie letterboxes, the fork resizes); *letter tells mn_base_boxes. */
mn_image mn_base_detector_input(const network *net, mn_image im, int *letter);
/* Boxes of an image of w x h; in pixels (relative = 0) only once they have
 * been through mn_base_nms, which gets the same w, h and relative. */
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num);
/* Non-maximum suppression as the base's detector does it (the fork: the
 * last layer's nms_kind and beta_nms, on relative boxes, DIoU not being
 * scale-free). */
void mn_base_nms(const network *net, detection *dets, int n, int classes, float thresh, int w, int h, int relative);
void mn_base_hierarchy(float *pred, int n, tree *hier);
/* Where the base's training loader reads an image's labels, into out; 0:
 * pjreddie's rule (mn_train_label_path: images -> labels, .jpg -> .txt). */
int mn_base_label_path(const char *path, char *out, size_t cap);
/* Floats per truth box of the last layer, and one image's truth boxes as the
 * training loader writes them (no augmentation). */
int mn_base_truth_size(const network *net);
void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes);

/* ----------------------------------------------- the training loader */
/* The training loader: the base's own loader threads with its augmentation
 * (load_data over a load_args that only base/ fills, with the base's own
 * keys of [net] and of the last layer), as an object, so that a base with
 * another loader fills its own. Rows of one update each time: the
 * classifier's one-hot classes from labels, or the detector's truth boxes. */
typedef struct mn_base_loader mn_base_loader;
typedef struct {
    char **paths;         /* this rank's images */
    int n;
    int threads;          /* loader threads */
    int detector;         /* 1: truth boxes of the last layer; 0: classes from labels */
    int classes;          /* the classifier's */
    char **labels;
} mn_base_loader_cfg;
/* NULL when out of memory. */
mn_base_loader *mn_base_loader_create(network *net, const mn_base_loader_cfg *cfg);
/* Starts loading the next update's rows in the background, at w x h when
 * w > 0 (random=1's resize), else at the size last asked. One at a time. */
void mn_base_loader_start(mn_base_loader *ld, int w, int h);
/* Waits for the rows started last (the caller frees them with
 * mn_base_free_batch); an empty batch (no rows) when none was started. */
mn_batch mn_base_loader_wait(mn_base_loader *ld);
/* Waits for and frees rows still loading, then the loader; NULL is a no-op. */
void mn_base_loader_free(mn_base_loader *ld);
/* Rows of x_cols inputs and y_cols truths, zeroed (deterministic batches). */
mn_batch mn_base_make_batch(int rows, int x_cols, int y_cols);
/* Frees b's rows and the base's struct, and empties b; an empty batch is a no-op. */
void mn_base_free_batch(mn_batch *b);

/* --------------------------------------------- what the base accepts */
/* The names the base's parser takes (NULL-terminated), for the cfg check:
 * sections ([distributed] included), activations, [net] policies. */
extern const char *const mn_base_sections[];
extern const char *const mn_base_activations[];
extern const char *const mn_base_policies[];
/* 1 where a shortcut's inputs must be of one width and height (the fork's parser asserts it). */
int mn_base_shortcut_same_size(void);
/* Features this base cannot run in this build (sync_bn: only where every
 * batch-norm site calls the hook; the detector's loader options); NULL when
 * all is well, else why not. net is NULL on a first call made before the
 * cfg is parsed: what the task alone rules out (a fork's parser may stop on
 * a cfg of a task it cannot train, before a refusal with a reason). */
const char *mn_base_refuse(const network *net, int sync_bn, int detector);

/* -------------------------------------------------------- the device */
/* The CUDA stream Darknet computes on, as a void * (a cudaStream_t): NULL
 * (the legacy default stream) on pjreddie's, the fork's get_cuda_stream()
 * (cudaStreamNonBlocking under CUDNN=1, which does not synchronise with the
 * legacy stream). Every device launch, event, memset and copy of the
 * plugin goes on it, or on a stream ordered after it by an event. NULL in
 * CPU builds. */
void *mn_base_stream(void);
/* The GPU networks parsed from now on compute on (Darknet's gpu_index;
 * -1: the CPU). */
int mn_base_gpu(void);
void mn_base_set_gpu(int device);
#ifdef GPU
/* The base's device helpers (CUDA builds): n floats host to device and
 * back, and its blas fill and copy kernels on its stream. */
void mn_base_push(float *dev, float *host, size_t n);
void mn_base_pull(float *dev, float *host, size_t n);
void mn_base_fill_gpu(int n, float value, float *x);
void mn_base_copy_gpu(int n, const float *x, float *y);
#endif

/* -------------------------------------------------------- the engine */
/* The engine's hooks into this base, which put layers on it
 * (engine/mn_engine.h): each adapter's, NULL in a DNNL=0 build. */
const mn_dnnl_ops *mn_base_dnnl_ops(void);

#endif
