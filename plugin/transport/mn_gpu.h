/* Which GPU a rank uses, and what that allows (mn_gpu.c). */
#ifndef MN_GPU_H
#define MN_GPU_H

#include "mn_core.h"

/* What decides a rank's GPU. A rank's group: the ranks of its host that see
 * the same devices (the same CUDA_VISIBLE_DEVICES, or each its own under
 * Slurm's --gpus-per-task=1 with device cgroups). */
typedef struct {
    int visible;      /* CUDA devices this rank sees: 0 with -nogpu, without any, in CPU builds */
    int local_rank;   /* this rank within its group */
    int local_size;   /* ranks in the group */
    int nogpu;        /* -nogpu */
    int nccl;         /* the build has GPU=1 NCCL=1 */
    int sharers;      /* ranks of the host on this rank's physical device, counted once it
                         is chosen (0: not counted); more than 1 where visible sets overlap */
} mn_gpu_in;

typedef struct {
    int device;   /* index among the visible devices; -1: the CPU */
    int own;      /* no other rank of the host uses that device */
} mn_gpu_out;

/* Pure (no CUDA, no MPI): device local_rank % visible, so ranks beyond the
 * visible devices share them. */
void mn_gpu_select(const mn_gpu_in *in, mn_gpu_out *out);

/* This rank's placement (zero before mn_gpu_place), its device (-1: CPU),
 * and whether NCCL may use it: a GPU of its own in a GPU=1 NCCL=1 build. */
const mn_gpu_in *mn_gpu_placement(const mn_comm *c);
int mn_gpu_device(const mn_comm *c);
int mn_nccl_usable(const mn_comm *c);

#endif
