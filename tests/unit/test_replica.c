/* The replica check and nonfinite=skip through the C API.
 *
 * Replica check: after real updates every rank holds the same model and the
 * check passes; one rank's weight, momentum or (with sync_bn) running
 * statistic nudged by one ulp is caught, naming its layer; running
 * statistics that differ by design (no sync_bn) are not; NaN in the weights
 * on every rank is refused.
 *
 * nonfinite=skip: a step in which one rank's labels hold NaN leaves every
 * rank's weights, momentum and running statistics bit for bit as they were,
 * and the next finite step trains again.
 *
 * The parameter views (mn_net_views), which the replica check, the
 * optimizer and checkpoints walk: every array of the network in
 * weights-file order, each with its layer, a running statistic told apart
 * and each update array placed, checked against Darknet's own layers.
 *
 * limit: the walk on the last rank with room for one array a layer, as if a
 * layer listed more than darknet-mn handles: that rank's fatal error ends
 * every rank with the exit table's 70 (an internal limit), the layer named.
 * usage: test_replica <tmpdir> [limit] */
#include <stdlib.h>
#include "mn_test.h"
#include "train/optimizer/mn_optimizer.h"

enum { B = 4, W = 6, H = 6, C = 3, CLASSES = 3 };

static void write_cfg(const char *path)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "[net]\nbatch=%d\nsubdivisions=1\nwidth=%d\nheight=%d\nchannels=%d\n"
               "learning_rate=0.05\nmomentum=0.9\ndecay=0.001\nmax_batches=100\n\n"
               "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
               "[maxpool]\nsize=2\nstride=2\n\n"
               "[connected]\noutput=8\nactivation=leaky\n\n"
               "[connected]\noutput=%d\nactivation=linear\n\n[softmax]\n\n"
               "[distributed]\nnonfinite=skip\ncollective_timeout=0\n",
            B, W, H, C, CLASSES);
    fclose(f);
}

static int poison_rank = -1;   /* this rank's labels hold NaN (-1: none) */

static void image_of(size_t g, float *x, float *y)
{
    unsigned s = (unsigned)(g * 2654435761u + 7u);
    for (int i = 0; i < W * H * C; ++i) { s = s * 1103515245u + 12345u; x[i] = (float)((s >> 16) & 1023) / 1023.0f; }
    memset(y, 0, CLASSES * sizeof(float));
    y[g % CLASSES] = 1;
    if (poison_rank == rank) y[0] = NAN;   /* NaN loss and gradient; the forward pass (and maxpool) stays finite */
}

/* Weights, momentum and running statistics, in that order, into out. */
static size_t snapshot(network *net, float *out)
{
    size_t k = mn_test_params(net, out);
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) {
        if (!v.grad) continue;
        if (out) memcpy(out + k, v.grad, v.n * sizeof(float));
        k += v.n;
    }
    return k;
}

/* Every view against the layers' own arrays, in save order: convolutional
 * with batch norm (biases, scales, rolling mean and variance, weights), then
 * the two connected layers (biases, weights; trained on pjreddie's only);
 * maxpool and softmax have none. */
static void check_views(network *net)
{
    layer *cv = &net->layers[0], *f1 = &net->layers[2], *f2 = &net->layers[3];
#ifdef MN_BASE_ALEXEYAB
    /* The fork's parser never sets train for [connected]: its update skips them, so they have no gradient. */
    float *f1b = NULL, *f1w = NULL, *f2b = NULL, *f2w = NULL;
    int ub = -1, uw = -1;
#else
    float *f1b = f1->bias_updates, *f1w = f1->weight_updates, *f2b = f2->bias_updates, *f2w = f2->weight_updates;
    int ub = MN_UPDATE_BIASES, uw = MN_UPDATE_WEIGHTS;
#endif
    struct { int layer; float *data, *grad; size_t n; int index, stat, update; } want[] = {
        {0, cv->biases, cv->bias_updates, 4, 0, 0, MN_UPDATE_BIASES},
        {0, cv->scales, cv->scale_updates, 4, 1, 0, MN_UPDATE_SCALES},
        {0, cv->rolling_mean, NULL, 4, 2, 1, -1},
        {0, cv->rolling_variance, NULL, 4, 3, 1, -1},
        {0, cv->weights, cv->weight_updates, 4 * 3 * 3 * C, 4, 0, MN_UPDATE_WEIGHTS},
        {2, f1->biases, f1b, 8, 0, 0, ub},
        {2, f1->weights, f1w, 8 * (W / 2) * (H / 2) * 4, 1, 0, uw},
        {3, f2->biases, f2b, CLASSES, 0, 0, ub},
        {3, f2->weights, f2w, CLASSES * 8, 1, 0, uw},
    };
    int k = 0, nw = (int)(sizeof want / sizeof want[0]);
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v); ++k) {
        if (k >= nw) {
            EXPECT(0, "views: more than the %d arrays of the network", nw);
            break;
        }
        EXPECT(v.layer == want[k].layer && v.data == want[k].data && v.grad == want[k].grad && v.n == want[k].n &&
                   v.index == want[k].index && v.stat == want[k].stat && v.update == want[k].update,
               "views: array %d is layer %d n=%zu index=%d stat=%d update=%d (data %s, grad %s); want layer %d n=%zu "
               "index=%d stat=%d update=%d", k, v.layer, v.n, v.index, v.stat, v.update,
               v.data == want[k].data ? "the layer's" : "another", v.grad == want[k].grad ? "the layer's" : "another",
               want[k].layer, want[k].n, want[k].index, want[k].stat, want[k].update);
    }
    EXPECT(k == nw, "views: %d arrays, want %d", k, nw);
    EXPECT(mn_params_count(net) == 4 * 4 + 4 * 3 * 3 * C + 8 + 8 * 36 + CLASSES + CLASSES * 8,
           "mn_params_count %zu", mn_params_count(net));
}

static void nudge(float *x) { *x = nextafterf(*x, INFINITY); }

static void expect_check(mn_comm *c, network *net, mn_optimizer *o, int shared, mn_status want, int want_layer,
                         const char *what)
{
    int first = -2;
    mn_status s = mn_replica_check(c, net, o, shared, 7, &first);
    EXPECT(s == want, "%s: status %d, want %d", what, s, want);
    EXPECT(first == want_layer, "%s: first differing layer %d, want %d", what, first, want_layer);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (argc < 2) { fprintf(stderr, "usage: test_replica <tmpdir>\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/replica.cfg", argv[1]);
    if (rank == 0) write_cfg(cfg);
    MPI_Barrier(MPI_COMM_WORLD);

    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    network *net;
    mn_options opt;
    EXPECT(mn_load_network(c, cfg, NULL, 0, &net, &opt) == MN_OK, "load");
    EXPECT(opt.nonfinite_skip == 1, "nonfinite=skip not parsed");
    if (argc > 2 && !strcmp(argv[2], "limit")) {
        mn_install_fault_handlers(c);
        if (rank == N - 1) {
            mn_views it = mn_net_views(net);
            it.cap = 1;
            for (mn_view v; mn_views_next(&it, &v);) {}
        }
        MPI_Barrier(MPI_COMM_WORLD);   /* the others wait here for the abort */
        fprintf(stderr, "test_replica limit: rank %d went on past the limit\n", rank);
        MPI_Finalize();
        return 1;
    }
    mn_optimizer *o;
    EXPECT(mn_attach(c, net, &opt, &o) == MN_OK, "attach");
    check_views(net);   /* the update arrays now in the optimizer's arena */
    for (int u = 0; u < 3; ++u) {
        mn_optimizer_begin_step(o, net);
        mn_test_update(net, (size_t)u * N * B, N, rank, image_of);
    }
    layer *conv = &net->layers[0], *fc = &net->layers[2];
    int last = N - 1;

    /* The replica check. */
    expect_check(c, net, o, 0, MN_OK, -1, "after 3 updates");
    if (N > 1) {
        float keep = fc->weights[3];
        if (rank == last) nudge(&fc->weights[3]);
        expect_check(c, net, o, 0, MN_ERR_DIVERGED, 2, "one weight of layer 2 on the last rank");
        fc->weights[3] = keep;
        keep = conv->weight_updates[1];
        if (rank == 1) nudge(&conv->weight_updates[1]);
        expect_check(c, net, o, 0, MN_ERR_DIVERGED, 0, "the momentum of layer 0 on rank 1");
        conv->weight_updates[1] = keep;
        expect_check(c, net, o, 0, MN_OK, -1, "restored");
        keep = conv->rolling_mean[0];
        if (rank == 1) nudge(&conv->rolling_mean[0]);
        expect_check(c, net, o, 0, MN_OK, -1, "a running mean on rank 1 without sync_bn");
        expect_check(c, net, o, 1, MN_ERR_DIVERGED, 0, "a running mean on rank 1 with sync_bn");
        conv->rolling_mean[0] = keep;
    }
    float keep = fc->biases[0];
    fc->biases[0] = NAN;
    expect_check(c, net, o, 0, MN_ERR_DIVERGED, -1, "NaN in layer 2 on every rank");
    fc->biases[0] = keep;
    expect_check(c, net, o, 0, MN_OK, -1, "restored");

    /* nonfinite=skip: NaN in one rank's batch changes nothing anywhere. */
    size_t n = snapshot(net, NULL);
    float *before = malloc(n * sizeof(float)), *after = malloc(n * sizeof(float));
    snapshot(net, before);
    size_t it = mn_base_iteration(net);
    poison_rank = last;
    mn_optimizer_begin_step(o, net);
    mn_test_update(net, 3 * (size_t)N * B, N, rank, image_of);
    poison_rank = -1;
    EXPECT(mn_optimizer_nonfinite(o), "the NaN batch was not noticed");
    snapshot(net, after);
    size_t diff = 0;
    for (size_t i = 0; i < n; ++i) diff += memcmp(&before[i], &after[i], sizeof(float)) != 0;
    EXPECT(diff == 0, "a skipped step changed %zu of %zu weights, momentum and statistics values", diff, n);
    EXPECT(mn_base_iteration(net) == it + 1, "the skipped step still counts: iteration %zu, want %zu",
           mn_base_iteration(net), it + 1);
    mn_optimizer_begin_step(o, net);
    mn_test_update(net, 4 * (size_t)N * B, N, rank, image_of);
    EXPECT(!mn_optimizer_nonfinite(o), "a finite step after the skipped one was flagged");
    snapshot(net, after);
    diff = 0;
    for (size_t i = 0; i < n; ++i) diff += before[i] != after[i];
    /* Half as many values as the trained layers hold (AlexeyAB's Darknet
     * never updates a [connected] layer: its values stay). */
    size_t trained = 0;
    mn_views walk = mn_net_views(net);
    for (mn_view v; mn_views_next(&walk, &v);) trained += v.grad ? v.n : 0;
    EXPECT(diff > trained / 2, "the next finite step trained only %zu of %zu values (%zu in trained arrays)", diff, n, trained);
    expect_check(c, net, o, 0, MN_OK, -1, "after the skipped step and one more");
    free(before);
    free(after);

    mn_detach(net, o);
    mn_base_free(net);
    mn_comm_free(c);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_replica: %d ranks: %s\n", N, all ? "FAIL" : "ok");
    MPI_Finalize();
    return all ? 1 : 0;
}
