/* rescue=1 in a GPU run (mn_rescue_gpu.c): each update's state copied to host, so
 * a rescue never waits for a hung GPU. A failing CUDA call in the training
 * thread ends the job through mn_abort. */
#ifndef MN_RESCUE_GPU_H
#define MN_RESCUE_GPU_H

#include "train/mn_training.h"

#ifdef GPU
typedef struct mn_rescue_gpu mn_rescue_gpu;
/* The network's parameters (mn_net_views order), then the momentum dev.
 * Not collective. MN_OK with *out NULL and why set where it cannot be: the
 * run goes on without a rescue. */
mn_status mn_rescue_gpu_new(mn_comm *c, network *net, float **dev, const size_t *lens, int n, mn_rescue_gpu **out, char *why,
                      size_t cap);
void mn_rescue_gpu_free(mn_rescue_gpu *h);
/* The step's first work on the base's stream waits for the last copy. */
void mn_rescue_gpu_before(mn_rescue_gpu *h);
/* mn_rescue_order_drain. */
void mn_rescue_gpu_drain(mn_rescue_gpu *h);
/* After the step's update was issued: copy the state it leaves (done: mn_now). */
void mn_rescue_gpu_after(mn_rescue_gpu *h, uint64_t it, uint64_t seen, double done);
/* The newest complete copy (mn_rescue_order_read); 0, or -1 where none.
 * The caller keeps mn_rescue_gpu_after from running meanwhile. */
typedef struct {
    const float *params, *momentum;
    size_t nparams, nmomentum;
    uint64_t iteration, seen;
    double done;
} mn_rescue_gpu_state;
int mn_rescue_gpu_read(mn_rescue_gpu *h, long wait_us, mn_rescue_gpu_state *out);
#endif

#endif
