/* The algorithms' mn_comm_ops and the registry (docs/design.md). */
#ifndef MN_COLL_H
#define MN_COLL_H

#include "transport/mn_transport.h"
#include "coll/mn_comm.h"

/* c->coll */
struct mn_coll {
    const struct mn_comm_ops *ops; /* the algorithm */
    float *fused;                 /* scratch of the algorithms that pack */
    size_t fused_cap;
    int half;                     /* gradients travel as IEEE half (mn_comm_set_dtype) */
    int device_f32, device_f16;   /* mean_grad_device takes float32 / float16 jobs */
    void *state;
    size_t net_piece_floats;
    long ranks_per_node;          /* MN_RANKS_PER_NODE */
    char auto_why[320];
};

typedef mn_status (*mn_sum_fn)(mn_comm *c, void *buf, int count, const mn_wire *w);

/* The job as a query sees it: alike on every rank but the placement. */
typedef struct {
    int ranks, nodes;
    int per_node;          /* 0: nodes of unequal size */
    char layout[256];      /* "... (2+1)" */
    char said[96];
    mn_gpu_in gpu;
    int device, own;
} mn_comm_shape;

typedef struct {
    int priority;          /* auto's rank */
    mn_status refused;     /* MN_OK: accepted */
    char why[512];         /* auto's reason, or why refused */
    const char *needs;     /* what a shape refused lacks */
} mn_comm_answer;

typedef struct mn_comm_ops {
    const char *name;
    void (*query)(const mn_comm_shape *s, mn_comm_answer *a);
    mn_status (*setup)(mn_comm *c);
    mn_status (*mean_grad)(mn_comm *c, float **arrays, const size_t *lens, int n);
    mn_sum_fn sum;
    mn_status (*mean_grad_device)(mn_comm *c, float **dev_arrays, const size_t *lens, int n);
    void *(*device_stream)(mn_comm *c);
    mn_status (*mean_packed)(mn_comm *c, float *dev, size_t count);
    mn_status (*device_wait)(mn_comm *c, const char *what);
    void (*teardown)(mn_comm *c);
} mn_comm_ops;

extern const mn_comm_ops mn_comm_naive_ops;
extern const mn_comm_ops mn_comm_flat_ops;
extern const mn_comm_ops mn_comm_hierarchical_ops;
extern const mn_comm_ops mn_comm_two_dimensional_ops;
extern const mn_comm_ops mn_comm_single_node_ops;
extern const mn_comm_ops mn_comm_pure_nccl_ops;
/* Collective, as the rest below. */
mn_comm *mn_comm_create_like(const mn_comm *c, mn_status *status);
mn_status mn_comm_select_ops(mn_comm *c, const mn_comm_ops *ops);
/* c's algorithm and dtype for another thread (MPI_THREAD_MULTIPLE). */
mn_comm *mn_comm_for_thread(mn_comm *c, const char *feature, mn_status *status);

mn_status mn_mean_by_pieces(mn_comm *c, float **arrays, const size_t *lens, int n, size_t piece, mn_sum_fn sum);
mn_status mn_sum_world(mn_comm *c, void *buf, int count, const mn_wire *w);
mn_status mn_comm_layout(mn_comm *c, char *out, size_t cap, int *even);
/* flat's and single_node's: the node's window on a one-node job. */
mn_status mn_shm_setup_job(mn_comm *c);
void mn_shm_teardown_job(mn_comm *c);
mn_status mn_sum_job(mn_comm *c, void *buf, int count, const mn_wire *w);

#endif
