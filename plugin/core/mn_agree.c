/* Agreement: every rank leaves with the worst status of any rank, so that
 * all take the same branch after a step that may fail on some. */
#include "mn_core.h"

mn_status mn_agree(mn_comm *c, mn_status mine)
{
    int in = (int)mine, out = 0;
    mn_guard(c, "waiting for every rank");
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, c->world) != MPI_SUCCESS)
        mn_abort(c, "MPI_Allreduce failed while agreeing on a status");
    mn_unguard(c);
    return (mn_status)out;
}
