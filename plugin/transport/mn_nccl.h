/* CUDA and NCCL pieces of GPU builds (mn_nccl_node.c, mn_kernels.cu). */
#ifndef MN_MN_NCCL_H
#define MN_MN_NCCL_H

#include "mn_transport.h"

/* GPU=1 code (with cuda_runtime.h included): a failed CUDA call is
 * reported with the rank, its error cleared (Darknet's next check_error
 * would abort on it), and the function ends. NCCL calls: MN_NCCL_CALL. */
#define MN_CUDA_CHECK(c, call) do { cudaError_t mn_e_ = (call); if (mn_e_ != cudaSuccess) { \
    mn_error((c), "%s failed: %s", #call, cudaGetErrorString(mn_e_)); (void)cudaGetLastError(); \
    return MN_ERR_UNAVAILABLE; } } while (0)

#ifdef GPU
#include <cuda_runtime.h>
/* The base's stream (mn_base_stream) as CUDA's type. */
#define MN_STREAM() ((cudaStream_t)mn_base_stream())
/* A CUDA call in cleanup: reported with the rank, and the error cleared (a
 * pending one would make Darknet's next check_error abort). Returns 0 when
 * it failed. */
int mn_cuda_ok(const mn_comm *c, cudaError_t e, const char *what);
/* A CUDA call a step cannot do without: a failure ends the job through
 * mn_abort, naming the call. */
void mn_cuda_must(const mn_comm *c, cudaError_t e, const char *what);
/* Device tables of n device arrays, for the pack kernels below: their
 * addresses, and their offsets in the packed order (mn_pack_offsets; total
 * is offs[n]). */
typedef struct {
    float **ptrs;
    size_t *offs;
    int n;
    size_t total;
} mn_pack_tables;
/* Made and copied to the device on stream, which is waited for. Not
 * collective. MN_ERR_NOMEM where memory ran out, MN_ERR_UNAVAILABLE where a
 * copy failed (CUDA's failures said); *t is then empty. */
mn_status mn_pack_tables_make(const mn_comm *c, float *const *dev, const size_t *lens, int n, cudaStream_t stream,
                             mn_pack_tables *t);
void mn_pack_tables_free(const mn_comm *c, mn_pack_tables *t);
#endif

#if defined(MN_NCCL) && defined(GPU)
#include <nccl.h>
/* One NCCL communicator (mn_nccl_node.c), non-blocking (created with
 * blocking=0 so that neither its creation nor a wait can hang for ever):
 * this rank's GPU (mn_gpu_device), its own stream, and an event that orders
 * the stream after Darknet's work on the base's stream (mn_base_stream).
 * Shared by pure_nccl and the node legs. */
typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready;
    int device, has_comm, has_stream, has_event;
    double timeout;          /* seconds a wait may take; 0: no limit (collective_timeout=0) */
    const mn_comm *c;        /* for the waits' messages */
    ncclResult_t nccl_err;   /* what the last failed poll saw */
    cudaError_t cuda_err;
    int with_stream;         /* the poll also waits for the stream */
} mn_nccl;
/* Over `over` (rank `rank` of `size`): the unique id from its rank 0 by
 * MPI_Bcast, then ncclCommInitRankConfig polled with a deadline (half the
 * collective timeout, so NCCL's reason is printed before the guard ends the
 * job). Collective over c->world, every step agreed. Only after
 * mn_gpu_place, on the rank's own device (mn_nccl_usable). */
mn_status mn_nccl_open(mn_comm *c, MPI_Comm over, int size, int rank, mn_nccl *n);
void mn_nccl_close(mn_nccl *n);
/* Makes n's device (the rank's own) current on the calling thread. */
mn_status mn_nccl_enter(mn_comm *c, const mn_nccl *n);
/* n's stream waits for everything queued so far on the base's stream;
 * nothing where c->device_ordered (the caller ordered it). */
mn_status mn_nccl_after_darknet(mn_comm *c, mn_nccl *n);
/* A NCCL call's result: ncclInProgress waits for the communicator to settle
 * (NCCL allows no other call before); an error aborts the communicator and
 * is reported with NCCL's last error, naming the rank. */
mn_status mn_nccl_result(const mn_comm *c, mn_nccl *n, ncclResult_t r, const char *what);
#define MN_NCCL_CALL(c, n, call) MN_CHECK(mn_nccl_result((c), (n), (call), #call))
/* Waits for n's stream by polling it and the communicator's asynchronous
 * error (mn_wait), never longer than n->timeout; on an error or the deadline
 * the communicator is aborted and the reason reported. */
mn_status mn_nccl_sync(mn_comm *c, mn_nccl *n, const char *what);
#endif

/* The node's NCCL legs of hierarchical and two_dimensional in GPU runs
 * (mn_nccl_node.c; float32). open is collective and gives NULL unless every
 * rank has a GPU of its own on a node of several ranks, and always in builds
 * without GPU=1 NCCL=1. mean: device arrays in place, the mean over all ranks. */
typedef struct mn_nccl_node mn_nccl_node;
mn_status mn_nccl_node_open(mn_comm *c, mn_nccl_node **out);
void mn_nccl_node_close(mn_nccl_node *nn);
mn_status mn_nccl_node_mean(mn_comm *c, mn_nccl_node *nn, float **dev, const size_t *lens, int n, int two_dimensional);
#if defined(MN_NCCL) && defined(GPU)
/* The stream mean's device work runs on (a cudaStream_t). */
void *mn_nccl_node_stream(mn_nccl_node *nn);
#endif

/* Device kernels (mn_kernels.cu, GPU=1 builds): on `stream` (a cudaStream_t;
 * never a literal NULL: the base's stream or NCCL's); each returns the
 * launch's cudaError_t (0: cudaSuccess), read and cleared here so that the
 * caller reports that error, not "no error". The *_nonfinite ones set
 * *dev_flag (device memory) to 1 when any element is Inf or NaN. pack copies
 * n device arrays (ptrs, offs: device tables, offs as mn_pack_offsets) into
 * one buffer of offs[n] floats, elements [lo, hi) of it (overlap's buckets;
 * 0, offs[n]: all); unpack copies all of it back. pack_halves casts all of
 * them, times scale, into offs[n] halves; unpack_halves casts them back. */
int mn_gpu_pack_halves(uint16_t *h, float *const *ptrs, const size_t *offs, int n, size_t total, float scale, void *stream);
int mn_gpu_unpack_halves(float *const *ptrs, const uint16_t *h, const size_t *offs, int n, size_t total, void *stream);
int mn_gpu_add(float *y, const float *x, size_t n, void *stream);
int mn_gpu_halves_nonfinite(const uint16_t *h, size_t n, int *dev_flag, void *stream);
int mn_gpu_arrays_nonfinite(float *const *ptrs, const size_t *offs, int n, size_t total, int *dev_flag, void *stream);
int mn_gpu_pack(float *packed, float *const *ptrs, const size_t *offs, int n, size_t lo, size_t hi, void *stream);
int mn_gpu_unpack(float *const *ptrs, const float *packed, const size_t *offs, int n, size_t total, void *stream);
/* On one packed buffer (double buffering on the device): halves casts x
 * times scale into h (to) or h back into x (!to); floats_nonfinite is the
 * check; scale: x *= s; compensate: mn_dbuf_compensate (mn_dbuf.h), local:
 * mn_dbuf_local over n floats (mn_dbuf.h), predict: mn_ahead_floats
 * (mn_ahead.h), with the same bits. */
int mn_gpu_halves(uint16_t *h, float *x, size_t n, float scale, int to, void *stream);
int mn_gpu_floats_nonfinite(const float *x, size_t n, int *dev_flag, void *stream);
int mn_gpu_scale(float *x, size_t n, float s, void *stream);
int mn_gpu_compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda, int apply,
                      void *stream);
int mn_gpu_local(float *u, const float *g, float *own, size_t n, int had, void *stream);
int mn_gpu_predict(float *w, float *k0, size_t n, float k, void *stream);

#endif
