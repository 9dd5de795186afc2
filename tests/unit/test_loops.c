/* The layer engine's unrolled loops (plugin/engine/mn_loops.c) give the base's
 * own results to the bit: leaky and its gradient against activate_array and
 * gradient_array on values with ties, signed zeros and NaN; 2x2 stride-2 max
 * pooling against the base's forward_maxpool_layer in training mode: the
 * output and the indexes that its backward follows, and with NaN in the
 * input the NaN in the output. A maxpool on an odd input keeps the base's
 * loop. A batch-normalized convolution's training step (plugin/engine/mn_bn.c
 * with oneDNN) against the base's own, every array it writes, with and
 * without the sync hook, to float rounding.
 * usage: test_loops <tmpdir> */
#include <stddef.h>
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

/* f on layer l of net in training mode, the base's calling convention;
 * dx: the input's gradient for a backward f. */
static void run_train(network *net, forward_fn f, layer *l, float *x, float *dx)
{
#ifdef MN_BASE_ALEXEYAB
    network_state s = {0};
    s.net = *net;
    s.input = x;
    s.delta = dx;
    s.workspace = net->workspace;
    s.train = 1;
    f(*l, s);
#else
    network n = *net;
    n.input = x;
    n.delta = dx;
    n.train = 1;
    f(*l, n);
#endif
}

static void forward_train(network *net, forward_fn f, layer *l, float *x)
{
    run_train(net, f, l, x, NULL);
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

/* The synchronized batch norm hook as a test double: it logs which arrays
 * it got, in order, and moves them as an allreduce with other ranks would. */
typedef struct { char log[256]; size_t len; } hook_log;

static void fake_sync(network *net, float *a, float *b, int n, int gpu)
{
    layer *l = &net->layers[0];
    hook_log *hook_to = net->bn_sync_arg;
    const char *name = a == l->mean ? "mean" : a == l->variance ? "variance" : a == l->mean_delta ? "mean_delta" : "?";
    hook_to->len += (size_t)snprintf(hook_to->log + hook_to->len, sizeof hook_to->log - hook_to->len, "%s%s,%d,%d;", name,
                                     b == l->variance_delta ? "+variance_delta" : b ? "+?" : "", n, gpu);
    for (int i = 0; i < n; ++i) {
        a[i] = a[i] * 1.25f + 0.001f * (float)i;
        if (b) b[i] *= 0.75f;
    }
}

/* Largest |a - b| over the largest |a|: 0 where they agree. */
static double spread(const float *a, const float *b, size_t n)
{
    double d = 0, m = 1e-30;
    for (size_t i = 0; i < n; ++i) {
        double e = fabs((double)a[i] - b[i]), v = fabs((double)a[i]);
        d = e > d ? e : d;
        m = v > m ? v : m;
    }
    return d / m;
}

/* The arrays a training step of the layer writes, each with its length. */
enum { LEN_OUTPUT, LEN_CHANNEL, LEN_WEIGHT };
typedef struct { const char *name; size_t at; int len; } field;
#define FIELD(f, len) {#f, offsetof(layer, f), len}
static const field fields[] = {
    FIELD(output, LEN_OUTPUT), FIELD(x_norm, LEN_OUTPUT), FIELD(mean, LEN_CHANNEL), FIELD(variance, LEN_CHANNEL),
    FIELD(rolling_mean, LEN_CHANNEL), FIELD(rolling_variance, LEN_CHANNEL), FIELD(mean_delta, LEN_CHANNEL),
    FIELD(variance_delta, LEN_CHANNEL), FIELD(delta, LEN_OUTPUT), FIELD(bias_updates, LEN_CHANNEL),
    FIELD(scale_updates, LEN_CHANNEL), FIELD(weight_updates, LEN_WEIGHT)};
enum { FIELDS = sizeof fields / sizeof *fields };

/* One training forward and backward of a batch-normalized convolution: the
 * base's own functions, then the layer engine's (oneDNN and mn_bn.c), from
 * the same state. Every array they write agrees to float rounding, and with
 * sync the hook sees the same arrays in the same order. The data has a small
 * spread (variance about 1e-4), where the bases' epsilons tell apart. */
static double check_bn(mn_comm *c, const char *tmp, const char *act, int sync)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/bn-%s.cfg", tmp, act);
    FILE *f = fopen(cfg, "w");
    fprintf(f, "[net]\nbatch=%d\nwidth=10\nheight=6\nchannels=2\n\n[convolutional]\nbatch_normalize=1\nfilters=4\n"
               "size=3\nstride=1\npad=1\nactivation=%s\n", B, act);
    fclose(f);
    network *net = mn_base_parse(cfg);
    layer *l = &net->layers[0];
    double worst = 0;
    forward_fn own_f = l->forward, own_b = l->backward;
    mn_dnnl_install(net, c, mn_base_dnnl_ops());
    EXPECT(l->forward != own_f && l->backward != own_b, "%s: the convolution is not on the layer engine", act);
    net->ranks = sync ? 2 : 1;
    hook_log logs[2] = {{{0}, 0}, {{0}, 0}};
    if (sync) net->bn_sync = fake_sync;
    size_t nx = (size_t)l->inputs * l->batch, no = (size_t)l->outputs * l->batch;
    float *x = malloc(nx * sizeof *x), *dx[2] = {calloc(nx, sizeof(float)), calloc(nx, sizeof(float))};
    float *dy = malloc(no * sizeof *dy), *saved[FIELDS];
    for (size_t i = 0; i < nx; ++i) x[i] = 0.5f + 0.01f * value((unsigned)i * 13u + 1u, 0);
    for (size_t i = 0; i < no; ++i) dy[i] = value((unsigned)i * 5u + 2u, 0);
    for (int i = 0; i < l->nweights; ++i) l->weights[i] = 0.2f * value((unsigned)i * 3u + 7u, 0);
    for (int i = 0; i < l->out_c; ++i) {
        l->scales[i] = 0.5f + 0.25f * (float)i;
        l->biases[i] = 0.1f * (float)i - 0.15f;
        l->rolling_mean[i] = 0.3f, l->rolling_variance[i] = 0.7f;
    }
    for (int k = 0; k < 2; ++k) {
        forward_fn fw = k ? l->forward : own_f, bw = k ? l->backward : own_b;
        for (int i = 0; i < l->out_c; ++i) {
            l->rolling_mean[i] = 0.3f, l->rolling_variance[i] = 0.7f;
            l->bias_updates[i] = l->scale_updates[i] = 0.01f;
        }
        memset(l->weight_updates, 0, (size_t)l->nweights * sizeof(float));
        net->bn_sync_arg = &logs[k];
        forward_train(net, fw, l, x);
        memcpy(l->delta, dy, no * sizeof *dy);
        run_train(net, bw, l, x, dx[k]);
        for (int j = 0; j < FIELDS; ++j) {
            float *now = *(float **)((char *)l + fields[j].at);
            size_t n = fields[j].len == LEN_OUTPUT ? no : fields[j].len == LEN_CHANNEL ? (size_t)l->out_c : (size_t)l->nweights;
            if (!k) {
                saved[j] = malloc(n * sizeof(float));
                memcpy(saved[j], now, n * sizeof(float));
                continue;
            }
            double d = spread(saved[j], now, n);
            worst = d > worst ? d : worst;
            EXPECT(d <= 3e-5, "%s%s: %s differs from the base's by %.3g of its largest value", act,
                   sync ? " with sync" : "", fields[j].name, d);
            free(saved[j]);
        }
    }
    double d = spread(dx[0], dx[1], nx);
    worst = d > worst ? d : worst;
    EXPECT(d <= 3e-5, "%s%s: the input's gradient differs from the base's by %.3g", act, sync ? " with sync" : "", d);
    EXPECT(!strcmp(logs[0].log, logs[1].log), "%s: the sync hook saw '%s' from the base, '%s' from the engine", act,
           logs[0].log, logs[1].log);
    if (sync) EXPECT(logs[0].len > 0, "%s: the base never called the sync hook", act);
    free(x), free(dx[0]), free(dx[1]), free(dy);
    mn_base_free(net);
    return worst;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) { fprintf(stderr, "usage: test_loops <tmpdir>\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    double worst = 0;
    check_activation(mn_base_name());
    EXPECT(mn_base_dnnl_ops() != NULL, "a DNNL=0 build has no layer engine to test");
    if (mn_base_dnnl_ops()) {
        check_maxpool(c, argv[1], 0);
        check_maxpool(c, argv[1], 1);
        const char *acts[] = {"leaky", "linear", "logistic"};
        for (int a = 0; a < 3; ++a)
            for (int sync = 0; sync < 2; ++sync) {
                double d = check_bn(c, argv[1], acts[a], sync);
                worst = d > worst ? d : worst;
            }
    }
    printf("test_loops: %s: %s, 2x2 maxpool (both padding keys, with and without NaN) as the base computes them, "
           "batch norm with leaky, linear and logistic (hook or not) as it does to float rounding (largest "
           "difference %.2g of an array's largest value): %s\n",
           mn_base_name(), strcmp(mn_base_name(), "pjreddie") ? "leaky's gradient" : "leaky and its gradient", worst,
           failures ? "FAILED" : "ok");
    mn_comm_free(c);
    MPI_Finalize();
    return failures ? 1 : 0;
}
