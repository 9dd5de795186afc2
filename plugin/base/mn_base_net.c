/* mn_base.h's network accessors and wrappers for the two C bases, whose
 * struct network and layer name these fields alike (the patches add the
 * same hooks to both). Where their types differ (seen, random) the values
 * are converted here. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "base/mn_base_c_impl.h"
#include "core/mn_fault.h"
#ifndef MN_BASE_ALEXEYAB
#include "network.h"   /* get_layer_string (mn_base_c_impl.h declares the fork's) */
#endif
#include "option_list.h"
#include "utils.h"
#include "stb_image.h"
#ifdef GPU
#include "convolutional_layer.h"
#include "connected_layer.h"
#include "batchnorm_layer.h"
#include "local_layer.h"
#endif

mn_net_info mn_net_get(const network *net)
{
    mn_net_info in = {
        .batch = net->batch,
        .subdivisions = net->subdivisions,
        .max_batches = net->max_batches,
        .burn_in = net->burn_in,
        .learning_rate = net->learning_rate,
        .momentum = net->momentum,
        .decay = net->decay,
        .adam = net->adam,
        .w = net->w,
        .h = net->h,
        .c = net->c,
        .inputs = net->inputs,
        .outputs = net->outputs,
        .gpu = net->gpu_index,
        .hierarchy = net->hierarchy,
    };
    return in;
}

int mn_net_layers(const network *net) { return net->n; }
layer *mn_net_layer(const network *net, int i) { return &net->layers[i]; }
layer *mn_net_last(const network *net) { return &net->layers[net->n - 1]; }

uint64_t mn_net_seen(const network *net) { return (uint64_t)*net->seen; }
void mn_net_set_seen(network *net, uint64_t seen) { *net->seen = seen; }
void mn_net_set_subdivisions(network *net, int subdivisions) { net->subdivisions = subdivisions; }

void mn_net_set_train(network *net, int train) { net->train = train; }

void mn_net_set_hooks(network *net, const mn_net_hooks *h)
{
    net->ranks = h ? h->ranks : 1;
    net->sync = h ? h->sync : NULL;
    net->backward_hook = h ? h->backward : NULL;
    net->forward_hook = h ? h->forward : NULL;
    net->sync_arg = h ? h->arg : NULL;
}

void *mn_net_hook_arg(const network *net) { return net->sync_arg; }

void mn_net_set_bn_sync(network *net, mn_net_bn_sync f, void *arg)
{
    net->bn_sync = f;
    net->bn_sync_arg = arg;
}

void *mn_net_bn_sync_arg(const network *net) { return net->bn_sync_arg; }

/* By name: both bases' LAYER_TYPE has these, at different numbers. */
static mn_layer_kind kind_of(LAYER_TYPE t)
{
    switch (t) {
    case CONVOLUTIONAL: return MN_LAYER_CONVOLUTIONAL;
    case DECONVOLUTIONAL: return MN_LAYER_DECONVOLUTIONAL;
    case CONNECTED: return MN_LAYER_CONNECTED;
    case BATCHNORM: return MN_LAYER_BATCHNORM;
    case YOLO: return MN_LAYER_YOLO;
    case REGION: return MN_LAYER_REGION;
    case DETECTION: return MN_LAYER_DETECTION;
    default: return MN_LAYER_OTHER;
    }
}

mn_layer_info mn_layer_get(const network *net, int i)
{
    const layer *l = &net->layers[i];
    mn_layer_info in = {
        .kind = kind_of(l->type),
        .name = get_layer_string(l->type),
        .batch = l->batch,
        .inputs = l->inputs,
        .outputs = l->outputs,
        .out_w = l->out_w,
        .out_h = l->out_h,
        .n = l->n,
        .flops = mn_layer_flops(l->type == CONVOLUTIONAL, l->type == CONNECTED, l->n, l->size, l->c, l->groups,
                                l->out_h * l->out_w, l->inputs, l->outputs),
        .batch_normalize = l->batch_normalize,
        .dontsave = l->dontsave,
        .dontload = l->dontload,
        .dontloadscales = l->dontloadscales,
        .classes = l->classes,
        .coords = l->coords,
        .max_boxes = l->max_boxes,
        .jitter = l->jitter,
        .random = l->random,
        .rolling_mean = l->rolling_mean,
        .rolling_variance = l->rolling_variance,
        .updates = {l->weight_updates, l->bias_updates, l->scale_updates},
        .params = {l->weights, l->biases, l->scales},
#ifdef GPU
        .rolling_mean_gpu = l->rolling_mean_gpu,
        .rolling_variance_gpu = l->rolling_variance_gpu,
        .updates_gpu = {l->weight_updates_gpu, l->bias_updates_gpu, l->scale_updates_gpu},
        .params_gpu = {l->weights_gpu, l->biases_gpu, l->scales_gpu},
#endif
    };
    return in;
}

mn_layer_info mn_layer_last(const network *net) { return mn_layer_get(net, net->n - 1); }

void mn_layer_set_update(network *net, int i, int which, float *p)
{
    layer *l = &net->layers[i];
    if (which == MN_UPDATE_WEIGHTS) l->weight_updates = p;
    else if (which == MN_UPDATE_BIASES) l->bias_updates = p;
    else l->scale_updates = p;
}

#ifdef GPU
/* In a GPU run the device copies are the live ones. */
void mn_layer_move(const layer *l, int to_device)
{
    if (gpu_index < 0) return;
    if (l->type == CONVOLUTIONAL) (to_device ? push_convolutional_layer : pull_convolutional_layer)(*l);
    else if (l->type == CONNECTED) (to_device ? push_connected_layer : pull_connected_layer)(*l);
    else if (l->type == BATCHNORM) (to_device ? push_batchnorm_layer : pull_batchnorm_layer)(*l);
    else if (l->type == LOCAL) (to_device ? push_local_layer : pull_local_layer)(*l);
    else mn_base_move_layer(l, to_device);
}
#else
void mn_layer_move(const layer *l, int to_device) { (void)l; (void)to_device; }
#endif

/* ------------------------------------------------ Darknet's functions, wrapped
 * Both C bases name them alike; Darknet's take char * where they only read. */

struct mn_base_loader {
    load_args args;
    data rows;           /* the batch the thread fills (args.d points here) */
    pthread_t thread;
    int running;
};

mn_base_loader *mn_base_loader_create(network *net, const mn_base_loader_cfg *cfg)
{
    mn_base_loader *ld = calloc(1, sizeof *ld);
    if (!ld) return NULL;
    load_args a = get_base_args(net);
    mn_net_info in = mn_net_get(net);
    a.paths = cfg->paths;
    a.m = cfg->n;
    a.n = in.batch * in.subdivisions;
    a.d = &ld->rows;
    a.threads = cfg->threads;
    if (!cfg->detector) {
        mn_base_classifier_args(net, &a);
        a.hierarchy = in.hierarchy;
        a.classes = cfg->classes;
        a.labels = cfg->labels;
        a.type = CLASSIFICATION_DATA;
    } else {
        mn_layer_info last = mn_layer_last(net);
        a.coords = last.coords;
        a.classes = last.classes;
        a.jitter = last.jitter;
        a.num_boxes = last.max_boxes;
        a.type = DETECTION_DATA;
        mn_base_detector_args(net, &a);
    }
    ld->args = a;
    return ld;
}

void mn_base_loader_start(mn_base_loader *ld, int w, int h)
{
    if (w > 0) {
        ld->args.w = w;
        ld->args.h = h;
    }
    ld->thread = load_data(ld->args);
    ld->running = 1;
}

/* The base's rows as a batch: the struct moves to the heap, the batch's own. */
static mn_batch batch_of(data d)
{
    data *own = malloc(sizeof *own);
    if (!own) {
        free_data(d);
        mn_fatal(MN_EXIT_RERUN, "out of memory for a batch's header");
    }
    *own = d;
    return (mn_batch){d.X.rows, d.X.cols, d.y.cols, d.X.vals, d.y.vals, own};
}

mn_batch mn_base_loader_wait(mn_base_loader *ld)
{
    if (!ld->running) return (mn_batch){0};
    pthread_join(ld->thread, 0);
    ld->running = 0;
    data d = ld->rows;
    memset(&ld->rows, 0, sizeof ld->rows);
    return batch_of(d);
}

void mn_base_loader_free(mn_base_loader *ld)
{
    if (!ld) return;
    if (ld->running) {
        mn_batch b = mn_base_loader_wait(ld);
        mn_base_free_batch(&b);
    }
    free(ld);
}

mn_batch mn_base_make_batch(int rows, int x_cols, int y_cols)
{
    data d = {0};
    d.shallow = 0;
    d.X = make_matrix(rows, x_cols);
    d.y = make_matrix(rows, y_cols);
    return batch_of(d);
}

void mn_base_free_batch(mn_batch *b)
{
    if (b->own) free_data(*(data *)b->own);
    free(b->own);
    memset(b, 0, sizeof *b);
}

/* Darknet's image hook (patch 0010) calls the plugin's through this pair,
 * which turns the plugin's image into Darknet's. */
typedef struct {
    mn_base_image_hook f;
    void *ctx;
} image_hook;

static int on_load_image(void *ctx, char *path, int channels, image *out)
{
    const image_hook *h = ctx;
    mn_image im = {0, 0, 0, NULL};
    if (!h->f(h->ctx, path, channels, &im)) return 0;
    *out = mn_base_image(im);
    return 1;
}

/* Set and removed while no loader thread runs (a run's start and end). */
void mn_base_set_image_hook(mn_base_image_hook f, void *ctx)
{
    image_hook *old = load_image_hook_ctx;
    load_image_hook = NULL;   /* never the new hook with the old context */
    load_image_hook_ctx = NULL;
    free(old);
    if (!f) return;
    image_hook *h = malloc(sizeof *h);
    if (!h) mn_fatal(MN_EXIT_RERUN, "out of memory for the image hook");
    *h = (image_hook){f, ctx};
    load_image_hook_ctx = h;
    load_image_hook = on_load_image;
}

void mn_base_set_label_path_hook(void (*f)(void *ctx, const char *image, char *labelpath), void *ctx)
{
    label_path_hook = NULL;
    label_path_hook_ctx = ctx;
    label_path_hook = f;
}

void mn_base_set_box_line_hook(int (*f)(void *ctx, const char *line), void *ctx)
{
    read_boxes_line_hook = NULL;
    read_boxes_line_hook_ctx = ctx;
    read_boxes_line_hook = f;
}

mn_image mn_base_make_image(int w, int h, int c) { return mn_image_of(make_image(w, h, c)); }
void mn_base_free_image(mn_image im) { free_image(mn_base_image(im)); }
mn_image mn_base_load_image(const char *path, int w, int h) { return mn_image_of(load_image_color((char *)path, w, h)); }
mn_image mn_base_resize_image(mn_image im, int w, int h) { return mn_image_of(resize_image(mn_base_image(im), w, h)); }
mn_image mn_base_resize_min(mn_image im, int min) { return mn_image_of(resize_min(mn_base_image(im), min)); }
mn_image mn_base_crop_image(mn_image im, int dx, int dy, int w, int h)
{
    return mn_image_of(crop_image(mn_base_image(im), dx, dy, w, h));
}
mn_image mn_base_letterbox_image(mn_image im, int w, int h) { return mn_image_of(letterbox_image(mn_base_image(im), w, h)); }

unsigned char *mn_base_decode(const char *path, int channels, int *w, int *h, int *c, const char **reason)
{
    unsigned char *p = stbi_load(path, w, h, c, channels);
    if (reason) *reason = p ? NULL : stbi_failure_reason();
    return p;
}

list *mn_base_read_options(const char *path) { return read_data_cfg((char *)path); }
char *mn_base_option(list *options, const char *key) { return option_find(options, (char *)key); }

void mn_base_free_options(list *options)
{
    if (!options) return;
    /* Darknet's kvp: key and value share the line that key points to. */
    for (node *n = options->front; n; n = n->next) {
        kvp *p = n->val;
        free(p->key);
        free(p);
    }
    free_list(options);
}

char **mn_base_read_lines(const char *path, int *n)
{
    list *l = get_paths((char *)path);
    *n = l->size;
    char **lines = (char **)list_to_array(l);
    free_list(l);
    return lines;
}

char *mn_base_cfg_name(const char *cfgfile) { return basecfg((char *)cfgfile); }

void mn_base_replace(const char *path, const char *const *from, const char *const *to, int n, char *out)
{
    char tmp[4096];
    /* Not in place: Darknet's find_replace copies str onto output with
     * sprintf when nothing matches, an overlapping copy when they alias. */
    find_replace((char *)path, (char *)from[0], (char *)to[0], out);
    for (int i = 1; i < n; ++i) {
        find_replace(out, (char *)from[i], (char *)to[i], tmp);
        strcpy(out, tmp);
    }
}

mn_truth *mn_base_read_boxes(const char *path, int *n)
{
    box_label *l = read_boxes((char *)path, n);
    mn_truth *t = malloc((size_t)*n * sizeof *t + 1);
    if (!t) mn_fatal(MN_EXIT_RERUN, "out of memory for an image's truth boxes");
    for (int i = 0; i < *n; ++i) t[i] = (mn_truth){l[i].id, l[i].x, l[i].y, l[i].w, l[i].h};
    free(l);
    return t;
}
float mn_base_box_iou(box a, box b) { return box_iou(a, b); }
void mn_base_nms_obj(detection *dets, int n, int classes, float thresh) { do_nms_obj(dets, n, classes, thresh); }
void mn_base_free_detections(detection *dets, int n) { free_detections(dets, n); }
void mn_base_top_k(float *a, int n, int k, int *index) { top_k(a, n, k, index); }

void mn_base_load_weights(network *net, const char *path) { load_weights(net, (char *)path); }
void mn_base_resize(network *net, int w, int h) { resize_network(net, w, h); }
void mn_base_set_batch(network *net, int batch) { set_batch_network(net, batch); }

/* Darknet's error() and file_error() (patched to call the hook) end the job
 * through mn_fatal with the exit table's status for the cause. */
static void on_error(const char *message) { mn_fatal(mn_base_fatal_exit(message), message); }
void mn_base_init(void) { darknet_error_hook = on_error; }
void mn_base_seed(unsigned seed) { srand(seed); }

int mn_base_gpu(void) { return gpu_index; }
void mn_base_set_gpu(int device) { gpu_index = device; }
#ifdef GPU
void mn_base_push(float *dev, float *host, size_t n) { cuda_push_array(dev, host, n); }
void mn_base_pull(float *dev, float *host, size_t n) { cuda_pull_array(dev, host, n); }
void mn_base_fill_gpu(int n, float value, float *x) { fill_gpu(n, value, x, 1); }
void mn_base_copy_gpu(int n, const float *x, float *y) { copy_gpu(n, (float *)x, 1, y, 1); }
#endif
