/* double_buffering_prediction=k (mn_dbuf_predict.c; docs/internals.md). */
#ifndef MN_DBUF_PREDICT_H
#define MN_DBUF_PREDICT_H

#include "train/mn_training.h"

/* From forward to the hook the weights w hold w + k (w - w0), w0 those
 * before the last update; between steps they are w. weights: the n host
 * arrays; weights_gpu: their device copies (NULL: on the host). */
typedef struct mn_dbuf_predict mn_dbuf_predict;
mn_status mn_dbuf_predict_new(mn_comm *c, float **weights, float **weights_gpu, const size_t *lens, int n, float k,
                       mn_dbuf_predict **out);
void mn_dbuf_predict_free(mn_dbuf_predict *p);
/* Before forward: w0 = w, and w predicted where ahead is non-zero. */
void mn_dbuf_predict_step(mn_dbuf_predict *p, int ahead);
/* At the hook, before Darknet's update: w back. */
void mn_dbuf_predict_back(mn_dbuf_predict *p);
/* Whether the weights hold a prediction now. */
int mn_dbuf_predict_holds(const mn_dbuf_predict *p);
/* While predicting: the true weights packed (on the device in a GPU run),
 * and the prediction packed on the device (NULL on the host). */
const float *mn_dbuf_predict_kept(const mn_dbuf_predict *p);
const float *mn_dbuf_predict_taken(const mn_dbuf_predict *p);
#ifdef GPU
/* The kept weights copied to page-locked host on the base's stream, no
 * wait; returns the copy. */
float *mn_dbuf_predict_pull_kept(mn_dbuf_predict *p);
#endif
/* Checkpoints: w0 (total floats) out, or in. */
void mn_dbuf_predict_get(mn_dbuf_predict *p, float *w0);
void mn_dbuf_predict_set(mn_dbuf_predict *p, const float *w0);

/* One step of the arithmetic on n floats: k0 = w; w = w + k (w - k0). */
void mn_dbuf_predict_floats(float *w, float *k0, size_t n, float k);

#endif
