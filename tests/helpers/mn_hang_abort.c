/* LD_PRELOAD fault injection: an MPI_Abort that never returns, as it can
 * when it interrupts MPI on the same thread or is called from a thread MPI
 * does not expect. The abort path must end the process all the same. */
#include <mpi.h>
#include <unistd.h>

int MPI_Abort(MPI_Comm comm, int code)
{
    (void)comm;
    (void)code;
    for (;;) pause();
}
