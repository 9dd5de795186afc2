/* Launcher and MPI mismatch (mn_launch.c). */
#ifndef MN_LAUNCH_H
#define MN_LAUNCH_H

#include <stddef.h>

/* After MPI_Init: 1 when the launcher started more processes than
 * world_size, why the line the one process with *speaks prints; else 0. */
int mn_launch_mismatch(int world_size, char *why, size_t cap, int *speaks);

#endif
