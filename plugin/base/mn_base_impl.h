/* What every adapter defines for base/'s own files, and nothing above base/
 * includes (tests/layers.py --includes: a header named *_impl.h is private
 * to its folder): each layer's parameter arrays, the one question
 * mn_net_params.c asks to hand the network's over once (mn_net_views),
 * with the C bases' shared pieces of it (mn_base_params.c), and the helpers
 * the adapters share. */
#ifndef MN_BASE_IMPL_H
#define MN_BASE_IMPL_H

#include <string.h>
#include "mn_base.h"
#include "mn_base_util.h"

/* The plugin's image and the base's (every base's has these four fields),
 * both ways; in C and in hank-ai's C++ adapter alike. */
static inline mn_image mn_image_of(image im)
{
    mn_image m;
    m.w = im.w;
    m.h = im.h;
    m.c = im.c;
    m.data = im.data;
    return m;
}
static inline image mn_base_image(mn_image m)
{
    image im;
    memset(&im, 0, sizeof im);
    im.w = m.w;
    im.h = m.h;
    im.c = m.c;
    im.data = m.data;
    return im;
}

/* Layer l's arrays in weights-file order into out (up to max of them;
 * recurrent layers included); returns their count, or -1 for a layer type
 * darknet-mn cannot train yet. Each adapter defines it. */
int mn_layer_params(const layer *l, mn_param *out, int max);
/* The adapters' shared pieces: one entry at out[k] (when k < max), and the
 * arrays of a convolutional / connected / locally connected layer from out[k] on (trained: with
 * their update arrays); each returns the next k (mn_base_params.c). */
int mn_params_add(mn_param *out, int k, int max, float *data, float *grad, size_t n);
int mn_params_conv(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_connected(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_local(const layer *l, mn_param *out, int k, int max, int trained);

/* For a layer the adapter refuses (-1 from mn_layer_params, or one the base
 * cannot train in this build), what the layer is, for the message ("a
 * shortcut layer with weights"); NULL for a layer it can train. */
const char *mn_base_refused_layer(const layer *l);

/* GPU runs: the layer's parameters and statistics to the device (to_device)
 * or from it, for the layer types mn_layer_params lists beyond
 * convolutional, connected, batchnorm and local (mn_layer_move moves those). */
void mn_base_move_layer(const layer *l, int to_device);

/* The adapters' mn_layer_info.flops from their layer's fields. */
static inline double mn_layer_flops(int conv, int connected, int n, int size, int c, int groups, int out_hw, int inputs,
                                    int outputs)
{
    if (conv) return 2.0 * n * size * size * (c / (groups > 0 ? groups : 1)) * out_hw;
    return connected ? 2.0 * inputs * outputs : 0;
}

/* Relative boxes to pixels of a w x h image: the forks' mn_base_nms, after
 * their NMS on relative boxes. */
static inline void mn_base_boxes_to_pixels(detection *dets, int n, int w, int h)
{
    for (int i = 0; i < n; ++i) {
        dets[i].bbox.x *= w;
        dets[i].bbox.w *= w;
        dets[i].bbox.y *= h;
        dets[i].bbox.h *= h;
    }
}

/* The exit status for a Darknet's own fatal error (AlexeyAB's and
 * pjreddie's error(), hank-ai's darknet_fatal_error), read from its message:
 * memory, a thread or the device that failed is the exit table's "rerun"
 * (75); anything else is the cfg's or a file's (65). The three bases word
 * it "Calloc error", "failed to malloc", "cudaHostAlloc failed", "CUDA Error:",
 * "current CUDA error", "cuDNN Error:", "Thread creation failed". */
static inline int mn_base_fatal_exit(const char *message)
{
    static const char *const rerun[] = {"alloc", "out of memory", "cuda error", "cuda status", "cudnn error",
                                        "cudnn status", "cudnn current error", "cudnn most recent error",
                                        "thread creation", NULL};
    char low[512];
    size_t n = 0;
    for (; message && message[n] && n + 1 < sizeof low; ++n)
        low[n] = (char)(message[n] >= 'A' && message[n] <= 'Z' ? message[n] - 'A' + 'a' : message[n]);
    low[n] = 0;
    for (int i = 0; rerun[i]; ++i)
        if (strstr(low, rerun[i])) return MN_EXIT_RERUN;
    return MN_EXIT_USER;
}

#endif
