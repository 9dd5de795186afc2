/* Internal declarations shared by the plugin's files. */
#ifndef MN_INTERNAL_H
#define MN_INTERNAL_H

#include "darknet_mn.h"

/* Propagate a non-OK status to the caller. */
#define MN_CHECK(expr) do { mn_status mn_s_ = (expr); if (mn_s_ != MN_OK) return mn_s_; } while (0)
/* Check an MPI call; report it with the rank and return MN_ERR_MPI. */
#define MN_MPI(c, call) do { int mn_e_ = (call); if (mn_e_ != MPI_SUCCESS) { \
    mn_error((c), "%s failed (MPI error %d) at %s:%d", #call, mn_e_, __FILE__, __LINE__); \
    return MN_ERR_MPI; } } while (0)

/* One communicator algorithm. Each lives in its own mn_comm_<name>.c and is
 * registered in mn_comm.c. */
typedef struct mn_comm_ops {
    const char *name;
    /* Build the algorithm's state (sub-communicators, buffers) or refuse the
     * topology with a message. Collective; may be NULL. */
    mn_status (*setup)(mn_comm *c);
    /* Replace each array by its mean over all ranks. Every rank passes the
     * same n and lens; arrays may be empty. Collective. */
    mn_status (*mean_grad)(mn_comm *c, float **arrays, const size_t *lens, int n);
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
    size_t piece_floats;          /* largest single MPI message of a fused reduction */
    float *fused;                 /* scratch shared by algorithms that pack */
    size_t fused_cap;
};

extern const mn_comm_ops mn_comm_naive_ops;
extern const mn_comm_ops mn_comm_flat_ops;

/* In-place MPI_SUM of n floats over comm, in INT_MAX pieces (MPI counts are int). */
mn_status mn_sum_floats(mn_comm *c, MPI_Comm comm, float *p, size_t n);
/* Divide by d (not multiply by 1/d: exact whenever the quotient is representable). */
void mn_div_floats(float *p, size_t n, float d);
/* Grow c->fused to hold n floats. */
mn_status mn_comm_fused(mn_comm *c, size_t n);

/* The parameter arrays of a layer in weights-file order. grad is the matching
 * update array when the layer is trained, else NULL. */
typedef struct {
    float *data;
    float *grad;
    size_t n;
} mn_param;
/* Fills up to max entries for layer l (recurrent layers included); returns the
 * count, or -1 for a layer type darknet-mn cannot train yet. */
int mn_layer_params(const layer *l, mn_param *out, int max);
#define MN_MAX_LAYER_PARAMS 48

/* What a data cfg says (mn_data.c). Read on every rank: it is small. */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
} mn_data_cfg;
mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d);
/* The class of a path: the one label it contains (Darknet matches labels as
 * substrings); -1 when none or several match, with their count in *matches. */
int mn_path_class(char **labels, int k, const char *path, int *matches);
/* An image that cannot be opened is reported with its path and this rank. */
mn_status mn_check_readable(const mn_comm *c, const char *path);

/* Timing helper. */
double mn_now(void);

#endif
