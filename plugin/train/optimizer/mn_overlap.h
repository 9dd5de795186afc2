/* overlap=1 (mn_overlap.c): the gradient averaged in buckets on a thread
 * while backward goes on. */
#ifndef MN_MN_OVERLAP_H
#define MN_MN_OVERLAP_H

#include "train/mn_training.h"
#include "coll/mn_coll.h"

typedef struct mn_overlap mn_overlap;
/* A GPU run's part (NULL in a CPU run): dev, the device route's arrays,
 * averaged in place. handed: on the training thread as bucket k (arena
 * floats [off, off+len)) is handed over; poison: make the arena's first
 * float NaN. ready: on the thread before it averages bucket k. */
typedef struct {
    float **dev;
    void (*handed)(void *arg, int k, size_t off, size_t len, int poison);
    void (*ready)(void *arg, int k);
    void *arg;
} mn_overlap_gpu;
/* arrays: back to back in c's arena, in layer order; layer[i] owns array
 * i. Buckets of about bucket_mb MiB. Collective; needs MPI_THREAD_MULTIPLE. */
mn_status mn_overlap_start(mn_comm *c, float **arrays, const size_t *lens, const int *layer, int n, double bucket_mb,
                           const mn_overlap_gpu *gpu, mn_overlap **out);
/* Backward finished layers from `layer` up: their buckets go to the thread;
 * returns how many. poison: this rank's loss is not finite (the mean NaN). */
int mn_overlap_ready(mn_overlap *ov, int layer, int poison);
/* The rest goes too; returns once every bucket is averaged. */
void mn_overlap_finish(mn_overlap *ov, int poison);
/* The last step's buckets: bucket k's floats, hand-over time and allreduce
 * start and end (mn_now). */
int mn_overlap_buckets(const mn_overlap *ov);
void mn_overlap_bucket(const mn_overlap *ov, int k, size_t *floats, double *tq, double *t0, double *t1);
void mn_overlap_stop(mn_overlap *ov);

#endif
