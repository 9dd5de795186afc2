/* flat: one allreduce over all ranks of the fused gradient (in pieces of
 * c->piece_floats, c->coll->net_piece_floats across nodes; see mn_mean_by_pieces):
 * across nodes our own reduce-scatter and allgather over the ranks ordered
 * node by node (mn_rsag.c), one MPI_Allreduce on one node without a window,
 * or, when the whole job is one node, the node's shared-memory window
 * (mn_shm.c: each rank sums its own chunk of every rank's copy, then all
 * copy the chunks back; no MPI message). Arrays that already lie back to
 * back in memory (the optimizer's gradient arena) are reduced in place;
 * otherwise they are packed into the fused buffer and unpacked after,
 * divided by the rank count. */
#include <stdio.h>
#include "mn_coll.h"

/* Any shape, ranked above every other MPI algorithm: on one node it is
 * single_node's allreduce, and across nodes it was fastest or tied at every
 * shape simulated (docs/benchmarks.md, simulated clusters); where nothing
 * was simulated it stays, as it runs on any layout. */
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
