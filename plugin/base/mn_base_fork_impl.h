/* The two forks' convolutional activation, forward and gradient, over a
 * view each adapter fills; their activation functions are named alike. The
 * includer declares them. Private to base/. */
#ifndef MN_BASE_FORK_IMPL_H
#define MN_BASE_FORK_IMPL_H

#include <stddef.h>
#include "engine/mn_engine.h"

typedef struct {
    int activation;                            /* the fork's ACTIVATION */
    float *output, *activation_input, *delta;
    int n;                                     /* outputs x batch */
    int batch, out_c, wh;
} mn_fork_act;

static inline void mn_fork_act_forward(const mn_fork_act *a)
{
    ACTIVATION f = (ACTIVATION)a->activation;
    if (f == SWISH) activate_array_swish(a->output, a->n, a->activation_input, a->output);
    else if (f == MISH) activate_array_mish(a->output, a->n, a->activation_input, a->output);
    else if (f == HARD_MISH) activate_array_hard_mish(a->output, a->n, a->activation_input, a->output);
    else if (f == NORM_CHAN) activate_array_normalize_channels(a->output, a->n, a->batch, a->out_c, a->wh, a->output);
    else if (f == NORM_CHAN_SOFTMAX)
        activate_array_normalize_channels_softmax(a->output, a->n, a->batch, a->out_c, a->wh, a->output, 0);
    else if (f == NORM_CHAN_SOFTMAX_MAXVAL)
        activate_array_normalize_channels_softmax(a->output, a->n, a->batch, a->out_c, a->wh, a->output, 1);
    else activate_array_cpu_custom(a->output, a->n, f);
}

/* Into the view's delta. */
static inline void mn_fork_act_backward(const mn_fork_act *a)
{
    ACTIVATION f = (ACTIVATION)a->activation;
    if (f == SWISH) gradient_array_swish(a->output, a->n, a->activation_input, a->delta);
    else if (f == MISH) gradient_array_mish(a->n, a->activation_input, a->delta);
    else if (f == HARD_MISH) gradient_array_hard_mish(a->n, a->activation_input, a->delta);
    else if (f == NORM_CHAN_SOFTMAX || f == NORM_CHAN_SOFTMAX_MAXVAL)
        gradient_array_normalize_channels_softmax(a->output, a->n, a->batch, a->out_c, a->wh, a->delta);
    else if (f == NORM_CHAN) gradient_array_normalize_channels(a->output, a->n, a->batch, a->out_c, a->wh, a->delta);
    else if (f == LEAKY) mn_leaky_gradient(a->output, a->delta, (size_t)a->n);
    else gradient_array(a->output, a->n, f, a->delta);
}

#endif
