/* double_buffering=1 on the device (GPU builds, pure_nccl's mean_packed).
 * A failing CUDA or NCCL call ends the job through mn_abort. */
#ifndef MN_DBUF_GPU_H
#define MN_DBUF_GPU_H

#include "train/mn_training.h"

#ifdef GPU
typedef struct mn_dbuf_gpu mn_dbuf_gpu;
/* grads: the n device update arrays; weights: their parameters, for
 * compensation (NULL: none); local: double_buffering_local. Not collective. */
mn_status mn_dbuf_gpu_new(mn_comm *c, float **grads, float **weights, const size_t *lens, int n, int local,
                          mn_dbuf_gpu **out);
/* Waits for the mean in flight, then frees. */
void mn_dbuf_gpu_free(mn_dbuf_gpu *d);
/* At the hook, momentum set aside (blocks: the watchdog's window): sends
 * this gradient (NaN where poison); grads get, on the base's stream, the
 * previous mean compensated and scaled (zeros, 0: none), or with local
 * mn_dbuf_local's (1). w, eval: mn_dbuf_predict's packed weights, or NULL.
 * *bad: Inf or NaN in the result. */
int mn_dbuf_gpu_exchange(mn_dbuf_gpu *d, int poison, float lambda, float scale, const float *w, const float *eval, int *bad);
/* Whether a mean is in flight (or restored) for the next exchange. */
int mn_dbuf_gpu_pending(const mn_dbuf_gpu *d);
/* Checkpoints: the mean in flight (zeros where none; waits for it) and
 * compensation's prev and v (NULL: not kept) out, or in (mean NULL: none). */
void mn_dbuf_gpu_get(mn_dbuf_gpu *d, float *mean, float *prev, float *v);
void mn_dbuf_gpu_set(mn_dbuf_gpu *d, const float *mean, const float *prev, const float *v);
/* mn_dbuf_align on the device. */
void mn_dbuf_gpu_align(mn_dbuf_gpu *d);
#endif

#endif
