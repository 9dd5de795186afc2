/* Equivalence through the C API: N ranks with batch b (subdivisions s) train
 * like one process with batch N*b on the same data: after K updates the
 * weights agree to float rounding, and so do seen, the iteration counter and
 * the learning rate at every iteration. Also: every rank starts from rank 0's
 * parameters (broadcast), with and without a weights file.
 * usage: test_equiv <communicator> <subdivisions> <tmpdir> */
#include <stdlib.h>
#include "mn_test.h"

enum { B = 2, K = 6, W = 8, H = 8, C = 3, CLASSES = 4 };

/* conv + maxpool + connected + softmax, no batch norm or dropout; a schedule
 * with burn_in and steps so that a wrong iteration count shows in the rate. */
static void write_cfg(const char *path, int batch, int subdiv, const char *comm)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "[net]\nbatch=%d\nsubdivisions=%d\nwidth=%d\nheight=%d\nchannels=%d\n"
               "learning_rate=0.05\nmomentum=0.9\ndecay=0.001\nburn_in=2\npolicy=steps\nsteps=4\nscales=0.5\nmax_batches=%d\n\n"
               "[convolutional]\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
               "[maxpool]\nsize=2\nstride=2\n\n"
               "[connected]\noutput=%d\nactivation=linear\n\n[softmax]\n\n"
               "[distributed]\ncommunicator=%s\n",
            batch * subdiv, subdiv, W, H, C, K, CLASSES, comm);
    fclose(f);
}

/* Image g of the endless synthetic data set, and its class. */
static void image_of(size_t g, float *x, float *y)
{
    unsigned s = (unsigned)(g * 2654435761u + 12345u);
    for (int i = 0; i < W * H * C; ++i) { s = s * 1103515245u + 12345u; x[i] = (float)((s >> 16) & 1023) / 1023.0f; }
    memset(y, 0, CLASSES * sizeof(float));
    y[g % CLASSES] = 1;
}

static void check_same_on_all_ranks(mn_comm *c, network *net, const char *what)
{
    size_t n = mn_test_params(net, NULL);
    float *mine = malloc(n * sizeof(float)), *root = malloc(n * sizeof(float));
    mn_test_params(net, mine);
    memcpy(root, mine, n * sizeof(float));
    MPI_Bcast(root, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    EXPECT(!memcmp(root, mine, n * sizeof(float)), "%s: parameters differ from rank 0's", what);
    size_t seen0 = *net->seen;
    MPI_Bcast(&seen0, sizeof seen0, MPI_BYTE, 0, MPI_COMM_WORLD);
    EXPECT(seen0 == *net->seen, "%s: seen differs", what);
    free(mine);
    free(root);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (argc < 4) { fprintf(stderr, "usage: test_equiv <communicator> <subdivisions> <tmpdir>\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    const char *comm = argv[1], *tmp = argv[3];
    int S = atoi(argv[2]);
    char cfg_n[512], cfg_1[512], wfile[512];
    snprintf(cfg_n, sizeof cfg_n, "%s/equiv_n.cfg", tmp);
    snprintf(cfg_1, sizeof cfg_1, "%s/equiv_1.cfg", tmp);
    snprintf(wfile, sizeof wfile, "%s/equiv_init.weights", tmp);
    if (rank == 0) { write_cfg(cfg_n, B, S, comm); write_cfg(cfg_1, N * B, S, comm); }
    MPI_Barrier(MPI_COMM_WORLD);

    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    srand(1000 + rank);   /* each rank's own random init: the broadcast must fix it */
    network *net;
    mn_options opt;
    EXPECT(mn_load_network(c, cfg_n, NULL, 0, &net, &opt) == MN_OK, "load");
    check_same_on_all_ranks(c, net, "random init");
    EXPECT(mn_comm_select(c, opt.communicator) == MN_OK, "select");
    /* Rank 0 saves its start so that the reference starts there too. */
    if (rank == 0) EXPECT(mn_save_weights(c, net, wfile, 0) == MN_OK, "save init");
    MPI_Barrier(MPI_COMM_WORLD);

    mn_optimizer *o;
    EXPECT(mn_attach(c, net, &opt, &o) == MN_OK, "attach");
    float rates[K];
    size_t iters[K];
    for (int u = 0; u < K; ++u) {
        mn_test_update(net, (size_t)u * N * B * S, N, rank, image_of);
        rates[u] = mn_base_rate(net);
        iters[u] = mn_base_iteration(net);
    }
    check_same_on_all_ranks(c, net, "after training");

    /* A weights file: every rank ends up with rank 0's copy of it. */
    network *loaded;
    srand(2000 + rank);
    EXPECT(mn_load_network(c, cfg_n, wfile, 0, &loaded, NULL) == MN_OK, "load with weights");
    check_same_on_all_ranks(c, loaded, "weights file");
    mn_base_free(loaded);

    if (rank == 0) {
        /* The reference: one process, batch N*B, from the same start. */
        network *ref = mn_test_parse(c, cfg_1);
        mn_base_load_weights(ref, wfile);
        for (int u = 0; u < K; ++u) {
            mn_test_update(ref, (size_t)u * N * B * S, 1, 0, image_of);
            EXPECT(mn_base_iteration(ref) == iters[u], "iteration %d: counter %zu vs %zu", u, iters[u], mn_base_iteration(ref));
            EXPECT(mn_base_rate(ref) == rates[u], "iteration %d: rate %g vs %g", u, rates[u], mn_base_rate(ref));
        }
        EXPECT(*ref->seen == *net->seen, "seen %zu vs %zu", *net->seen, *ref->seen);
        EXPECT(*ref->seen == (size_t)K * N * B * S, "seen %zu, want %d", *ref->seen, K * N * B * S);
        size_t n = mn_test_params(net, NULL);
        float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
        mn_test_params(net, a);
        mn_test_params(ref, b);
        float *w0 = malloc(n * sizeof(float));
        network *start = mn_base_parse(cfg_1);
        mn_base_load_weights(start, wfile);
        mn_test_params(start, w0);
        double moved, rel = mn_test_rel(a, b, w0, n, &moved);
        printf("test_equiv: %s, %d ranks x batch %d x subdivisions %d vs 1 x %d: relative difference %.3g "
               "(weights moved %.3g), seen %zu, final rate %g\n",
               comm, N, B, S, N * B, rel, moved, *net->seen, rates[K - 1]);
        EXPECT(rel <= 1e-5, "relative difference %g > 1e-5", rel);
        EXPECT(moved > 1e-3, "training did not move the weights: the test would prove nothing");
        free(a); free(b); free(w0);
        mn_base_free(ref);
        mn_base_free(start);
    }
    mn_detach(net, o);
    mn_base_free(net);
    mn_comm_free(c);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_equiv: %s\n", all ? "FAIL" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
