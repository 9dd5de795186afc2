/* CUDA and NCCL pieces of GPU builds (mn_nccl_node.c, mn_kernels.cu). */
#ifndef MN_MN_NCCL_H
#define MN_MN_NCCL_H

#include "mn_transport.h"

/* GPU=1 NCCL=1 code (with cuda_runtime.h and nccl.h included): a failed
 * CUDA or NCCL call is reported with the rank and ends the function. */
#define MN_CUDA_CHECK(c, call) do { cudaError_t mn_e_ = (call); if (mn_e_ != cudaSuccess) { \
    mn_error((c), "%s failed: %s", #call, cudaGetErrorString(mn_e_)); return MN_ERR_UNAVAILABLE; } } while (0)
#define MN_NCCL_CHECK(c, call) do { ncclResult_t mn_e_ = (call); if (mn_e_ != ncclSuccess) { \
    mn_error((c), "%s failed: %s", #call, ncclGetErrorString(mn_e_)); return MN_ERR_UNAVAILABLE; } } while (0)

#if defined(MN_NCCL) && defined(GPU)
#include <cuda_runtime.h>
#include <nccl.h>
/* One NCCL communicator (mn_nccl_node.c): this rank's GPU (mn_gpu_device), its
 * own stream, and an event that orders the stream after Darknet's kernels
 * on the legacy default stream. Shared by pure_nccl and the node legs. */
typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready;
    int device, has_comm, has_stream, has_event;
} mn_nccl;
/* Over `over` (rank `rank` of `size`): the unique id from its rank 0 by
 * MPI_Bcast. Collective over c->world, every step agreed. Only after
 * mn_gpu_place, on the rank's own device (mn_nccl_usable). */
mn_status mn_nccl_open(mn_comm *c, MPI_Comm over, int size, int rank, mn_nccl *n);
void mn_nccl_close(mn_nccl *n);
/* Makes n's device (the rank's own) current on the calling thread. */
mn_status mn_nccl_enter(mn_comm *c, const mn_nccl *n);
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

#endif
