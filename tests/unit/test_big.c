/* Buffers over 256 MiB: every communicator (and flat in float16) averages a
 * 288 MiB gradient exactly, on every rank. Rank r contributes (r+1) + i%3, so
 * the mean is (N+1)/2 + i%3: exact in float32 and in half. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, N, bad_total = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    const size_t n = (size_t)72 << 20;   /* floats: 288 MiB */
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    float *g = malloc(n * sizeof(float));
    const char *names[] = {"naive", "flat", "hierarchical", "two_dimensional", "single_node", "flat"};
    for (int a = 0; a < 6; ++a) {
        int half = a == 5;
        if (mn_comm_select(c, names[a]) != MN_OK) continue;   /* refused for this layout: said why */
        mn_comm_set_dtype(c, half);
        for (size_t i = 0; i < n; ++i) g[i] = (float)(rank + 1) + (float)(i % 3);
        double t0 = mn_now();
        float *arrays[1] = {g};
        size_t lens[1] = {n};
        mn_status s = mn_comm_mean_grad(c, arrays, lens, 1);
        double dt = mn_now() - t0;
        long bad = s != MN_OK;
        for (size_t i = 0; i < n; ++i) bad += g[i] != (float)(N + 1) / 2 + (float)(i % 3);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) printf("test_big: %s%s, %d ranks, 288 MiB: %s (%ld wrong) in %.2f s\n", names[a],
                              half ? "/f16" : "", N, bad ? "FAIL" : "ok", bad, dt);
        bad_total += bad != 0;
    }
    mn_comm_set_dtype(c, 0);
    free(g);
    mn_comm_free(c);
    MPI_Finalize();
    return bad_total ? 1 : 0;
}
