/* naive: one MPI_Allreduce per array, in place, then a division by size. The
 * reference every other algorithm is tested against: simple, but it pays the
 * latency of one collective per layer array. */
#include <limits.h>
#include "mn_coll.h"

static mn_status naive_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    for (int i = 0; i < n; ++i)
        MN_CHECK(mn_mean_by_pieces(c, arrays + i, lens + i, 1, INT_MAX, mn_sum_world));
    return MN_OK;
}

const mn_comm_ops mn_comm_naive_ops = {
    .name = "naive",
    .mean_grad = naive_mean_grad,
};
