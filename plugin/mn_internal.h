/* Internal declarations shared by the plugin's files. */
#ifndef MN_INTERNAL_H
#define MN_INTERNAL_H

#include <stdint.h>
#include "darknet_mn.h"

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
    size_t piece_floats;          /* largest single MPI message of a fused reduction */
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
/* 1 when this build has NCCL and this rank has a CUDA device of its own
 * (device intra_rank): pure_nccl is then the default (mn_comm_pure_nccl.c). */
int mn_nccl_usable(const mn_comm *c);

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

/* The node's MPI-3 shared-memory window (mn_shm.c), for intra-node legs
 * without MPI messages. mn_shm_open (collective over c->intra) gives NULL,
 * with MN_OK, where the node has one rank, its ranks share no memory, or
 * MN_SHM=0. A piece is cut in near-equal chunks, chunk k owned by intra-rank k. */
typedef struct mn_shm mn_shm;
mn_status mn_shm_open(mn_comm *c, mn_shm **out);
void mn_shm_close(mn_shm *s);
/* Whether count wire elements fit the window's areas (one piece). */
int mn_shm_fits(const mn_shm *s, int count, const mn_wire *w);
/* Chunk intra_rank of buf becomes the node's sum of that chunk, divided by w->div. */
mn_status mn_shm_reduce_scatter(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w);
/* Every rank's chunk into buf: on every rank (root < 0) or on root alone. */
mn_status mn_shm_allgather(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root);
/* root's buf to every rank of the node. */
mn_status mn_shm_bcast(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root);
/* reduce-scatter, then allgather: the node's sum on every rank of it. */
mn_status mn_shm_allreduce(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w);
/* The gradient arena (n floats and one spare, zeroed) in a node-shared
 * window where the node has one, so that the shm allreduce of flat,
 * single_node and one-node hierarchical reads the peers' arenas in place
 * (else calloc). One per communicator; collective over the node, every rank
 * with the same n. Free it with mn_comm_arena_free (collective for a window). */
mn_status mn_comm_arena_alloc(mn_comm *c, size_t n, float **out);
void mn_comm_arena_free(mn_comm *c, float *p);
/* c uses owner's arena window too (the bench's variants); owner must
 * outlive c's use of it. */
void mn_comm_arena_borrow(mn_comm *c, const mn_comm *owner);
/* Frees c's own arena window or drops a borrowed one (mn_comm_free). */
void mn_comm_arena_release(mn_comm *c);
/* Ends a mean over the arena: the last barrier before any arena may change. */
mn_status mn_shm_arena_fence(mn_comm *c);
/* flat's and single_node's setup, teardown and sum: c->state is the window
 * (or NULL) when the job is one node; the sum goes through it, else through
 * one MPI_Allreduce over c->world. */
mn_status mn_shm_setup_job(mn_comm *c);
void mn_shm_teardown_job(mn_comm *c);
mn_status mn_sum_job(mn_comm *c, void *buf, int count, const mn_wire *w);

/* GPU=1 NCCL=1 code (with cuda_runtime.h and nccl.h included): a failed
 * CUDA or NCCL call is reported with the rank and ends the function. */
#define MN_CUDA_CHECK(c, call) do { cudaError_t mn_e_ = (call); if (mn_e_ != cudaSuccess) { \
    mn_error((c), "%s failed: %s", #call, cudaGetErrorString(mn_e_)); return MN_ERR_UNAVAILABLE; } } while (0)
#define MN_NCCL_CHECK(c, call) do { ncclResult_t mn_e_ = (call); if (mn_e_ != ncclSuccess) { \
    mn_error((c), "%s failed: %s", #call, ncclGetErrorString(mn_e_)); return MN_ERR_UNAVAILABLE; } } while (0)

#if defined(MN_NCCL) && defined(GPU)
#include <cuda_runtime.h>
#include <nccl.h>
/* One NCCL communicator (mn_nccl_node.c): this rank's GPU (intra_rank), its
 * own stream, and an event that orders the stream after Darknet's kernels
 * on the legacy default stream. Shared by pure_nccl and the node legs. */
typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready;
    int device, has_comm, has_stream, has_event;
} mn_nccl;
/* Over `over` (rank `rank` of `size`): the unique id from its rank 0 by
 * MPI_Bcast. Collective over c->world, every step agreed; the caller's
 * current device is kept. */
mn_status mn_nccl_open(mn_comm *c, MPI_Comm over, int size, int rank, mn_nccl *n);
void mn_nccl_close(mn_nccl *n);
/* The stream waits for everything queued so far on the default stream. */
mn_status mn_nccl_after_darknet(mn_comm *c, mn_nccl *n);
#endif

/* The node's NCCL legs of hierarchical and two_dimensional in GPU runs
 * (mn_nccl_node.c; float32). open is collective and gives NULL unless every
 * rank has a GPU of its own on a node of several ranks, and always in builds
 * without GPU=1 NCCL=1. mean: device arrays in place, the mean over all ranks. */
typedef struct mn_nccl_node mn_nccl_node;
mn_status mn_nccl_node_open(mn_comm *c, mn_nccl_node **out);
void mn_nccl_node_close(mn_nccl_node *nn);
mn_status mn_nccl_node_mean(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional);

/* Device kernels (mn_kernels.cu, GPU=1 builds): on `stream` (a cudaStream_t);
 * non-zero when the launch failed. The *_nonfinite ones set *dev_flag (device
 * memory) to 1 when any element is Inf or NaN. */
int mn_gpu_floats_to_halves(uint16_t *out, const float *in, size_t n, float scale, void *stream);
int mn_gpu_halves_to_floats(float *out, const uint16_t *in, size_t n, void *stream);
int mn_gpu_add(float *y, const float *x, size_t n, void *stream);
int mn_gpu_halves_nonfinite(const uint16_t *h, size_t n, int *dev_flag, void *stream);
int mn_gpu_floats_nonfinite(const float *x, size_t n, int *dev_flag, void *stream);

/* IEEE half (mn_half.c): round to nearest even, overflow to Inf, subnormals kept. */
uint16_t mn_float_to_half(float f);
float mn_half_to_float(uint16_t h);
/* out[i] = half(in[i] / div) */
void mn_floats_to_halves(uint16_t *out, const float *in, size_t n, float div);
void mn_halves_to_floats(float *out, const uint16_t *in, size_t n);
/* 0 when any of the n halves is Inf or NaN. */
int mn_halves_finite(const uint16_t *h, size_t n);
/* A commutative MPI op summing halves through float (free with MPI_Op_free). */
mn_status mn_half_op_create(mn_comm *c, MPI_Op *op);

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

/* double_buffering=1 (mn_dbuf.c): a thread with its own communicator averages
 * the previous step's gradient while the next one is computed. start and
 * stop are collective (stop waits for the mean in flight). exchange: waits
 * for the previous mean, leaves it in arena (zeros at the first step) and
 * sends arena's fresh gradient; returns 0 when there was no mean to apply. */
typedef struct mn_dbuf mn_dbuf;
mn_status mn_dbuf_start(mn_comm *c, const size_t *lens, int n, size_t total, mn_dbuf **out);
int mn_dbuf_exchange(mn_dbuf *d, float *arena);
/* The mean in flight, once finished (for checkpoints), and whether there is one. */
float *mn_dbuf_pending(mn_dbuf *d, int *has_mean);
/* After a checkpoint restored the pending mean into mn_dbuf_pending's buffer. */
void mn_dbuf_set_pending(mn_dbuf *d, int has_mean);
void mn_dbuf_stop(mn_dbuf *d);

/* The parameter arrays of a layer in weights-file order. grad is the matching
 * update array when the layer is trained, else NULL. */
typedef struct {
    float *data;
    float *grad;
    size_t n;
} mn_param;
/* All parameters and running statistics of net, in weights-file order:
 * their count, and copies to / from one flat buffer (pulling from or pushing
 * to the GPU in a GPU run). */
size_t mn_params_count(const network *net);
void mn_params_pack(network *net, float *buf);
void mn_params_unpack(network *net, const float *buf);
/* 64-bit FNV-1a, for signatures and checksums. */
#define MN_FNV_SEED 1469598103934665603ULL
uint64_t mn_fnv1a(uint64_t h, const void *p, size_t n);

/* Fills up to max entries for layer l (recurrent layers included); returns the
 * count, or -1 for a layer type darknet-mn cannot train yet. */
int mn_layer_params(const layer *l, mn_param *out, int max);
#define MN_MAX_LAYER_PARAMS 48

/* What a data cfg says (mn_data.c). Read on every rank: it is small. */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
    int nlabels;      /* lines in the labels file (>= classes) */
    list *options;    /* the parsed data cfg; the strings above point into it */
} mn_data_cfg;
/* On error nothing is left to free; on success mn_free_data_cfg releases it. */
mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d);
void mn_free_data_cfg(mn_data_cfg *d);

/* Evaluation during training (mn_evaluator.c). Called by every rank at the end
 * of every iteration; every eval_interval iterations it scores the eval list
 * (classifier top-1, detector mAP) at the cfg's input size w x h (whatever
 * size random=1 trains at now), rank 0 prints it and saves
 * <backup>/<base>_best.weights when it improves. *state starts NULL. */
typedef struct mn_eval_state mn_eval_state;
mn_status mn_eval_during_training(mn_comm *c, network *net, mn_task task, const mn_data_cfg *dc,
                                  const mn_options *opt, size_t it, const char *base, int w, int h,
                                  mn_eval_state **state);
void mn_eval_free(mn_eval_state *state);
/* The score evaluated at iteration it, or NAN when none was. */
double mn_eval_score(const mn_eval_state *state, size_t it);
/* The class of a path: the one label it contains (Darknet matches labels as
 * substrings); -1 when none or several match, with their count in *matches. */
int mn_path_class(char **labels, int k, const char *path, int *matches);
/* An image that cannot be opened is reported with its path and this rank. */
mn_status mn_check_readable(const mn_comm *c, const char *path);

#include "mn_watchdog.h"

/* Call before each train_network: with float16 it sets Darknet's momentum
 * part aside so that only the fresh gradient is rounded to half. */
void mn_optimizer_begin_step(mn_optimizer *o, const network *net);
/* Whether the last update's averaged gradient held NaN or Inf (it was zeroed). */
int mn_optimizer_nonfinite(const mn_optimizer *o);
/* The arena as the live momentum: pulled from the GPU first (to_device=0),
 * or pushed to it after the caller filled it (to_device=1). */
float *mn_optimizer_host_state(mn_optimizer *o, const network *net, int to_device, size_t *n);
/* The optimizer's update arrays (gradients, then Darknet's momentum part). */
float *mn_optimizer_arena(mn_optimizer *o, size_t *n);

/* Multi-node checkpoints (mn_checkpoint.c). save: every rank writes its file
 * and the generations beyond the newest `keep` are removed. resume: loads the
 * newest generation every rank holds intact; *resumed = 0 when there is none. */
mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                             const char *base, int keep);
mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir,
                               const char *base, int *resumed);
/* Size of one rank's checkpoint file. */
size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o);
/* Iterations of this rank's checkpoint files in dir (unverified). */
int mn_checkpoint_list(const mn_comm *c, const char *dir, const char *base, uint64_t *gens, int max);

/* Timing helper. */
double mn_now(void);

#endif
