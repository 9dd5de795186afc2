/* double_buffering=1 (mn_dbuf.c). */
#ifndef MN_MN_DBUF_H
#define MN_MN_DBUF_H

#include "mn_training.h"
#include "mn_coll.h"

/* double_buffering=1 (mn_dbuf.c): a thread with its own communicator averages
 * the previous step's gradient while the next one is computed. start and
 * stop are collective (stop waits for the mean in flight). exchange: waits
 * for the previous mean, sends arena's fresh gradient g and leaves in arena
 * the previous mean (zeros at the first step), or with local (mn_dbuf_local)
 * g + (previous mean - this rank's previous g) (g alone at the first step);
 * returns 0 when there was no mean in it. */
typedef struct mn_dbuf mn_dbuf;
mn_status mn_dbuf_start(mn_comm *c, const size_t *lens, int n, size_t total, int local, mn_dbuf **out);
int mn_dbuf_exchange(mn_dbuf *d, float *arena);
/* The mean in flight, once finished (for checkpoints), and whether there is one. */
float *mn_dbuf_pending(mn_dbuf *d, int *has_mean);
/* After a checkpoint restored the pending mean into mn_dbuf_pending's
 * buffer; with local the rank's previous gradient becomes that mean
 * (mn_dbuf_align), as every rank held the same model when it was saved. */
void mn_dbuf_set_pending(mn_dbuf *d, int has_mean);
/* With local, once the ranks' models were averaged: each rank's previous
 * gradient becomes the mean in flight, so that the next update applies the
 * mean of what the ranks would have applied, and every rank the same
 * correction from then on. */
void mn_dbuf_align(mn_dbuf *d);
void mn_dbuf_stop(mn_dbuf *d);

/* double_buffering_local=1, one element: g + (mean - own), own = g; where
 * there was no mean, g (and own = g). mean - own first, so that one rank's
 * mean (its own g) cancels exactly. The device's kernel does the same. */
static inline float mn_dbuf_local(float g, float mean, float *own, int had)
{
    float u = had ? g + (mean - *own) : g;
    *own = g;
    return u;
}

/* double_buffering_compensation=lambda (delay compensation, Zheng et al.'s
 * DC-ASGD in its adaptive form): the stale mean u of n floats, taken at the
 * weights prev, is applied at the weights w, so the first Taylor term is
 * added, the Hessian's diagonal approximated by the squared gradient over a
 * running mean square v (decay 0.95):
 *     u -= lambda u^2 / sqrt(v) (w - prev), the term bounded by |u|;
 * minus, as Darknet's update arrays hold the negative gradient. Unbounded,
 * the term feeds back once lambda |w - prev| nears 0.2 (a larger term moves
 * w more, which makes the next larger): the detector diverged at lambda 30
 * and 100. apply 0 (no mean this step) leaves u and v, and so does a u
 * whose square is not finite. prev becomes eval: the weights this step's
 * gradient was taken at (w itself, or mn_ahead's prediction). */
void mn_dbuf_compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda, int apply);

#endif
