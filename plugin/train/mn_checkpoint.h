/* Checkpoints, resume and durable saves (mn_checkpoint.c), under the backup
 * folder's lock (mn_lock.h). Only rank 0 touches the backup folder. */
#ifndef MN_CHECKPOINT_H
#define MN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "mn_training.h"
#include "mn_lock.h"

/* Rank 0 writes a token file into dir and every rank reads it back: the
 * ranks that cannot (another host without the folder, another mount) are
 * named. With checkpoints (checkpoint_interval > 0) that is refused
 * (MN_ERR_REFUSED): a rerun whose rank 0 lands on such a node would not
 * find them and start from iteration 0; without, rank 0 warns once. The
 * token is removed before it returns. Collective. */
mn_status mn_backup_shared(mn_comm *c, const char *dir, int checkpoint_interval);

/* What makes a run one experiment, as text (rank 0's; NULL elsewhere or
 * without memory): the cfg's layers and training keys (mn_cfg_experiment),
 * double_buffering (its mean in flight is part of the state) and the train
 * list (its length and digest: the same paths in any order agree; its
 * path only for messages).
 * Not in it: batch, subdivisions, the rank count and max_batches. */
char *mn_experiment(const mn_comm *c, const char *cfgfile, const mn_options *opt, const char *trainfile,
                    const mn_list *train);

/* The best evaluation during training so far: _best.weights' score. */
typedef struct {
    double score;          /* -1 before the first evaluation */
    uint64_t iteration;
} mn_best;

/* save: rank 0 writes ONE file <dir>/<base>.ckpt-<iteration> (parameters,
 * running statistics, the optimizer's state, seen, the iteration, the rank
 * count, the run id from the lock file, the experiment, the best score, a
 * checksum), commits it durably and then removes this run's generations
 * beyond the newest `keep`. Collective. */
mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                             const char *base, int keep, const char *experiment, const mn_best *best);
/* What mn_checkpoint_resume loaded (path on rank 0 only). */
typedef struct {
    int found;
    uint64_t iteration;
    int ranks;         /* that wrote it */
    uint64_t batch;    /* its global batch */
    mn_best best;      /* as it was when the checkpoint was written */
    char path[4096];
} mn_resumed;
/* Rank 0 takes the most recently written checkpoint that verifies (a
 * corrupt one is named and skipped); when it is another experiment's (or of
 * the older format, which does not say) every rank gets MN_ERR_REFUSED and
 * rank 0 names what differs. Else it is loaded and broadcast; the iteration
 * is kept and seen becomes iteration x this job's global batch, so any rank
 * count can resume. The lock file (lock, rank 0) then carries the
 * checkpoint's run id. */
mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                               const char *base, mn_lock *lock, const char *experiment, mn_resumed *r);
/* rescue=1 (CPU runs of more than one rank): when the job is being lost (a
 * SIGTERM from the launcher, the watchdog's timeout) the ranks left write
 * the last update they completed as a checkpoint, as save would, on a thread
 * of their own if the main one is stuck in a collective: two ranks a node
 * (intra-node ranks 0 and 1), the same file from each, committed atomically;
 * a rerun resumes from the newest, so a lost rank costs no iteration.
 * Nothing is written before the run's first update. open is collective
 * (rank 0's experiment goes to every rank); close waits for a write in
 * progress. dir, base and best must outlive r. */
typedef struct mn_rescue mn_rescue;
mn_status mn_rescue_open(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                         const char *experiment, const mn_best *best, mn_rescue **r);
void mn_rescue_close(mn_rescue *r);
/* Size of a checkpoint file. */
size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o, const char *experiment);

/* In-place MPI_Bcast of n floats from rank 0, in INT_MAX pieces (mn_weights.c). */
mn_status mn_bcast_floats(mn_comm *c, float *p, size_t n);

#endif
