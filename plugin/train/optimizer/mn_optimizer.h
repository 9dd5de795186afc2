/* The multi-node optimizer: what the rest of training asks of it
 * (mn_optimizer.c, mn_replica.c; the folder's files: docs/design.md). */
#ifndef MN_OPTIMIZER_H
#define MN_OPTIMIZER_H

#include <stdint.h>
#include "train/mn_training.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"

/* Before each train_network. */
void mn_optimizer_begin_step(mn_optimizer *o, const network *net);
/* A rank that trains as `ways` ranks did: running statistics kept apart
 * for each (mn_bn_ways.h). *kept: 0 where none are or can be (a GPU run). */
mn_status mn_optimizer_ways(mn_comm *c, mn_optimizer *o, network *net, int ways, int *kept);
/* Whether the last update's mean held NaN or Inf (zeroed, or applied with
 * nonfinite=stop on the device). May wait for a GPU check. */
int mn_optimizer_nonfinite(mn_optimizer *o);
/* The arena as the live momentum: pulled from the GPU (to_device=0), or
 * pushed to it once the caller filled it (1). */
float *mn_optimizer_host_state(mn_optimizer *o, const network *net, int to_device, size_t *n);
/* The optimizer's update arrays. */
float *mn_optimizer_arena(mn_optimizer *o, size_t *n);
/* The state's gradient sums times k (compensation's v k^2), for a
 * checkpoint resumed with more images a rank. */
void mn_optimizer_rescale(mn_optimizer *o, const network *net, float k);
/* Where the step's phases are recorded from now on (NULL: nowhere). */
struct mn_timeline;
void mn_optimizer_set_timeline(mn_optimizer *o, network *net, struct mn_timeline *tl);
/* When this step's gradient sync ended (mn_now). */
double mn_optimizer_synced_at(const mn_optimizer *o);
/* After each train_network: the update is done (rescue=1). */
void mn_optimizer_end_step(mn_optimizer *o, const network *net);
/* hold: the last completed update, kept until mn_optimizer_release (the
 * next update waits). params (a GPU run's host copy, else NULL) and stats
 * (NULL: in the network or params) in the network's parameter order.
 * -1: rescue off, an update hung 5 s, or no copy. */
typedef struct {
    uint64_t iteration, seen;
    double done;
    const float *momentum;
    size_t nmomentum;
    const float *stats;
    const float *params;
} mn_snapshot;
/* Whether this run keeps what a rescue writes. */
int mn_optimizer_rescues(const mn_optimizer *o);
int mn_optimizer_hold(mn_optimizer *o, mn_snapshot *s);
void mn_optimizer_release(mn_optimizer *o);
/* Call before writing the network's state outside a step: waits for a GPU
 * rescue's copies in flight. o may be NULL. */
void mn_optimizer_drain(mn_optimizer *o);

/* double_buffering_local=1: the ranks' drifted parameters and momentum
 * averaged into one model before a check or save. Collective; a no-op in
 * other runs. */
mn_status mn_optimizer_align(mn_comm *c, network *net, mn_optimizer *o);

/* Collective: every rank must hold the same parameters, momentum (o NULL:
 * not checked) and, with stats_shared, running statistics. A mismatch, or
 * NaN or Inf in the parameters, returns MN_ERR_DIVERGED on every rank.
 * *first_layer (may be NULL): the first differing layer, or -1. */
mn_status mn_replica_check(mn_comm *c, network *net, mn_optimizer *o, int stats_shared, size_t iteration,
                           int *first_layer);
/* 64-bit FNV-1a over 64-bit words, a shorter tail bytewise. */
uint64_t mn_hash_words(uint64_t h, const void *p, size_t bytes);

#endif
