/* The layer engine's unrolled loops (plugin/base/mn_loops.c) give the base's
 * own results to the bit: leaky and its gradient against activate_array and
 * gradient_array on values with ties, signed zeros and NaN; 2x2 stride-2 max
 * pooling against the base's forward_maxpool_layer in training mode: the
 * output and the indexes that its backward follows, and with NaN in the
 * input the NaN in the output. A maxpool on an odd input keeps the base's
 * loop.
 * usage: test_loops <tmpdir> */
#include <stdlib.h>
#include "mn_test.h"

void activate_array(float *x, const int n, const ACTIVATION a);
void gradient_array(const float *x, const int n, const ACTIVATION a, float *delta);

enum { N = 4096, B = 3, W = 8, H = 6, C = 3 };

/* Values with what a comparison can get wrong: ties, +0 and -0, NaN. */
static float value(unsigned i, int nan)
{
    unsigned h = i * 2654435761u;
    switch (i % 8) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return nan ? NAN : 0.25f;
    case 3: return 0.5f;   /* a tie with case 5 and across windows */
    case 5: return 0.5f;
    default: return ((float)(h >> 8) / (float)(1u << 24) - 0.5f) * 4.0f;
    }
}

static void fill(float *x, size_t n, unsigned salt, int nan)
{
    for (size_t i = 0; i < n; ++i) x[i] = value((unsigned)i * 7u + salt, nan);
}

/* Leaky and its gradient against activate_array and gradient_array; the
 * fork's leaky multiplies by .1f, pjreddie's by .1, and only pjreddie's
 * forward goes through mn_leaky_double. */
static void check_activation(const char *base)
{
    static float a[N], b[N], y[N], da[N], db[N];
    fill(a, N, 3, 1);
    memcpy(b, a, sizeof a);
    activate_array(a, N, LEAKY);
    mn_leaky_double(b, N);
    if (!strcmp(base, "pjreddie")) EXPECT(!memcmp(a, b, sizeof a), "leaky forward differs from activate_array");
    fill(y, N, 5, 1);
    fill(da, N, 11, 1);
    memcpy(db, da, sizeof da);
    gradient_array(y, N, LEAKY, da);
    mn_leaky_gradient(y, db, N);
    EXPECT(!memcmp(da, db, sizeof da), "leaky gradient differs from gradient_array");
}

static void write_cfg(const char *path, int pad_key)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "[net]\nbatch=%d\nwidth=%d\nheight=%d\nchannels=%d\n\n[maxpool]\nsize=2\nstride=2\n%s\n"
               "[maxpool]\nsize=2\nstride=2\n",
            B, W, H, C, pad_key ? "padding=1\n" : "");
    fclose(f);
}

typedef __typeof__(((layer *)0)->forward) forward_fn;

/* f on layer l of net in training mode, the base's calling convention. */
static void forward_train(network *net, forward_fn f, layer *l, float *x)
{
#ifdef MN_BASE_ALEXEYAB
    network_state s = {0};
    s.net = *net;
    s.input = x;
    s.train = 1;
    f(*l, s);
#else
    network n = *net;
    n.input = x;
    n.train = 1;
    f(*l, n);
#endif
}

static void check_maxpool(mn_comm *c, const char *tmp, int pad_key)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/loops%d.cfg", tmp, pad_key);
    write_cfg(cfg, pad_key);
    network *net = mn_base_parse(cfg);
    layer *l = &net->layers[0];
    forward_fn own[2] = {net->layers[0].forward, net->layers[1].forward};
    mn_dnnl_install(net, c, mn_base_dnnl_ops());
    /* 8x6 pools to 4x3; 4x3 has an odd height and keeps the base's loop. */
    EXPECT(l->forward != own[0] && net->layers[1].forward == own[1],
           "padding key %d: the 8x6 maxpool %s mn_maxpool2, the 4x3 one %s", pad_key,
           l->forward != own[0] ? "is on" : "is not on", net->layers[1].forward == own[1] ? "is not" : "is too");
    size_t n = (size_t)l->outputs * l->batch;
    float *out = malloc(n * sizeof *out);
    int *idx = malloc(n * sizeof *idx);
    static float x[W * H * C * B];
    for (int nan = 0; nan < 2; ++nan) {
        fill(x, sizeof x / sizeof *x, 17, nan);
        forward_train(net, own[0], l, x);
        memcpy(out, l->output, n * sizeof *out);
        memcpy(idx, l->indexes, n * sizeof *idx);
        memset(l->output, 0, n * sizeof *out);
        forward_train(net, l->forward, l, x);
        /* Where a window holds NaN the output is NaN and its index one of
         * the NaN's; pjreddie's -Ofast build only keeps a first NaN. */
        size_t same = 0, windows_nan = 0, bad_nan = 0;
        for (size_t k = 0; k < n; ++k) {
            int o = (int)(k % (size_t)(l->out_w * l->out_h)), p = (int)(k / (size_t)(l->out_w * l->out_h));
            int top = (p * l->h + 2 * (o / l->out_w)) * l->w + 2 * (o % l->out_w);
            int has = 0;
            for (int q = 0; q < 4; ++q) has |= x[top + (q / 2) * l->w + q % 2] != x[top + (q / 2) * l->w + q % 2];
            windows_nan += has;
            if (has) bad_nan += l->output[k] == l->output[k] || x[l->indexes[k]] == x[l->indexes[k]];
            else same += !memcmp(&out[k], &l->output[k], sizeof *out) && idx[k] == l->indexes[k];
        }
        EXPECT(same + windows_nan == n, "padding key %d, NaN %d: %zu of %zu outputs or indexes differ from the base's",
               pad_key, nan, n - windows_nan - same, n - windows_nan);
        EXPECT(!bad_nan && (nan ? windows_nan > 0 : windows_nan == 0),
               "padding key %d: %zu of %zu windows with NaN lose it", pad_key, bad_nan, windows_nan);
    }
    free(out);
    free(idx);
    mn_base_free(net);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) { fprintf(stderr, "usage: test_loops <tmpdir>\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    check_activation(mn_base_name());
    EXPECT(mn_base_dnnl_ops() != NULL, "a DNNL=0 build has no layer engine to test");
    if (mn_base_dnnl_ops()) {
        check_maxpool(c, argv[1], 0);
        check_maxpool(c, argv[1], 1);
    }
    printf("test_loops: %s: %s, 2x2 maxpool (both padding keys, with and without NaN) as the base computes them: %s\n",
           mn_base_name(), strcmp(mn_base_name(), "pjreddie") ? "leaky's gradient" : "leaky and its gradient",
           failures ? "FAILED" : "ok");
    mn_comm_free(c);
    MPI_Finalize();
    return failures ? 1 : 0;
}
