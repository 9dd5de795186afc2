/* Checkpoints and the backup folder, which only rank 0 touches
 * (docs/internals.md, "Checkpoints"). */
#ifndef MN_CHECKPOINT_H
#define MN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "train/mn_training.h"
#include "train/optimizer/mn_optimizer.h"

/* Rank 0: an error where a parameter is not finite. */
mn_status mn_check_finite_params(const mn_comm *c, network *net, const char *path);

/* The folder's lock. */
typedef struct mn_lock mn_lock;

/* Collective: rank 0 takes the folder; MN_ERR_REFUSED everywhere when
 * another live job holds it. *lock: rank 0's, else NULL. */
mn_status mn_backup_lock(mn_comm *c, const char *dir, int lease_s, mn_lock **lock);
/* Rank 0 releases it now. NULL does nothing. */
void mn_backup_unlock(mn_lock *lock);
/* Collective, before writing: MN_ERR_REFUSED once another job took it. */
mn_status mn_backup_check(mn_comm *c, mn_lock *lock);
/* Rank 0, no I/O: 1 once the folder was lost. */
int mn_backup_lost(mn_lock *lock);
/* Before each iteration's writes: 1 while the folder is this job's (1 off
 * rank 0). */
int mn_backup_mine(mn_lock *lock);
/* Rank 0: the earlier run's identity the lock found, or NULL. */
const char *mn_backup_rerun_of(const mn_lock *lock);
/* Advice for a refusal of base's checkpoints. */
void mn_backup_anew(const char *dir, const char *base, char *buf, size_t cap);
/* Rank 0: that run's id, 0 for none. */
uint64_t mn_backup_last_run(const mn_lock *lock);
/* The record's run id; a resumed job keeps its checkpoint's. */
void mn_backup_set_run(mn_lock *lock, uint64_t run);

/* Collective: names ranks that cannot read dir; refused with checkpoints
 * (a rerun would start over). */
mn_status mn_backup_shared(mn_comm *c, const char *dir, int checkpoint_interval);

/* The run's experiment text (cfg, train list): rank 0's, else NULL. */
char *mn_experiment(const mn_comm *c, const char *cfgfile, const mn_options *opt, const char *trainfile,
                    const mn_list *train);

/* The best evaluation so far. */
typedef struct {
    double score;          /* -1 before the first evaluation */
    uint64_t iteration;
} mn_best;

/* Collective: rank 0 writes <dir>/<base>.ckpt-<iteration>, keeping
 * checkpoint_keep. */
mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const mn_options *opt, const char *dir,
                             const char *base, const char *experiment, const mn_best *best);
/* What mn_checkpoint_resume loaded (path on rank 0). */
typedef struct {
    int found;
    uint64_t iteration;
    int ranks;         /* that wrote it */
    uint64_t batch;    /* its global batch */
    mn_best best;      /* as written */
    char path[4096];
} mn_resumed;
/* Collective: loads the newest checkpoint that verifies, any rank count.
 * Another experiment's: MN_ERR_REFUSED; none loads: MN_ERR_USAGE. */
mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                               mn_lock *lock, const char *experiment, mn_resumed *r);
/* rescue=1 (docs/user-guide.md). Collective open; close waits for a write.
 * dir, base, best outlive r. */
typedef struct mn_rescue mn_rescue;
mn_status mn_rescue_open(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                         const char *experiment, const mn_best *best, mn_rescue **r);
void mn_rescue_close(mn_rescue *r);
/* After each loss allreduce: stopping on some rank? r may be NULL. */
void mn_rescue_note(mn_rescue *r, int stopping);
/* Rank 0, holding the lock: removes base's half-written files. */
void mn_backup_remove_tmp(const mn_comm *c, const char *dir, const char *base);
/* Size of a checkpoint file. */
size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o, const char *experiment);

/* Collective: n floats from rank 0, in place, any n. */
mn_status mn_bcast_floats(mn_comm *c, float *p, size_t n);

#endif
