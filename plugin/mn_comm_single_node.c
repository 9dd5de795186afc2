/* single_node: one MPI_Allreduce inside the node (c->intra), for a job that
 * runs on one machine; a job on several nodes is refused at setup rather than
 * averaged over part of the ranks. */
#include "mn_internal.h"

static mn_status single_node_setup(mn_comm *c)
{
    char layout[256];
    int even;
    MN_CHECK(mn_comm_layout(c, layout, sizeof layout, &even));
    if (c->nodes > 1) {
        if (c->rank == 0)
            mn_error(c, "communicator 'single_node' works inside one node, but this job has %s; "
                        "use hierarchical, two_dimensional or flat", layout);
        return MN_ERR_USER;
    }
    return MN_OK;
}

static mn_status single_node_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    return mn_allreduce_wire(c, c->intra, buf, count, w);
}

const mn_comm_ops mn_comm_single_node_ops = {
    .name = "single_node",
    .setup = single_node_setup,
    .sum = single_node_sum,
};
