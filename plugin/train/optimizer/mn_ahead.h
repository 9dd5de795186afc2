/* double_buffering_prediction (mn_ahead.c). */
#ifndef MN_AHEAD_H
#define MN_AHEAD_H

#include "mn_training.h"

/* double_buffering_prediction=k (weight prediction, after SpecTrain and
 * PipeMare): with double buffering a gradient is applied one update after
 * the weights it was taken at. Before each forward pass the weights w
 * become w + k (w - w0), w0 those before the last update: where the update
 * in between is predicted to take them, so that the gradient is taken near
 * the weights it will be applied at. At the hook, before Darknet's update,
 * the weights are w again; a checkpoint, an evaluation or a rescue between
 * steps sees them. On the host (weights: the n host arrays) or, in a GPU
 * run, on the device (weights_gpu: their device copies, packed through
 * tables; the arithmetic rounds each operation as the host's does). */
typedef struct mn_ahead mn_ahead;
mn_status mn_ahead_new(mn_comm *c, float **weights, float **weights_gpu, const size_t *lens, int n, float k,
                       mn_ahead **out);
void mn_ahead_free(mn_ahead *p);
/* Before forward: w0 = w, and w becomes the prediction where ahead is
 * non-zero (the gradient of this step goes one step stale). */
void mn_ahead_step(mn_ahead *p, int ahead);
/* At the hook: w as it was before mn_ahead_step (nothing where it did
 * not predict). */
void mn_ahead_back(mn_ahead *p);
/* Whether the weights hold a prediction now. */
int mn_ahead_holds(const mn_ahead *p);
/* The weights w packed (the host's, or the device's in a GPU run) while
 * they hold a prediction; and that prediction, packed, on the device (NULL
 * on the host, where it is the weight arrays themselves). */
const float *mn_ahead_kept(const mn_ahead *p);
const float *mn_ahead_taken(const mn_ahead *p);
#ifdef GPU
/* A GPU run's kept weights copied to host (page-locked, total floats) on
 * the base's stream, the host not waiting; returns the host copy. */
float *mn_ahead_pull_kept(mn_ahead *p);
#endif
/* Checkpoints: w0 (total floats) out, or in. */
void mn_ahead_get(mn_ahead *p, float *w0);
void mn_ahead_set(mn_ahead *p, const float *w0);

/* One step of the arithmetic on n floats: k0 = w; w = w + k (w - k0). */
void mn_ahead_floats(float *w, float *k0, size_t n, float k);

#endif
