/* The multi-node optimizer (plugin/train/optimizer): gradients averaged
 * before every update (mn_optimizer.c), blocking, double-buffered
 * (mn_dbuf.c, mn_dbuf.h) or overlapped with backward (mn_overlap.c,
 * mn_overlap.h, both private to this folder); batch-norm statistics
 * (mn_bn_sync.c, declared in mn_training.h); the replica check
 * (mn_replica.c). What the rest of training asks of the optimizer: */
#ifndef MN_OPTIMIZER_H
#define MN_OPTIMIZER_H

#include <stdint.h>
#include "mn_training.h"
#include "mn_coll.h"
#include "mn_base.h"

/* Call before each train_network: with float16 it sets Darknet's momentum
 * part aside so that only the fresh gradient is rounded to half; with
 * rescue=1 it sets it and the running statistics aside for a rescue. */
void mn_optimizer_begin_step(mn_optimizer *o, const network *net);
/* A rank that trains as `ways` ranks did (a checkpoint resumed on fewer
 * ranks, its global batch kept in more passes, mn_train.c): batch norm's
 * running statistics kept apart for each (mn_ways.c), so that the training
 * writes what those ranks' would have. *kept: 0 where there is nothing to
 * keep apart or it cannot be (no statistics, a GPU run). */
mn_status mn_optimizer_ways(mn_comm *c, mn_optimizer *o, network *net, int ways, int *kept);
/* Whether the last update's averaged gradient held NaN or Inf (it was
 * zeroed; with nonfinite=stop on the device, applied: the job stops). Waits
 * for a GPU run's check where it is read late (nonfinite=stop). */
int mn_optimizer_nonfinite(mn_optimizer *o);
/* The arena as the live momentum: pulled from the GPU first (to_device=0),
 * or pushed to it after the caller filled it (to_device=1). */
float *mn_optimizer_host_state(mn_optimizer *o, const network *net, int to_device, size_t *n);
/* The optimizer's update arrays (gradients, then Darknet's momentum part). */
float *mn_optimizer_arena(mn_optimizer *o, size_t *n);
/* The state's sums of gradients (the momentum, the mean in flight) times k,
 * and what follows from them (compensation's mean square, k^2), for a
 * checkpoint resumed with more images a rank; weights kept stay. */
void mn_optimizer_rescale(mn_optimizer *o, const network *net, float k);
/* Forward, backward groups, the sync's wait and overlap's buckets go to tl
 * from now on (NULL: none). */
struct mn_timeline;
void mn_optimizer_set_timeline(mn_optimizer *o, network *net, struct mn_timeline *tl);
/* When this step's gradient sync ended (mn_now): the update starts there. */
double mn_optimizer_synced_at(const mn_optimizer *o);
/* After each train_network: the update is done (rescue=1). */
void mn_optimizer_end_step(mn_optimizer *o, const network *net);
/* The last completed update, held still until mn_optimizer_release (the
 * next update waits): the parameters are the network's, or at params in
 * its order (a GPU run's host copy, mn_held.h); its momentum is at
 * momentum; its running statistics at stats, in the network's parameter
 * order, or the network's own (or params') where stats is NULL; done: when
 * it completed (mn_now). -1 where rescue is off, an update holds on for 5 s
 * or a GPU run has no complete copy. */
typedef struct {
    uint64_t iteration, seen;
    double done;
    const float *momentum;
    size_t nmomentum;
    const float *stats;
    const float *params;
} mn_snapshot;
/* Whether this run keeps what a rescue writes (rescue=1, 2 ranks or more, no double buffering). */
int mn_optimizer_rescues(const mn_optimizer *o);
int mn_optimizer_hold(mn_optimizer *o, mn_snapshot *s);
void mn_optimizer_release(mn_optimizer *o);
/* Before the network's state is written outside a step (statistics
 * averaged or broadcast, momentum pushed): a GPU rescue's copies in flight
 * are waited for, so that none reads half of it. o may be NULL. */
void mn_optimizer_drain(mn_optimizer *o);

/* The replica check (mn_replica.c): every rank must hold the same model. */

/* double_buffering_local=1 lets each rank's model drift by its own recent
 * gradients (mn_dbuf.c): their parameters and momentum averaged (float32),
 * so that they are one model again before it is checked and saved.
 * Collective; nothing to do in other runs. */
mn_status mn_optimizer_align(mn_comm *c, network *net, mn_optimizer *o);

/* Collective. Every rank hashes its parameters, the momentum Darknet keeps in
 * its update arrays (o may be NULL: none) and, when stats_shared, the running
 * statistics (they differ by design unless sync_bn=1); rank 0 compares. A
 * mismatch is reported on rank 0 with the ranks and the first layer that
 * differs, and returns MN_ERR_DIVERGED on every rank; so do NaN or Inf in the
 * parameters (nothing such is worth saving). *first_layer (may be NULL) gets
 * the first differing layer over all ranks, or -1. */
mn_status mn_replica_check(mn_comm *c, network *net, mn_optimizer *o, int stats_shared, size_t iteration,
                           int *first_layer);
/* 64-bit FNV-1a over 64-bit words (a tail shorter than a word bytewise):
 * about eight times faster than the bytewise hash, for whole models. */
uint64_t mn_hash_words(uint64_t h, const void *p, size_t bytes);

#endif
