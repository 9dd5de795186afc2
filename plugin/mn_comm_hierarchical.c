/* hierarchical: three legs per piece. (1) The node's sum at its leader
 * (intra_rank 0); (2) MPI_Allreduce among the node leaders only (c->inter of
 * intra_rank 0), so each node puts one copy of the gradient on the network
 * instead of one per rank; (3) the result to every rank of the node. Legs
 * (1) and (3) go through the node's shared-memory window where there is one
 * (mn_shm.c: reduce-scatter, the leader gathers the chunks; the leader
 * publishes, the others copy), else MPI_Reduce and MPI_Bcast over c->intra.
 * Nodes may hold different rank counts (2+1): the leaders' communicator has
 * one member per node either way. For a node with one NIC, as in ChainerMN's
 * table. */
#include "mn_internal.h"

static mn_status hierarchical_setup(mn_comm *c)
{
    mn_shm *s;
    MN_CHECK(mn_shm_open(c, &s));
    c->state = s;
    return MN_OK;
}

static void hierarchical_teardown(mn_comm *c)
{
    mn_shm_close(c->state);
    c->state = NULL;
}

static mn_status hierarchical_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    mn_shm *s = c->state;
    mn_wire sum_only = *w;   /* the in-node legs sum; the leader divides at the end */
    sum_only.div = 1.0f;
    if (s && mn_shm_fits(s, count, w)) {
        if (c->nodes == 1) return mn_shm_allreduce(c, s, buf, count, w);
        MN_CHECK(mn_shm_reduce_scatter(c, s, buf, count, &sum_only));
        MN_CHECK(mn_shm_allgather(c, s, buf, count, w, 0));
        if (c->intra_rank == 0) MN_CHECK(mn_allreduce_wire(c, c->inter, buf, count, w));
        return mn_shm_bcast(c, s, buf, count, w, 0);
    }
    if (c->intra_size > 1)
        MN_MPI(c, MPI_Reduce(c->intra_rank == 0 ? MPI_IN_PLACE : buf, buf, count, w->type, w->op, 0, c->intra));
    if (c->intra_rank == 0) MN_CHECK(mn_allreduce_wire(c, c->inter, buf, count, w));
    if (c->intra_size > 1)
        MN_MPI(c, MPI_Bcast(buf, count, w->type, 0, c->intra));
    return MN_OK;
}

const mn_comm_ops mn_comm_hierarchical_ops = {
    .name = "hierarchical",
    .setup = hierarchical_setup,
    .sum = hierarchical_sum,
    .teardown = hierarchical_teardown,
};
