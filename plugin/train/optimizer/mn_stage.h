/* Darknet's device update arrays as one packed range (mn_stage.c; GPU
 * builds): their device tables, for every GPU route (one Inf/NaN launch
 * over all of them); and the staged route's copies: a GPU run whose
 * MPI is not CUDA-aware averages Darknet's device update arrays in the host
 * arena, so they are packed into one device buffer and copied down, whole
 * after backward or bucket by bucket during it (overlap=1), and the mean
 * copied back up and unpacked. A failing CUDA call ends the job through
 * mn_abort, naming it. */
#ifndef MN_STAGE_H
#define MN_STAGE_H

#include "mn_training.h"

#ifdef GPU
typedef struct mn_stage mn_stage;
/* The n device arrays dev (lens floats each, total in all) and the arena
 * they are staged through: the device tables and packed buffer, and the
 * arena page-locked where the system allows (*pinned), so that the copies
 * are DMA rather than bounced. arena NULL: the tables alone (the routes
 * that average on the device, for mn_stage_nonfinite). Not collective. */
mn_status mn_stage_new(mn_comm *c, float **dev, const size_t *lens, int n, float *arena, int *pinned, mn_stage **out);
/* The tables and the packed buffer, no arena: for mn_stage_pack_into. */
mn_status mn_stage_packer(mn_comm *c, float **dev, const size_t *lens, int n, mn_stage **out);
void mn_stage_free(mn_stage *s);
/* Every array packed and copied into host (page-locked), on stream; the
 * host does not wait. */
void mn_stage_pack_into(mn_stage *s, float *host, void *stream);
/* *flag (device memory) = 1 where any of the arrays holds Inf or NaN: one
 * launch over all of them, on stream. */
void mn_stage_nonfinite(mn_stage *s, int *flag, void *stream);
/* All of it down, the host waiting for the arena; or the arena up, on the
 * base's stream, the host not waiting. */
void mn_stage_down(mn_stage *s);
void mn_stage_up(mn_stage *s);
/* overlap=1: a copy stream and the order of nb buckets (mn_order.h);
 * mn_stage_handed and mn_stage_ready are mn_overlap_gpu's handed and ready,
 * with s as their arg. */
mn_status mn_stage_buckets(mn_stage *s, int nb);
void mn_stage_handed(void *s, int k, size_t off, size_t len, int poison);
void mn_stage_ready(void *s, int k);
#endif

#endif
