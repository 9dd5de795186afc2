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
#include "mn_internal.h"
#include "mn_replica.h"
#include "network.h"

uint64_t mn_hash_words(uint64_t h, const void *p, size_t bytes)
{
    const unsigned char *b = p;
    size_t words = bytes / 8;
    for (size_t i = 0; i < words; ++i) {
        uint64_t w;
        memcpy(&w, b + 8 * i, 8);
        h = (h ^ w) * 1099511628211ULL;
    }
    return mn_fnv1a(h, b + 8 * words, bytes % 8);
}

static int finite_floats(const float *p, size_t n)
{
    float acc = 0;
    for (size_t i = 0; i < n; ++i) acc += p[i] * 0.0f;   /* NaN unless every p[i] is finite */
    return acc == 0;
}

/* h[i]: layer i's digest; returns the first layer holding NaN or Inf, or INT_MAX. */
static int hash_layers(network *net, const float *params, int with_momentum, int stats_shared, uint64_t *h)
{
    int nonfinite = INT_MAX;
    size_t off = 0;
    for (int i = 0; i < net->n; ++i) {
        const layer *l = &net->layers[i];
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(l, p, MN_MAX_LAYER_PARAMS);
        uint64_t x = MN_FNV_SEED;
        for (int j = 0; j < k; ++j) {
            const float *d = params + off;
            off += p[j].n;
            if (nonfinite == INT_MAX && !finite_floats(d, p[j].n)) nonfinite = i;
            int stat = p[j].data == l->rolling_mean || p[j].data == l->rolling_variance;
            if (stat && !stats_shared) continue;
            x = mn_hash_words(x, d, p[j].n * sizeof(float));
            if (with_momentum && p[j].grad) x = mn_hash_words(x, p[j].grad, p[j].n * sizeof(float));
        }
        h[i] = x;
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
                                first[r], get_layer_string(net->layers[first[r]].type));
    }
    mn_error(c, "replica check at iteration %zu: %s differ%s from rank 0's model (parameters, momentum or running "
             "statistics): the ranks no longer train the same network; stopping without saving",
             iteration, msg, len ? "" : "s");
}

mn_status mn_replica_check(mn_comm *c, network *net, mn_optimizer *o, int stats_shared, size_t iteration,
                           int *first_layer)
{
    if (first_layer) *first_layer = -1;
    size_t np = mn_params_count(net), nm = 0;
    float *params = malloc((np + 1) * sizeof(float));
    uint64_t *h = malloc(((size_t)net->n + 1) * sizeof *h);
    uint64_t *ref = malloc(((size_t)net->n + 1) * sizeof *ref);
    uint64_t *all = malloc((size_t)c->size * sizeof *all);
    int *first = malloc((size_t)c->size * sizeof *first);
    mn_status s = params && h && ref && all && first ? MN_OK : MN_ERR_NOMEM;
    if (s != MN_OK) mn_error(c, "out of memory for the replica check");
    if ((s = mn_agree(c, s)) != MN_OK) goto out;
    mn_params_pack(net, params);                            /* pulls from the GPU in a GPU run */
    if (o) mn_optimizer_host_state(o, net, 0, &nm);         /* likewise the momentum */
    int nonfinite = hash_layers(net, params, o != NULL, stats_shared, h);
    h[net->n] = mn_hash_words(MN_FNV_SEED, h, (size_t)net->n * sizeof *h);
    MPI_Allgather(&h[net->n], 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->world);
    int differ = 0;
    for (int r = 1; r < c->size; ++r) differ |= all[r] != all[0];
    if (differ) {
        memcpy(ref, h, ((size_t)net->n + 1) * sizeof *h);
        MPI_Bcast(ref, net->n + 1, MPI_UINT64_T, 0, c->world);
        int mine = -1, lowest;
        for (int i = 0; i < net->n && mine < 0; ++i) if (h[i] != ref[i]) mine = i;
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
                     iteration, nonfinite, get_layer_string(net->layers[nonfinite].type));
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
