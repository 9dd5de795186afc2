/* double_buffering=1 on the host (mn_dbuf.c; docs/internals.md). */
#ifndef MN_MN_DBUF_H
#define MN_MN_DBUF_H

#include "train/mn_training.h"
#include "coll/mn_coll.h"

/* start and stop are collective; stop waits for the mean in flight.
 * exchange sends arena's gradient and leaves there the previous mean (zeros
 * at first), or with local mn_dbuf_local's; returns 0 where no mean was. */
typedef struct mn_dbuf mn_dbuf;
mn_status mn_dbuf_start(mn_comm *c, const size_t *lens, int n, size_t total, int local, mn_dbuf **out);
int mn_dbuf_exchange(mn_dbuf *d, float *arena);
/* The mean in flight, once finished (for checkpoints), and whether there is one. */
float *mn_dbuf_pending(mn_dbuf *d, int *has_mean);
/* After a checkpoint restored the mean into mn_dbuf_pending's buffer
 * (with local, also mn_dbuf_align). */
void mn_dbuf_set_pending(mn_dbuf *d, int has_mean);
/* With local, once the ranks' models were averaged: each rank's previous
 * gradient becomes the mean in flight, so every rank corrects alike. */
void mn_dbuf_align(mn_dbuf *d);
void mn_dbuf_stop(mn_dbuf *d);

/* double_buffering_local, one element: g + (mean - own), or g where no
 * mean was; own = g. mean - own first: one rank's mean cancels exactly. */
static inline float mn_dbuf_local(float g, float mean, float *own, int had)
{
    float u = had ? g + (mean - *own) : g;
    *own = g;
    return u;
}

/* double_buffering_compensation=lambda on the stale mean u of n floats
 * (docs/internals.md): u -= lambda u^2 / sqrt(v) (w - prev), bounded by |u|.
 * apply 0 leaves u and v; prev becomes eval (w, or mn_dbuf_predict's prediction). */
void mn_dbuf_compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda, int apply);

#endif
