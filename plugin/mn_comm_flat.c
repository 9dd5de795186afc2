/* flat: one fused buffer, one MPI_Allreduce. Arrays that already lie back to
 * back in memory (the optimizer's gradient arena) are reduced in place with no
 * copy; otherwise they are packed into the fused buffer and unpacked after.
 * The division by size is folded into the unpack. */
#include <string.h>
#include "mn_internal.h"

/* The first element when the non-empty arrays lie back to back, else NULL. */
static float *contiguous_start(float **arrays, const size_t *lens, int n)
{
    float *start = NULL, *next = NULL;
    for (int i = 0; i < n; ++i) {
        if (!lens[i]) continue;
        if (!start) start = next = arrays[i];
        if (arrays[i] != next) return NULL;
        next += lens[i];
    }
    return start;
}

static mn_status flat_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (total == 0) return MN_OK;
    float *p = contiguous_start(arrays, lens, n);
    if (p) {
        /* Pieces of a few MiB: Open MPI's shared-memory allreduce is faster on
         * them than on one huge message, and each piece is still in cache
         * when it is divided. */
        size_t piece = c->piece_floats;
        for (size_t off = 0; off < total; off += piece) {
            size_t k = total - off < piece ? total - off : piece;
            MN_CHECK(mn_sum_floats(c, c->world, p + off, k));
            mn_div_floats(p + off, k, (float)c->size);
        }
        return MN_OK;
    }
    MN_CHECK(mn_comm_fused(c, total));
    size_t off = 0;
    int i;
    for (i = 0; i < n; ++i) {
        if (lens[i]) memcpy(c->fused + off, arrays[i], lens[i] * sizeof(float));
        off += lens[i];
    }
    MN_CHECK(mn_sum_floats(c, c->world, c->fused, total));
    off = 0;
    for (i = 0; i < n; ++i) {
        for (size_t j = 0; j < lens[i]; ++j) arrays[i][j] = c->fused[off + j] / (float)c->size;
        off += lens[i];
    }
    return MN_OK;
}

const mn_comm_ops mn_comm_flat_ops = {
    .name = "flat",
    .mean_grad = flat_mean_grad,
};
