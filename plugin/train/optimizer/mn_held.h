/* rescue=1 in a GPU run (mn_held.c): after each update, the state it left
 * (every parameter, running statistics included, and the momentum) is
 * copied to page-locked host memory on a copy stream, overlapped with the
 * next step, so that a lost job's rescue reads host memory only and never
 * waits for a GPU that a hung collective holds. A failing CUDA call in the
 * training thread ends the job through mn_abort, naming it. */
#ifndef MN_HELD_H
#define MN_HELD_H

#include "mn_training.h"

#ifdef GPU
typedef struct mn_held mn_held;
/* The network's parameter arrays in its order (mn_net_views), then the n
 * device update arrays dev (lens floats each: Darknet's momentum). Not
 * collective. MN_OK with *out NULL where it cannot be (an array without a
 * device copy, or no page-locked memory): why says so, and the run goes on
 * without a rescue. */
mn_status mn_held_new(mn_comm *c, network *net, float **dev, const size_t *lens, int n, mn_held **out, char *why,
                      size_t cap);
void mn_held_free(mn_held *h);
/* Before the step's first work on the base's stream (its forward pass
 * writes the running statistics): that work waits for the last copy. */
void mn_held_before(mn_held *h);
/* Before the state is written outside a step (mn_rescue_order_drain): the
 * caller waits for every copy in flight. */
void mn_held_drain(mn_held *h);
/* After the step's update was issued: copy what it leaves, the state of
 * iteration it with seen images, completed at done (mn_now). */
void mn_held_after(mn_held *h, uint64_t it, uint64_t seen, double done);
/* The newest copy complete within wait_us (mn_rescue_order_read); 0, or -1
 * where none is. The caller keeps mn_held_after from running meanwhile. */
typedef struct {
    const float *params, *momentum;
    size_t nparams, nmomentum;
    uint64_t iteration, seen;
    double done;
} mn_held_state;
int mn_held_read(mn_held *h, long wait_us, mn_held_state *out);
#endif

#endif
