/* What training keeps on disk: weights files, the backup folder's lock,
 * checkpoints, resume and rescue (docs/internals.md, "Checkpoints"). Only
 * rank 0 touches the backup folder. */
#ifndef MN_CHECKPOINT_H
#define MN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "mn_training.h"
#include "mn_optimizer.h"

/* Rank 0, after load_weights: an error naming the file and the first layer
 * with a parameter or running statistic that is not finite. */
mn_status mn_check_finite_params(const mn_comm *c, network *net, const char *path);

/* The backup folder's lock. */
typedef struct mn_lock mn_lock;

/* Collective: rank 0 takes the folder for this job; MN_ERR_REFUSED on
 * every rank where another live job holds it. *lock is rank 0's, NULL
 * elsewhere and on failure. */
mn_status mn_backup_lock(mn_comm *c, const char *dir, int lease_s, mn_lock **lock);
/* Rank 0 releases the folder at once, not at the lease's end. NULL does
 * nothing. */
void mn_backup_unlock(mn_lock *lock);
/* Collective, before writing into the folder: MN_ERR_REFUSED once another
 * job took it over. */
mn_status mn_backup_check(mn_comm *c, mn_lock *lock);
/* Rank 0, without I/O: 1 once the renewal thread found the folder taken
 * over. */
int mn_backup_lost(mn_lock *lock);
/* Rank 0, before each iteration's writes into the folder: 1 while it is
 * still this job's. 1 elsewhere. */
int mn_backup_mine(mn_lock *lock);
/* Rank 0: this job's identity where the lock found an earlier run of it;
 * else NULL. */
const char *mn_backup_rerun_of(const mn_lock *lock);
/* How to start anew, for a refusal of base's checkpoints in dir. */
void mn_backup_anew(const char *dir, const char *base, char *buf, size_t cap);
/* Rank 0: the run id of the record the lock found, 0 for none. */
uint64_t mn_backup_last_run(const mn_lock *lock);
/* The run id the record carries: a resumed job continues its checkpoint's. */
void mn_backup_set_run(mn_lock *lock, uint64_t run);

/* Collective: names the ranks that cannot read dir; with checkpoints
 * refused, since a rerun whose rank 0 lands there would start over. */
mn_status mn_backup_shared(mn_comm *c, const char *dir, int checkpoint_interval);

/* What makes a run one experiment, as text (rank 0's; NULL elsewhere or
 * without memory): the cfg's layers and training keys and the train list. */
char *mn_experiment(const mn_comm *c, const char *cfgfile, const mn_options *opt, const char *trainfile,
                    const mn_list *train);

/* The best evaluation so far: _best.weights' score. */
typedef struct {
    double score;          /* -1 before the first evaluation */
    uint64_t iteration;
} mn_best;

/* Collective: rank 0 writes the training state durably (synced, then
 * renamed) to <dir>/<base>.ckpt-<iteration>, then removes this run's
 * generations beyond checkpoint_keep. */
mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const mn_options *opt, const char *dir,
                             const char *base, const char *experiment, const mn_best *best);
/* What mn_checkpoint_resume loaded (path on rank 0). */
typedef struct {
    int found;
    uint64_t iteration;
    int ranks;         /* that wrote it */
    uint64_t batch;    /* its global batch */
    mn_best best;      /* when the checkpoint was written */
    char path[4096];
} mn_resumed;
/* Collective: loads and broadcasts the newest checkpoint that verifies,
 * for any rank count. Another experiment's is MN_ERR_REFUSED; checkpoints
 * none of which loads, MN_ERR_USAGE rather than a silent start over. */
mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                               mn_lock *lock, const char *experiment, mn_resumed *r);
/* rescue=1: when the job is being lost, a few ranks write the last
 * completed update as a checkpoint (docs/user-guide.md, "A lost rank costs
 * no iteration"). Collective open; close waits for a write in progress.
 * dir, base and best must outlive r. */
typedef struct mn_rescue mn_rescue;
mn_status mn_rescue_open(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                         const char *experiment, const mn_best *best, mn_rescue **r);
void mn_rescue_close(mn_rescue *r);
/* After each iteration's loss allreduce, for the rescue: whether a stop
 * signal reached some rank. r may be NULL. */
void mn_rescue_note(mn_rescue *r, int stopping);
/* Rank 0, holding the lock: removes the half-written files of base that a
 * run cut short left. */
void mn_backup_remove_tmp(const mn_comm *c, const char *dir, const char *base);
/* Size of a checkpoint file. */
size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o, const char *experiment);

/* In-place MPI_Bcast of n floats from rank 0, in INT_MAX pieces. */
mn_status mn_bcast_floats(mn_comm *c, float *p, size_t n);

#endif
