/* Running statistics of a rank that trains as several did (mn_bn_ways.c). */
#ifndef MN_BN_WAYS_H
#define MN_BN_WAYS_H

#include "core/mn_core.h"
#include "base/mn_base.h"

/* The network's running statistics in view order (dev NULL in CPU builds). */
typedef struct {
    float **host, **dev;
    size_t *lens, total;
    int n;
} mn_bn_arrays;
/* Free with mn_bn_arrays_free, even on MN_ERR_NOMEM. */
mn_status mn_bn_arrays_list(network *net, mn_bn_arrays *s);
void mn_bn_arrays_free(mn_bn_arrays *s);
/* The statistics into saved (total floats), or back (restore); the device
 * copies are the live ones in a GPU run. */
void mn_bn_arrays_copy(const mn_bn_arrays *s, float *saved, int restore);

/* ways copies of the network's statistics as they are now; NULL where
 * memory runs out. CPU runs only. */
typedef struct mn_bn_ways mn_bn_ways;
mn_bn_ways *mn_bn_ways_new(const mn_bn_arrays *s, int ways);   /* s outlives the copies */
/* After a training pass's last layer: switches to the next pass's way. */
void mn_bn_ways_pass(mn_bn_ways *w);
/* fold (the network gets the ways' mean) before the ranks' statistics are
 * averaged; spread (every way gets the network's) once they are common. */
void mn_bn_ways_fold(mn_bn_ways *w);
void mn_bn_ways_spread(mn_bn_ways *w);
/* nonfinite=skip: rewind to mark when a step is dropped. */
void mn_bn_ways_mark(mn_bn_ways *w);
void mn_bn_ways_rewind(mn_bn_ways *w);
void mn_bn_ways_free(mn_bn_ways *w);
/* The optimizer's, or NULL; o may be NULL. */
struct mn_optimizer;
mn_bn_ways *mn_optimizer_ways_of(struct mn_optimizer *o);

#endif
