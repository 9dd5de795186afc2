/* Agreement on a status, and the exit status a status becomes. */
#include "core/mn_core.h"
#include "core/mn_watchdog.h"

mn_status mn_agree(mn_comm *c, mn_status mine)
{
    int in = (int)mine, out = 0;
    mn_guard(c, "waiting for every rank");
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, c->world) != MPI_SUCCESS)
        mn_abort(c, "MPI_Allreduce failed while agreeing on a status");
    mn_unguard(c);
    return (mn_status)out;
}

int mn_first_with(mn_comm *c, int cond)
{
    int r = cond ? c->rank : c->size;
    if (MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_MIN, c->world) != MPI_SUCCESS)
        mn_abort(c, "MPI_Allreduce failed while finding the first rank to speak");
    return cond && r == c->rank;
}

int mn_exit_status(mn_status s)
{
    switch (s) {
    case MN_OK: return MN_EXIT_OK;
    case MN_ERR_USAGE: return MN_EXIT_USAGE;
    case MN_ERR_STORAGE: return MN_EXIT_STORAGE;
    case MN_ERR_USER:
    case MN_ERR_UNAVAILABLE: return MN_EXIT_USER;   /* not built in: a rerun of the same build fails alike */
    case MN_ERR_REFUSED: return MN_EXIT_REFUSED;
    case MN_ERR_DIVERGED: return MN_EXIT_FAULT;
    case MN_ERR_MPI:
    case MN_ERR_NOMEM:
    case MN_ERR_STOPPED: return MN_EXIT_RERUN;
    }
    return MN_EXIT_FAULT;
}
