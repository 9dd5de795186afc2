/* A network's parameters handed over once (mn_base.h, mn_net_views): the
 * adapter is asked for a layer's arrays here alone, and each array comes
 * with what it is for, so that the optimizer, batch-norm statistics, the
 * replica check, checkpoints, weights files and evaluation's copy walk the
 * same list. Built on every base: it reads no Darknet struct. */
#include <stdio.h>
#include <string.h>
#include "base/mn_base_impl.h"
#include "core/mn_fault.h"

mn_views mn_net_views(const network *net)
{
    mn_views it;
    memset(&it, 0, sizeof it);
    it.net = net;
    it.layer = -1;
    it.cap = MN_MAX_LAYER_PARAMS;
    return it;
}

int mn_views_next(mn_views *it, mn_view *v)
{
    while (it->j >= it->k) {   /* the next layer with arrays */
        if (++it->layer >= mn_net_layers(it->net)) return 0;
        it->info = mn_layer_get(it->net, it->layer);
        int cap = it->cap > 0 && it->cap < MN_MAX_LAYER_PARAMS ? it->cap : MN_MAX_LAYER_PARAMS;
        it->k = mn_layer_params(mn_net_layer(it->net, it->layer), it->p, cap);
        if (it->k > cap) {   /* a limit of ours, not the user's input: the exit table's 70 */
            char what[160];
            snprintf(what, sizeof what, "layer %d lists %d parameter arrays, more than darknet-mn handles (%d, "
                     "MN_MAX_LAYER_PARAMS in plugin/base/mn_base.h)", it->layer, it->k, cap);
            mn_fatal(MN_EXIT_FAULT, what);
        }
        it->j = 0;
    }
    const mn_param *p = &it->p[it->j];
    const mn_layer_info *l = &it->info;
    memset(v, 0, sizeof *v);
    v->data = p->data;
    v->grad = p->grad;
    v->n = p->n;
    v->layer = it->layer;
    v->index = it->j++;
    v->update = -1;
    if (p->data && (p->data == l->rolling_mean || p->data == l->rolling_variance)) {
        v->stat = 1;
        v->data_gpu = p->data == l->rolling_mean ? l->rolling_mean_gpu : l->rolling_variance_gpu;
    }
    for (int u = 0; p->grad && u < MN_UPDATES; ++u)
        if (p->grad == l->updates[u]) v->update = u;
    for (int u = 0; !v->stat && p->data && u < MN_UPDATES; ++u)
        if (p->data == l->params[u]) v->data_gpu = l->params_gpu[u];
    if (v->update >= 0) v->grad_gpu = l->updates_gpu[v->update];
    return 1;
}

const char *mn_net_layer_refused(const network *net, int i, int *averaged)
{
    const layer *l = mn_net_layer(net, i);
    *averaged = mn_layer_params(l, NULL, 0) >= 0;
    const char *what = mn_base_refused_layer(l);
    return what || *averaged ? what : "a layer of a type darknet-mn cannot average";
}

size_t mn_params_count(const network *net)
{
    size_t n = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) n += v.n;
    return n;
}

/* One walk for both directions: buf <- parameters (each layer pulled from
 * the GPU first), or parameters <- buf (each layer pushed once filled). */
static void copy_params(network *net, float *buf, int into_net)
{
    size_t off = 0;
    int last = -1;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v); off += v.n) {
        if (v.index == 0 && into_net && last >= 0) mn_layer_move(mn_net_layer(net, last), 1);
        if (v.index == 0 && !into_net) mn_layer_move(mn_net_layer(net, v.layer), 0);
        last = v.layer;
        if (into_net) memcpy(v.data, buf + off, v.n * sizeof(float));
        else memcpy(buf + off, v.data, v.n * sizeof(float));
    }
    if (into_net && last >= 0) mn_layer_move(mn_net_layer(net, last), 1);
}

void mn_params_pack(network *net, float *buf) { copy_params(net, buf, 0); }
void mn_params_unpack(network *net, const float *buf) { copy_params(net, (float *)buf, 1); }

int mn_params_trained(network *net, float *buf, float **arrays, size_t *lens)
{
    int k = 0;
    size_t off = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v); off += v.n)
        if (!v.stat) {
            if (arrays) arrays[k] = buf + off, lens[k] = v.n;
            ++k;
        }
    return k;
}

void mn_params_each(network *net, const float *stats, void (*fn)(const float *p, size_t n, void *arg), void *arg)
{
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) {
        if (v.index == 0) mn_layer_move(mn_net_layer(net, v.layer), 0);
        if (stats && v.stat) {
            fn(stats, v.n, arg);
            stats += v.n;
        } else fn(v.data, v.n, arg);
    }
}
