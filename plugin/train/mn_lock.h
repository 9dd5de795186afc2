/* The backup folder's lock (mn_lock.c): which job owns <backup>/.darknet_mn.lock
 * and when it was last alive. Only rank 0 touches the folder. */
#ifndef MN_LOCK_H
#define MN_LOCK_H

#include <stdint.h>
#include "mn_training.h"

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
/* The run id the record carries (checkpoints keep it, pruning matches it):
 * a resumed job continues its checkpoint's run. */
void mn_backup_set_run(mn_lock *lock, uint64_t run);

#endif
