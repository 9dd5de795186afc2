/* single_node: one allreduce inside the node, through the node's
 * shared-memory window (mn_shm.c) or, where there is none, one MPI_Allreduce;
 * for a job on one machine. A job on several nodes is refused at setup
 * rather than averaged over part of the ranks. */
#include "mn_coll.h"

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
    return mn_shm_setup_job(c);
}

const mn_comm_ops mn_comm_single_node_ops = {
    .name = "single_node",
    .setup = single_node_setup,
    .sum = mn_sum_job,
    .teardown = mn_shm_teardown_job,
};
