/* The Darknet underneath: what differs between pjreddie's Darknet (Debian's
 * package) and AlexeyAB's fork, behind one interface. One adapter per base
 * (mn_base_pjreddie.c, mn_base_alexeyab.c); the Makefile's DARKNET= picks it
 * (MN_BASE_ALEXEYAB), and the other file compiles to nothing. The rest of the
 * plugin holds a network * and calls these instead of the Darknet functions
 * whose signatures differ between the bases. */
#ifndef MN_MN_BASE_H
#define MN_MN_BASE_H

#include <stddef.h>
#include <stdint.h>
#include "darknet.h"
#include "mn_core.h"
#ifdef MN_BASE_ALEXEYAB
/* The fork keeps these out of darknet.h (its network.h would bring utils.h,
 * whose names collide with the plugin's). */
#include "list.h"
#include "data.h"
#include "box.h"
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

/* What the plugin reads and writes of a network and its layers, so that
 * nothing above base/ touches Darknet's struct network or struct layer
 * (mn_base_net.c for both C bases, whose fields agree; a C++ base's adapter
 * defines the same functions over its own network and layer classes). A
 * layer * is still handed through (to mn_layer_params, mn_base_refused_layer),
 * never read above base/. */

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
    int batch_normalize, dontsave, dontload, dontloadscales;
    /* An output layer's: what the detector's loader and evaluation read. */
    int classes, coords, max_boxes;
    float jitter, random;             /* random: an int on pjreddie's, a float on the fork; nonzero resizes */
    float *rolling_mean, *rolling_variance;            /* batch norm's statistics, or NULL */
    float *rolling_mean_gpu, *rolling_variance_gpu;    /* their device copies (NULL in CPU builds) */
    float *updates[MN_UPDATES], *updates_gpu[MN_UPDATES];  /* weight, bias, scale updates, or NULL */
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
/* The input buffer of a forward pass (batch * inputs floats) and the train
 * flag: bench step runs the passes itself. */
float *mn_net_input(const network *net);
void mn_net_set_train(network *net, int train);

/* The update hooks the patches add (0001, 0008), installed together
 * because they share one argument; the hooks find it with mn_net_hook_arg.
 * mn_net_set_hooks(net, NULL) removes them (ranks 1). */
typedef struct {
    int ranks;                              /* processes sharing every update: seen counts all their images */
    int (*sync)(network *net);              /* before any layer updates; nonzero skips this update */
    void (*backward)(network *net, int i);  /* after layer i's backward, and with i = layers after forward; or NULL */
    void *arg;
} mn_net_hooks;
void mn_net_set_hooks(network *net, const mn_net_hooks *h);
void *mn_net_hook_arg(const network *net);
/* Batch norm's statistics hook (patch 0005), installed apart from the
 * update hooks (by mn_batchnorm.c, with sync_bn=1): f replaces a (and b
 * unless NULL), n floats each, device memory when gpu, by their means over
 * the ranks; NULL removes it. */
typedef void (*mn_net_bn_sync)(network *net, float *a, float *b, int n, int gpu);
void mn_net_set_bn_sync(network *net, mn_net_bn_sync f, void *arg);
void *mn_net_bn_sync_arg(const network *net);

/* The names the base's parser takes (NULL-terminated), for the cfg check:
 * sections ([distributed] included), activations, [net] policies. */
extern const char *const mn_base_sections[];
extern const char *const mn_base_activations[];
extern const char *const mn_base_policies[];
/* 1 where a shortcut's inputs must be of one width and height (the fork's parser asserts it). */
int mn_base_shortcut_same_size(void);
/* The CUDA stream Darknet computes on, as a void * (a cudaStream_t): NULL
 * (the legacy default stream) on pjreddie's, the fork's get_cuda_stream()
 * (cudaStreamNonBlocking under CUDNN=1, which does not synchronise with the
 * legacy stream). Every device launch, event, memset and copy of the
 * plugin goes on it, or on a stream ordered after it by an event. NULL in
 * CPU builds. */
void *mn_base_stream(void);
/* The network evaluation during training runs on: parsed from cfgfile at
 * batch 1, so that its cuDNN descriptors and workspace are made for one
 * image by Darknet's own parser, and the training network's are never
 * touched (pjreddie's set_batch_network leaves a deconvolutional layer's
 * dstTensorDesc at N=1 and keeps the workspace size of the batch it was
 * parsed at). */
network *mn_base_parse_batch1(const char *cfgfile);
/* "pjreddie" or "AlexeyAB's". */
const char *mn_base_name(void);
/* parse_network_cfg on the heap (the fork returns the network by value). */
network *mn_base_parse(const char *cfgfile);
void mn_base_free(network *net);
/* The global iteration (seen / (batch * subdivisions * ranks)) and its
 * learning rate. */
size_t mn_base_iteration(const network *net);
float mn_base_rate(const network *net);
/* The base's own counters of a resumed iteration (beside seen, set by the caller). */
void mn_base_set_iteration(network *net, size_t it);
/* One update: the rows of d in subdivisions of net->batch; returns the loss. */
float mn_base_train(network *net, data d);
/* This rank's loss on its last subdivision (read in the update hook). */
float mn_base_cost(const network *net);
/* Darknet's save_weights_upto: the first cutoff layers (net->n: all). */
void mn_base_save_weights(network *net, const char *path, int cutoff);
float *mn_base_predict(network *net, float *input);
/* A network loaded for evaluation or prediction only, made as the base's
 * own commands make it (the fork folds batch norm into the weights). */
void mn_base_inference(network *net);
/* The input a detector sees for im, as the base's own validation makes it
 * (pjreddie letterboxes, the fork resizes); *letter tells mn_base_boxes. */
image mn_base_detector_input(const network *net, image im, int *letter);
/* Boxes of an image of w x h; in pixels (relative = 0) only once they have
 * been through mn_base_nms, which gets the same w, h and relative. */
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num);
/* Where the base's training loader reads an image's labels, into out; 0:
 * pjreddie's rule (mn_train_label_path: images -> labels, .jpg -> .txt). */
int mn_base_label_path(const char *path, char *out, size_t cap);
/* Non-maximum suppression as the base's detector does it (the fork: the
 * last layer's nms_kind and beta_nms, on relative boxes, DIoU not being
 * scale-free). */
void mn_base_nms(const network *net, detection *dets, int n, int classes, float thresh, int w, int h, int relative);
void mn_base_hierarchy(float *pred, int n, tree *hier);
/* Floats per truth box of the last layer, and one image's truth boxes as the
 * training loader writes them (no augmentation). */
int mn_base_truth_size(const network *net);
void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes);
/* The base's own detector loader arguments (augmentation keys of [net] and
 * the last layer) on top of get_base_args and the last layer's coords,
 * classes, jitter and max_boxes. */
void mn_base_detector_args(network *net, load_args *a);
/* The base's classifier loader arguments (crop range, flip, size) on top of
 * get_base_args: pjreddie scales min_ratio/max_ratio by the width, the fork
 * reads min_crop/max_crop (its get_base_args already did) and has no ratios. */
void mn_base_classifier_args(network *net, load_args *a);
/* GPU runs: the layer's parameters and statistics to the device (to_device)
 * or from it, for the layer types mn_layer_params lists beyond
 * convolutional, connected, batchnorm and local (mn_layer_move moves those). */
void mn_base_move_layer(const layer *l, int to_device);
/* The adapter also defines mn_layer_params (mn_params.h): the parameter
 * arrays of each layer type the base saves. For a layer it refuses (-1
 * there, or one the base cannot train in this build), what the layer is,
 * for the message ("a shortcut layer with weights"); NULL for a layer it
 * can train. */
const char *mn_base_refused_layer(const layer *l);
/* Features this base cannot run in this build (sync_bn: only where every
 * batch-norm site calls the hook; the detector's loader options); NULL when
 * all is well, else why not. */
const char *mn_base_refuse(const network *net, int sync_bn, int detector);

/* The parameter arrays of a layer in weights-file order. grad is the matching
 * update array when the layer is trained, else NULL. */
typedef struct {
    float *data;
    float *grad;
    size_t n;
} mn_param;
/* Fills up to max entries for layer l (recurrent layers included); returns the
 * count, or -1 for a layer type darknet-mn cannot train yet. Defined by the
 * base's adapter. */
int mn_layer_params(const layer *l, mn_param *out, int max);
#define MN_MAX_LAYER_PARAMS 48
/* The adapters' shared pieces: one entry at out[k] (when k < max), and the
 * arrays of a convolutional / connected / locally connected layer from out[k] on (trained: with
 * their update arrays); each returns the next k (mn_base_params.c). */
int mn_params_add(mn_param *out, int k, int max, float *data, float *grad, size_t n);
int mn_params_conv(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_connected(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_local(const layer *l, mn_param *out, int k, int max, int trained);

#endif
