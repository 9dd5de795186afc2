/* The transports (plugin/transport): how bytes move between ranks: MPI
 * wires (float32 or IEEE half), the node's shared memory and gradient
 * arena, NCCL, and each rank's GPU. Above the process layer, below the
 * collectives (docs/design.md). */
#ifndef MN_TRANSPORT_H
#define MN_TRANSPORT_H

#include "mn_core.h"
#include "mn_base.h"

/* How a piece of gradient travels: float32 (MPI_FLOAT, MPI_SUM) or IEEE half
 * (MPI_UINT16_T summed by c->transport->half_sum). A float32 sum is divided by div on
 * its last leg, by whichever rank finishes that part of it (1: a plain sum);
 * halves travel already divided (div = 1). */
typedef struct {
    MPI_Datatype type;
    MPI_Op op;
    int half;
    float div;
} mn_wire;
/* In-place MPI_Allreduce of count wire elements over comm, divided by w->div. */
mn_status mn_allreduce_wire(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w);
/* The same sum by our own reduce-scatter and allgather, partners nearest
 * first (mn_rsag.c): the network legs, on a communicator ordered node by
 * node. Every rank ends with the same bits. */
mn_status mn_allreduce_rsag(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w);
/* In-place MPI_SUM of n floats over comm, in INT_MAX pieces (MPI counts are int). */
mn_status mn_sum_floats(mn_comm *c, MPI_Comm comm, float *p, size_t n);
/* p[i] / d, correctly rounded: a multiplication by 1/d where d is a power of
 * two (the same value, and far cheaper), a division otherwise. */
void mn_div_floats(float *p, size_t n, float d);
/* dst[i] = dst[i] + src[i], divided by d when d != 1 (as mn_div_floats). */
void mn_add_floats(float *dst, const float *src, size_t n, float d);
/* The wire's division on count elements of buf (nothing for halves or div 1). */
void mn_wire_div(const mn_wire *w, void *buf, int count);
/* Part k of count elements cut in `parts` near-equal parts (sizes differ by
 * at most one, the larger first): its offset and length. */
void mn_split(int count, int parts, int k, int *off, int *n);


#include "mn_gpu.h"
#include "mn_half.h"
#include "mn_shm.h"
#include "mn_nccl.h"
#include "mn_queue.h"
#include "mn_wait.h"

/* A communicator's transport state (c->transport). */
struct mn_transport {
    MPI_Comm by_node;             /* world ordered node by node (made where nodes > 1) */
    int shm_off;                  /* MN_SHM=0 */
    mn_gpu_in gpu;                /* this rank's GPU placement (mn_gpu_place; zero: the CPU) */
    void *wire_tmp;               /* mn_allreduce_rsag's receive buffer */
    size_t wire_tmp_cap;
    MPI_Op half_sum;              /* the MPI op summing halves; MPI_OP_NULL until needed */
    struct mn_arena *arena;       /* the gradient arena's node-shared window, or NULL (mn_shm.c) */
    int arena_borrowed;           /* arena is another communicator's (mn_comm_arena_borrow) */
};

#endif
