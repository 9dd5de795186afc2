/* Helpers shared by the C tests that train through the API, with
 * mn_expect.h's expectations: one update from a synthetic data set, the
 * parameters in weights-file order, and the relative difference of two runs. */
#ifndef MN_TEST_H
#define MN_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "engine/mn_engine.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "mn_expect.h"


/* The reference network of an equivalence check: parsed as the plugin
 * loads one, on the same engine (oneDNN convolution in a DNNL=1 build), so
 * that both sides sum in the same order. */
static inline network *mn_test_parse(mn_comm *c, const char *cfg)
{
    network *net = mn_base_parse(cfg);
    mn_dnnl_install(net, c, mn_base_dnnl_ops());
    return net;
}

/* One update: row j*b+i is image first + j*ranks*b + r*b + i of the data set
 * that image_of(g, x, y) describes, so that N ranks with batch b see what one
 * process with batch N*b sees. */
static inline void mn_test_update(network *net, size_t first, int ranks, int r,
                                  void (*image_of)(size_t g, float *x, float *y))
{
    int b = net->batch, s = net->subdivisions;
    mn_batch d = mn_base_make_batch(b * s, net->inputs, net->outputs);
    for (int j = 0; j < s; ++j)
        for (int i = 0; i < b; ++i)
            image_of(first + (size_t)j * ranks * b + (size_t)r * b + i, d.x[j * b + i], d.y[j * b + i]);
    mn_base_train(net, &d);
    mn_base_free_batch(&d);
}

/* Every parameter and running statistic in weights-file order into out (when
 * not NULL); returns their count. */
static inline size_t mn_test_params(network *net, float *out)
{
    if (out) mn_params_pack(net, out);
    return mn_params_count(net);
}

/* The L2 difference of a from the reference b relative to |b|; *moved gets how
 * far b moved from its start w0, on the same scale. */
static inline double mn_test_rel(const float *a, const float *b, const float *w0, size_t n, double *moved)
{
    double num = 0, den = 0, mv = 0;
    for (size_t i = 0; i < n; ++i) {
        num += (a[i] - b[i]) * (double)(a[i] - b[i]);
        den += (double)b[i] * b[i];
        mv += (b[i] - w0[i]) * (double)(b[i] - w0[i]);
    }
    *moved = sqrt(mv / den);
    return sqrt(num / den);
}

#endif
