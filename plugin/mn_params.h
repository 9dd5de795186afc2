/* A network's parameters in weights-file order (mn_params.c). */
#ifndef MN_MN_PARAMS_H
#define MN_MN_PARAMS_H

#include "mn_internal.h"

/* The parameter arrays of a layer in weights-file order. grad is the matching
 * update array when the layer is trained, else NULL. */
typedef struct {
    float *data;
    float *grad;
    size_t n;
} mn_param;
/* All parameters and running statistics of net, in weights-file order:
 * their count, and copies to / from one flat buffer (pulling from or pushing
 * to the GPU in a GPU run). */
size_t mn_params_count(const network *net);
void mn_params_pack(network *net, float *buf);
void mn_params_unpack(network *net, const float *buf);
/* 64-bit FNV-1a, for signatures and checksums. */
#define MN_FNV_SEED 1469598103934665603ULL
uint64_t mn_fnv1a(uint64_t h, const void *p, size_t n);

/* Fills up to max entries for layer l (recurrent layers included); returns the
 * count, or -1 for a layer type darknet-mn cannot train yet. Defined by the
 * base's adapter (mn_base.h). */
int mn_layer_params(const layer *l, mn_param *out, int max);
#define MN_MAX_LAYER_PARAMS 48
/* The adapters' shared pieces: one entry at out[k] (when k < max), and the
 * arrays of a convolutional / connected / locally connected layer from out[k] on (trained: with
 * their update arrays); each returns the next k. */
int mn_params_add(mn_param *out, int k, int max, float *data, float *grad, size_t n);
int mn_params_conv(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_connected(const layer *l, mn_param *out, int k, int max, int trained);
int mn_params_local(const layer *l, mn_param *out, int k, int max, int trained);

#endif
