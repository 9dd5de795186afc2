/* rescue=1 in a GPU run (mn_held.c): each update's state copied to host, so
 * a rescue never waits for a hung GPU. A failing CUDA call in the training
 * thread ends the job through mn_abort. */
#ifndef MN_HELD_H
#define MN_HELD_H

#include "mn_training.h"

#ifdef GPU
typedef struct mn_held mn_held;
/* The network's parameters (mn_net_views order), then the momentum dev.
 * Not collective. MN_OK with *out NULL and why set where it cannot be: the
 * run goes on without a rescue. */
mn_status mn_held_new(mn_comm *c, network *net, float **dev, const size_t *lens, int n, mn_held **out, char *why,
                      size_t cap);
void mn_held_free(mn_held *h);
/* The step's first work on the base's stream waits for the last copy. */
void mn_held_before(mn_held *h);
/* mn_rescue_order_drain. */
void mn_held_drain(mn_held *h);
/* After the step's update was issued: copy the state it leaves (done: mn_now). */
void mn_held_after(mn_held *h, uint64_t it, uint64_t seen, double done);
/* The newest complete copy (mn_rescue_order_read); 0, or -1 where none.
 * The caller keeps mn_held_after from running meanwhile. */
typedef struct {
    const float *params, *momentum;
    size_t nparams, nmomentum;
    uint64_t iteration, seen;
    double done;
} mn_held_state;
int mn_held_read(mn_held *h, long wait_us, mn_held_state *out);
#endif

#endif
