/* Which GPU a rank uses, and what that allows (mn_gpu.c). */
#ifndef MN_GPU_H
#define MN_GPU_H

#include "mn_core.h"

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
