/* Darknet's device update arrays as one packed range (mn_grad_stage.c; GPU
 * builds), and the staged route's copies through the host arena. A failing
 * CUDA call ends the job through mn_abort. */
#ifndef MN_GRAD_STAGE_H
#define MN_GRAD_STAGE_H

#include "train/mn_training.h"

#ifdef GPU
typedef struct mn_grad_stage mn_grad_stage;
/* The n device arrays dev and the host arena they are staged through,
 * page-locked where allowed (*pinned). arena NULL: the tables alone, for
 * mn_grad_stage_nonfinite. Not collective. */
mn_status mn_grad_stage_new(mn_comm *c, float **dev, const size_t *lens, int n, float *arena, int *pinned, mn_grad_stage **out);
/* The tables and the packed buffer, no arena: for mn_grad_stage_pack_into. */
mn_status mn_grad_stage_packer(mn_comm *c, float **dev, const size_t *lens, int n, mn_grad_stage **out);
void mn_grad_stage_free(mn_grad_stage *s);
/* Every array packed into page-locked host, on stream; no wait. */
void mn_grad_stage_pack_into(mn_grad_stage *s, float *host, void *stream);
/* *flag (device memory) = 1 where any array holds Inf or NaN, on stream. */
void mn_grad_stage_nonfinite(mn_grad_stage *s, int *flag, void *stream);
/* Down, the host waiting; or the arena up on the base's stream, no wait. */
void mn_grad_stage_down(mn_grad_stage *s);
void mn_grad_stage_up(mn_grad_stage *s);
/* overlap=1 with nb buckets; handed and ready are mn_overlap_gpu's, arg s. */
mn_status mn_grad_stage_buckets(mn_grad_stage *s, int nb);
void mn_grad_stage_handed(void *s, int k, size_t off, size_t len, int poison);
void mn_grad_stage_ready(void *s, int k);
#endif

#endif
