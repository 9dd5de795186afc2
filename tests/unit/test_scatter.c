/* Scatter: shards are disjoint, complete and balanced (sizes differ by at most
 * one), repeatable for a seed and different for another; broadcast gives
 * everyone the whole (same) list; random-sampling streams differ by seed, rank
 * and iteration. usage: test_scatter <tmpdir> */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "mn_expect.h"


/* Gathers every rank's shard (as indices parsed from "p<index>") on rank 0
 * and checks it covers 0..n-1 exactly once in shard order. Returns a hash of
 * the global order, broadcast to all. */
static unsigned long check_shards(mn_comm *c, mn_list *l, size_t n, int N)
{
    long counts[64] = {0}, mine = (long)l->n;
    MPI_Allgather(&mine, 1, MPI_LONG, counts, 1, MPI_LONG, MPI_COMM_WORLD);
    long lo = n / N, total = 0;
    for (int r = 0; r < N; ++r) {
        EXPECT(counts[r] == lo || counts[r] == lo + 1, "shard %d has %ld of %zu", r, counts[r], n);
        total += counts[r];
    }
    EXPECT(total == (long)n, "shards hold %ld of %zu paths", total, n);
    int *idx = malloc((l->n + 1) * sizeof(int)), *all = malloc((n + 1) * sizeof(int));
    for (size_t i = 0; i < l->n; ++i) idx[i] = atoi(l->paths[i] + 1);
    int cnt[64], displ[64];
    for (int r = 0; r < N; ++r) { cnt[r] = (int)counts[r]; displ[r] = r ? displ[r - 1] + cnt[r - 1] : 0; }
    MPI_Gatherv(idx, (int)l->n, MPI_INT, all, cnt, displ, MPI_INT, 0, MPI_COMM_WORLD);
    unsigned long h = 5381;
    if (rank == 0) {
        char *hit = calloc(n, 1);
        for (size_t i = 0; i < n; ++i) {
            EXPECT(all[i] >= 0 && (size_t)all[i] < n && !hit[all[i]], "path p%d twice or out of range", all[i]);
            if (all[i] >= 0 && (size_t)all[i] < n) hit[all[i]] = 1;
            h = h * 33 + (unsigned long)all[i];
        }
        free(hit);
    }
    MPI_Bcast(&h, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    free(idx);
    free(all);
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    char file[512];
    snprintf(file, sizeof file, "%s/scatter.list", argc > 1 ? argv[1] : "/tmp");

    /* shard bounds in closed form */
    size_t s, k;
    mn_shard_bounds(10, 4, 0, &s, &k); EXPECT(s == 0 && k == 3, "bounds 0");
    mn_shard_bounds(10, 4, 1, &s, &k); EXPECT(s == 3 && k == 3, "bounds 1");
    mn_shard_bounds(10, 4, 2, &s, &k); EXPECT(s == 6 && k == 2, "bounds 2");
    mn_shard_bounds(10, 4, 3, &s, &k); EXPECT(s == 8 && k == 2, "bounds 3");

    const size_t sizes[] = {(size_t)N, 7, 1001};
    for (int t = 0; t < 3; ++t) {
        size_t n = sizes[t];
        if (rank == 0) {
            FILE *f = fopen(file, "w");
            for (size_t i = 0; i < n; ++i) fprintf(f, "p%zu%s\n", i, i % 5 == 0 ? "\r" : "");
            fprintf(f, "\n");   /* blank lines are ignored */
            fclose(f);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        mn_list l;
        EXPECT(mn_scatter_list(c, file, 0, 0, &l) == MN_OK, "scatter");
        EXPECT(l.global_n == n, "global_n %zu", l.global_n);
        unsigned long plain = check_shards(c, &l, n, N);
        if (l.n) EXPECT(atoi(l.paths[0] + 1) == (int)l.offset, "unshuffled shard starts at its offset");
        mn_free_list(&l);
        EXPECT(mn_scatter_list(c, file, 1, 42, &l) == MN_OK, "scatter shuffled");
        unsigned long s42 = check_shards(c, &l, n, N);
        mn_free_list(&l);
        EXPECT(mn_scatter_list(c, file, 1, 42, &l) == MN_OK, "scatter shuffled again");
        EXPECT(check_shards(c, &l, n, N) == s42, "same seed, different order");
        mn_free_list(&l);
        EXPECT(mn_scatter_list(c, file, 1, 43, &l) == MN_OK, "scatter other seed");
        unsigned long s43 = check_shards(c, &l, n, N);
        if (n > 6) EXPECT(s43 != s42 && s42 != plain, "shuffle changed nothing (n=%zu)", n);
        mn_free_list(&l);
        EXPECT(mn_bcast_list(c, file, 1, 42, &l) == MN_OK, "bcast");
        EXPECT(l.n == n, "bcast gives the whole list");
        unsigned long hb = 5381;
        for (size_t i = 0; i < l.n; ++i) hb = hb * 33 + (unsigned long)atoi(l.paths[i] + 1);
        if (N == 1 || rank == 0) EXPECT(hb == s42, "broadcast order differs from scattered order");
        mn_free_list(&l);
    }
    /* Errors: a missing list, an empty list, fewer paths than ranks. All ranks fail together. */
    mn_list l;
    if (rank == 0) fprintf(stderr, "(errors about a missing list, an empty list%s are expected next)\n", N > 1 ? " and too few paths" : "");
    EXPECT(mn_scatter_list(c, "/nonexistent/list.txt", 0, 0, &l) == MN_ERR_USER, "missing list accepted");
    if (rank == 0) { FILE *f = fopen(file, "w"); fputs("\n\n", f); fclose(f); }
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(mn_scatter_list(c, file, 0, 0, &l) == MN_ERR_USER, "empty list accepted");
    if (N > 1) {
        if (rank == 0) { FILE *f = fopen(file, "w"); for (int i = 0; i < N - 1; ++i) fprintf(f, "p%d\n", i); fclose(f); }
        MPI_Barrier(MPI_COMM_WORLD);
        EXPECT(mn_scatter_list(c, file, 0, 0, &l) == MN_ERR_USER, "list shorter than the rank count accepted");
    }
    /* Random-sampling streams: one per (seed, rank, iteration), so a resumed
     * run does not replay its first batches; large seeds are fine (seed*7919
     * overflowed int). Exact values pin the derivation across machines. */
    EXPECT(mn_stream_seed(1, 0, 0) != mn_stream_seed(1, 0, 100), "iteration 100 replays iteration 0's stream");
    EXPECT(mn_stream_seed(1, 0, 5) != mn_stream_seed(1, 1, 5), "ranks 0 and 1 share a stream");
    EXPECT(mn_stream_seed(1, 0, 5) != mn_stream_seed(2, 0, 5), "seeds 1 and 2 share a stream");
    EXPECT(mn_stream_seed(1, -1, 5) != mn_stream_seed(1, 0, 5), "the job's stream is rank 0's");
    EXPECT(mn_stream_seed(2147483647, 3, 7) == mn_stream_seed(2147483647, 3, 7), "not repeatable");
    unsigned seen[64];
    int distinct = 0;
    for (int it = 0; it < 64; ++it) {
        seen[it] = mn_stream_seed(2147483647, 3, (size_t)it);
        int dup = 0;
        for (int j = 0; j < it; ++j) dup |= seen[j] == seen[it];
        distinct += !dup;
    }
    EXPECT(distinct == 64, "64 iterations gave %d distinct seeds", distinct);
    mn_comm_free(c);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_scatter: %d ranks: %s\n", N, all ? "FAIL" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
