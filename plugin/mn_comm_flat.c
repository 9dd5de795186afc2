/* flat: one MPI_Allreduce over all ranks of the fused gradient (in pieces of
 * c->piece_floats, see mn_mean_by_pieces). Arrays that already lie back to
 * back in memory (the optimizer's gradient arena) are reduced in place with
 * no copy; otherwise they are packed into the fused buffer and unpacked
 * after, divided by the rank count. */
#include "mn_internal.h"

const mn_comm_ops mn_comm_flat_ops = {
    .name = "flat",
    .sum = mn_sum_world,
};
