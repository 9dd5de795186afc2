/* When the launcher started several processes but MPI sees a job of one,
 * the two did not meet (srun --mpi=none, another MPI's mpiexec): each
 * process would train alone on the same backup folder. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mn_launch.h"

static long env_long(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

int mn_launch_mismatch(int world_size, char *why, size_t cap, int *speaks)
{
    /* The innermost launcher first: an mpiexec inside an srun step sets its own. */
    static const struct { const char *size, *rank, *who, *fix; } l[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpiexec",
         "run it with the mpiexec of the MPI it was built with"},
        {"PMI_SIZE", "PMI_RANK", "MPICH's mpiexec (Hydra)", "run it with the mpiexec of the MPI it was built with"},
        {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun",
         "give srun the plugin of this build's MPI: --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH (srun --mpi=list)"},
    };
    *speaks = 0;
    if (world_size != 1) return 0;
    for (size_t i = 0; i < sizeof l / sizeof l[0]; ++i) {
        long n = env_long(l[i].size);
        if (n < 0) continue;
        if (n <= 1) return 0;
        char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int len = 0;
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, ",\n")] = 0;   /* its first line, e.g. "Open MPI v4.1.4" */
        for (char *t = lib; *t; ++t) if (*t == '\t') *t = ' ';
        snprintf(why, cap, "%s started %ld processes, but each is alone in an MPI job of 1 (this darknet_mn's MPI: %s): %s",
                 l[i].who, n, lib, l[i].fix);
        *speaks = env_long(l[i].rank) <= 0;
        return 1;
    }
    return 0;
}
