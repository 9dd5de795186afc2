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
 * count, or -1 for a layer type darknet-mn cannot train yet. */
int mn_layer_params(const layer *l, mn_param *out, int max);
#define MN_MAX_LAYER_PARAMS 48

#endif
