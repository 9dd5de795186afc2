/* NCCL in GPU builds (mn_nccl_node.c). */
#ifndef MN_MN_NCCL_H
#define MN_MN_NCCL_H

#include "transport/mn_transport.h"
#include "transport/mn_device.h"

/* A failed CUDA call said, cleared, returned. */
#define MN_CUDA_CHECK(c, call) do { cudaError_t mn_e_ = (call); if (mn_e_ != cudaSuccess) { \
    mn_error((c), "%s failed: %s", #call, cudaGetErrorString(mn_e_)); (void)cudaGetLastError(); \
    return MN_ERR_UNAVAILABLE; } } while (0)

#ifdef GPU
#include <cuda_runtime.h>
#define MN_STREAM() ((cudaStream_t)mn_base_stream())
/* mn_device_ok and mn_device_must with CUDA's type. */
int mn_cuda_ok(const mn_comm *c, cudaError_t e, const char *what);
void mn_cuda_must(const mn_comm *c, cudaError_t e, const char *what);
#endif

#if defined(MN_NCCL) && defined(GPU)
#include <nccl.h>
/* A non-blocking NCCL communicator, its stream and ordering event. */
typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready;
    int device, has_comm, has_stream, has_event;
    double timeout;          /* seconds; 0: none */
    const mn_comm *c;
    ncclResult_t nccl_err;
    cudaError_t cuda_err;
    int with_stream;
} mn_nccl;
/* Collective; after mn_gpu_place. */
mn_status mn_nccl_open(mn_comm *c, MPI_Comm over, int size, int rank, mn_nccl *n);
void mn_nccl_close(mn_nccl *n);
mn_status mn_nccl_enter(mn_comm *c, const mn_nccl *n);
/* n's stream waits for the base's. */
mn_status mn_nccl_after_darknet(mn_comm *c, mn_nccl *n);
/* An error aborts the communicator. */
mn_status mn_nccl_result(const mn_comm *c, mn_nccl *n, ncclResult_t r, const char *what);
#define MN_NCCL_CALL(c, n, call) MN_CHECK(mn_nccl_result((c), (n), (call), #call))
/* Waits for n's stream, at most n->timeout. */
mn_status mn_nccl_sync(mn_comm *c, mn_nccl *n, const char *what);
#endif

/* The node legs; open: collective, or NULL. */
typedef struct mn_nccl_node mn_nccl_node;
mn_status mn_nccl_node_open(mn_comm *c, mn_nccl_node **out);
void mn_nccl_node_close(mn_nccl_node *nn);
mn_status mn_nccl_node_mean(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional);
#if defined(MN_NCCL) && defined(GPU)
void *mn_nccl_node_stream(mn_nccl_node *nn);
#endif

#endif
