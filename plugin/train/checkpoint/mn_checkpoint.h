/* What training keeps on disk (plugin/train/checkpoint): weights files and
 * the network's parameters in their order (mn_weights.c), the backup
 * folder's lock (mn_lock.c), checkpoints, resume and rescue
 * (mn_checkpoint.c). Only rank 0 touches the backup folder. */
#ifndef MN_CHECKPOINT_H
#define MN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "mn_training.h"
#include "mn_optimizer.h"

/* rank 0, after load_weights: every parameter and running statistic is
 * finite, or the error names the weights file and the first bad layer. */
mn_status mn_check_finite_params(const mn_comm *c, network *net, const char *path);

/* The backup folder's lock (mn_lock.c): which job owns <backup>/.darknet_mn.lock
 * and when it was last alive. Only rank 0 touches the folder. */
typedef struct mn_lock mn_lock;

/* Rank 0 takes an flock on <dir>/.darknet_mn.lock and writes a record into
 * it: this job's identity (SLURM_JOB_ID, else scripts/mn_rerun.sh's
 * MN_RERUN_ID, else none), host, pid, a fresh run id, and a lease that a
 * thread renews every lease_s/6 seconds. The record decides, not the flock
 * alone (an flock outlives a dead host on NFS and Lustre, and is node-local
 * or a no-op on some mounts): a record of this same job (a rerun) or a stale
 * one is taken over, even where the flock is still held; another job's fresh
 * one refuses this job (MN_ERR_REFUSED, one message naming it), even where
 * the flock was granted. Collective: *lock is rank 0's, NULL elsewhere and
 * on failure. */
mn_status mn_backup_lock(mn_comm *c, const char *dir, int lease_s, mn_lock **lock);
/* Rank 0 marks the record released when it is still this job's (the next
 * job need not wait out the lease), stops the thread and drops the flock.
 * NULL does nothing. */
void mn_backup_unlock(mn_lock *lock);
/* Whether the folder is still this job's, rank 0 re-reading the record now:
 * MN_ERR_REFUSED on every rank, with one message naming the job that took it
 * over, when it is not. Collective; call it before writing into the folder. */
mn_status mn_backup_check(mn_comm *c, mn_lock *lock);
/* 1 on rank 0 when the renewal thread found the record another job's (no
 * I/O: cheap enough for every iteration); then mn_backup_check refuses. */
int mn_backup_lost(mn_lock *lock);
/* Rank 0, alone: 1 while the record is still this job's, re-read now (one
 * small read); 0 once it is another's, and from then mn_backup_lost is 1.
 * For what rank 0 writes into the folder every iteration (the log, the
 * chart). 1 elsewhere. */
int mn_backup_mine(mn_lock *lock);
/* Rank 0: this job's identity where the record the lock found was an earlier
 * run of this same job (a Slurm requeue, an mn_rerun.sh attempt), released
 * or not; else NULL. */
const char *mn_backup_rerun_of(const mn_lock *lock);
/* How a refusal of base's checkpoints in dir says to start anew: the
 * command that moves them aside, or another folder. */
void mn_backup_anew(const char *dir, const char *base, char *buf, size_t cap);
/* Rank 0: the run id of the record the lock found, whichever job's (the
 * folder's last run); 0 where there was none. */
uint64_t mn_backup_last_run(const mn_lock *lock);
/* The run id the record carries (checkpoints keep it, pruning matches it):
 * a resumed job continues its checkpoint's run. */
void mn_backup_set_run(mn_lock *lock, uint64_t run);

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
 * beyond the newest checkpoint_keep. With bn_average the running statistics
 * are averaged over the ranks first, as for a weights file, so that a resume
 * gives every rank the mean the run goes on from. Collective. */
mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const mn_options *opt, const char *dir,
                             const char *base, const char *experiment, const mn_best *best);
/* What mn_checkpoint_resume loaded (path on rank 0 only). */
typedef struct {
    int found;
    uint64_t iteration;
    int ranks;         /* that wrote it */
    uint64_t batch;    /* its global batch */
    mn_best best;      /* as it was when the checkpoint was written */
    char path[4096];
} mn_resumed;
/* Rank 0 takes the checkpoint of highest iteration of the folder's last run
 * (the lock's record; else of the run that wrote last) that verifies (a
 * corrupt one is named and skipped); when it is another experiment's (or of
 * the older format, which does not say) every rank gets MN_ERR_REFUSED and
 * rank 0 names what differs; where checkpoints are there and none loads,
 * MN_ERR_USAGE (a start from the weights would silently start over). Else
 * it is loaded and broadcast; the iteration is kept and seen becomes
 * iteration x this job's global batch, so any rank count can resume. The
 * lock file (lock, rank 0) then carries the checkpoint's run id. */
mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                               mn_lock *lock, const char *experiment, mn_resumed *r);
/* rescue=1 (CPU runs of more than one rank): when the job is being lost (a
 * SIGTERM from the launcher, the watchdog's timeout) the ranks left write
 * the last update they completed as a checkpoint, as save would, on a thread
 * of their own if the main one is stuck in a collective: the node's ranks 0
 * and 1 on the first and the last node (at most 4 writers, whatever the
 * node count), the same file from each, committed atomically;
 * a rerun resumes from the newest, so a lost rank costs no iteration.
 * Nothing is written before the run's first update. open is collective
 * (rank 0's experiment goes to every rank); close waits for a write in
 * progress. dir, base and best must outlive r. */
typedef struct mn_rescue mn_rescue;
mn_status mn_rescue_open(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                         const char *experiment, const mn_best *best, mn_rescue **r);
void mn_rescue_close(mn_rescue *r);
/* After each iteration's loss allreduce: whether a stop signal reached
 * some rank, so that every rank stops at this iteration's end with the
 * orderly checkpoint. A SIGTERM that reached every rank (a cancel, a time
 * limit, a preemption) then writes no rescue: where the iteration in
 * progress is due to end before the launcher's kill (the iterations' mean
 * length, timed between these calls, telling), the rescue waits for this
 * up to 70% of the kill delay (Open MPI's odls_base_sigkill_timeout, 1 s
 * by default; Slurm's KillWait, 30 s assumed) and writes only if it does
 * not come; where it is due later, at once. r may be NULL. */
void mn_rescue_note(mn_rescue *r, int stopping);
/* Rank 0, holding the folder's lock: the files of base that a run cut
 * short left half written (<name>.tmp.<host>.<pid>...: a checkpoint, a
 * rescue, a weights file) are removed, and their count said. */
void mn_backup_remove_tmp(const mn_comm *c, const char *dir, const char *base);
/* Size of a checkpoint file. */
size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o, const char *experiment);

/* In-place MPI_Bcast of n floats from rank 0, in INT_MAX pieces (mn_weights.c). */
mn_status mn_bcast_floats(mn_comm *c, float *p, size_t n);

#endif
