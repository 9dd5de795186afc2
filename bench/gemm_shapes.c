/* The gemm calls one training image makes in a cfg's convolutional and
 * connected layers (forward, weight gradient, input gradient; Darknet's
 * shapes and transposes), each timed through Darknet's gemm: with BLAS=1 that
 * is OpenBLAS's sgemm, with BLAS=0 the stock loops. Prints one line per call
 * (median of the repetitions) and the total per image.
 * usage: bench_gemm CFG [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "darknet.h"
#include "gemm.h"

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of reps calls of C = A*B (+C) with Darknet's row-major
 * leading dimensions, as the layers pass them. */
static double time_gemm(int ta, int tb, int m, int n, int k, int reps)
{
    float *a = calloc((size_t)m * k, sizeof(float)), *b = calloc((size_t)k * n, sizeof(float));
    float *c = calloc((size_t)m * n, sizeof(float));
    for (size_t i = 0; i < (size_t)m * k; ++i) a[i] = (float)(i % 7) * .1f;
    for (size_t i = 0; i < (size_t)k * n; ++i) b[i] = (float)(i % 5) * .1f;
    double *t = malloc(sizeof(double) * reps);
    for (int r = 0; r < reps; ++r) {
        double t0 = now();
        gemm(ta, tb, m, n, k, 1, a, ta ? m : k, b, tb ? k : n, 1, c, n);
        t[r] = now() - t0;
    }
    qsort(t, reps, sizeof(double), cmp);
    double med = t[reps / 2];
    free(a), free(b), free(c), free(t);
    return med;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: bench_gemm CFG [REPS]\n"); return 2; }
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    network *net = parse_network_cfg(argv[1]);
    int batch = net->batch;
    double total = 0;
    printf("%-6s %-4s %6s %6s %6s %10s\n", "layer", "call", "M", "N", "K", "ms");
    for (int i = 0; i < net->n; ++i) {
        layer l = net->layers[i];
        int shapes[3][5], calls = 0, per_image = 1;
        if (l.type == CONVOLUTIONAL) {
            int m = l.n / l.groups, n = l.out_w * l.out_h, k = l.size * l.size * l.c / l.groups;
            int s[3][5] = {{0, 0, m, n, k}, {0, 1, m, k, n}, {1, 0, k, n, m}};
            memcpy(shapes, s, sizeof s);
            calls = i ? 3 : 2;   /* the first layer passes no gradient back */
        } else if (l.type == CONNECTED) {
            /* One call for the whole batch: a batch's share per image. */
            int s[3][5] = {{0, 1, batch, l.outputs, l.inputs}, {1, 0, l.outputs, l.inputs, batch},
                           {0, 0, batch, l.inputs, l.outputs}};
            memcpy(shapes, s, sizeof s);
            calls = 3;
            per_image = batch;
        }
        static const char *name[3] = {"fwd", "dW", "dX"};
        for (int j = 0; j < calls; ++j) {
            int *s = shapes[j];
            double t = time_gemm(s[0], s[1], s[2], s[3], s[4], reps) / per_image;
            total += t;
            printf("%-6d %-4s %6d %6d %6d %10.4f%s\n", i, name[j], s[2], s[3], s[4], t * 1e3,
                   per_image > 1 ? " (batch call / batch)" : "");
        }
    }
    printf("total per training image: %.4f ms\n", total * 1e3);
    free_network(net);
    return 0;
}
