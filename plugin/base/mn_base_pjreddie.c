/* The adapter for pjreddie's Darknet (Debian's package, patches/): the
 * network is passed by pointer, seen drives the iteration, update_network
 * runs the hook (patch 0001). */
#include "base/mn_base_c_impl.h"
#include "engine/mn_engine.h"
#ifdef GPU
#include "deconvolutional_layer.h"
#endif

/* Not in Darknet's headers, but exported by data.c. */
void fill_truth_detection(char *path, int num_boxes, float *truth, int classes, int flip,
                          float dx, float dy, float sx, float sy);

/* From string_to_layer_type, get_activation and get_policy. */
const char *const mn_base_sections[] = {
    "[net]", "[network]", "[distributed]", "[shortcut]", "[crop]", "[cost]", "[detection]", "[region]",
    "[yolo]", "[iseg]", "[local]", "[conv]", "[convolutional]", "[deconv]", "[deconvolutional]",
    "[activation]", "[logistic]", "[l2norm]", "[crnn]", "[gru]", "[lstm]", "[rnn]", "[conn]",
    "[connected]", "[max]", "[maxpool]", "[reorg]", "[avg]", "[avgpool]", "[dropout]", "[lrn]",
    "[normalization]", "[batchnorm]", "[soft]", "[softmax]", "[route]", "[upsample]", NULL};
const char *const mn_base_activations[] = {"logistic", "loggy", "relu", "elu", "selu", "relie", "plse", "hardtan",
                                           "lhtan", "linear", "ramp", "leaky", "tanh", "stair", NULL};
const char *const mn_base_policies[] = {"random", "poly", "constant", "step", "exp", "sigmoid", "steps", NULL};

int mn_base_shortcut_same_size(void) { return 0; }
const char *mn_base_name(void) { return "pjreddie"; }
network *mn_base_parse(const char *cfgfile) { return parse_network_cfg((char *)cfgfile); }
/* parse_network_cfg_batch: patch 0012. */
network *mn_base_parse_batch1(const char *cfgfile) { return parse_network_cfg_batch((char *)cfgfile, 1); }
/* Darknet's kernels, cuBLAS and cuDNN handles use the legacy default stream. */
void *mn_base_stream(void) { return NULL; }
void mn_base_free(network *net)
{
    mn_dnnl_free(net->layer_engine);
    free_network(net);
}
size_t mn_base_iteration(const network *net) { return get_current_batch((network *)net); }
float mn_base_rate(const network *net) { return get_current_rate((network *)net); }
void mn_base_set_iteration(network *net, size_t it) { *net->t = (int)it; }
float mn_base_train(network *net, const mn_batch *b) { return train_network(net, *(const data *)b->own); }
float mn_base_cost(const network *net) { return *net->cost; }
float *mn_base_predict(network *net, float *input) { return network_predict(net, input); }

void mn_base_save_weights(network *net, const char *path, int cutoff)
{
    save_weights_upto(net, (char *)path, cutoff);
}

void mn_base_inference(network *net) { (void)net; }

mn_image mn_base_detector_input(const network *net, mn_image im, int *letter)
{
    *letter = 1;
    return mn_image_of(letterbox_image(mn_base_image(im), net->w, net->h));
}

/* pjreddie's yolo layer always undoes a letterbox. */
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num)
{
    (void)letter;
    return get_network_boxes(net, w, h, thresh, hier, 0, relative, num);
}

int mn_base_label_path(const char *path, char *out, size_t cap)
{
    (void)path;
    (void)out;
    (void)cap;
    return 0;
}

void mn_base_nms(const network *net, detection *dets, int n, int classes, float thresh, int w, int h, int relative)
{
    (void)net;
    (void)w;
    (void)h;
    (void)relative;
    do_nms_sort(dets, n, classes, thresh);
}

void mn_base_hierarchy(float *pred, int n, tree *hier) { hierarchy_predictions(pred, n, hier, 1, 1); }

int mn_base_truth_size(const network *net) { (void)net; return 5; }

void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes)
{
    (void)net;
    fill_truth_detection((char *)path, boxes, truth, classes, 0, 0, 0, 1, 1);
}

void mn_base_detector_args(network *net, load_args *a)
{
    (void)net;
    (void)a;
}

/* Its passes read net->input (and net->truth, zeros from the parser). */
int mn_base_forward(network *net, const float *input)
{
    memcpy(net->input, input, sizeof(float) * (size_t)net->inputs * net->batch);
    forward_network(net);
    return 0;
}
int mn_base_backward(network *net, const float *input) { (void)input; backward_network(net); return 0; }
int mn_base_update(network *net) { update_network(net); return 0; }

/* As examples/classifier.c:train_classifier. */
void mn_base_classifier_args(network *net, load_args *a)
{
    a->min = (int)(net->min_ratio * net->w);
    a->max = (int)(net->max_ratio * net->w);
    a->size = net->w;
    a->center = 0;
}

int mn_layer_params(const layer *l, mn_param *o, int max)
{
    int t = l->update != NULL;
    switch (l->type) {
    case CONVOLUTIONAL:
    case DECONVOLUTIONAL:
        return mn_params_conv(l, o, 0, max, t);
    case CONNECTED:
        return mn_params_connected(l, o, 0, max, t);
    case BATCHNORM: {
        /* Darknet never updates a standalone batchnorm layer's scales. */
        size_t c = (size_t)l->c;
        int k = mn_params_add(o, 0, max, l->scales, NULL, c);
        k = mn_params_add(o, k, max, l->rolling_mean, NULL, c);
        return mn_params_add(o, k, max, l->rolling_variance, NULL, c);
    }
    case LOCAL:
        return mn_params_local(l, o, 0, max, t);
    case RNN:
    case LSTM:
    case GRU:
    case CRNN:
        return -1;   /* their sublayers' arrays are not enumerated yet */
    default:
        return 0;
    }
}

void mn_base_move_layer(const layer *l, int to_device)
{
#ifdef GPU
    if (l->type == DECONVOLUTIONAL) (to_device ? push_deconvolutional_layer : pull_deconvolutional_layer)(*l);
#else
    (void)l;
    (void)to_device;
#endif
}

const char *mn_base_refused_layer(const layer *l)
{
    switch (l->type) {
    case RNN: return "an rnn layer";
    case LSTM: return "an lstm layer";
    case GRU: return "a gru layer";
    case CRNN: return "a crnn layer";
    default: return NULL;
    }
}

const char *mn_base_refuse(const network *net, int sync_bn, int detector)
{
    (void)detector;
    (void)net;
    (void)sync_bn;
    return NULL;
}

/* Darknet's forward_convolutional_layer and backward_convolutional_layer
 * with the convolution through oneDNN (mn_dnnl.c): the rest is theirs. */
#ifdef MN_DNNL
void forward_batchnorm_layer(layer l, network net);
void backward_batchnorm_layer(layer l, network net);
void add_bias(float *output, float *biases, int batch, int n, int size);
void backward_bias(float *bias_updates, float *delta, int batch, int n, int size);
void activate_array(float *x, const int n, const ACTIVATION a);
void gradient_array(const float *x, const int n, const ACTIVATION a, float *delta);

/* activate_array and gradient_array, leaky through mn_loops.c. */
static void act_forward(float *x, int n, ACTIVATION a)
{
    if (a == LEAKY) mn_leaky_double(x, (size_t)n);
    else activate_array(x, n, a);
}

static void act_backward(const float *y, int n, ACTIVATION a, float *delta)
{
    if (a == LEAKY) mn_leaky_gradient(y, delta, (size_t)n);
    else gradient_array(y, n, a, delta);
}

/* pjreddie's batch norm (batchnorm_layer.c) for mn_bn.c. */
static const mn_bn_base bn_base = {.99f, .01f, 0, 1};

/* The engine's view of convolutional layer l. */
static mn_conv conv_view(const layer *l)
{
    mn_conv v = {l->batch, l->c, l->h, l->w, l->n, l->groups, l->size, l->out_h, l->out_w,
                 l->stride, l->stride, 1, l->pad, l->weights, l->delta, l->weight_updates};
    return v;
}

static void dnnl_forward(layer l, network net)
{
    int bn = l.batch_normalize && net.train;
    mn_conv v = conv_view(&l);
    mn_dnnl_forward(net.layer_engine, net.index, &v, net.input, bn ? l.x : l.output);
    if (bn) {
        mn_bn_layer b = mn_bn_view(&l, &net);
        mn_bn_forward(&bn_base, &b);
        if (!mn_bn_fuses(&l)) act_forward(l.output, l.outputs * l.batch, l.activation);
        return;
    }
    if (l.batch_normalize) forward_batchnorm_layer(l, net);
    else add_bias(l.output, l.biases, l.batch, l.n, l.out_h * l.out_w);
    act_forward(l.output, l.outputs * l.batch, l.activation);
}

static void dnnl_backward(layer l, network net)
{
    if (l.batch_normalize && net.train) {
        if (!mn_bn_fuses(&l)) act_backward(l.output, l.outputs * l.batch, l.activation, l.delta);
        mn_bn_layer b = mn_bn_view(&l, &net);
        mn_bn_backward(&bn_base, &b);
    } else {
        act_backward(l.output, l.outputs * l.batch, l.activation, l.delta);
        if (l.batch_normalize) backward_batchnorm_layer(l, net);
        else backward_bias(l.bias_updates, l.delta, l.batch, l.n, l.out_w * l.out_h);
    }
    /* A 1x1 convolution's gemm writes the input gradient (beta 0); col2im adds it. */
    mn_conv v = conv_view(&l);
    mn_dnnl_backward(net.layer_engine, net.index, &v, net.input, net.delta, l.size == 1);
}

/* Every convolutional layer but binary and xnor ones goes. */
static const char *dnnl_refuse(const layer *l)
{
    (void)l;
    return NULL;
}

/* The parser's padding is size-1 unless given: -pad/2 is 0 for size 2. */
static int pool2(const layer *l)
{
    return l->size == 2 && l->stride == 2 && l->pad / 2 == 0 && l->w % 2 == 0 && l->h % 2 == 0 &&
           l->out_w == l->w / 2 && l->out_h == l->h / 2;
}

static void pool_forward(layer l, network net)
{
    mn_maxpool2(net.input, l.output, l.indexes, l.w, l.h, l.batch * l.c);
}
#endif
MN_DNNL_OPS(dnnl_refuse, dnnl_forward, dnnl_backward, pool2, pool_forward)
