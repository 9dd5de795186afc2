/* The parameter arrays of the layer types both bases share, in weights-file
 * order: the pieces each adapter's mn_layer_params is built from. */
#include "base/mn_base_impl.h"

int mn_params_add(mn_param *out, int k, int max, float *data, float *grad, size_t n)
{
    if (k < max) { out[k].data = data; out[k].grad = grad; out[k].n = n; }
    return k + 1;
}

/* Same order as save_convolutional_weights / save_connected_weights (both bases). */
int mn_params_conv(const layer *l, mn_param *o, int k, int max, int trained)
{
    size_t n = (size_t)l->n;
    k = mn_params_add(o, k, max, l->biases, trained ? l->bias_updates : NULL, n);
    if (l->batch_normalize) {
        k = mn_params_add(o, k, max, l->scales, trained ? l->scale_updates : NULL, n);
        k = mn_params_add(o, k, max, l->rolling_mean, NULL, n);
        k = mn_params_add(o, k, max, l->rolling_variance, NULL, n);
    }
    return mn_params_add(o, k, max, l->weights, trained ? l->weight_updates : NULL, (size_t)l->nweights);
}

int mn_params_local(const layer *l, mn_param *o, int k, int max, int trained)
{
    size_t w = (size_t)l->size * l->size * l->c * l->n * l->out_w * l->out_h;
    k = mn_params_add(o, k, max, l->biases, trained ? l->bias_updates : NULL, (size_t)l->outputs);
    return mn_params_add(o, k, max, l->weights, trained ? l->weight_updates : NULL, w);
}

int mn_params_connected(const layer *l, mn_param *o, int k, int max, int trained)
{
    size_t n = (size_t)l->outputs;
    k = mn_params_add(o, k, max, l->biases, trained ? l->bias_updates : NULL, n);
    k = mn_params_add(o, k, max, l->weights, trained ? l->weight_updates : NULL, n * (size_t)l->inputs);
    if (l->batch_normalize) {
        k = mn_params_add(o, k, max, l->scales, trained ? l->scale_updates : NULL, n);
        k = mn_params_add(o, k, max, l->rolling_mean, NULL, n);
        k = mn_params_add(o, k, max, l->rolling_variance, NULL, n);
    }
    return k;
}
