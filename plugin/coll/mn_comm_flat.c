/* flat: one allreduce of the fused gradient over all ranks (the node's
 * window on one node, mn_rsag.c across nodes): auto's choice wherever
 * simulated (docs/benchmarks.md). */
#include <stdio.h>
#include "coll/mn_coll.h"

static void flat_query(const mn_comm_shape *s, mn_comm_answer *a)
{
    a->priority = 40;
    if (s->nodes == 1)
        snprintf(a->why, sizeof a->why, "%s: one allreduce in the node's shared memory, as single_node", s->said);
    else if (s->per_node >= 2 && s->per_node <= 16 && s->ranks <= 256)
        snprintf(a->why, sizeof a->why, "%s: fastest or tied on every cluster simulated, 2 to 32 nodes of 2 to 16 "
                                         "ranks (docs/benchmarks.md, simulated clusters)", s->said);
    else
        snprintf(a->why, sizeof a->why, "%s: not simulated (up to 256 ranks in equal nodes of 2 to 16 were); "
                                         "flat runs on any layout", s->said);
}

const mn_comm_ops mn_comm_flat_ops = {
    .name = "flat",
    .query = flat_query,
    .setup = mn_shm_setup_job,
    .sum = mn_sum_job,
    .teardown = mn_shm_teardown_job,
};
