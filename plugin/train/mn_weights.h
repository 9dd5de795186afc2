/* A network's parameters in weights-file order (mn_weights.c). */
#ifndef MN_WEIGHTS_H
#define MN_WEIGHTS_H

#include "mn_internal.h"

/* All parameters and running statistics of net, in weights-file order:
 * their count, and copies to / from one flat buffer (pulling from or pushing
 * to the GPU in a GPU run). */
size_t mn_params_count(const network *net);
void mn_params_pack(network *net, float *buf);
void mn_params_unpack(network *net, const float *buf);
/* Each array of that order to fn (pulled from the GPU first in a GPU run),
 * the running statistics taken from stats (their values in that order)
 * where stats is not NULL. */
void mn_params_each(network *net, const float *stats, void (*fn)(const float *p, size_t n, void *arg), void *arg);
#endif
