/* The adapter for hank-ai's Darknet V5 (docs/hankai.md) over the fork's C++
 * API. The fork descends from AlexeyAB's, so this follows
 * mn_base_alexeyab.c and mn_base_net.c function by function and says where
 * the fork differs. */
/* No MPI C++ bindings to link. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <thread>
#include <vector>
#ifdef DARKNET_GPU
#include <dlfcn.h>
#endif
#include "darknet_internal.hpp"
#include "weights.hpp"
#include "batchnorm_layer.hpp"
#include "gemm.hpp"
extern "C" {
#include "base/mn_base_impl.h"
#include "base/mn_base_fork_impl.h"
#include "engine/mn_engine.h"
#include "core/mn_fault.h"
}

/* The plugin's GPU and the fork's DARKNET_GPU must agree. */
#if defined(GPU) != defined(DARKNET_GPU)
#error "GPU=1 needs the fork's CUDA build (DARKNET_GPU), and only then"
#endif

#ifdef DARKNET_GPU
/* The fork's one driver-API call, looked up when called instead of linked,
 * so that without a driver the program starts and says why instead of the
 * loader stopping on libcuda.so.1. */
extern "C" CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    using fn = CUresult (*)(CUcontext *);
    static const fn f = [] {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        return h ? reinterpret_cast<fn>(dlsym(h, "cuCtxGetCurrent")) : nullptr;
    }();
    return f ? f(pctx) : CUDA_ERROR_NO_DEVICE;
}
#endif

static_assert(std::is_same<image, Darknet::Image>::value && std::is_same<box, Darknet::Box>::value &&
              std::is_same<detection, Darknet::Detection>::value, "the fork's C types are its C++ ones");

/* Exported by data.cpp, not in its headers. */
int fill_truth_detection(const char *path, int num_boxes, int truth_size, float *truth, int classes, int flip,
                         float dx, float dy, float sx, float sy, int net_w, int net_h);

namespace {
Darknet::Network &N(network *net) { return *reinterpret_cast<Darknet::Network *>(net); }
const Darknet::Network &N(const network *net) { return *reinterpret_cast<const Darknet::Network *>(net); }
const Darknet::Layer &L(const layer *l) { return *reinterpret_cast<const Darknet::Layer *>(l); }
network *C(Darknet::Network *net) { return reinterpret_cast<network *>(net); }
using T = Darknet::ELayerType;

mn_layer_kind kind_of(T t)
{
    switch (t) {
    case T::CONVOLUTIONAL: return MN_LAYER_CONVOLUTIONAL;
    case T::CONNECTED: return MN_LAYER_CONNECTED;
    case T::YOLO: return MN_LAYER_YOLO;
    case T::REGION: return MN_LAYER_REGION;
    default: return MN_LAYER_OTHER;
    }
}

/* The longest of the fork's names for a type. */
const char *type_name(T t)
{
    const std::string *best = nullptr;
    for (const auto &kv : Darknet::all_names_and_layers())
        if (kv.second == t && (!best || kv.first.size() > best->size())) best = &kv.first;
    return best ? best->c_str() : "unknown";
}

/* cur_iteration follows seen, as on AlexeyAB's. */
void sync_iteration(Darknet::Network &n) { *n.cur_iteration = get_current_batch(n); }

int add(mn_param *o, int k, int max, float *data, float *grad, size_t n)
{
    if (k < max) { o[k].data = data; o[k].grad = grad; o[k].n = n; }
    return k + 1;
}

/* The plugin's image hook and its context, as the fork's hook context. */
struct image_hook {
    mn_base_image_hook f;
    void *ctx;
};

/* The plugin's decoded image as the 8-bit RGB Mat load_rgb_mat_image
 * returns; round(v * 255) gives back the 8-bit samples it came from. */
int on_load_image(void *ctx, const char *file, int channels, cv::Mat &out)
{
    const image_hook *h = static_cast<const image_hook *>(ctx);
    mn_image im = {0, 0, 0, nullptr};
    if (!h->f(h->ctx, const_cast<char *>(file), channels, &im)) return 0;
    out.create(im.h, im.w, CV_8UC(im.c));
    for (int y = 0; y < im.h; ++y) {
        unsigned char *row = out.ptr<unsigned char>(y);
        for (int x = 0; x < im.w; ++x)
            for (int k = 0; k < im.c; ++k) {
                float v = im.data[((size_t)k * im.h + y) * im.w + x] * 255.f;
                row[(size_t)x * im.c + k] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : std::lround(v));
            }
    }
    mn_base_free_image(im);
    return 1;
}

/* After darknet_fatal_error logs, the job ends through mn_fatal. */
void on_fatal(void *, const char *message) { mn_fatal(mn_base_fatal_exit(message), message); }
}   // namespace

extern "C" {

/* From darknet_enums.cpp. */
const char *const mn_base_sections[] = {
    "[net]", "[network]", "[distributed]", "[shortcut]", "[scale_channels]", "[sam]", "[cost]", "[region]",
    "[yolo]", "[Gaussian_yolo]", "[conv]", "[convolutional]", "[crnn]", "[lstm]", "[rnn]", "[conn]", "[connected]",
    "[max]", "[maxpool]", "[local_avg]", "[local_avgpool]", "[reorg3d]", "[avg]", "[avgpool]", "[dropout]", "[soft]",
    "[softmax]", "[contrastive]", "[route]", "[upsample]", "[empty]", "[silence]", "[blank]", nullptr};
const char *const mn_base_activations[] = {
    "elu", "gelu", "hard_mish", "hardtan", "leaky", "lhtan", "linear", "logistic", "loggy", "mish",
    "normalize_channels", "normalize_channels_softmax", "normalize_channels_softmax_maxval", "plse", "ramp",
    "relie", "relu", "relu6", "revleaky", "selu", "stair", "swish", "tanh", nullptr};
const char *const mn_base_policies[] = {"random", "poly", "constant", "step", "exp", "sigmoid", "steps", "sgdr", nullptr};

const char *mn_base_name(void) { return "hank-ai's"; }
int mn_base_shortcut_same_size(void) { return 1; }

/* Neither the fork's own abort on a fatal error nor its prompt before CPU
 * training suits a job of ranks. */
void mn_base_init(void)
{
    darknet_fatal_error_hook_ctx = nullptr;
    darknet_fatal_error_hook = on_fatal;
    darknet_ask_before_cpu_training = 0;
}

/* Also rand(); each thread's engine restarts from (seed, its stream). */
void mn_base_seed(unsigned seed) { darknet_set_random_seed(seed); }

mn_net_info mn_net_get(const network *net)
{
    const Darknet::Network &n = N(net);
    mn_net_info in = {};
    in.batch = n.batch;
    in.subdivisions = n.subdivisions;
    in.max_batches = n.max_batches;
    in.burn_in = n.burn_in;
    in.learning_rate = n.learning_rate;
    in.momentum = n.momentum;
    in.decay = n.decay;
    in.adam = n.adam;
    in.w = n.w;
    in.h = n.h;
    in.c = n.c;
    in.inputs = n.inputs;
    in.outputs = n.outputs;
    in.gpu = n.gpu_index;
    in.hierarchy = n.hierarchy;
    return in;
}

int mn_net_layers(const network *net) { return N(net).n; }
layer *mn_net_layer(const network *net, int i) { return reinterpret_cast<layer *>(&N(net).layers[i]); }
layer *mn_net_last(const network *net) { return mn_net_layer(net, N(net).n - 1); }
uint64_t mn_net_seen(const network *net) { return *N(net).seen; }
void mn_net_set_seen(network *net, uint64_t seen) { *N(net).seen = seen; }
void mn_net_set_subdivisions(network *net, int subdivisions) { N(net).subdivisions = subdivisions; }
void mn_net_set_train(network *net, int train) { N(net).train = train; }

/* The hooks' network * is the same pointer as the fork's. */
void mn_net_set_hooks(network *net, const mn_net_hooks *h)
{
    Darknet::Network &n = N(net);
    n.ranks = h ? h->ranks : 1;
    n.sync = h ? reinterpret_cast<int (*)(Darknet::Network *)>(h->sync) : nullptr;
    n.backward_hook = h ? reinterpret_cast<void (*)(Darknet::Network *, int)>(h->backward) : nullptr;
    n.forward_hook = h ? reinterpret_cast<void (*)(Darknet::Network *, int)>(h->forward) : nullptr;
    n.sync_arg = h ? h->arg : nullptr;
}

void *mn_net_hook_arg(const network *net) { return N(net).sync_arg; }

void mn_net_set_bn_sync(network *net, mn_net_bn_sync f, void *arg)
{
    N(net).bn_sync = reinterpret_cast<void (*)(Darknet::Network *, float *, float *, int, int)>(f);
    N(net).bn_sync_arg = arg;
}

void *mn_net_bn_sync_arg(const network *net) { return N(net).bn_sync_arg; }

mn_layer_info mn_layer_get(const network *net, int i)
{
    const Darknet::Layer &l = N(net).layers[i];
    mn_layer_info in = {};
    in.kind = kind_of(l.type);
    in.name = type_name(l.type);
    in.batch = l.batch;
    in.inputs = l.inputs;
    in.outputs = l.outputs;
    in.out_w = l.out_w;
    in.out_h = l.out_h;
    in.n = l.n;
    in.flops = mn_layer_flops(l.type == T::CONVOLUTIONAL, l.type == T::CONNECTED, l.n, l.size, l.c, l.groups,
                              l.out_h * l.out_w, l.inputs, l.outputs);
    in.batch_normalize = l.batch_normalize;
    in.dontsave = l.dontsave;
    in.dontload = l.dontload;
    in.dontloadscales = l.dontloadscales;
    in.classes = l.classes;
    in.coords = l.coords;
    in.max_boxes = l.max_boxes;
    in.jitter = l.jitter;
    in.random = l.random;
    in.rolling_mean = l.rolling_mean;
    in.rolling_variance = l.rolling_variance;
    in.updates[MN_UPDATE_WEIGHTS] = l.weight_updates;
    in.updates[MN_UPDATE_BIASES] = l.bias_updates;
    in.updates[MN_UPDATE_SCALES] = l.scale_updates;
    in.params[MN_UPDATE_WEIGHTS] = l.weights;
    in.params[MN_UPDATE_BIASES] = l.biases;
    in.params[MN_UPDATE_SCALES] = l.scales;
#ifdef DARKNET_GPU
    in.rolling_mean_gpu = l.rolling_mean_gpu;
    in.rolling_variance_gpu = l.rolling_variance_gpu;
    in.updates_gpu[MN_UPDATE_WEIGHTS] = l.weight_updates_gpu;
    in.updates_gpu[MN_UPDATE_BIASES] = l.bias_updates_gpu;
    in.updates_gpu[MN_UPDATE_SCALES] = l.scale_updates_gpu;
    in.params_gpu[MN_UPDATE_WEIGHTS] = l.weights_gpu;
    in.params_gpu[MN_UPDATE_BIASES] = l.biases_gpu;
    in.params_gpu[MN_UPDATE_SCALES] = l.scales_gpu;
#endif
    return in;
}

mn_layer_info mn_layer_last(const network *net) { return mn_layer_get(net, N(net).n - 1); }

void mn_layer_set_update(network *net, int i, int which, float *p)
{
    Darknet::Layer &l = N(net).layers[i];
    (which == MN_UPDATE_WEIGHTS ? l.weight_updates : which == MN_UPDATE_BIASES ? l.bias_updates : l.scale_updates) = p;
}

#ifdef DARKNET_GPU
/* The fork's push and pull functions for the layer types mn_layer_params
 * lists; they take a mutable layer but write only one side of it. */
void mn_layer_move(const layer *lp, int to_device)
{
    if (Darknet::CfgAndState::get().gpu_index < 0) return;
    Darknet::Layer &l = const_cast<Darknet::Layer &>(L(lp));
    if (l.type == T::CONVOLUTIONAL) (to_device ? push_convolutional_layer : pull_convolutional_layer)(l);
    else if (l.type == T::CONNECTED) (to_device ? push_connected_layer : pull_connected_layer)(l);
    else mn_base_move_layer(lp, to_device);
}

void *mn_base_stream(void)
{
    return Darknet::CfgAndState::get().gpu_index >= 0 ? static_cast<void *>(get_cuda_stream()) : nullptr;
}

/* The push is asynchronous on the stream; the pull waits for it. */
void mn_base_push(float *dev, float *host, size_t n) { cuda_push_array(dev, host, n); }
void mn_base_pull(float *dev, float *host, size_t n) { cuda_pull_array(dev, host, n); }
void mn_base_fill_gpu(int n, float value, float *x) { fill_ongpu(n, value, x, 1); }
void mn_base_copy_gpu(int n, const float *x, float *y) { copy_ongpu(n, const_cast<float *>(x), 1, y, 1); }
#else
void mn_layer_move(const layer *l, int to_device) { (void)l, (void)to_device; }
void *mn_base_stream(void) { return nullptr; }
#endif
void mn_base_move_layer(const layer *l, int to_device) { (void)l, (void)to_device; }

network *mn_base_parse(const char *cfgfile) { return C(new Darknet::Network(parse_network_cfg(cfgfile))); }
/* As the fork's validate_detector_map parses its network. */
network *mn_base_parse_batch1(const char *cfgfile) { return C(new Darknet::Network(parse_network_cfg_custom(cfgfile, 1, 1))); }

void mn_base_free(network *net)
{
    mn_dnnl_free(N(net).layer_engine);
    free_network(N(net));
    delete &N(net);
}

size_t mn_base_iteration(const network *net) { return (size_t)get_current_batch(N(net)); }
float mn_base_rate(const network *net) { return get_current_rate(N(net)); }

void mn_base_set_iteration(network *net, size_t it)
{
    if (N(net).t) *N(net).t = (int)it;
    *N(net).cur_iteration = (int)it;
}

float mn_base_train(network *net, const mn_batch *b)
{
    sync_iteration(N(net));
    return train_network(N(net), *static_cast<const data *>(b->own));
}

void mn_base_save_weights(network *net, const char *path, int cutoff)
{
    sync_iteration(N(net));
    save_weights_upto(N(net), path, cutoff, 0);
}

float mn_base_cost(const network *net) { return get_network_cost(N(net)); }
float *mn_base_predict(network *net, float *input) { return network_predict(N(net), input); }

/* As the fork's validate_detector_map and test_detector. */
void mn_base_inference(network *net)
{
    fuse_conv_batchnorm(N(net));
    calculate_binary_weights(net);
}

mn_image mn_base_detector_input(const network *net, mn_image m, int *letter)
{
    image im = mn_base_image(m);
    *letter = N(net).letter_box;
    return mn_image_of(*letter ? Darknet::letterbox_image(im, N(net).w, N(net).h)
                            : Darknet::resize_image(im, N(net).w, N(net).h));
}

/* Relative always: mn_base_nms makes pixels of them. */
detection *mn_base_boxes(network *net, int w, int h, float thresh, float hier, int relative, int letter, int *num)
{
    (void)relative;
    return get_network_boxes(net, w, h, thresh, hier, nullptr, 1, num, letter);
}

/* The fork's replace_image_to_label: the image's name with .txt. It writes
 * without a bound, so into room for the path and any suffix it adds. */
int mn_base_label_path(const char *path, char *out, size_t cap)
{
    std::vector<char> tmp(strlen(path) + 4096);
    replace_image_to_label(path, tmp.data());
    snprintf(out, cap, "%s", tmp.data());
    return 1;
}

/* As validate_detector_map, on relative boxes; pixels after. */
void mn_base_nms(const network *net, detection *dets, int n, int classes, float thresh, int w, int h, int relative)
{
    const Darknet::Layer &l = N(net).layers[N(net).n - 1];
    if (l.nms_kind == DEFAULT_NMS) do_nms_sort(dets, n, classes, thresh);
    else diounms_sort(dets, n, classes, thresh, l.nms_kind, l.beta_nms);
    if (!relative) mn_base_boxes_to_pixels(dets, n, w, h);
}

void mn_base_hierarchy(float *pred, int n, tree *hier) { Darknet::hierarchy_predictions(pred, n, hier, 1); }

int mn_base_truth_size(const network *net)
{
    int t = N(net).layers[N(net).n - 1].truth_size;
    return t > 0 ? t : 5;
}

void mn_base_fill_truth(const network *net, const char *path, int boxes, float *truth, int classes)
{
    fill_truth_detection(path, boxes, mn_base_truth_size(net), truth, classes, 0, 0, 0, 1, 1, N(net).w, N(net).h);
}

/* The fork's loader: a control thread a batch, over its permanent loading
 * threads (each on its own random stream, patch 0014); detection only. */
struct mn_base_loader {
    load_args args;
    data rows;
    std::thread thread;
};

mn_base_loader *mn_base_loader_create(network *net, const mn_base_loader_cfg *cfg)
{
    if (!cfg->detector) return nullptr;   /* mn_base_refuse said why first */
    const Darknet::Network &n = N(net);
    const Darknet::Layer &l = n.layers[n.n - 1];
    mn_base_loader *ld = new (std::nothrow) mn_base_loader();
    if (!ld) return nullptr;
    load_args &a = ld->args;
    /* What the fork's train_detector sets (detector.cpp), threads aside. */
    a.w = n.w;
    a.h = n.h;
    a.c = n.c;
    a.paths = cfg->paths;
    a.n = n.batch * n.subdivisions;
    a.m = cfg->n;
    a.classes = l.classes;
    a.flip = n.flip;
    a.jitter = l.jitter;
    a.resize = l.resize;
    a.num_boxes = l.max_boxes;
    a.truth_size = mn_base_truth_size(net);
    a.d = &ld->rows;
    a.type = DETECTION_DATA;
    a.threads = cfg->threads;
    a.angle = n.angle;
    a.gaussian_noise = n.gaussian_noise;
    a.blur = n.blur;
    a.mixup = n.mixup;
    a.exposure = n.exposure;
    a.saturation = n.saturation;
    a.hue = n.hue;
    a.letter_box = n.letter_box;
    a.mosaic_bound = n.mosaic_bound;
    a.contrastive = n.contrastive;
    a.contrastive_jit_flip = n.contrastive_jit_flip;
    a.contrastive_color = n.contrastive_color;
    return ld;
}

void mn_base_loader_start(mn_base_loader *ld, int w, int h)
{
    if (w > 0) {
        ld->args.w = w;
        ld->args.h = h;
    }
    ld->thread = std::thread(Darknet::run_image_loading_control_thread, ld->args);
}

/* The fork's rows as a batch: the struct moves to the heap, the batch's own. */
static mn_batch batch_of(data d)
{
    data *own = new (std::nothrow) data(d);
    if (!own) {
        Darknet::free_data(d);
        mn_fatal(MN_EXIT_RERUN, "out of memory for a batch's header");
    }
    return mn_batch{d.X.rows, d.X.cols, d.y.cols, d.X.vals, d.y.vals, own};
}

mn_batch mn_base_loader_wait(mn_base_loader *ld)
{
    if (!ld->thread.joinable()) return mn_batch{};
    ld->thread.join();
    data d = ld->rows;
    ld->rows = data{};
    return batch_of(d);
}

/* And the fork's permanent loading threads, which a later loader starts anew. */
void mn_base_loader_free(mn_base_loader *ld)
{
    if (!ld) return;
    if (ld->thread.joinable()) {
        mn_batch b = mn_base_loader_wait(ld);
        mn_base_free_batch(&b);
    }
    Darknet::stop_image_loading_threads();
    delete ld;
}

mn_batch mn_base_make_batch(int rows, int x_cols, int y_cols)
{
    data d = {};
    d.X = make_matrix(rows, x_cols);
    d.y = make_matrix(rows, y_cols);
    return batch_of(d);
}

void mn_base_free_batch(mn_batch *b)
{
    data *own = static_cast<data *>(b->own);
    if (own) Darknet::free_data(*own);
    delete own;
    *b = mn_batch{};
}

/* The previous hook's context is ours to free once the fork no longer calls it. */
void mn_base_set_image_hook(mn_base_image_hook f, void *ctx)
{
    image_hook *old = static_cast<image_hook *>(load_image_hook_ctx);
    load_image_hook = nullptr;
    load_image_hook_ctx = nullptr;
    delete old;
    if (!f) return;
    load_image_hook_ctx = new image_hook{f, ctx};
    load_image_hook = on_load_image;
}

void mn_base_set_label_path_hook(void (*f)(void *ctx, const char *image, char *labelpath), void *ctx)
{
    label_path_hook = nullptr;
    label_path_hook_ctx = ctx;
    label_path_hook = f;
}

void mn_base_set_box_line_hook(int (*f)(void *ctx, const char *line), void *ctx)
{
    read_boxes_line_hook = nullptr;
    read_boxes_line_hook_ctx = ctx;
    read_boxes_line_hook = f;
}

mn_image mn_base_make_image(int w, int h, int c) { return mn_image_of(make_image(w, h, c)); }
void mn_base_free_image(mn_image m)
{
    image im = mn_base_image(m);
    Darknet::free_image(im);
}
mn_image mn_base_load_image(const char *path, int w, int h) { return mn_image_of(Darknet::load_image(path, w, h, 3)); }
mn_image mn_base_resize_image(mn_image im, int w, int h) { return mn_image_of(Darknet::resize_image(mn_base_image(im), w, h)); }
mn_image mn_base_crop_image(mn_image im, int dx, int dy, int w, int h)
{
    return mn_image_of(Darknet::crop_image(mn_base_image(im), dx, dy, w, h));
}
mn_image mn_base_letterbox_image(mn_image im, int w, int h) { return mn_image_of(Darknet::letterbox_image(mn_base_image(im), w, h)); }

/* pjreddie's resize_min, which the fork dropped: the shorter side to min. */
mn_image mn_base_resize_min(mn_image m, int min)
{
    image im = mn_base_image(m);
    int w = im.w, h = im.h;
    if (w < h) {
        h = (h * min) / w;
        w = min;
    } else {
        w = (w * min) / h;
        h = min;
    }
    if (w == im.w && h == im.h) return mn_image_of(Darknet::copy_image(im));
    return mn_image_of(Darknet::resize_image(im, w, h));
}

/* The fork reads images with OpenCV (no stb): its samples, in RGB order. */
unsigned char *mn_base_decode(const char *path, int channels, int *w, int *h, int *c, const char **reason)
{
    int flag = channels == 1 ? cv::IMREAD_GRAYSCALE : channels == 3 ? cv::IMREAD_COLOR : cv::IMREAD_UNCHANGED;
    cv::Mat m;
    try {
        m = cv::imread(path, flag);
    } catch (const cv::Exception &) {
        m = cv::Mat();
    }
    if (!m.empty() && m.depth() != CV_8U) m.convertTo(m, CV_8U, m.depth() == CV_16U ? 1.0 / 257 : 1.0);
    if (!m.empty() && channels == 4 && m.channels() != 4)
        cv::cvtColor(m, m, m.channels() == 1 ? cv::COLOR_GRAY2BGRA : cv::COLOR_BGR2BGRA);
    if (!m.empty() && m.channels() == 3) cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
    else if (!m.empty() && m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2RGBA);
    if (m.empty()) {
        if (reason) *reason = "OpenCV cannot read it as an image";
        return nullptr;
    }
    size_t row = (size_t)m.cols * m.channels();
    unsigned char *p = static_cast<unsigned char *>(malloc(row * m.rows));
    if (!p) {
        if (reason) *reason = "out of memory";
        return nullptr;
    }
    for (int y = 0; y < m.rows; ++y) memcpy(p + row * y, m.ptr<unsigned char>(y), row);
    *w = m.cols;
    *h = m.rows;
    *c = m.channels();
    if (reason) *reason = nullptr;
    return p;
}

list *mn_base_read_options(const char *path) { return read_data_cfg(path); }
char *mn_base_option(list *options, const char *key) { return const_cast<char *>(option_find(options, key)); }

void mn_base_free_options(list *options)
{
    if (!options) return;
    free_list_contents_kvp(options);   /* key and value share the line key points to */
    free_list(options);
}

char **mn_base_read_lines(const char *path, int *n)
{
    list *l = get_paths(path);
    *n = l->size;
    char **lines = reinterpret_cast<char **>(list_to_array(l));
    free_list(l);
    return lines;
}

char *mn_base_cfg_name(const char *cfgfile) { return const_cast<char *>(basecfg(cfgfile)); }

void mn_base_replace(const char *path, const char *const *from, const char *const *to, int n, char *out)
{
    char tmp[4096];
    /* Not in place: find_replace copies str onto output when nothing matches. */
    find_replace(path, const_cast<char *>(from[0]), const_cast<char *>(to[0]), out);
    for (int i = 1; i < n; ++i) {
        find_replace(out, const_cast<char *>(from[i]), const_cast<char *>(to[i]), tmp);
        strcpy(out, tmp);
    }
}

mn_truth *mn_base_read_boxes(const char *path, int *n)
{
    box_label *l = read_boxes(path, n);
    mn_truth *t = static_cast<mn_truth *>(malloc(static_cast<size_t>(*n) * sizeof *t + 1));
    if (!t) mn_fatal(MN_EXIT_RERUN, "out of memory for an image's truth boxes");
    for (int i = 0; i < *n; ++i) t[i] = mn_truth{l[i].id, l[i].x, l[i].y, l[i].w, l[i].h};
    free(l);
    return t;
}
float mn_base_box_iou(box a, box b) { return box_iou(a, b); }
void mn_base_nms_obj(detection *dets, int n, int classes, float thresh) { do_nms_obj(dets, n, classes, thresh); }
void mn_base_free_detections(detection *dets, int n) { free_detections(dets, n); }
void mn_base_top_k(float *a, int n, int k, int *index) { top_k(a, n, k, index); }

void mn_base_load_weights(network *net, const char *path) { load_weights(&N(net), path); }
void mn_base_resize(network *net, int w, int h) { resize_network(&N(net), w, h); }
void mn_base_set_batch(network *net, int batch) { set_batch_network(&N(net), batch); }

/* As on AlexeyAB's: a zero truth buffer, and none on a GPU. */
int mn_base_forward(network *net, const float *input)
{
    Darknet::Network &n = N(net);
    if (mn_base_gpu() >= 0) return -1;
    int most = n.layers[n.n - 1].outputs;
    for (int i = 0; i < n.n; ++i) most = std::max(most, n.layers[i].truths);
    std::vector<float> truth((size_t)most * n.batch, 0.0f);
    Darknet::NetworkState s = {};
    s.net = n;
    s.input = const_cast<float *>(input);
    s.truth = truth.data();
    s.train = 1;
    forward_network(n, s);
    return 0;
}
int mn_base_backward(network *net, const float *input)
{
    Darknet::Network &n = N(net);
    if (mn_base_gpu() >= 0) return -1;
    Darknet::NetworkState s = {};
    s.net = n;
    s.input = const_cast<float *>(input);
    s.train = 1;
    backward_network(n, s);
    return 0;
}
int mn_base_update(network *net)
{
    if (mn_base_gpu() >= 0) return -1;
    update_network(N(net));
    return 0;
}

int mn_base_gpu(void) { return Darknet::CfgAndState::get().gpu_index; }
void mn_base_set_gpu(int device) { Darknet::CfgAndState::get().gpu_index = device; }

/* The order of the fork's save_weights_upto. */
int mn_layer_params(const layer *lp, mn_param *o, int max)
{
    const Darknet::Layer &l = L(lp);
    /* update_network skips a layer without l.train: frozen, not averaged. */
    int t = l.update != nullptr && l.train;
    size_t n = (size_t)l.n;
    int k = 0;
    switch (l.type) {
    case T::CONVOLUTIONAL:
        if (l.share_layer) return -1;
        k = add(o, k, max, l.biases, t ? l.bias_updates : nullptr, n);
        if (l.batch_normalize) {
            k = add(o, k, max, l.scales, t ? l.scale_updates : nullptr, n);
            k = add(o, k, max, l.rolling_mean, nullptr, n);
            k = add(o, k, max, l.rolling_variance, nullptr, n);
        }
        return add(o, k, max, l.weights, t ? l.weight_updates : nullptr, (size_t)l.nweights);
    case T::CONNECTED:
        n = (size_t)l.outputs;
        k = add(o, k, max, l.biases, t ? l.bias_updates : nullptr, n);
        k = add(o, k, max, l.weights, t ? l.weight_updates : nullptr, n * (size_t)l.inputs);
        if (l.batch_normalize) {
            k = add(o, k, max, l.scales, t ? l.scale_updates : nullptr, n);
            k = add(o, k, max, l.rolling_mean, nullptr, n);
            k = add(o, k, max, l.rolling_variance, nullptr, n);
        }
        return k;
    case T::SHORTCUT:
        return l.nweights > 0 ? -1 : 0;
    case T::RNN:
    case T::LSTM:
    case T::CRNN:
        return -1;
    default:
        return 0;
    }
}

const char *mn_base_refused_layer(const layer *lp)
{
    const Darknet::Layer &l = L(lp);
    switch (l.type) {
    case T::CONVOLUTIONAL:
        if (l.xnor) return "a convolutional layer with xnor=1 (not trained on this base yet)";
        return l.share_layer ? "a convolutional layer with share_index (weights shared with another layer)" : nullptr;
    case T::SHORTCUT: return l.nweights > 0 ? "a shortcut layer with weights_type (weighted shortcut)" : nullptr;
    case T::RNN: return "an rnn layer";
    case T::LSTM: return "an lstm layer";
    case T::CRNN: return "a crnn layer";
    default: return nullptr;
    }
}

/* The fork has no classifier loader, and the same keys as AlexeyAB's break
 * N x b = 1 x N*b. */
const char *mn_base_refuse(const network *net, int sync_bn, int detector)
{
    /* Before the parse: the fork's parser stops on the stock classifier
     * cfgs' crop keys. */
    if (!detector)
        return "classifier training (the fork has no classifier loader: train classifiers with darknet-mn built on "
               "AlexeyAB's Darknet, make DARKNET=alexeyab, or pjreddie's, make; detector train works here)";
    if (!net) return nullptr;
#ifdef GPU
    if (N(net).gpu_index < 0)
        return "-nogpu with its GPU build (the fork's training then updates on device -1, a fatal CUDA error at the "
               "first update); to train on the CPU, use the CPU build: make DARKNET=hankai";
    if (sync_bn) {
        /* As on AlexeyAB's, with patch 0022. */
        const Darknet::Network &n = N(net);
        if (n.cudnn_half && n.loss_scale != 1)
            return "sync_bn=1 with loss_scale (half precision: cuDNN's own batch norm, which calls no hook)";
        for (int i = 0; i < n.n; ++i) {
            const Darknet::Layer &l = n.layers[i];
            if (!l.batch_normalize) continue;   /* the fork has no [batchnorm] layer */
            if (l.batch_normalize == 2) return "sync_bn=1 with batch_normalize=2 (cross-iteration batch norm) on the GPU";
            if (!l.mean_delta_gpu || !l.variance_delta_gpu || !l.x_gpu)
                return "sync_bn=1 on a GPU build whose batch norm lacks darknet-mn's patch 0022 (rebuild: make GPU=1 "
                       "DARKNET=hankai)";
        }
    }
#else
    (void)sync_bn;
#endif
    /* The fork's loader would stop on these at the first batch. */
    if (N(net).mixup == 2 || N(net).mixup == 4) return "[net] cutmix=1 (the fork's detection loader has no cutmix; remove it)";
    if (N(net).mixup == 3 && N(net).letter_box)
        return "[net] mosaic=1 with letter_box=1 (the fork's detection loader cannot combine them; set mosaic=0)";
    if (N(net).adversarial_lr > 0) return "adversarial_lr (each rank would draw its own adversarial steps)";
    if (N(net).dynamic_minibatch) return "dynamic_minibatch (each rank's batch would change on its own)";
    return nullptr;
}

}   // extern "C"

#ifdef MN_DNNL
/* The layer engine's hooks, as on AlexeyAB's base. */
namespace {
bool engine_refuses(const Darknet::Layer &l)
{
    return l.type != T::CONVOLUTIONAL || l.xnor || l.binary || l.antialiasing || l.assisted_excitation ||
           l.share_layer || l.deform;
}

mn_conv conv_view(Darknet::Layer &l)
{
    int dilation = l.dilation < 1 ? 1 : l.dilation;
    return mn_conv{l.batch, l.c, l.h, l.w, l.n, l.groups, l.size, l.out_h, l.out_w,
                   l.stride_y, l.stride_x, dilation, l.pad * dilation, l.weights, l.delta, l.weight_updates};
}

const mn_bn_base bn_base = {.9f, .1f, 1, 0};

bool bn_fuses(const Darknet::Layer &l) { return l.activation == LEAKY || l.activation == LINEAR; }

mn_bn_layer bn_view(Darknet::Layer &l, Darknet::Network &net)
{
    mn_bn_layer v = {};
    v.batch = l.batch, v.c = l.out_c, v.size = l.out_h * l.out_w, v.leaky = l.activation == LEAKY;
    v.x = l.x, v.x_norm = l.x_norm, v.output = l.output, v.delta = l.delta;
    v.mean = l.mean, v.variance = l.variance, v.rolling_mean = l.rolling_mean, v.rolling_variance = l.rolling_variance;
    v.scales = l.scales, v.biases = l.biases, v.bias_updates = l.bias_updates, v.scale_updates = l.scale_updates;
    v.mean_delta = l.mean_delta, v.variance_delta = l.variance_delta;
    v.sync = reinterpret_cast<mn_net_bn_sync>(net.bn_sync);
    v.net = reinterpret_cast<network *>(&net);
    v.ranks = net.ranks;
    return v;
}

mn_fork_act act_view(Darknet::Layer &l)
{
    return mn_fork_act{l.activation, l.output, l.activation_input, l.delta, l.outputs * l.batch, l.batch, l.out_c,
                       l.out_w * l.out_h};
}
void act_forward(Darknet::Layer &l) { mn_fork_act a = act_view(l); mn_fork_act_forward(&a); }
void act_backward(Darknet::Layer &l) { mn_fork_act a = act_view(l); mn_fork_act_backward(&a); }

void engine_forward(Darknet::Layer &l, Darknet::NetworkState state)
{
    if (l.train == 0) state.train = 0;   /* frozen: no statistics buffers */
    bool bn = l.batch_normalize && state.train;
    mn_conv v = conv_view(l);
    mn_dnnl_forward(state.net.layer_engine, state.index, &v, state.input, bn ? l.x : l.output);
    if (bn) {
        mn_bn_layer b = bn_view(l, state.net);
        mn_bn_forward(&bn_base, &b);
        if (!bn_fuses(l)) act_forward(l);
        return;
    }
    if (l.batch_normalize) forward_batchnorm_layer(l, state);
    else add_bias(l.output, l.biases, l.batch, l.n, l.out_h * l.out_w);
    act_forward(l);
}

void engine_backward(Darknet::Layer &l, Darknet::NetworkState state)
{
    if (l.batch_normalize && state.train && l.train) {
        if (!bn_fuses(l)) act_backward(l);
        mn_bn_layer b = bn_view(l, state.net);
        mn_bn_backward(&bn_base, &b);
    } else {
        act_backward(l);
        if (l.batch_normalize) backward_batchnorm_layer(l, state);
        else backward_bias(l.bias_updates, l.delta, l.batch, l.n, l.out_w * l.out_h);
    }
    /* The fork's backward writes over the input gradient, 1x1 or not. */
    mn_conv v = conv_view(l);
    mn_dnnl_backward(state.net.layer_engine, state.index, &v, state.input, state.delta, 1);
}

/* The fork's padding is size-1 unless given: -pad/2 is 0 for size 2. */
bool pool2(const Darknet::Layer &l)
{
    return !l.maxpool_depth && !l.antialiasing && l.size == 2 && l.stride_x == 2 && l.stride_y == 2 && l.pad / 2 == 0 &&
           l.w % 2 == 0 && l.h % 2 == 0 && l.out_w == l.w / 2 && l.out_h == l.h / 2 && l.out_c == l.c;
}

void pool_forward(Darknet::Layer &l, Darknet::NetworkState state)
{
    mn_maxpool2(state.input, l.output, l.indexes, l.w, l.h, l.batch * l.c);
}

int engine_layers(const network *net) { return N(net).n; }
void **engine_state(network *net) { return &N(net).layer_engine; }

int engine_hook(network *net, int i)
{
    Darknet::Layer &l = N(net).layers[i];
    if (l.type == T::MAXPOOL && pool2(l)) {
        l.forward = pool_forward;
        return MN_DNNL_POOL;
    }
    if (engine_refuses(l)) return MN_DNNL_KEEP;
    l.forward = engine_forward;
    l.backward = engine_backward;
    return MN_DNNL_CONV;
}

const mn_dnnl_ops engine_ops = {engine_layers, engine_hook, engine_state};
}   // namespace

extern "C" const mn_dnnl_ops *mn_base_dnnl_ops(void) { return &engine_ops; }
#else
extern "C" const mn_dnnl_ops *mn_base_dnnl_ops(void) { return nullptr; }
#endif
