/* Batch-norm running statistics across ranks, through the C API:
 *  - set by hand to distinct values per rank, a collective save with
 *    bn_average=1 writes their mean (exact: the values are small integers and
 *    halves), with bn_average=0 rank 0's own;
 *  - after training each rank on different data (sync_bn=0), the saved file
 *    holds the mean of the ranks' statistics;
 *  - mn_average_bn_stats leaves every rank with the mean, mn_bcast_bn_stats
 *    with rank 0's.
 * usage: test_bnavg <tmpdir> */
#include <stdlib.h>
#include "mn_test.h"

enum { B = 4, W = 8, H = 8, C = 3, CLASSES = 4 };
static int N;

/* The running statistics of the network, concatenated. */
static size_t stats(network *net, float *out)
{
    size_t k = 0;
    for (int i = 0; i < net->n; ++i) {
        layer *l = &net->layers[i];
        if (!l->rolling_mean) continue;
        for (int j = 0; j < l->out_c; ++j) {
            if (out) { out[k] = l->rolling_mean[j]; out[k + 1] = l->rolling_variance[j]; }
            k += 2;
        }
    }
    return k;
}

static void set_stats(network *net, int r)
{
    for (int i = 0; i < net->n; ++i) {
        layer *l = &net->layers[i];
        if (!l->rolling_mean) continue;
        for (int j = 0; j < l->out_c; ++j) { l->rolling_mean[j] = (float)(r + j); l->rolling_variance[j] = (float)(2 * r + 1 + j); }
    }
}

/* Rank 0: the statistics stored in a weights file. */
static void file_stats(const char *cfg, const char *path, float *out)
{
    network *f = mn_base_parse(cfg);
    mn_base_load_weights(f, path);
    stats(f, out);
    mn_base_free(f);
}

static void train_own_data(network *net)
{
    mn_batch d = mn_base_make_batch(net->batch, W * H * C, CLASSES);
    unsigned s = 777u + 31u * (unsigned)rank;
    for (int i = 0; i < net->batch; ++i) {
        for (int k = 0; k < W * H * C; ++k) { s = s * 1103515245u + 12345u; d.x[i][k] = rank + (float)((s >> 16) & 1023) / 1023.0f; }
        d.y[i][(i + rank) % CLASSES] = 1;
    }
    mn_base_train(net, &d);
    mn_base_free_batch(&d);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (argc < 2) { fprintf(stderr, "usage: test_bnavg <tmpdir>\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    char cfg[512], avg[512], own[512], trained[512];
    snprintf(cfg, sizeof cfg, "%s/bnavg.cfg", argv[1]);
    snprintf(avg, sizeof avg, "%s/bnavg_mean.weights", argv[1]);
    snprintf(own, sizeof own, "%s/bnavg_rank0.weights", argv[1]);
    snprintf(trained, sizeof trained, "%s/bnavg_trained.weights", argv[1]);
    if (rank == 0) {
        FILE *f = fopen(cfg, "w");
        fprintf(f, "[net]\nbatch=%d\nsubdivisions=1\nwidth=%d\nheight=%d\nchannels=%d\nlearning_rate=0.01\nmomentum=0.9\n"
                   "max_batches=10\n\n[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
                   "[connected]\nbatch_normalize=1\noutput=%d\nactivation=linear\n\n[softmax]\n", B, W, H, C, CLASSES);
        fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    network *net;
    EXPECT(mn_load_network(c, cfg, NULL, 0, &net, NULL) == MN_OK, "load");
    mn_options opt;
    mn_default_options(&opt);
    mn_optimizer *o;
    EXPECT(mn_attach(c, net, &opt, &o) == MN_OK, "attach");
    size_t n = stats(net, NULL);
    float *got = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float)), *mine = malloc(n * sizeof(float));

    /* By hand: rank r holds mean r+j, variance 2r+1+j; their means over N
     * ranks are (N-1)/2+j and N+j, exact in float. */
    set_stats(net, rank);
    opt.bn_average = 0;
    EXPECT(mn_save_weights_all(c, net, NULL, &opt, own) == MN_OK, "save bn_average=0");
    opt.bn_average = 1;
    EXPECT(mn_save_weights_all(c, net, NULL, &opt, avg) == MN_OK, "save bn_average=1");
    stats(net, got);
    size_t k = 0;
    for (int i = 0; i < net->n; ++i) {
        if (!net->layers[i].rolling_mean) continue;
        for (int j = 0; j < net->layers[i].out_c; ++j, k += 2) { want[k] = (N - 1) / 2.0f + j; want[k + 1] = (float)(N + j); }
    }
    EXPECT(!memcmp(got, want, n * sizeof(float)), "after the averaged save this rank holds %g %g, want %g %g", got[0], got[1], want[0], want[1]);
    if (rank == 0) {
        file_stats(cfg, avg, got);
        EXPECT(!memcmp(got, want, n * sizeof(float)), "bn_average=1 file: %g %g, want %g %g", got[0], got[1], want[0], want[1]);
        file_stats(cfg, own, got);
        set_stats(net, 0);
        stats(net, want);
        EXPECT(!memcmp(got, want, n * sizeof(float)), "bn_average=0 file: %g %g, want rank 0's %g %g", got[0], got[1], want[0], want[1]);
    }

    /* Broadcast: every rank gets rank 0's. */
    set_stats(net, rank);
    EXPECT(mn_bcast_bn_stats(c, net, NULL) == MN_OK, "bcast");
    stats(net, got);
    set_stats(net, 0);
    stats(net, want);
    EXPECT(!memcmp(got, want, n * sizeof(float)), "after bcast: %g %g, want %g %g", got[0], got[1], want[0], want[1]);

    /* Trained on different data: the file holds the mean of what the ranks had. */
    train_own_data(net);
    stats(net, mine);
    double *sum = calloc(n, sizeof(double)), *in = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; ++i) in[i] = mine[i];
    MPI_Allreduce(in, sum, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    float *r0 = malloc(n * sizeof(float));
    memcpy(r0, mine, n * sizeof(float));
    MPI_Bcast(r0, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    int differ = N > 1 && memcmp(r0, mine, n * sizeof(float)) != 0, any = 0;
    MPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT(N == 1 || any, "the ranks' statistics are equal after training on different data: the test proves nothing");
    EXPECT(mn_save_weights_all(c, net, NULL, &opt, trained) == MN_OK, "save trained");
    if (rank == 0) {
        file_stats(cfg, trained, got);
        double worst = 0;
        for (size_t i = 0; i < n; ++i) {
            double m = sum[i] / N, e = fabs(got[i] - m) / (fabs(m) + 1e-6);
            if (e > worst) worst = e;
        }
        printf("test_bnavg: %d ranks, %zu statistics: trained file vs mean of the ranks' statistics, worst relative error %.3g\n",
               N, n, worst);
        EXPECT(worst <= 1e-6, "trained file differs from the mean by %g", worst);
    }
    free(sum); free(in); free(r0); free(got); free(want); free(mine);
    mn_detach(net, o);
    mn_base_free(net);
    mn_comm_free(c);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_bnavg: %s\n", all ? "FAIL" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
