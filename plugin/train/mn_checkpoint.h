/* Checkpoints, resume, durable saves and the backup folder's lock
 * (mn_checkpoint.c). Only rank 0 touches the backup folder. */
#ifndef MN_CHECKPOINT_H
#define MN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include "darknet_mn.h"

/* Rank 0 holds an flock on <dir>/.darknet_mn.lock for the whole run (*fd;
 * -1 on other ranks) and writes its host, pid and a fresh run id into it; a
 * second job on the same folder is refused (MN_ERR_REFUSED) naming the
 * holder. Collective. */
mn_status mn_backup_lock(mn_comm *c, const char *dir, int *fd);
void mn_backup_unlock(int fd);

/* save: rank 0 writes ONE file <dir>/<base>.ckpt-<iteration> (parameters,
 * running statistics, the optimizer's state, seen, the iteration, the rank
 * count, the run id from the lock file, a checksum), commits it durably and
 * then removes this run's loadable generations beyond the newest `keep`.
 * Collective. */
mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                             const char *base, int keep);
/* What mn_checkpoint_resume loaded (path on rank 0 only). */
typedef struct {
    int found;
    uint64_t iteration;
    int ranks;         /* that wrote it */
    uint64_t batch;    /* its global batch */
    char path[4096];
} mn_resumed;
/* Rank 0 loads the most recently written checkpoint that verifies and fits
 * the network and broadcasts it; the iteration is kept and seen becomes
 * iteration x this job's global batch, so any rank count can resume. The
 * lock file (lock_fd, rank 0) then carries the checkpoint's run id. */
mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                               const char *base, int lock_fd, mn_resumed *r);
/* Size of a checkpoint file. */
size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o);

/* In-place MPI_Bcast of n floats from rank 0, in INT_MAX pieces (mn_params.c). */
mn_status mn_bcast_floats(mn_comm *c, float *p, size_t n);

#endif
