/* The launcher against MPI (mn_launch.c): one job, or N lone processes. */
#ifndef MN_LAUNCH_H
#define MN_LAUNCH_H

#include <stddef.h>

/* After MPI_Init, with MPI_COMM_WORLD's size: 1 when the launcher says it
 * started more processes than MPI sees (each alone in a job of 1: srun's
 * --mpi plugin or mpiexec of another MPI than the build's), with why set
 * to the one line to print and *speaks 1 on the launcher's first process
 * only; else 0. Reads the environment the launcher sets. */
int mn_launch_mismatch(int world_size, char *why, size_t cap, int *speaks);

#endif
