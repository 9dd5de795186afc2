/* Double buffering's exchange (mn_dbuf.c) on N ranks, by exact values:
 * rank r's gradient at step t is g(r,t,i) = (r+1)(t+1) + i%5, whose mean
 * over the ranks, (t+1)(N+1)/2 + i%5, is exact in float. ChainerMN's
 * (double_buffering_local=0): step 0 gets zeros, step t the mean of step
 * t-1. double_buffering_local=1: step 0 its own g, step t g(r,t) + (mean of
 * t-1 - g(r,t-1)); once aligned (the models averaged), the next step's
 * correction is gone: g(r,t) alone. The pending mean is the last step's.
 *
 * usage: test_dbuf (under mpiexec, any rank count) */
#include <stdio.h>
#include <stdlib.h>
#include "coll/mn_coll.h"
#include "train/optimizer/mn_dbuf.h"
#include "mn_expect.h"

enum { TOTAL = 7 };
static int N;

static float g(int r, int t, int i) { return (float)((r + 1) * (t + 1)) + (float)(i % 5); }
static float mean(int t, int i) { return (float)(t + 1) * (float)(N + 1) / 2.0f + (float)(i % 5); }

static void check(mn_comm *c, int local)
{
    static const size_t lens[2] = {3, 4};
    mn_dbuf *d = NULL;
    EXPECT(mn_dbuf_start(c, lens, 2, TOTAL, local, &d) == MN_OK && d, "local %d: start", local);
    if (!d) return;
    float arena[TOTAL];
    for (int t = 0; t < 5; ++t) {
        if (t == 4) mn_dbuf_align(d);   /* as before a save: the ranks hold one model */
        for (int i = 0; i < TOTAL; ++i) arena[i] = g(rank, t, i);
        int had = mn_dbuf_exchange(d, arena);
        EXPECT(had == (t > 0), "local %d step %d: had a mean %d", local, t, had);
        for (int i = 0; i < TOTAL; ++i) {
            float want = !local ? (t ? mean(t - 1, i) : 0)
                       : t == 0 || t == 4 ? g(rank, t, i)
                       : g(rank, t, i) + (mean(t - 1, i) - g(rank, t - 1, i));
            EXPECT(arena[i] == want, "local %d step %d [%d]: %g, want %g", local, t, i, arena[i], want);
        }
    }
    int has = 0;
    float *pending = mn_dbuf_pending(d, &has);
    EXPECT(has && pending[0] == mean(4, 0) && pending[TOTAL - 1] == mean(4, TOTAL - 1), "local %d: pending %g, want %g",
           local, pending[0], mean(4, 0));
    mn_dbuf_stop(d);
}

int main(int argc, char **argv)
{
    int level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    EXPECT(c && st == MN_OK, "create");
    if (c) {
        check(c, 0);
        check(c, 1);
        mn_comm_free(c);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !all)
        printf("test_dbuf: %d rank%s, 5 steps: ChainerMN's exchange (zeros, then the previous mean) and "
               "double_buffering_local's (own gradient, then own + previous mean - previous own; own alone after the "
               "align): OK\n", N, N == 1 ? "" : "s");
    MPI_Finalize();
    return all != 0;
}
