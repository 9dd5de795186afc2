/* The collectives (plugin/coll): one interface, mn_comm_ops, with one file
 * per algorithm (mn_comm_<name>.c) over the shared helpers of
 * mn_coll_base.c, and the registry (mn_comm.c) that creates communicators
 * and selects an algorithm. Above the transports (docs/design.md). */
#ifndef MN_COLL_H
#define MN_COLL_H

#include "mn_transport.h"
#include "mn_comm.h"

/* A communicator's collective state (c->coll). */
struct mn_coll {
    void *state;                  /* the algorithm's own */
    size_t net_piece_floats;      /* the piece where the job spans nodes (MN_NET_PIECE_BYTES) */
    long ranks_per_node;          /* MN_RANKS_PER_NODE, 0 when unset (nodes are hosts) */
    char auto_why[320];           /* why communicator=auto chose ops; "" where a cfg named it */
};

/* One algorithm's core: sum count elements of buf over all ranks, in place,
 * and divide the float32 result by w->div. */
typedef mn_status (*mn_sum_fn)(mn_comm *c, void *buf, int count, const mn_wire *w);

/* What a query sees of the job: the same on every rank but the rank's own
 * placement (gpu, device, own). */
typedef struct {
    int ranks, nodes;
    int per_node;          /* ranks on every node; 0 where nodes differ in size */
    char layout[256];      /* "3 ranks on 2 nodes (2+1)" (mn_comm_layout) */
    char said[96];         /* "2 nodes of 4 ranks", or "3 ranks on 2 nodes of unequal size" */
    mn_gpu_in gpu;         /* this rank's placement (mn_gpu_place; zero before it) */
    int device, own;       /* its device (-1: the CPU), and whether no rank of the host shares it */
} mn_comm_shape;

/* A query's answer. */
typedef struct {
    int priority;          /* communicator=auto picks the algorithm every rank accepts with the highest */
    mn_status refused;     /* MN_OK: accepted; else the status a cfg naming it gets */
    char why[512];         /* accepted: auto's reason to pick it; refused: the message */
    const char *needs;     /* where it can be refused by the job's shape: what it needs, for auto's reason */
} mn_comm_answer;

/* One communicator algorithm. Each lives in its own mn_comm_<name>.c and is
 * registered in mn_comm.c. */
typedef struct mn_comm_ops {
    const char *name;
    /* Whether it runs on this job (pure; may be NULL: accepted, never auto's). */
    void (*query)(const mn_comm_shape *s, mn_comm_answer *a);
    /* Build the algorithm's state (sub-communicators, buffers) or refuse the
     * topology with a message. Collective; may be NULL. */
    mn_status (*setup)(mn_comm *c);
    /* Replace each array by its mean over all ranks. Every rank passes the
     * same n and lens; arrays may be empty. Collective. NULL: the arrays go
     * through mn_mean_by_pieces with `sum`, in pieces of c->piece_floats
     * (c->coll->net_piece_floats where the job spans nodes). */
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
    /* GPU builds: device_stream is the stream (a cudaStream_t) the
     * algorithm's device work runs on, where it has mean_grad_device (its
     * waits for Darknet's work are recorded there, or by the caller where
     * c->device_ordered). Double buffering on the device (ChainerMN has it
     * for pure_nccl alone): mean_packed issues onto that stream the
     * in-place mean of the count floats at dev, one packed device buffer
     * (float16 where c->half), and returns without waiting (collective);
     * device_wait waits for that stream as mean_grad_device does (its
     * deadline, a peer's failure named; what names the wait). NULL elsewhere. */
    void *(*device_stream)(mn_comm *c);
    mn_status (*mean_packed)(mn_comm *c, float *dev, size_t count);
    mn_status (*device_wait)(mn_comm *c, const char *what);
    /* Release what setup made; may be NULL. */
    void (*teardown)(mn_comm *c);
} mn_comm_ops;

extern const mn_comm_ops mn_comm_naive_ops;
extern const mn_comm_ops mn_comm_flat_ops;
extern const mn_comm_ops mn_comm_hierarchical_ops;
extern const mn_comm_ops mn_comm_two_dimensional_ops;
extern const mn_comm_ops mn_comm_single_node_ops;
extern const mn_comm_ops mn_comm_pure_nccl_ops;
/* A communicator over c's world with c's GPU placement (the bench's
 * variants, double buffering's thread). Collective. */
mn_comm *mn_comm_create_like(const mn_comm *c, mn_status *status);
/* mn_comm_select with the algorithm itself (a test's fake among them):
 * collective, its setup under the guard. */
mn_status mn_comm_select_ops(mn_comm *c, const mn_comm_ops *ops);
/* The communicator of a thread of its own (double buffering, overlap): c's
 * algorithm and dtype, once MPI granted MPI_THREAD_MULTIPLE (feature names
 * the key in the refusal). Collective; NULL with the agreed status. */
mn_comm *mn_comm_for_thread(mn_comm *c, const char *feature, mn_status *status);

/* The mean over all ranks of the arrays, through sum, in pieces of at most
 * `piece` elements: packs (unless the arrays lie back to back and travel as
 * float32), converts to half when c->half, sums, divides, unpacks. */
mn_status mn_mean_by_pieces(mn_comm *c, float **arrays, const size_t *lens, int n, size_t piece, mn_sum_fn sum);
/* The sum over c->world: one MPI_Allreduce (naive's and flat's core). */
mn_status mn_sum_world(mn_comm *c, void *buf, int count, const mn_wire *w);
/* "3 ranks on 2 nodes (2+1)" into out; *even = every node has as many ranks. Collective. */
mn_status mn_comm_layout(mn_comm *c, char *out, size_t cap, int *even);
/* flat's and single_node's setup, teardown and sum: c->coll->state is the
 * node's window (or NULL) when the job is one node; the sum goes through
 * it, else over the world (by node across nodes). */
mn_status mn_shm_setup_job(mn_comm *c);
void mn_shm_teardown_job(mn_comm *c);
mn_status mn_sum_job(mn_comm *c, void *buf, int count, const mn_wire *w);
/* Grow c->fused to hold n floats. */
mn_status mn_comm_fused(mn_comm *c, size_t n);

#endif
