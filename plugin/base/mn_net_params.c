/* A network's parameters in weights-file order, over the adapter's views of
 * each layer (mn_layer_params): the one walk every part of training shares
 * (the start-up broadcast, checkpoints, the replica check, evaluation's
 * copy). Built on every base: it reads no Darknet struct. */
#include <string.h>
#include "mn_base.h"

size_t mn_params_count(const network *net)
{
    size_t n = 0;
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(mn_net_layer(net, i), p, MN_MAX_LAYER_PARAMS);
        for (int j = 0; j < k; ++j) n += p[j].n;
    }
    return n;
}

/* One walk for both directions: buf <- parameters, or parameters <- buf. */
static void copy_params(network *net, float *buf, int into_net)
{
    size_t off = 0;
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(mn_net_layer(net, i), p, MN_MAX_LAYER_PARAMS);
        if (!into_net) mn_layer_move(mn_net_layer(net, i), 0);
        for (int j = 0; j < k; ++j) {
            if (into_net) memcpy(p[j].data, buf + off, p[j].n * sizeof(float));
            else memcpy(buf + off, p[j].data, p[j].n * sizeof(float));
            off += p[j].n;
        }
        if (into_net) mn_layer_move(mn_net_layer(net, i), 1);
    }
}

void mn_params_pack(network *net, float *buf) { copy_params(net, buf, 0); }
void mn_params_unpack(network *net, const float *buf) { copy_params(net, (float *)buf, 1); }

void mn_params_each(network *net, const float *stats, void (*fn)(const float *p, size_t n, void *arg), void *arg)
{
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(mn_net_layer(net, i), p, MN_MAX_LAYER_PARAMS);
        mn_layer_move(mn_net_layer(net, i), 0);
        for (int j = 0; j < k; ++j)
            if (stats && (p[j].data == l.rolling_mean || p[j].data == l.rolling_variance)) {
                fn(stats, p[j].n, arg);
                stats += p[j].n;
            } else fn(p[j].data, p[j].n, arg);
    }
}
