/* Batch norm across ranks: running statistics made equal on every rank
 * (averaged, or rank 0's), and synchronized batch norm, where training
 * normalizes with the mean and variance of the global batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/optimizer/mn_optimizer.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/optimizer/mn_bn_ways.h"
#include "core/mn_watchdog.h"

/* The network's statistics listed (mn_bn_ways.h), or one message. */
static mn_status collect_stats(mn_comm *c, network *net, mn_bn_arrays *s)
{
    if (mn_bn_arrays_list(net, s) == MN_OK) return MN_OK;
    mn_error(c, "out of memory listing batch-norm statistics");
    return MN_ERR_NOMEM;
}

/* The device copies are the live ones in a GPU run: pull before, push after
 * (once the rescue's copies in flight, which read them, are done). */
static void pull_stats(network *net, const mn_bn_arrays *s, int push, mn_optimizer *o)
{
#ifdef GPU
    if (mn_net_get(net).gpu < 0) return;
    if (push) mn_optimizer_drain(o);
    for (int i = 0; i < s->n; ++i) {
        if (!s->dev[i]) continue;
        if (push) mn_base_push(s->dev[i], s->host[i], s->lens[i]);
        else mn_base_pull(s->dev[i], s->host[i], s->lens[i]);
    }
#else
    (void)net; (void)s; (void)push; (void)o;
#endif
}

/* Replace each of the k arrays by its mean over all ranks, in float32 through
 * the communicator's scratch buffer whatever allreduce_grad_dtype says:
 * statistics must not be rounded. Device arrays (gpu) are staged through host
 * memory, since Debian's Open MPI is not CUDA-aware. */
static mn_status mean_arrays(mn_comm *c, float **arrays, const size_t *lens, int k, int gpu)
{
    size_t total = 0, off = 0;
    float *f;
    for (int i = 0; i < k; ++i) total += lens[i];
    MN_CHECK(mn_comm_fused(c, total + 1, &f));
    for (int i = 0; i < k; off += lens[i++]) {
#ifdef GPU
        if (gpu) { mn_base_pull(arrays[i], f + off, lens[i]); continue; }
#endif
        memcpy(f + off, arrays[i], lens[i] * sizeof(float));
    }
    MN_CHECK(mn_sum_floats(c, c->world, f, total));
    mn_div_floats(f, total, (float)c->size);
    off = 0;
    for (int i = 0; i < k; off += lens[i++]) {
#ifdef GPU
        if (gpu) { mn_base_push(arrays[i], f + off, lens[i]); continue; }
#endif
        memcpy(arrays[i], f + off, lens[i] * sizeof(float));
    }
    return MN_OK;
}

/* ChainerMN's AllreducePersistent: every running statistic becomes its mean
 * over the ranks, in one fused allreduce. */
mn_status mn_average_bn_stats(mn_comm *c, network *net, mn_optimizer *o)
{
    mn_bn_arrays s;
    mn_bn_ways *w = mn_optimizer_ways_of(o);
    if (w) mn_bn_ways_fold(w);   /* a rank standing for several: their mean first */
    mn_status st = collect_stats(c, net, &s);
    if (st == MN_OK && s.n > 0) {
        pull_stats(net, &s, 0, o);
        mn_guard(c, "averaging batch-norm statistics");
        st = mean_arrays(c, s.host, s.lens, s.n, 0);
        mn_unguard(c);
        pull_stats(net, &s, 1, o);
    }
    if (w && st == MN_OK) mn_bn_ways_spread(w);
    mn_bn_arrays_free(&s);
    return st;
}

/* Rank 0's statistics everywhere: the model that rank 0 saves is the model
 * every rank evaluates. */
mn_status mn_bcast_bn_stats(mn_comm *c, network *net, mn_optimizer *o)
{
    mn_bn_arrays s;
    mn_status st = collect_stats(c, net, &s);
    if (st == MN_OK) pull_stats(net, &s, 0, o);
    mn_guard(c, "broadcasting batch-norm statistics");
    for (int i = 0; st == MN_OK && i < s.n; ++i) {
        for (size_t done = 0; done < s.lens[i];) {
            int m = s.lens[i] - done > (1u << 30) ? (1 << 30) : (int)(s.lens[i] - done);
            if (MPI_Bcast(s.host[i] + done, m, MPI_FLOAT, 0, c->world) != MPI_SUCCESS) {
                mn_error(c, "MPI_Bcast of batch-norm statistics failed");
                st = MN_ERR_MPI;
                break;
            }
            done += (size_t)m;
        }
    }
    mn_unguard(c);
    if (st == MN_OK) pull_stats(net, &s, 1, o);
    if (st == MN_OK && mn_optimizer_ways_of(o)) mn_bn_ways_spread(mn_optimizer_ways_of(o));
    mn_bn_arrays_free(&s);
    return st;
}

/* Darknet's bn_sync hook (patch 0005): a (and b) become their means over all
 * ranks. Darknet calls it in the forward pass after the batch mean (the mean
 * of equal-sized batches' means is the global mean), after the variance about
 * that global mean (Darknet then rescales count-1 to the global count), and in
 * the backward pass once with mean_delta and variance_delta together. */
static void bn_sync_hook(network *net, float *a, float *b, int n, int gpu)
{
    mn_comm *c = mn_net_bn_sync_arg(net);
    float *arrays[2] = {a, b};
    size_t lens[2] = {(size_t)n, (size_t)n};
#ifndef GPU
    if (gpu) mn_abort(c, "batch-norm sync was given device memory in a CPU build");
#endif
    mn_guard(c, "sync_bn allreduce");
    if (mean_arrays(c, arrays, lens, b ? 2 : 1, gpu) != MN_OK)
        mn_abort(c, "allreduce of batch-norm statistics failed");
    mn_unguard(c);
}

static int uses_bn(const mn_layer_info *l)
{
    return l->kind == MN_LAYER_BATCHNORM ||
           ((l->kind == MN_LAYER_CONVOLUTIONAL || l->kind == MN_LAYER_CONNECTED || l->kind == MN_LAYER_DECONVOLUTIONAL) &&
            l->batch_normalize);
}

/* Without sync_bn each rank normalizes over its own images of a pass, one
 * process with the global batch over every rank's: the one place where N
 * ranks do not train as one process does. Rank 0 says so, louder where a
 * rank's statistics come from so few images that they are noisy. */
enum { MN_BN_FEW = 8 };
static void say_local_bn(const mn_comm *c, network *net)
{
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        if (!uses_bn(&l)) continue;
        printf("darknet-mn: %sbatch norm (layer %d on) normalizes over each rank's %d image%s of a pass "
               "(batch/subdivisions), one process with the global batch over %d: not the same training%s; "
               "sync_bn=1 in [distributed] normalizes over every rank's\n",
               l.batch < MN_BN_FEW ? "warning: " : "", i, l.batch, l.batch > 1 ? "s" : "", l.batch * c->size,
               l.batch < MN_BN_FEW ? ", and statistics of so few images are noisy" : "");
        return;
    }
}

mn_status mn_attach_sync_bn(mn_comm *c, network *net, const mn_options *opt)
{
    mn_net_set_bn_sync(net, NULL, NULL);
    if (!opt->sync_bn && c->size > 1 && c->rank == 0) say_local_bn(c, net);
    if (!opt->sync_bn) return MN_OK;
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        /* Darknet's variance divides by count-1: a rank needs two values. */
        if (uses_bn(&l) && l.batch * l.out_h * l.out_w < 2) {
            if (c->rank == 0)
                mn_error(c, "sync_bn=1: layer %d normalizes over batch %d x %dx%d = one value per rank; "
                         "use batch >= 2 per rank (batch/subdivisions)", i, l.batch, l.out_w, l.out_h);
            return MN_ERR_USER;
        }
    }
    mn_net_set_bn_sync(net, bn_sync_hook, c);
    return MN_OK;
}
