/* Which GPU a rank uses (mn_gpu.c). */
#ifndef MN_GPU_H
#define MN_GPU_H

#include "core/mn_core.h"

/* local_rank, local_size: among the host's ranks that see the same devices */
typedef struct {
    int visible;
    int local_rank;
    int local_size;
    int nogpu;
    int nccl;         /* GPU=1 NCCL=1 */
    int sharers;      /* ranks on its physical device */
} mn_gpu_in;

typedef struct {
    int device;   /* -1: the CPU */
    int own;
} mn_gpu_out;

void mn_gpu_select(const mn_gpu_in *in, mn_gpu_out *out);

const mn_gpu_in *mn_gpu_placement(const mn_comm *c);
int mn_gpu_device(const mn_comm *c);
int mn_nccl_usable(const mn_comm *c);

/* How hierarchical and two_dimensional average on the device. */
typedef enum {
    MN_LEGS_NODE_AVG,        /* one node: ncclAllReduce(ncclAvg) */
    MN_LEGS_REDUCE_BCAST,    /* hierarchical */
    MN_LEGS_SCATTER_GATHER   /* two_dimensional */
} mn_legs;
mn_legs mn_nccl_legs(int nodes, int two_dimensional);

/* cuDNN's version number as major, minor, patch. */
void mn_cudnn_version(size_t v, int *major, int *minor, int *patch);

#endif
