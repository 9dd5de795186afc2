/* double_buffering=1 on the device (mn_dbuf_gpu.c; GPU builds), where the
 * communicator can issue a mean without waiting for it (mean_packed:
 * pure_nccl, the one ChainerMN double-buffers). Two packed device buffers:
 * step t's gradient is reduced in one on the communicator's stream while
 * step t+1 computes, and step t+1's update applies it. No host thread and
 * no copy through the host. A failing CUDA or NCCL call ends the job
 * through mn_abort, naming it. */
#ifndef MN_DBUF_GPU_H
#define MN_DBUF_GPU_H

#include "mn_training.h"

#ifdef GPU
typedef struct mn_dbuf_gpu mn_dbuf_gpu;
/* grads: Darknet's n device update arrays (lens floats each); weights: the
 * device parameters they update, for double_buffering_compensation (NULL:
 * none); local: double_buffering_local=1 (mn_dbuf.h). Not collective. */
mn_status mn_dbuf_gpu_new(mn_comm *c, float **grads, float **weights, const size_t *lens, int n, int local,
                          mn_dbuf_gpu **out);
/* Waits for the mean in flight, then frees. */
void mn_dbuf_gpu_free(mn_dbuf_gpu *d);
/* At the hook, the momentum part set aside: the previous mean waited for
 * (the caller's watchdog window), this step's gradient sent (made NaN where
 * poison: this rank's loss is not finite), and grads given the previous
 * mean, corrected with lambda (0: not) and times scale, all on the base's
 * stream; or zeros where there was none (returns 0). The correction's
 * weights: w (packed, on the device) where the weights hold a prediction
 * (eval, packed: mn_ahead.h), else NULL and they are read. *bad: the mean
 * held Inf or NaN. With local: grads given this step's gradient plus the
 * previous mean less this rank's previous gradient (its own alone where
 * there was no mean; returns 1); *bad: what they hold has Inf or NaN. */
int mn_dbuf_gpu_exchange(mn_dbuf_gpu *d, int poison, float lambda, float scale, const float *w, const float *eval, int *bad);
/* Whether a mean is in flight (or restored) for the next exchange. */
int mn_dbuf_gpu_pending(const mn_dbuf_gpu *d);
/* Checkpoints: the mean in flight (zeros where none) and compensation's
 * previous weights and mean square (NULL: not kept) copied out, once the
 * mean is complete; or in, as a mean in flight (mean NULL: none is). */
void mn_dbuf_gpu_get(mn_dbuf_gpu *d, float *mean, float *prev, float *v);
void mn_dbuf_gpu_set(mn_dbuf_gpu *d, const float *mean, const float *prev, const float *v);
/* With local: this rank's previous gradient becomes the mean in flight (mn_dbuf_align). */
void mn_dbuf_gpu_align(mn_dbuf_gpu *d);
#endif

#endif
