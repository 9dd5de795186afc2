/* double_buffering_prediction=k (mn_ahead.c; docs/internals.md). */
#ifndef MN_AHEAD_H
#define MN_AHEAD_H

#include "mn_training.h"

/* From forward to the hook the weights w hold w + k (w - w0), w0 those
 * before the last update; between steps they are w. weights: the n host
 * arrays; weights_gpu: their device copies (NULL: on the host). */
typedef struct mn_ahead mn_ahead;
mn_status mn_ahead_new(mn_comm *c, float **weights, float **weights_gpu, const size_t *lens, int n, float k,
                       mn_ahead **out);
void mn_ahead_free(mn_ahead *p);
/* Before forward: w0 = w, and w predicted where ahead is non-zero. */
void mn_ahead_step(mn_ahead *p, int ahead);
/* At the hook, before Darknet's update: w back. */
void mn_ahead_back(mn_ahead *p);
/* Whether the weights hold a prediction now. */
int mn_ahead_holds(const mn_ahead *p);
/* While predicting: the true weights packed (on the device in a GPU run),
 * and the prediction packed on the device (NULL on the host). */
const float *mn_ahead_kept(const mn_ahead *p);
const float *mn_ahead_taken(const mn_ahead *p);
#ifdef GPU
/* The kept weights copied to page-locked host on the base's stream, no
 * wait; returns the copy. */
float *mn_ahead_pull_kept(mn_ahead *p);
#endif
/* Checkpoints: w0 (total floats) out, or in. */
void mn_ahead_get(mn_ahead *p, float *w0);
void mn_ahead_set(mn_ahead *p, const float *w0);

/* One step of the arithmetic on n floats: k0 = w; w = w + k (w - k0). */
void mn_ahead_floats(float *w, float *k0, size_t n, float k);

#endif
