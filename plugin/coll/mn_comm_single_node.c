/* single_node: one allreduce inside the node (its shared window, else MPI),
 * for a job on one machine; several nodes are refused, not half averaged. */
#include <stdio.h>
#include "coll/mn_coll.h"

/* Below flat, which is the same there. */
static void single_node_query(const mn_comm_shape *s, mn_comm_answer *a)
{
    a->priority = 30;
    if (s->nodes == 1) {
        snprintf(a->why, sizeof a->why, "%s: one allreduce in the node's shared memory", s->said);
        return;
    }
    a->refused = MN_ERR_USER;
    snprintf(a->why, sizeof a->why, "communicator 'single_node' works inside one node, but this job has %s; "
                                     "use hierarchical, two_dimensional or flat", s->layout);
}

const mn_comm_ops mn_comm_single_node_ops = {
    .name = "single_node",
    .query = single_node_query,
    .setup = mn_shm_setup_job,
    .sum = mn_sum_job,
    .teardown = mn_shm_teardown_job,
};
