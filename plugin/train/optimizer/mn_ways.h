/* Batch norm's running statistics on a rank that trains as several ranks
 * did (mn_ways.c); private to the optimizer's folder. */
#ifndef MN_WAYS_H
#define MN_WAYS_H

#include "mn_core.h"
#include "mn_base.h"

/* The network's running statistics (the views with stat set), in view
 * order: the host arrays, their device copies (NULL in CPU builds) and
 * lengths. The one list the optimizer, mn_ways and mn_bn_sync.c walk. */
typedef struct {
    float **host, **dev;
    size_t *lens, total;
    int n;
} mn_bn_arrays;
/* MN_ERR_NOMEM where memory runs out; free it with mn_bn_arrays_free either way. */
mn_status mn_bn_arrays_list(network *net, mn_bn_arrays *s);
void mn_bn_arrays_free(mn_bn_arrays *s);

/* ways copies of the network's running statistics, each set to the
 * network's own now; NULL where memory runs out. CPU runs only: the copies
 * change hands after each pass's forward (mn_ways_pass), which the base's
 * forward hook reports on the CPU alone. */
typedef struct mn_ways mn_ways;
mn_ways *mn_ways_new(const mn_bn_arrays *s, int ways);   /* s outlives the copies */
/* After a training pass's last layer: the network's statistics go back to
 * this pass's way, the next pass's way's come in. */
void mn_ways_pass(mn_ways *w);
/* Before the ranks' statistics are averaged: the network holds the mean of
 * its ways. After they were made common (averaged or rank 0's): every way
 * takes the network's. */
void mn_ways_fold(mn_ways *w);
void mn_ways_spread(mn_ways *w);
/* nonfinite=skip: every way as it was at mark, when a step is dropped. */
void mn_ways_mark(mn_ways *w);
void mn_ways_rewind(mn_ways *w);
void mn_ways_free(mn_ways *w);
/* The optimizer's, or NULL (mn_optimizer.c; o may be NULL). */
struct mn_optimizer;
mn_ways *mn_optimizer_ways_of(struct mn_optimizer *o);

#endif
