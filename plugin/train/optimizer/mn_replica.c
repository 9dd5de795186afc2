/* The replica check. Synchronous data parallelism is only correct while every
 * rank holds the same model: the same parameters, the same momentum and (with
 * sync_bn) the same running statistics, bit for bit, since every rank applies
 * the same averaged update to the same state. A bug that breaks that (an
 * update fired mid-batch, a rank that skipped a step) goes unnoticed, because
 * only rank 0's weights are saved. So before each save every rank hashes its
 * model layer by layer and rank 0 compares one 64-bit digest per rank; only
 * on a mismatch do the per-layer hashes travel, to name the first layer that
 * differs. The same pass refuses parameters that hold NaN or Inf. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/optimizer/mn_optimizer.h"
#include "base/mn_base.h"

/* Four FNV-1a lanes over 64-bit words, folded at the end: the lanes'
 * multiplications do not wait on each other, so the hash runs at memory
 * speed rather than at one multiply latency per word. The same pass ORs the
 * exponent test of every float: all ones is Inf or NaN. */
static uint64_t hash_scan(uint64_t h, const void *p, size_t bytes, int *nonfinite)
{
    const uint64_t prime = 1099511628211ULL, exp2 = 0x7f8000007f800000ULL;
    const unsigned char *b = p;
    uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3}, bad = 0;
    size_t blocks = bytes / 32;
    for (size_t i = 0; i < blocks; ++i) {
        for (int k = 0; k < 4; ++k) {
            uint64_t w;
            memcpy(&w, b + 32 * i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * prime;
            uint64_t e = w & exp2;
            bad |= ((e & 0xffffffffULL) == 0x7f800000ULL) | ((e >> 32) == 0x7f800000ULL);
        }
    }
    for (size_t i = 32 * blocks; i + 4 <= bytes; i += 4) {   /* the floats after the last block */
        uint32_t w;
        memcpy(&w, b + i, 4);
        lane[0] = (lane[0] ^ w) * prime;
        bad |= (w & 0x7f800000u) == 0x7f800000u;
    }
    if (nonfinite) *nonfinite |= bad != 0;
    h = lane[0];
    for (int k = 1; k < 4; ++k) h = (h ^ lane[k]) * prime;
    return mn_fnv1a(h, b + bytes / 4 * 4, bytes % 4);
}

uint64_t mn_hash_words(uint64_t h, const void *p, size_t bytes)
{
    return hash_scan(h, p, bytes, NULL);
}

/* h[i]: layer i's digest; returns the first layer holding NaN or Inf, or
 * INT_MAX. params: the packed copy of a GPU run, or NULL (the host arrays). */
static int hash_layers(network *net, const float *params, int with_momentum, int stats_shared, uint64_t *h)
{
    int nonfinite = INT_MAX;
    size_t off = 0;
    for (int i = 0; i < mn_net_layers(net); ++i) h[i] = MN_FNV_SEED;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) {
        const float *d = params ? params + off : v.data;
        off += v.n;
        int bad = 0;
        uint64_t *x = &h[v.layer], y = hash_scan(*x, d, v.n * sizeof(float), &bad);
        if (!v.stat || stats_shared) *x = y;   /* statistics that differ by design are only checked for NaN */
        if (with_momentum && v.grad) *x = hash_scan(*x, v.grad, v.n * sizeof(float), NULL);
        if (bad && nonfinite == INT_MAX) nonfinite = v.layer;
    }
    return nonfinite;
}

/* Rank 0: one line naming every rank that differs and where. */
static void report(mn_comm *c, network *net, const int *first, size_t iteration)
{
    char msg[768];
    size_t len = 0;
    for (int r = 1; r < c->size && len < sizeof msg - 64; ++r) {
        if (first[r] < 0) continue;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%srank %d from layer %d (%s)", len ? ", " : "", r,
                                first[r], mn_layer_get(net, first[r]).name);
    }
    mn_error(c, "replica check at iteration %zu: %s differ%s from rank 0's model (parameters, momentum or running "
             "statistics): the ranks no longer train the same network; stopping without saving",
             iteration, msg, len ? "" : "s");
}

mn_status mn_replica_check(mn_comm *c, network *net, mn_optimizer *o, int stats_shared, size_t iteration,
                           int *first_layer)
{
    if (first_layer) *first_layer = -1;
    size_t nm = 0;
    float *params = NULL;
#ifdef GPU
    /* The device copies are the live ones: one packed pull of them all. */
    if (mn_base_gpu() >= 0) params = malloc((mn_params_count(net) + 1) * sizeof(float));
    int need = mn_base_gpu() >= 0;
#else
    int need = 0;
#endif
    int layers = mn_net_layers(net);
    uint64_t *h = malloc(((size_t)layers + 1) * sizeof *h);
    uint64_t *ref = malloc(((size_t)layers + 1) * sizeof *ref);
    uint64_t *all = malloc((size_t)c->size * sizeof *all);
    int *first = malloc((size_t)c->size * sizeof *first);
    mn_status s = (params || !need) && h && ref && all && first ? MN_OK : MN_ERR_NOMEM;
    if (s != MN_OK) mn_error(c, "out of memory for the replica check");
    if ((s = mn_agree(c, s)) != MN_OK) goto out;
    if (params) mn_params_pack(net, params);
    if (o) mn_optimizer_host_state(o, net, 0, &nm);   /* pulls the momentum from the GPU in a GPU run */
    int nonfinite = hash_layers(net, params, o != NULL, stats_shared, h);
    h[layers] = mn_hash_words(MN_FNV_SEED, h, (size_t)layers * sizeof *h);
    MPI_Allgather(&h[layers], 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->world);
    int differ = 0;
    for (int r = 1; r < c->size; ++r) differ |= all[r] != all[0];
    if (differ) {
        memcpy(ref, h, ((size_t)layers + 1) * sizeof *h);
        MPI_Bcast(ref, layers + 1, MPI_UINT64_T, 0, c->world);
        int mine = -1, lowest;
        for (int i = 0; i < layers && mine < 0; ++i) if (h[i] != ref[i]) mine = i;
        MPI_Gather(&mine, 1, MPI_INT, first, 1, MPI_INT, 0, c->world);
        if (c->rank == 0) report(c, net, first, iteration);
        int key = mine < 0 ? INT_MAX : mine;
        MPI_Allreduce(&key, &lowest, 1, MPI_INT, MPI_MIN, c->world);
        if (first_layer) *first_layer = lowest == INT_MAX ? -1 : lowest;
        s = MN_ERR_DIVERGED;
        goto out;
    }
    MPI_Allreduce(MPI_IN_PLACE, &nonfinite, 1, MPI_INT, MPI_MIN, c->world);
    if (nonfinite != INT_MAX) {
        if (c->rank == 0)
            mn_error(c, "iteration %zu: the parameters of layer %d (%s) hold NaN or Inf; stopping without saving them",
                     iteration, nonfinite, mn_layer_get(net, nonfinite).name);
        s = MN_ERR_DIVERGED;
    }
out:
    free(params);
    free(h);
    free(ref);
    free(all);
    free(first);
    return s;
}
