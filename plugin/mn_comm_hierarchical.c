/* hierarchical: three legs per piece. (1) MPI_Reduce inside the node to its
 * leader (intra_rank 0), over shared memory; (2) MPI_Allreduce among the node
 * leaders only (c->inter of intra_rank 0), so each node puts one copy of the
 * gradient on the network instead of one per rank; (3) MPI_Bcast of the sum
 * inside the node. Nodes may hold different rank counts (2+1): the leaders'
 * communicator has one member per node either way. For a node with one NIC,
 * as in ChainerMN's table. */
#include "mn_internal.h"

static mn_status hierarchical_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    if (c->intra_size > 1)
        MN_MPI(c, MPI_Reduce(c->intra_rank == 0 ? MPI_IN_PLACE : buf, buf, count, w->type, w->op, 0, c->intra));
    if (c->intra_rank == 0 && c->inter_size > 1)
        MN_CHECK(mn_allreduce_wire(c, c->inter, buf, count, w));
    if (c->intra_size > 1)
        MN_MPI(c, MPI_Bcast(buf, count, w->type, 0, c->intra));
    return MN_OK;
}

const mn_comm_ops mn_comm_hierarchical_ops = {
    .name = "hierarchical",
    .sum = hierarchical_sum,
};
