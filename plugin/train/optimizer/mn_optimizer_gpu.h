/* The optimizer core's device twin in a GPU run (mn_optimizer_gpu.c): the
 * momentum part set aside on the device, the device mean's Inf/NaN check
 * and finish, the device arrays' tables and the staged route's copies
 * (mn_grad_stage.h). A failing CUDA call ends the job through mn_abort. A CPU
 * build has no twin: its calls do nothing. */
#ifndef MN_OPTIMIZER_GPU_H
#define MN_OPTIMIZER_GPU_H

#include "train/mn_training.h"
#include "train/optimizer/mn_sync.h"

typedef struct mn_optimizer_gpu mn_optimizer_gpu;
struct mn_grad_stage;
#ifdef GPU
/* arrays: Darknet's n device update arrays (total floats); aside: the run sets the
 * momentum part aside; skip: nonfinite=skip (the check is read at once).
 * Our own allocations, checked, so that running out is agreed and said.
 * Not collective. */
mn_status mn_optimizer_gpu_new(mn_comm *c, mn_route route, float **arrays, const size_t *lens, int n, size_t total,
                               int aside, int skip, mn_optimizer_gpu **out);
/* The tables, and on the staged route the copies through arena (rank 0
 * says how it is staged). Agreed by the caller. */
mn_status mn_optimizer_gpu_stage(mn_optimizer_gpu *g, float *arena);
struct mn_grad_stage *mn_optimizer_gpu_staging(mn_optimizer_gpu *g);
/* The momentum part out of the update arrays; 0 where this run keeps it
 * on the host. */
int mn_optimizer_gpu_aside(mn_optimizer_gpu *g);
/* A finite mean gets the momentum part back (is_aside), a non-finite one
 * is replaced by it, or by zeros; on the base's stream. */
void mn_optimizer_gpu_finish(mn_optimizer_gpu *g, int bad, int is_aside);
/* The staged route: the mean up from the arena, then finished. */
void mn_optimizer_gpu_up(mn_optimizer_gpu *g, int bad, int is_aside);
/* The device mean checked for Inf/NaN, then finished; returns bad, or
 * with nonfinite=skip what the check found. With nonfinite=stop the check
 * is read late (mn_optimizer_gpu_late) so that the hook does not idle the
 * GPU. */
int mn_optimizer_gpu_check(mn_optimizer_gpu *g, int bad, int is_aside);
/* The late check's finding (waits for it); 0 where none is pending. */
int mn_optimizer_gpu_late(mn_optimizer_gpu *g);
/* The momentum between the device arrays and the n host arrays. */
void mn_optimizer_gpu_momentum(mn_optimizer_gpu *g, float **host, int to_device);
/* Before the arena the staged route page-locked is freed. */
void mn_optimizer_gpu_free(mn_optimizer_gpu *g);
#else
static inline mn_status mn_optimizer_gpu_stage(mn_optimizer_gpu *g, float *arena) { (void)g, (void)arena; return MN_OK; }
static inline struct mn_grad_stage *mn_optimizer_gpu_staging(mn_optimizer_gpu *g) { (void)g; return NULL; }
static inline int mn_optimizer_gpu_aside(mn_optimizer_gpu *g) { (void)g; return 0; }
static inline void mn_optimizer_gpu_finish(mn_optimizer_gpu *g, int bad, int is_aside) { (void)g, (void)bad, (void)is_aside; }
static inline void mn_optimizer_gpu_up(mn_optimizer_gpu *g, int bad, int is_aside) { (void)g, (void)bad, (void)is_aside; }
static inline int mn_optimizer_gpu_check(mn_optimizer_gpu *g, int bad, int is_aside) { (void)g, (void)is_aside; return bad; }
static inline int mn_optimizer_gpu_late(mn_optimizer_gpu *g) { (void)g; return 0; }
static inline void mn_optimizer_gpu_momentum(mn_optimizer_gpu *g, float **host, int to_device) { (void)g, (void)host, (void)to_device; }
static inline void mn_optimizer_gpu_free(mn_optimizer_gpu *g) { (void)g; }
#endif

#endif
