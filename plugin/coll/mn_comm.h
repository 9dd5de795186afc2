/* The communicator (mn_comm.c; mn_gpu_place: transport/mn_gpu.c). Public
 * API (darknet_mn.h). */
#ifndef MN_COMM_H
#define MN_COMM_H

#include <stddef.h>
#include "core/mn_status.h"

/* Collective over world; on error every rank gets the same non-OK status.
 * create starts on flat, reading rank 0's MN_PIECE_BYTES, MN_RANKS_PER_NODE
 * and MN_SHM. mn_gpu_place sets this rank's GPU (none with nogpu): call it
 * before loading a network. select: "" or "auto" picks by the job's shape
 * (docs/config.md). */
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
/* Why auto chose mn_comm_name; "" where the cfg named it. */
const char *mn_comm_auto_why(const mn_comm *c);
/* NULL when a cfg may name it, else why not. */
const char *mn_comm_check_name(const char *name);
/* The names a cfg may give, ", "-separated. */
const char *mn_comm_names(void);
MPI_Comm mn_comm_world(const mn_comm *c);

/* Replace each of the n arrays by its mean over all ranks (collective). */
mn_status mn_comm_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n);
/* half = 1: mean_grad sends IEEE half (arrays stay float32); 0: float32.
 * Local, but every rank must set the same. */
mn_status mn_comm_set_dtype(mn_comm *c, int half);
int mn_comm_half(const mn_comm *c);
/* Whether the algorithm averages array by array itself (a bucket may then
 * hold whole arrays only). */
int mn_comm_by_array(const mn_comm *c);
/* The scratch buffer of at least n floats, grown where needed (its
 * contents are not kept across calls into the communicator). */
mn_status mn_comm_fused(mn_comm *c, size_t n, float **buf);

/* On the device (GPU builds). Whether mean_grad_device, or mean_packed,
 * takes the dtype set now; */
int mn_comm_device_mean(const mn_comm *c);
int mn_comm_device_packed(const mn_comm *c);
/* the device arrays, or one packed buffer of n floats, replaced by their
 * mean on the algorithm's stream (collective); */
mn_status mn_comm_mean_grad_device(mn_comm *c, float **arrays, const size_t *lens, int n);
mn_status mn_comm_mean_packed(mn_comm *c, float *buf, size_t n);
/* that stream (NULL where the algorithm has none), and a wait for the
 * work queued on it, what naming it in an error. */
void *mn_comm_device_stream(mn_comm *c);
mn_status mn_comm_device_wait(mn_comm *c, const char *what);

/* Whether this MPI takes device pointers (0 where it cannot say). */
int mn_mpi_cuda_aware(void);

#endif
