/* A launcher and an MPI library that did not meet (mn_launch.c). */
#ifndef MN_LAUNCH_H
#define MN_LAUNCH_H

#include <stddef.h>

/* After MPI_Init: 1 when the launcher started more processes than
 * world_size, with why set to the line to print and *speaks 1 on its first
 * process only; else 0. */
int mn_launch_mismatch(int world_size, char *why, size_t cap, int *speaks);

#endif
