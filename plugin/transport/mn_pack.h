/* Arrays packed end to end (mn_pack.c): the offsets, and which array holds
 * a packed element, on the host and in the kernels (mn_kernels.cu). No
 * CUDA, no MPI: tests/unit/test_gpu_logic.c runs them without a GPU. */
#ifndef MN_PACK_H
#define MN_PACK_H

#include <stddef.h>

/* offs[k]: where array k starts packed (n + 1 entries); returns offs[n]. */
size_t mn_pack_offsets(const size_t *lens, int n, size_t *offs);

#ifdef __CUDACC__
#define MN_HOST_DEVICE __host__ __device__
#else
#define MN_HOST_DEVICE
#endif
/* The array k holding packed element i < offs[n] (empty arrays never do). */
static inline MN_HOST_DEVICE int mn_pack_find(const size_t *offs, int n, size_t i)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {   /* the last k with offs[k] <= i */
        int mid = (lo + hi + 1) / 2;
        if (offs[mid] <= i) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

#endif
