/* Communicators: every algorithm's mean of known per-rank inputs equals the
 * closed-form value exactly, on every rank, for empty, odd, split and large
 * buffers, for any rank count. Also checks the topology fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mn_internal.h"

static int failures;
#define EXPECT(cond, ...) do { if (!(cond)) { ++failures; fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Rank r contributes v(r,i) = (r+1)*N + (i % 97) - 48, so the sum over ranks is
 * N*N(N+1)/2 + N*((i%97)-48) and the mean N(N+1)/2 + (i%97) - 48: all small
 * integers, exact in float. */
static float input(int r, int N, size_t i) { return (float)((r + 1) * N) + (float)(i % 97) - 48.0f; }
static float mean(int N, size_t i) { return (float)(N * (N + 1) / 2) + (float)(i % 97) - 48.0f; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    EXPECT(c && st == MN_OK, "create");
    EXPECT(mn_comm_rank(c) == rank && mn_comm_size(c) == N, "rank/size");
    EXPECT(mn_comm_intra_size(c) * 0 + mn_comm_intra_rank(c) < mn_comm_intra_size(c), "intra");
    int sum_intra = 0;
    int one = mn_comm_intra_rank(c) == 0;
    MPI_Allreduce(&one, &sum_intra, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT(mn_comm_inter_size(c) == sum_intra || getenv("MN_RANKS_PER_NODE"), "inter size %d vs nodes %d", mn_comm_inter_size(c), sum_intra);
    const char *rpn = getenv("MN_RANKS_PER_NODE");
    if (rpn) {
        int k = atoi(rpn);
        EXPECT(mn_comm_intra_rank(c) == rank % k, "forced intra rank %d", mn_comm_intra_rank(c));
        EXPECT(mn_comm_inter_rank(c) == rank / k, "forced inter rank %d", mn_comm_inter_rank(c));
    }

    /* Several arrays in one call: empty, 1, odd, not divisible by N, a large one. */
    const size_t lens_in[] = {0, 1, 3, 7, 1000003, 0, 64, 4099};
    const int n = (int)(sizeof lens_in / sizeof *lens_in);
    const char *names[] = {"naive", "flat"};
    for (int a = 0; a < 2; ++a) {
        EXPECT(mn_comm_select(c, names[a]) == MN_OK, "select %s", names[a]);
        EXPECT(!strcmp(mn_comm_name(c), names[a]), "name");
        for (int layout = 0; layout < 2; ++layout) {
            /* layout 0: separate allocations; 1: back to back (the optimizer's arena) */
            size_t total = 0, lens[8];
            memcpy(lens, lens_in, sizeof lens);
            for (int i = 0; i < n; ++i) total += lens[i];
            float *arena = malloc((total + 1) * sizeof(float)), *arrays[8];
            size_t off = 0;
            for (int i = 0; i < n; ++i) {
                arrays[i] = layout ? arena + off : malloc((lens[i] + 1) * sizeof(float));
                for (size_t j = 0; j < lens[i]; ++j) arrays[i][j] = input(rank, N, j);
                off += lens[i];
            }
            EXPECT(mn_comm_mean_grad(c, arrays, lens, n) == MN_OK, "mean_grad");
            long bad = 0;
            for (int i = 0; i < n; ++i)
                for (size_t j = 0; j < lens[i]; ++j) bad += arrays[i][j] != mean(N, j);
            EXPECT(bad == 0, "%s layout %d: %ld wrong values", names[a], layout, bad);
            /* identical on every rank: compare a checksum with rank 0's */
            double cs = 0;
            for (int i = 0; i < n; ++i) for (size_t j = 0; j < lens[i]; ++j) cs += arrays[i][j] * (double)(j % 13 + 1);
            double cs0 = cs;
            MPI_Bcast(&cs0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            EXPECT(cs == cs0, "%s: rank results differ", names[a]);
            if (!layout) for (int i = 0; i < n; ++i) free(arrays[i]);
            free(arena);
        }
        /* zero arrays, and all-empty arrays, are fine */
        EXPECT(mn_comm_mean_grad(c, NULL, NULL, 0) == MN_OK, "no arrays");
    }
    /* An unknown name is refused on every rank, and the old algorithm stays. */
    if (rank == 0) fprintf(stderr, "(an error about 'bogus' is expected next)\n");
    EXPECT(mn_comm_select(c, "bogus") == MN_ERR_USER, "bogus accepted");
    EXPECT(!strcmp(mn_comm_name(c), "flat"), "algorithm lost after a bad select");

    mn_comm_free(c);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_comm: %d ranks: %s\n", N, all ? "FAIL" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
