/* Synchronized batch norm through the C API: N ranks with batch b and
 * sync_bn=1 train like one process with batch N*b on the same data, for a
 * network with batch norm in a convolutional and a connected layer: weights,
 * scales and running statistics agree to float rounding after K updates, and
 * the running statistics are the same on every rank. With sync_bn=0 (and
 * N > 1) each rank normalizes with its own batch, and the result is measurably
 * different: the test would catch a hook that does nothing.
 * usage: test_syncbn <sync_bn 0|1> <subdivisions> <tmpdir> */
#include <stdlib.h>
#include "mn_test.h"

enum { B = 2, K = 6, W = 8, H = 8, C = 3, CLASSES = 4 };

static void write_cfg(const char *path, int batch, int subdiv, int sync)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "[net]\nbatch=%d\nsubdivisions=%d\nwidth=%d\nheight=%d\nchannels=%d\n"
               "learning_rate=0.05\nmomentum=0.9\ndecay=0.001\nburn_in=2\npolicy=steps\nsteps=4\nscales=0.5\nmax_batches=%d\n\n"
               "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
               "[maxpool]\nsize=2\nstride=2\n\n"
               "[connected]\nbatch_normalize=1\noutput=8\nactivation=leaky\n\n"
               "[connected]\noutput=%d\nactivation=linear\n\n[softmax]\n\n"
               "[distributed]\ncommunicator=flat\nsync_bn=%d\n",
            batch * subdiv, subdiv, W, H, C, K, CLASSES, sync);
    fclose(f);
}

/* Image g of an endless synthetic data set; each class has its own mean
 * brightness so that batch statistics differ from rank to rank. */
static void image_of(size_t g, float *x, float *y)
{
    unsigned s = (unsigned)(g * 2654435761u + 12345u);
    float base = 0.2f * (float)(g % CLASSES);
    for (int i = 0; i < W * H * C; ++i) { s = s * 1103515245u + 12345u; x[i] = base + (float)((s >> 16) & 1023) / 1023.0f; }
    memset(y, 0, CLASSES * sizeof(float));
    y[g % CLASSES] = 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (argc < 4) { fprintf(stderr, "usage: test_syncbn <sync_bn 0|1> <subdivisions> <tmpdir>\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int sync = atoi(argv[1]), S = atoi(argv[2]);
    const char *tmp = argv[3];
    char cfg_n[512], cfg_1[512], wfile[512];
    snprintf(cfg_n, sizeof cfg_n, "%s/syncbn_n.cfg", tmp);
    snprintf(cfg_1, sizeof cfg_1, "%s/syncbn_1.cfg", tmp);
    snprintf(wfile, sizeof wfile, "%s/syncbn_init.weights", tmp);
    if (rank == 0) { write_cfg(cfg_n, B, S, sync); write_cfg(cfg_1, N * B, S, 0); }
    MPI_Barrier(MPI_COMM_WORLD);

    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    network *net;
    mn_options opt;
    EXPECT(mn_load_network(c, cfg_n, NULL, 0, &net, &opt) == MN_OK, "load");
    EXPECT(opt.sync_bn == sync, "sync_bn parsed as %d", opt.sync_bn);
    EXPECT(mn_comm_select(c, opt.communicator) == MN_OK, "select");
    if (rank == 0) EXPECT(mn_save_weights(c, net, wfile, 0) == MN_OK, "save init");
    MPI_Barrier(MPI_COMM_WORLD);

    mn_optimizer *o;
    EXPECT(mn_attach(c, net, &opt, &o) == MN_OK, "attach");
    EXPECT(mn_attach_sync_bn(c, net, &opt) == MN_OK, "attach sync_bn");
    EXPECT((net->bn_sync != NULL) == sync, "hook %s", net->bn_sync ? "installed" : "missing");
    for (int u = 0; u < K; ++u) mn_test_update(net, (size_t)u * N * B * S, N, rank, image_of);

    size_t n = mn_test_params(net, NULL);
    float *mine = malloc(n * sizeof(float)), *root = malloc(n * sizeof(float));
    mn_test_params(net, mine);
    memcpy(root, mine, n * sizeof(float));
    MPI_Bcast(root, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    /* With sync every rank computes the same statistics, so even the running
     * ones (never averaged by the optimizer) agree bit for bit. */
    if (sync) EXPECT(!memcmp(root, mine, n * sizeof(float)), "parameters or running statistics differ from rank 0's");

    if (rank == 0) {
        network *ref = mn_test_parse(c, cfg_1);
        mn_base_load_weights(ref, wfile);
        for (int u = 0; u < K; ++u) mn_test_update(ref, (size_t)u * N * B * S, 1, 0, image_of);
        float *b = malloc(n * sizeof(float)), *w0 = malloc(n * sizeof(float));
        EXPECT(mn_test_params(ref, NULL) == n, "reference has %zu parameters, not %zu", mn_test_params(ref, NULL), n);
        mn_test_params(ref, b);
        network *start = mn_base_parse(cfg_1);
        mn_base_load_weights(start, wfile);
        mn_test_params(start, w0);
        double moved, rel = mn_test_rel(mine, b, w0, n, &moved);
        printf("test_syncbn: sync_bn=%d, %d ranks x batch %d x subdivisions %d vs 1 x %d: relative difference %.3g "
               "(weights moved %.3g)\n", sync, N, B, S, N * B, rel, moved);
        if (sync || N == 1) EXPECT(rel <= 1e-5, "relative difference %g > 1e-5", rel);
        else EXPECT(rel > 1e-4, "relative difference %g <= 1e-4 without sync: the test cannot tell sync from no sync", rel);
        EXPECT(moved > 1e-3, "training did not move the weights: the test would prove nothing");
        free(b); free(w0);
        mn_base_free(ref);
        mn_base_free(start);
    }
    free(mine);
    free(root);
    mn_detach(net, o);
    mn_base_free(net);
    mn_comm_free(c);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_syncbn: %s\n", all ? "FAIL" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
