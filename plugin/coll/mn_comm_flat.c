/* flat: one allreduce over all ranks of the fused gradient (in pieces of
 * c->piece_floats, c->net_piece_floats across nodes; see mn_mean_by_pieces):
 * across nodes our own reduce-scatter and allgather over the ranks ordered
 * node by node (mn_rsag.c), one MPI_Allreduce on one node without a window,
 * or, when the whole job is one node, the node's shared-memory window
 * (mn_shm.c: each rank sums its own chunk of every rank's copy, then all
 * copy the chunks back; no MPI message). Arrays that already lie back to
 * back in memory (the optimizer's gradient arena) are reduced in place;
 * otherwise they are packed into the fused buffer and unpacked after,
 * divided by the rank count. */
#include "mn_coll.h"

const mn_comm_ops mn_comm_flat_ops = {
    .name = "flat",
    .setup = mn_shm_setup_job,
    .sum = mn_sum_job,
    .teardown = mn_shm_teardown_job,
};
