/* Which GPU a rank uses, and what that allows (mn_gpu.c). */
#ifndef MN_GPU_H
#define MN_GPU_H

#include "mn_core.h"

typedef struct {
    int device;            /* index among the visible devices; -1: the CPU */
    int own;               /* no other rank of the host uses that device */
    const char *fallback;  /* the default communicator: "pure_nccl" or "flat" */
    char error[256];       /* non-empty: the requested communicator is refused, and why */
} mn_gpu_out;

/* Pure (no CUDA, no MPI): device local_rank % visible, so ranks beyond the
 * visible devices share them, which the MPI communicators allow and
 * pure_nccl refuses (NCCL takes one GPU per rank). The default is pure_nccl
 * where this rank has a GPU of its own in an NCCL build, else flat.
 * requested may be NULL or "". */
void mn_gpu_select(const mn_gpu_in *in, const char *requested, mn_gpu_out *out);

/* Collective: the refusal of `requested` (the first rank that refuses says
 * why; every rank gets the same status) and the default communicator, which
 * is pure_nccl only where every rank would choose it. */
mn_status mn_gpu_check(mn_comm *c, const char *requested, const char **fallback);
/* This rank's device (-1: CPU), and whether NCCL may use it: a GPU of its
 * own in a GPU=1 NCCL=1 build. */
int mn_gpu_device(const mn_comm *c);
int mn_nccl_usable(const mn_comm *c);

#endif
