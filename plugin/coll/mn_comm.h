/* The communicator a program creates, places on a GPU and averages with
 * (mn_comm.c; the placement, mn_gpu_place, is transport/mn_gpu.c's). Part
 * of the public API (darknet_mn.h): the job handle stays opaque, and
 * nothing here names Darknet. */
#ifndef MN_COMM_H
#define MN_COMM_H

#include <stddef.h>
#include "mn_status.h"

/* Communicators. mn_comm_create learns the topology (rank, node, ...) and
 * takes MN_PIECE_BYTES, MN_RANKS_PER_NODE and MN_SHM from rank 0's
 * environment (rank 0 prints those set); it starts with flat, on the CPU.
 * mn_gpu_place chooses this rank's GPU (none with nogpu or in a CPU build),
 * makes it current and sets Darknet's gpu_index: call it before loading a
 * network. mn_comm_select switches to the algorithm a cfg names ("" or
 * "auto", the default: the one chosen for the job's shape, mn_comm.c; today
 * pure_nccl where every rank has a GPU of its own in a GPU=1 NCCL=1 build,
 * else flat). All are collective over world; on error they print why and
 * every rank gets the same non-OK status. */
mn_comm *mn_comm_create(MPI_Comm world, mn_status *status);
mn_status mn_gpu_place(mn_comm *c, int nogpu);
mn_status mn_comm_select(mn_comm *c, const char *name);
void mn_comm_free(mn_comm *c);
int mn_comm_rank(const mn_comm *c);
int mn_comm_size(const mn_comm *c);
int mn_comm_intra_rank(const mn_comm *c);
int mn_comm_intra_size(const mn_comm *c);
int mn_comm_inter_rank(const mn_comm *c);
int mn_comm_inter_size(const mn_comm *c);
const char *mn_comm_name(const mn_comm *c);
/* Why auto chose mn_comm_name (the job's shape and the measurements); ""
 * where the cfg named the communicator. */
const char *mn_comm_auto_why(const mn_comm *c);
/* NULL when a cfg may name this communicator, else why not ("is unknown"). */
const char *mn_comm_check_name(const char *name);
/* The names a cfg may give, separated by ", ". */
const char *mn_comm_names(void);
MPI_Comm mn_comm_world(const mn_comm *c);

/* Replace each of the n arrays by its mean over all ranks (collective). */
mn_status mn_comm_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n);
/* half = 1: mn_comm_mean_grad sends IEEE half instead of float32 (arrays stay
 * float32), with every algorithm; half = 0: float32 again. Local, but every
 * rank must set the same. */
mn_status mn_comm_set_dtype(mn_comm *c, int half);

/* Whether this MPI takes device pointers (asked at run time where Open MPI
 * can say; 0 elsewhere). */
int mn_mpi_cuda_aware(void);

#endif
