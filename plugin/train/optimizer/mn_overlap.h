/* overlap=1 (mn_overlap.c): buckets of the gradient are averaged on a thread
 * of their own while backward goes on, so that only the last buckets'
 * allreduce is left when backward ends. */
#ifndef MN_MN_OVERLAP_H
#define MN_MN_OVERLAP_H

#include "mn_training.h"
#include "mn_coll.h"

typedef struct mn_overlap mn_overlap;
/* A GPU run's part (NULL in a CPU run): dev, the device route's update
 * arrays (mn_sync_route), makes buckets of whole arrays, each averaged
 * where it is by the communicator's mean_grad_device; handed runs on the
 * training thread as bucket k (floats [off, off+len) of the arena) is
 * handed over, before the thread may take it, with poison set on the
 * bucket holding the arena's first float when this rank's loss is not
 * finite (the caller then makes that float NaN); ready runs on the thread
 * before it averages bucket k (the staged route: once its copy down is in
 * the arena). */
typedef struct {
    float **dev;
    void (*handed)(void *arg, int k, size_t off, size_t len, int poison);
    void (*ready)(void *arg, int k);
    void *arg;
} mn_overlap_gpu;
/* arrays, lens: the optimizer's update arrays, back to back in c's arena,
 * in layer order; layer[i] is the layer that owns array i. Buckets hold
 * about bucket_mb MiB each, cut on the same boundaries as the blocking
 * path's collectives (mn_mean_by_pieces, or one array each for naive), so
 * every element is reduced by the same call as without overlap. Collective;
 * needs MPI_THREAD_MULTIPLE. */
mn_status mn_overlap_start(mn_comm *c, float **arrays, const size_t *lens, const int *layer, int n, double bucket_mb,
                           const mn_overlap_gpu *gpu, mn_overlap **out);
/* Backward has finished layers from `layer` up: every bucket that lies in
 * them goes to the thread, in the same order on every rank; returns how
 * many went. poison: this rank's loss is not finite, so the mean is made
 * NaN on every rank. */
int mn_overlap_ready(mn_overlap *ov, int layer, int poison);
/* The rest goes too; returns once every bucket is averaged. */
void mn_overlap_finish(mn_overlap *ov, int poison);
/* Bucket k of the last step: its floats, when backward handed it over, and
 * the thread's start and end (mn_now) around its allreduce; the count of
 * buckets. */
int mn_overlap_buckets(const mn_overlap *ov);
void mn_overlap_bucket(const mn_overlap *ov, int k, size_t *floats, double *tq, double *t0, double *t1);
void mn_overlap_stop(mn_overlap *ov);

#endif
