/* The adapter for AlexeyAB's Darknet. The fork passes the network by value,
 * but its pointer fields (seen, the layers) are shared by every copy, so a
 * heap copy serves as the network *. It keeps cur_iteration beside seen. */
#include <stdlib.h>
#include <string.h>
#include "base/mn_base_c_impl.h"
#include "engine/mn_engine.h"
#include "parser.h"
#include "network.h"

void replace_image_to_label(const char *input_path, char *output_path);
/* Not in the fork's headers, but exported by data.c. */
int fill_truth_detection(const char *path, int num_boxes, int truth_size, float *truth, int classes, int flip,
                         float dx, float dy, float sx, float sy, int net_w, int net_h);

/* From string_to_layer_type, get_activation and get_policy. */
const char *const mn_base_sections[] = {
    "[net]", "[network]", "[distributed]", "[shortcut]", "[scale_channels]", "[sam]", "[crop]", "[cost]",
    "[detection]", "[region]", "[yolo]", "[Gaussian_yolo]", "[local]", "[conv]", "[convolutional]",
    "[activation]", "[crnn]", "[gru]", "[lstm]", "[conv_lstm]", "[history]", "[rnn]", "[conn]", "[connected]",
    "[max]", "[maxpool]", "[local_avg]", "[local_avgpool]", "[reorg3d]", "[reorg]", "[avg]", "[avgpool]",
    "[dropout]", "[lrn]", "[normalization]", "[batchnorm]", "[soft]", "[softmax]", "[contrastive]", "[route]",
    "[upsample]", "[empty]", "[silence]", "[implicit]", NULL};
const char *const mn_base_activations[] = {
    "logistic", "swish", "mish", "hard_mish", "normalize_channels", "normalize_channels_softmax",
    "normalize_channels_softmax_maxval", "loggy", "relu", "relu6", "elu", "selu", "gelu", "relie", "plse",
    "hardtan", "lhtan", "linear", "ramp", "revleaky", "leaky", "tanh", "stair", NULL};
const char *const mn_base_policies[] = {"random", "poly", "constant", "step", "exp", "sigmoid", "steps", "sgdr", NULL};

const char *mn_base_name(void) { return "AlexeyAB's"; }
int mn_base_shortcut_same_size(void) { return 1; }

network *mn_base_parse(const char *cfgfile)
{
    network *net = malloc(sizeof *net);
    if (!net) return NULL;
    *net = parse_network_cfg((char *)cfgfile);
    return net;
}

/* As the fork's validate_detector_map parses its network. */
network *mn_base_parse_batch1(const char *cfgfile)
{
    network *net = malloc(sizeof *net);
    if (!net) return NULL;
    *net = parse_network_cfg_custom((char *)cfgfile, 1, 1);
    return net;
}

void *mn_base_stream(void)
{
#ifdef GPU
    return gpu_index >= 0 ? (void *)get_cuda_stream() : NULL;
#else
    return NULL;
#endif
}

void mn_base_free(network *net)
{
    mn_dnnl_free(net->layer_engine);
    free_network(*net);
    free(net);
}

size_t mn_base_iteration(const network *net) { return (size_t)get_current_batch(*net); }
float mn_base_rate(const network *net) { return get_current_rate(*net); }

/* cur_iteration follows seen, whatever load or resume set it to: the
 * fork's EMA, schedule-dependent layers and save_weights read it. */
static void sync_iteration(network *net)
{
    *net->cur_iteration = get_current_batch(*net);
}

/* The fork never allocates net->t (Adam's step); cur_iteration is its counter. */
void mn_base_set_iteration(network *net, size_t it)
{
    if (net->t) *net->t = (int)it;
    *net->cur_iteration = (int)it;
}

float mn_base_train(network *net, const mn_batch *b)
{
    sync_iteration(net);
    return train_network(*net, *(const data *)b->own);
}

/* The fork writes seen from cur_iteration. */
void mn_base_save_weights(network *net, const char *path, int cutoff)
{
    sync_iteration(net);
    save_weights_upto(*net, (char *)path, cutoff, 0);
}

float mn_base_cost(const network *net) { return get_network_cost(*net); }
float *mn_base_predict(network *net, float *input) { return network_predict(*net, input); }

/* Folds batch norm into the convolutions, as validate_detector_map does. */
void mn_base_inference(network *net)
{
    fuse_conv_batchnorm(*net);
    calculate_binary_weights(*net);
}

mn_image mn_base_detector_input(const network *net, mn_image m, int *letter)
{
    image im = mn_base_image(m);
    *letter = net->letter_box;
    return mn_image_of(*letter ? letterbox_image(im, net->w, net->h) : resize_image(im, net->w, net->h));
}

/* Relative always: mn_base_nms makes pixels of them. */
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num)
{
    (void)relative;
    return get_network_boxes(net, w, h, thresh, hier, 0, 1, num, letter);
}

/* The fork's replace_image_to_label, which writes without a bound. */
int mn_base_label_path(const char *path, char *out, size_t cap)
{
    char tmp[4096];
    if (strlen(path) + 16 > sizeof tmp) {   /* let pjreddie's rule refuse it */
        snprintf(out, cap, "%s", path);
        return 1;
    }
    replace_image_to_label(path, tmp);
    snprintf(out, cap, "%s", tmp);
    return 1;
}

/* As validate_detector_map, on relative boxes since DIoU changes when x and
 * y are scaled apart; pixels after. */
void mn_base_nms(const network *net, detection *dets, int n, int classes, float thresh, int w, int h, int relative)
{
    layer l = net->layers[net->n - 1];
    if (l.nms_kind == DEFAULT_NMS) do_nms_sort(dets, n, classes, thresh);
    else diounms_sort(dets, n, classes, thresh, l.nms_kind, l.beta_nms);
    if (!relative) mn_base_boxes_to_pixels(dets, n, w, h);
}

void mn_base_hierarchy(float *pred, int n, tree *hier) { hierarchy_predictions(pred, n, hier, 1); }

int mn_base_truth_size(const network *net)
{
    int t = net->layers[net->n - 1].truth_size;
    return t > 0 ? t : 5;
}

void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes)
{
    fill_truth_detection(path, boxes, mn_base_truth_size(net), truth, classes, 0, 0, 0, 1, 1, net->w, net->h);
}

/* What else the fork's train_detector sets. */
void mn_base_detector_args(network *net, load_args *a)
{
    a->resize = net->layers[net->n - 1].resize;
    a->truth_size = mn_base_truth_size(net);
    a->flip = net->flip;
    a->angle = net->angle;
    a->gaussian_noise = net->gaussian_noise;
    a->blur = net->blur;
    a->mixup = net->mixup;
    a->exposure = net->exposure;
    a->saturation = net->saturation;
    a->hue = net->hue;
    a->letter_box = net->letter_box;
    a->mosaic_bound = net->mosaic_bound;
}

/* The fork's CPU passes on a network_state as train_network_datum makes it.
 * No truth boxes is a zero buffer as large as any loss layer reads. On a
 * GPU the passes need device state: none there. */
int mn_base_forward(network *net, const float *input)
{
    if (gpu_index >= 0) return -1;
    int n = net->layers[net->n - 1].outputs;
    for (int i = 0; i < net->n; ++i) n = net->layers[i].truths > n ? net->layers[i].truths : n;
    float *truth = calloc((size_t)n * net->batch, sizeof(float));
    if (!truth) return -1;
    network_state s = {0};
    s.net = *net;
    s.input = (float *)input;
    s.truth = truth;
    s.train = 1;
    forward_network(*net, s);
    free(truth);
    return 0;
}
int mn_base_backward(network *net, const float *input)
{
    if (gpu_index >= 0) return -1;
    network_state s = {0};
    s.net = *net;
    s.input = (float *)input;
    s.train = 1;
    backward_network(*net, s);
    return 0;
}
int mn_base_update(network *net)
{
    if (gpu_index >= 0) return -1;
    update_network(*net);
    return 0;
}

/* What the fork's train_classifier sets beyond get_base_args. */
void mn_base_classifier_args(network *net, load_args *a)
{
    a->c = net->c;
    a->flip = net->flip;
    a->blur = net->blur;
    a->size = net->w > net->h ? net->w : net->h;
    a->label_smooth_eps = net->label_smooth_eps;
    a->mixup = net->mixup;
}

/* The order of the fork's save_weights_upto (parser.c). */
int mn_layer_params(const layer *l, mn_param *o, int max)
{
    /* update_network skips a layer without l.train (frozen, or [connected]
     * whose parser never sets it): its updates are not averaged. */
    int t = l->update != NULL && l->train;
    switch (l->type) {
    case CONVOLUTIONAL:
        return l->share_layer ? -1 : mn_params_conv(l, o, 0, max, t);
    case CONNECTED:
        return mn_params_connected(l, o, 0, max, t);
    case BATCHNORM: {
        /* The fork trains a standalone batchnorm layer. */
        size_t c = (size_t)l->c;
        int k = mn_params_add(o, 0, max, l->biases, t ? l->bias_updates : NULL, c);
        k = mn_params_add(o, k, max, l->scales, t ? l->scale_updates : NULL, c);
        k = mn_params_add(o, k, max, l->rolling_mean, NULL, c);
        return mn_params_add(o, k, max, l->rolling_variance, NULL, c);
    }
    case LOCAL:
        return mn_params_local(l, o, 0, max, t);
    case SHORTCUT:
        return l->nweights > 0 ? -1 : 0;
    case DECONVOLUTIONAL:
    case IMPLICIT:
    case RNN:
    case LSTM:
    case GRU:
    case CRNN:
    case CONV_LSTM:
        return -1;
    default:
        return 0;
    }
}

/* mn_layer_move moves every type listed here. */
void mn_base_move_layer(const layer *l, int to_device)
{
    (void)l;
    (void)to_device;
}

const char *mn_base_refused_layer(const layer *l)
{
    switch (l->type) {
    case CONVOLUTIONAL:
#ifndef GPU
        /* binarize_weights reads past its buffers on the CPU. */
        if (l->xnor) return "a convolutional layer with xnor=1 (the fork's CPU training of XNOR layers crashes)";
#endif
        return l->share_layer ? "a convolutional layer with share_index (weights shared with another layer)" : NULL;
    case SHORTCUT: return l->nweights > 0 ? "a shortcut layer with weights_type (weighted shortcut)" : NULL;
    case DECONVOLUTIONAL: return "a deconvolutional layer (the fork does not save its weights)";
    case IMPLICIT: return "an implicit layer";
    case RNN: return "an rnn layer";
    case LSTM: return "an lstm layer";
    case GRU: return "a gru layer";
    case CRNN: return "a crnn layer";
    case CONV_LSTM: return "a conv_lstm layer";
    default: return NULL;
    }
}

#ifdef GPU
/* sync_bn=1 on a GPU needs every batch-norm site to call the hook (patch
 * 0016); half precision and batch_normalize=2 run kernels that do not. */
static const char *sync_bn_gpu(const network *net)
{
    if (net->cudnn_half && net->loss_scale != 1)
        return "sync_bn=1 with loss_scale (half precision: cuDNN's own batch norm, which calls no hook)";
    for (int i = 0; i < net->n; ++i) {
        const layer *l = &net->layers[i];
        if (l->type != BATCHNORM && !l->batch_normalize) continue;
        if (l->batch_normalize == 2) return "sync_bn=1 with batch_normalize=2 (cross-iteration batch norm) on the GPU";
        if (!l->mean_delta_gpu || !l->variance_delta_gpu || !l->x_gpu)
            return "sync_bn=1 on a GPU build whose batch norm lacks darknet-mn's patch 0016 (rebuild: make GPU=1 "
                   "DARKNET=alexeyab)";
    }
    return NULL;
}
#endif

/* Keys of the fork's [net] that differ between ranks or break the
 * N x b = 1 x N*b equivalence. */
const char *mn_base_refuse(const network *net, int sync_bn, int detector)
{
    if (!net) return NULL;   /* both tasks train here */
#ifndef OPENCV
    /* The loader without OpenCV stops at the first batch. */
    if (detector && net->mixup == 2) return "[net] cutmix=1 (the fork's detection loader has no cutmix)";
    if (detector && net->mixup >= 3) return "[net] mosaic=1 in a build without OpenCV (set mosaic=0)";
#else
    (void)detector;
#endif
    if (net->adversarial_lr > 0) return "adversarial_lr (each rank would draw its own adversarial steps)";
    if (net->dynamic_minibatch) return "dynamic_minibatch (each rank's batch would change on its own)";
#ifdef GPU
    /* A GPU build updates on the device whatever gpu_index says. */
    if (net->gpu_index < 0)
        return "-nogpu with its GPU build (the fork's training then updates on device -1, a fatal CUDA error at the "
               "first update); to train on the CPU, use the CPU build: make DARKNET=alexeyab";
    if (sync_bn) return sync_bn_gpu(net);
#else
    (void)sync_bn;
#endif
    return NULL;
}

/* The fork's convolutional forward and backward (float path) with the
 * convolution through oneDNN; the rest is theirs. */
#ifdef MN_DNNL
#include "activations.h"
#include "batchnorm_layer.h"
void add_bias(float *output, float *biases, int batch, int n, int size);
void backward_bias(float *bias_updates, float *delta, int batch, int n, int size);
void activate_array_cpu_custom(float *x, const int n, const ACTIVATION a);
#include "base/mn_base_fork_impl.h"

/* The fork's batch norm constants for mn_bn.c. */
static const mn_bn_base bn_base = {.9f, .1f, 1, 0};

static mn_fork_act act_view(const layer *l)
{
    return (mn_fork_act){l->activation, l->output, l->activation_input, l->delta, l->outputs * l->batch, l->batch,
                         l->out_c, l->out_w * l->out_h};
}
static void act_forward(const layer *l) { mn_fork_act a = act_view(l); mn_fork_act_forward(&a); }
static void act_backward(const layer *l) { mn_fork_act a = act_view(l); mn_fork_act_backward(&a); }

static mn_conv conv_view(const layer *l)
{
    int dilation = l->dilation < 1 ? 1 : l->dilation;
    mn_conv v = {l->batch, l->c, l->h, l->w, l->n, l->groups, l->size, l->out_h, l->out_w,
                 l->stride_y, l->stride_x, dilation, l->pad * dilation, l->weights, l->delta, l->weight_updates};
    return v;
}

static void dnnl_forward(layer l, network_state state)
{
    if (l.train == 0) state.train = 0;   /* frozen: no statistics buffers */
    int bn = l.batch_normalize && state.train;
    mn_conv v = conv_view(&l);
    mn_dnnl_forward(state.net.layer_engine, state.index, &v, state.input, bn ? l.x : l.output);
    if (bn) {
        mn_bn_layer b = mn_bn_view(&l, &state.net);
        mn_bn_forward(&bn_base, &b);
        if (!mn_bn_fuses(&l)) act_forward(&l);
        return;
    }
    if (l.batch_normalize) forward_batchnorm_layer(l, state);
    else add_bias(l.output, l.biases, l.batch, l.n, l.out_h * l.out_w);
    act_forward(&l);
}

static void dnnl_backward(layer l, network_state state)
{
    if (l.batch_normalize && state.train && l.train) {
        if (!mn_bn_fuses(&l)) act_backward(&l);
        mn_bn_layer b = mn_bn_view(&l, &state.net);
        mn_bn_backward(&bn_base, &b);
    } else {
        act_backward(&l);
        if (l.batch_normalize) backward_batchnorm_layer(l, state);
        else backward_bias(l.bias_updates, l.delta, l.batch, l.n, l.out_w * l.out_h);
    }
    /* The fork's backward writes over the input gradient, 1x1 or not. */
    mn_conv v = conv_view(&l);
    mn_dnnl_backward(state.net.layer_engine, state.index, &v, state.input, state.delta, 1);
}

static const char *dnnl_refuse(const layer *l)
{
    if (l->antialiasing) return "antialiasing";
    if (l->assisted_excitation) return "assisted_excitation";
    if (l->share_layer) return "share_index";
    if (l->deform) return "deform";
    return NULL;
}

/* The fork's padding is size-1 unless given: -pad/2 is 0 for size 2. */
static int pool2(const layer *l)
{
    return !l->maxpool_depth && !l->antialiasing && l->size == 2 && l->stride_x == 2 && l->stride_y == 2 &&
           l->pad / 2 == 0 && l->w % 2 == 0 && l->h % 2 == 0 && l->out_w == l->w / 2 && l->out_h == l->h / 2 &&
           l->out_c == l->c;
}

static void pool_forward(layer l, network_state state)
{
    mn_maxpool2(state.input, l.output, l.indexes, l.w, l.h, l.batch * l.c);
}
#endif
MN_DNNL_OPS(dnnl_refuse, dnnl_forward, dnnl_backward, pool2, pool_forward)
