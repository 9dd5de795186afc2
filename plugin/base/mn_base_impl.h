/* What every adapter defines for base/'s own files, and the helpers they
 * share. Private to base/. */
#ifndef MN_BASE_IMPL_H
#define MN_BASE_IMPL_H

#include <string.h>
#include "base/mn_base.h"
#include "base/mn_base_util.h"

/* The plugin's image and the base's, both ways. */
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

/* Layer l's arrays in weights-file order into out; returns their count, or
 * -1 for a layer type darknet-mn cannot train. */
int mn_layer_params(const layer *l, mn_param *out, int max);
/* Pieces of it: one entry, or a layer kind's arrays, from out[k] on; each
 * returns the next k. */
int mn_params_add(mn_param *out, int k, int max, float *data, float *grad, size_t n);
int mn_params_conv(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_connected(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_local(const layer *l, mn_param *out, int k, int max, int trained);

/* What a refused layer is, for the message; NULL for one it can train. */
const char *mn_base_refused_layer(const layer *l);

/* mn_layer_move for the layer types beyond those it moves itself. */
void mn_base_move_layer(const layer *l, int to_device);

/* The adapters' mn_layer_info.flops from their layer's fields. */
static inline double mn_layer_flops(int conv, int connected, int n, int size, int c, int groups, int out_hw, int inputs,
                                    int outputs)
{
    if (conv) return 2.0 * n * size * size * (c / (groups > 0 ? groups : 1)) * out_hw;
    return connected ? 2.0 * inputs * outputs : 0;
}

/* Relative boxes to pixels, after the forks' NMS on relative boxes. */
static inline void mn_base_boxes_to_pixels(detection *dets, int n, int w, int h)
{
    for (int i = 0; i < n; ++i) {
        dets[i].bbox.x *= w;
        dets[i].bbox.w *= w;
        dets[i].bbox.y *= h;
        dets[i].bbox.h *= h;
    }
}

/* The exit status for a Darknet fatal error, read from its message: memory,
 * a thread or the device failing is "rerun"; anything else the user's. */
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
