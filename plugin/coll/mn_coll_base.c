/* What the algorithms share: the mean of gradient arrays through an
 * algorithm's sum in pieces (packing, float16), the sum over the world, the
 * node layout and the packing scratch. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "transport/mn_half.h"
#include "transport/mn_shm.h"

mn_status mn_comm_fused(mn_comm *c, size_t n, float **buf)
{
    if (n > c->coll->fused_cap) {
        float *p = realloc(c->coll->fused, n * sizeof(float));
        if (!p) { mn_error(c, "out of memory for a %zu-byte fused buffer", n * sizeof(float)); return MN_ERR_NOMEM; }
        c->coll->fused = p;
        c->coll->fused_cap = n;
    }
    if (buf) *buf = c->coll->fused;
    return MN_OK;
}

mn_status mn_comm_layout(mn_comm *c, char *out, size_t cap, int *even)
{
    int mine[2] = {c->intra_rank, c->intra_size};
    int *all = malloc(sizeof(int) * 2 * (size_t)c->size);
    if (!all) return MN_ERR_NOMEM;
    if (MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, c->world) != MPI_SUCCESS) {
        free(all);
        mn_error(c, "MPI_Allgather failed while learning the node layout");
        return MN_ERR_MPI;
    }
    size_t len = (size_t)snprintf(out, cap, "%d rank%s on %d node%s (", c->size, c->size > 1 ? "s" : "",
                                  c->nodes, c->nodes > 1 ? "s" : "");
    int first = 1;
    *even = 1;
    for (int r = 0; r < c->size; ++r) {
        if (all[2 * r] != 0) continue;
        if (all[2 * r + 1] != c->intra_size) *even = 0;
        if (len < cap) len += (size_t)snprintf(out + len, cap - len, "%s%d", first ? "" : "+", all[2 * r + 1]);
        first = 0;
    }
    if (len < cap) snprintf(out + len, cap - len, ")");
    free(all);
    return MN_OK;
}

mn_status mn_sum_world(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    return mn_allreduce_wire(c, c->world, buf, count, w);
}

/* The arrays as one sequence of floats, walked piece by piece. */
typedef struct {
    float **arrays;
    const size_t *lens;
    int n, i;
    size_t j;
} cursor;

/* The next run of at most want floats that lie together in one array. */
static size_t next_run(cursor *cu, size_t want, float **p)
{
    while (cu->i < cu->n && cu->j == cu->lens[cu->i]) { ++cu->i; cu->j = 0; }
    size_t k = cu->lens[cu->i] - cu->j;
    if (k > want) k = want;
    *p = cu->arrays[cu->i] + cu->j;
    cu->j += k;
    return k;
}

/* k floats from the cursor into out, as floats (half = NULL) or as halves of x/div. */
static void pack(cursor *cu, size_t k, float *out, uint16_t *half, float div)
{
    for (size_t done = 0, m; done < k; done += m) {
        float *p;
        m = next_run(cu, k - done, &p);
        if (half) mn_floats_to_halves(half + done, p, m, div);
        else memcpy(out + done, p, m * sizeof(float));
    }
}

/* k floats back to the arrays, from floats or from halves. */
static void unpack(cursor *cu, size_t k, const float *in, const uint16_t *half)
{
    for (size_t done = 0, m; done < k; done += m) {
        float *p;
        m = next_run(cu, k - done, &p);
        if (half) mn_halves_to_floats(p, half + done, m);
        else memcpy(p, in + done, m * sizeof(float));
    }
}

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

/* k floats from the cursor through sum as float32 (divided by the rank
 * count on the way), in pieces of at most `piece`, packed through f. */
static mn_status mean_packed(mn_comm *c, cursor *cu, size_t k, size_t piece, float *f, mn_sum_fn sum)
{
    const mn_wire f32 = {MPI_FLOAT, MPI_SUM, 0, (float)c->size};
    for (size_t done = 0, m; done < k; done += m) {
        m = k - done < piece ? k - done : piece;
        cursor at = *cu;
        pack(cu, m, f, NULL, 1.0f);
        MN_CHECK(sum(c, f, (int)m, &f32));
        unpack(&at, m, f, NULL);
    }
    return MN_OK;
}

/* Pieces keep each collective's buffer in cache for the division (the
 * wire's, done on the last leg) and bound the scratch; float32 arrays that
 * lie back to back (the arena) are reduced in place.
 *
 * float16: a piece holds twice the elements, so half the collectives. Each
 * rank divides by N BEFORE rounding to half, so no partial sum exceeds the
 * largest |x| and cannot overflow however many ranks there are (the price:
 * x/N goes subnormal below 2^-14*N). A piece whose reduced halves hold Inf
 * or NaN is summed again in float32; every rank holds the same bytes, so
 * all take that branch without a message. */
mn_status mn_mean_by_pieces(mn_comm *c, float **arrays, const size_t *lens, int n, size_t piece, mn_sum_fn sum)
{
    const mn_wire f32 = {MPI_FLOAT, MPI_SUM, 0, (float)c->size}, f16 = {MPI_UINT16_T, c->transport->half_sum, 1, 1.0f};
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (total == 0 || c->size == 1) return MN_OK;
    if (piece > INT_MAX) piece = INT_MAX;
    if (piece == 0) piece = 1;
    size_t hpiece = piece > INT_MAX / 2 ? INT_MAX : 2 * piece;
    if (piece > total) piece = total;
    if (hpiece > total) hpiece = total;
    float *in_place = c->coll->half ? NULL : contiguous_start(arrays, lens, n);
    if (in_place) {
        for (size_t off = 0, k; off < total; off += k) {
            k = total - off < piece ? total - off : piece;
            MN_CHECK(sum(c, in_place + off, (int)k, &f32));
        }
        return mn_shm_arena_fence(c);
    }
    cursor cu = {arrays, lens, n, 0, 0};
    if (!c->coll->half) {
        MN_CHECK(mn_comm_fused(c, piece, NULL));
        return mean_packed(c, &cu, total, piece, c->coll->fused, sum);
    }
    /* scratch: piece floats for the float32 fallback, then hpiece halves */
    MN_CHECK(mn_comm_fused(c, piece + hpiece / 2 + 1, NULL));
    float *f = c->coll->fused;
    uint16_t *h = (uint16_t *)(c->coll->fused + piece);
    for (size_t off = 0, k; off < total; off += k) {
        k = total - off < hpiece ? total - off : hpiece;
        cursor at = cu;
        pack(&cu, k, NULL, h, (float)c->size);
        MN_CHECK(sum(c, h, (int)k, &f16));
        if (mn_halves_finite(h, k)) {
            unpack(&at, k, NULL, h);
            continue;
        }
        cu = at;
        MN_CHECK(mean_packed(c, &cu, k, piece, f, sum));
    }
    return MN_OK;
}

/* Their sum never leaves shared memory where the job is one node. */
mn_status mn_shm_setup_job(mn_comm *c)
{
    mn_shm *s = NULL;
    if (c->nodes == 1) MN_CHECK(mn_shm_open(c, &s));
    c->coll->state = s;
    return MN_OK;
}

void mn_shm_teardown_job(mn_comm *c)
{
    mn_shm_close(c->coll->state);
    c->coll->state = NULL;
}

mn_status mn_sum_job(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    mn_shm *s = c->coll->state;
    if (s && mn_shm_fits(s, count, w)) return mn_shm_allreduce(c, s, buf, count, w);
    if (c->nodes > 1) return mn_allreduce_rsag(c, c->transport->by_node, buf, count, w);
    return mn_allreduce_wire(c, c->world, buf, count, w);
}
