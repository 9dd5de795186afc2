/* A convolutional layer's batch norm and activation in training, in three
 * passes over the tensor forward and two backward where Darknet's functions
 * make about a dozen each way. The formulas are the base's and the sync_bn
 * hook is called at the same points; only the sums' rounding differs: each
 * plane sums in eight fixed float lanes and planes add up in double, so the
 * result does not depend on the compiler's vectorizing. */
#include <math.h>
#include "engine/mn_engine.h"

enum { LANES = 8 };

/* The sum of one plane of n values. */
static double plane_sum(const float *p, int n)
{
    float a[LANES] = {0};
    int k = 0;
    for (; k + LANES <= n; k += LANES)
        for (int q = 0; q < LANES; ++q) a[q] += p[k + q];
    for (int q = 0; k < n; ++k, ++q) a[q] += p[k];
    double s = 0;
    for (int q = 0; q < LANES; ++q) s += a[q];
    return s;
}

/* The sum of (p[k] - m)^2 over one plane. */
static double plane_sq(const float *p, float m, int n)
{
    float a[LANES] = {0};
    int k = 0;
    for (; k + LANES <= n; k += LANES)
        for (int q = 0; q < LANES; ++q) a[q] += (p[k + q] - m) * (p[k + q] - m);
    for (int q = 0; k < n; ++k, ++q) a[q] += (p[k] - m) * (p[k] - m);
    double s = 0;
    for (int q = 0; q < LANES; ++q) s += a[q];
    return s;
}

/* Inlined with constant leaky and dbl so each case vectorizes whole. */
#define PLANE static inline __attribute__((always_inline)) void

/* normalize, scale_bias, add_bias and the activation on one plane. */
PLANE norm_plane(const float *x, float *xn, float *y, int n, float mean, float d, float sc, float bias, int leaky, int dbl)
{
    for (int i = 0; i < n; ++i) {
        float v = (x[i] - mean) / d;
        xn[i] = v;
        v = v * sc + bias;
        float low = dbl ? (float)(.1 * v) : .1f * v;
        y[i] = !leaky || v > 0 ? v : low;
    }
}

/* gradient_array's slope of leaky at output y. */
#define SLOPE(leaky, y) ((leaky) && !((y) > 0) ? .1f : 1.0f)

/* With g the gradient through the activation, adds the plane's sums of g,
 * g * x_norm and g * (x - mean) to s. */
PLANE grad_sums(const float *dy, const float *y, const float *xn, const float *x, float mean, int n, int leaky,
                double s[3])
{
    float a[LANES] = {0}, an[LANES] = {0}, ax[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int q = 0; q < LANES; ++q) {
            float g = dy[i + q] * SLOPE(leaky, y[i + q]);
            a[q] += g;
            an[q] += g * xn[i + q];
            ax[q] += g * (x[i + q] - mean);
        }
    for (int q = 0; i < n; ++i, ++q) {
        float g = dy[i] * SLOPE(leaky, y[i]);
        a[q] += g;
        an[q] += g * xn[i];
        ax[q] += g * (x[i] - mean);
    }
    for (int q = 0; q < LANES; ++q) s[0] += a[q], s[1] += an[q], s[2] += ax[q];
}

/* normalize_delta on one plane, from the output's gradient dy. */
PLANE delta_plane(float *dy, const float *y, const float *x, int n, float mean, float gs, float vd, float md, int leaky)
{
    for (int i = 0; i < n; ++i) dy[i] = dy[i] * SLOPE(leaky, y[i]) * gs + vd * (x[i] - mean) + md;
}

void mn_bn_forward(const mn_bn_base *k, const mn_bn_layer *l)
{
    int leaky = l->leaky;
    int C = l->c, S = l->size, B = l->batch;
    int m = B * S;
    for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int b = 0; b < B; ++b) s += plane_sum(l->x + ((size_t)b * C + c) * S, S);
        l->mean[c] = (float)(s / m);
    }
    if (l->sync) l->sync(l->net, l->mean, 0, C, 0);
    for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int b = 0; b < B; ++b) s += plane_sq(l->x + ((size_t)b * C + c) * S, l->mean[c], S);
        l->variance[c] = (float)(s / (m - 1));
    }
    if (l->sync) {
        /* The ranks' mean times N(m-1)/(Nm-1) is the global variance. */
        l->sync(l->net, l->variance, 0, C, 0);
        float r = (float)((double)l->ranks * (m - 1) / ((double)l->ranks * m - 1));
        for (int c = 0; c < C; ++c) l->variance[c] *= r;
    }
    for (int c = 0; c < C; ++c) {
        l->rolling_mean[c] *= k->keep;
        l->rolling_mean[c] += k->add * l->mean[c];
        l->rolling_variance[c] *= k->keep;
        l->rolling_variance[c] += k->add * l->variance[c];
    }
    for (int b = 0; b < B; ++b) {
        for (int c = 0; c < C; ++c) {
            size_t at = ((size_t)b * C + c) * S;
            const float *x = l->x + at;
            float *xn = l->x_norm + at, *y = l->output + at;
            float mean = l->mean[c], sc = l->scales[c], bias = l->biases[c];
            float d = k->fork_eps ? sqrtf(l->variance[c] + .00001f) : sqrtf(l->variance[c]) + .000001f;
            if (leaky && k->leaky_double) norm_plane(x, xn, y, S, mean, d, sc, bias, 1, 1);
            else if (leaky) norm_plane(x, xn, y, S, mean, d, sc, bias, 1, 0);
            else norm_plane(x, xn, y, S, mean, d, sc, bias, 0, 0);
        }
    }
}

void mn_bn_backward(const mn_bn_base *k, const mn_bn_layer *l)
{
    int leaky = l->leaky;
    int C = l->c, S = l->size, B = l->batch;
    int m = B * S;
    /* One pass for the four sums Darknet takes in four. */
    for (int c = 0; c < C; ++c) {
        double sum[3] = {0};
        for (int b = 0; b < B; ++b) {
            size_t at = ((size_t)b * C + c) * S;
            const float *dy = l->delta + at, *y = l->output + at, *xn = l->x_norm + at, *x = l->x + at;
            if (leaky) grad_sums(dy, y, xn, x, l->mean[c], S, 1, sum);
            else grad_sums(dy, y, xn, x, l->mean[c], S, 0, sum);
        }
        double sg = sum[0], sgn = sum[1], sgx = sum[2];
        float v = l->variance[c], sc = l->scales[c];
        l->bias_updates[c] += (float)sg;
        l->scale_updates[c] += (float)sgn;
        l->mean_delta[c] = (float)(sc * sg * (-1. / sqrt(v + .00001f)));
        l->variance_delta[c] = (float)(sc * sgx * (-.5 * pow(v + .00001f, (float)(-3. / 2.))));
    }
    /* Averaged over the ranks, the division by m below is by the global count. */
    if (l->sync) l->sync(l->net, l->mean_delta, l->variance_delta, C, 0);
    for (int b = 0; b < B; ++b) {
        for (int c = 0; c < C; ++c) {
            size_t at = ((size_t)b * C + c) * S;
            float *dy = l->delta + at;
            const float *y = l->output + at, *x = l->x + at;
            float v = l->variance[c], mean = l->mean[c];
            float gs = l->scales[c] / (k->fork_eps ? sqrtf(v) + .00001f : sqrtf(v + .00001f));
            float vd = (float)(l->variance_delta[c] * 2. / m), md = (float)(l->mean_delta[c] / (double)m);
            if (leaky) delta_plane(dy, y, x, S, mean, gs, vd, md, 1);
            else delta_plane(dy, y, x, S, mean, gs, vd, md, 0);
        }
    }
}
