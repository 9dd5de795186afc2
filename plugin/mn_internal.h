/* The plugin's internals: the communicator core (struct mn_comm, the
 * algorithm interface, the shared collectives) here, each other subsystem in
 * a header of its own, all included at the end so that a file needs only
 * this one. */
#ifndef MN_INTERNAL_H
#define MN_INTERNAL_H

#include <stdint.h>
#include "darknet_mn.h"
#include "mn_base.h"
#include "mn_gpu.h"

/* Propagate a non-OK status to the caller. */
#define MN_CHECK(expr) do { mn_status mn_s_ = (expr); if (mn_s_ != MN_OK) return mn_s_; } while (0)
/* Check an MPI call; report it with the rank and return MN_ERR_MPI. */
#define MN_MPI(c, call) do { int mn_e_ = (call); if (mn_e_ != MPI_SUCCESS) { \
    mn_error((c), "%s failed (MPI error %d) at %s:%d", #call, mn_e_, __FILE__, __LINE__); \
    return MN_ERR_MPI; } } while (0)

/* How a piece of gradient travels: float32 (MPI_FLOAT, MPI_SUM) or IEEE half
 * (MPI_UINT16_T summed by c->half_sum). A float32 sum is divided by div on
 * its last leg, by whichever rank finishes that part of it (1: a plain sum);
 * halves travel already divided (div = 1). */
typedef struct {
    MPI_Datatype type;
    MPI_Op op;
    int half;
    float div;
} mn_wire;
/* One algorithm's core: sum count elements of buf over all ranks, in place,
 * and divide the float32 result by w->div. */
typedef mn_status (*mn_sum_fn)(mn_comm *c, void *buf, int count, const mn_wire *w);

/* One communicator algorithm. Each lives in its own mn_comm_<name>.c and is
 * registered in mn_comm.c. */
typedef struct mn_comm_ops {
    const char *name;
    /* Build the algorithm's state (sub-communicators, buffers) or refuse the
     * topology with a message. Collective; may be NULL. */
    mn_status (*setup)(mn_comm *c);
    /* Replace each array by its mean over all ranks. Every rank passes the
     * same n and lens; arrays may be empty. Collective. NULL: the arrays go
     * through mn_mean_by_pieces with `sum`, in pieces of c->piece_floats. */
    mn_status (*mean_grad)(mn_comm *c, float **arrays, const size_t *lens, int n);
    /* The algorithm's core when mean_grad is NULL: sum one piece of wire
     * elements over all ranks, in place, and divide by w->div where the last
     * leg leaves the piece in cache (packing and float16 conversion are done
     * around it). Collective. */
    mn_sum_fn sum;
    /* GPU builds: replace each DEVICE array by its mean over all ranks,
     * without staging the whole gradient through host memory; used where
     * setup set c->device_f32 (or c->device_f16 for float16 jobs). Else
     * the optimizer pulls the gradients to its host arena and calls
     * mean_grad. Collective. */
    mn_status (*mean_grad_device)(mn_comm *c, float **dev_arrays, const size_t *lens, int n);
    /* Release what setup made; may be NULL. */
    void (*teardown)(mn_comm *c);
} mn_comm_ops;

struct mn_comm {
    MPI_Comm world, intra, inter;
    int rank, size;
    int intra_rank, intra_size;   /* within the node */
    int inter_rank, inter_size;   /* among ranks with the same intra_rank */
    int nodes;                    /* number of nodes (inter_size of intra_rank 0) */
    char host[64];
    const mn_comm_ops *ops;
    void *state;                  /* the algorithm's own */
    size_t piece_floats;          /* largest single MPI message of a fused reduction (MN_PIECE_BYTES) */
    long ranks_per_node;          /* MN_RANKS_PER_NODE, 0 when unset (nodes are hosts) */
    int shm_off;                  /* MN_SHM=0 (these three: rank 0's environment, on every rank) */
    mn_gpu_in gpu;                /* this rank's GPU placement (mn_gpu_place; zero: the CPU) */
    float *fused;                 /* scratch shared by algorithms that pack */
    size_t fused_cap;
    int half;                     /* gradients travel as IEEE half (mn_comm_set_dtype) */
    MPI_Op half_sum;              /* the MPI op summing halves; MPI_OP_NULL until needed */
    struct mn_arena *arena;       /* the gradient arena's node-shared window, or NULL (mn_shm.c) */
    int arena_borrowed;           /* arena is another communicator's (mn_comm_arena_borrow) */
    int device_f32, device_f16;   /* set up by the algorithm: mean_grad_device takes float32 / float16 jobs */
    struct mn_watchdog *watch;    /* the training job's watchdog (mn_guard), or NULL */
};

extern const mn_comm_ops mn_comm_naive_ops;
extern const mn_comm_ops mn_comm_flat_ops;
extern const mn_comm_ops mn_comm_hierarchical_ops;
extern const mn_comm_ops mn_comm_two_dimensional_ops;
extern const mn_comm_ops mn_comm_single_node_ops;
extern const mn_comm_ops mn_comm_pure_nccl_ops;
/* A communicator over c's world with c's GPU placement (the bench's
 * variants, double buffering's thread). Collective. */
mn_comm *mn_comm_create_like(const mn_comm *c, mn_status *status);
/* The communicator of a thread of its own (double buffering, overlap): c's
 * algorithm and dtype, once MPI granted MPI_THREAD_MULTIPLE (feature names
 * the key in the refusal). Collective; NULL with the agreed status. */
mn_comm *mn_comm_for_thread(mn_comm *c, const char *feature, mn_status *status);

/* The mean over all ranks of the arrays, through sum, in pieces of at most
 * `piece` elements: packs (unless the arrays lie back to back and travel as
 * float32), converts to half when c->half, sums, divides, unpacks. */
mn_status mn_mean_by_pieces(mn_comm *c, float **arrays, const size_t *lens, int n, size_t piece, mn_sum_fn sum);
/* In-place MPI_Allreduce of count wire elements over comm, divided by w->div. */
mn_status mn_allreduce_wire(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w);
/* The sum over c->world: one MPI_Allreduce (naive's and flat's core). */
mn_status mn_sum_world(mn_comm *c, void *buf, int count, const mn_wire *w);
/* "3 ranks on 2 nodes (2+1)" into out; *even = every node has as many ranks. Collective. */
mn_status mn_comm_layout(mn_comm *c, char *out, size_t cap, int *even);
/* Part k of count elements cut in `parts` near-equal parts (sizes differ by
 * at most one, the larger first): its offset and length. */
void mn_split(int count, int parts, int k, int *off, int *n);

/* In-place MPI_SUM of n floats over comm, in INT_MAX pieces (MPI counts are int). */
mn_status mn_sum_floats(mn_comm *c, MPI_Comm comm, float *p, size_t n);
/* p[i] / d, correctly rounded: a multiplication by 1/d where d is a power of
 * two (the same value, and far cheaper), a division otherwise. */
void mn_div_floats(float *p, size_t n, float d);
/* dst[i] = dst[i] + src[i], divided by d when d != 1 (as mn_div_floats). */
void mn_add_floats(float *dst, const float *src, size_t n, float d);
/* The wire's division on count elements of buf (nothing for halves or div 1). */
void mn_wire_div(const mn_wire *w, void *buf, int count);
/* Grow c->fused to hold n floats. */
mn_status mn_comm_fused(mn_comm *c, size_t n);

/* Timing helper. */
double mn_now(void);

#include "mn_shm.h"
#include "mn_nccl.h"
#include "mn_half.h"
#include "mn_dbuf.h"
#include "mn_params.h"
#include "mn_data.h"
#include "mn_eval.h"
#include "mn_optimizer.h"
#include "mn_watchdog.h"
#include "mn_checkpoint.h"

#endif
