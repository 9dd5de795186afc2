/* mn_base.h's network accessors for the two C bases: pjreddie's and
 * AlexeyAB's struct network name these fields alike, and the patches add
 * the same hook fields to both, so one file serves both adapters. Where
 * their types differ it is here: seen is size_t * on pjreddie's and
 * uint64_t * on the fork, both converted to and from uint64_t. A C++ base
 * (hank-ai's Darknet V5) will define these functions in its own adapter
 * and leave this file out. */
#include "mn_base.h"

mn_net_info mn_net_get(const network *net)
{
    mn_net_info in = {
        .batch = net->batch,
        .subdivisions = net->subdivisions,
        .max_batches = net->max_batches,
        .burn_in = net->burn_in,
        .learning_rate = net->learning_rate,
        .momentum = net->momentum,
        .decay = net->decay,
        .adam = net->adam,
        .w = net->w,
        .h = net->h,
        .c = net->c,
        .inputs = net->inputs,
        .outputs = net->outputs,
        .gpu = net->gpu_index,
        .hierarchy = net->hierarchy,
    };
    return in;
}

int mn_net_layers(const network *net) { return net->n; }
layer *mn_net_layer(const network *net, int i) { return &net->layers[i]; }
layer *mn_net_last(const network *net) { return &net->layers[net->n - 1]; }

uint64_t mn_net_seen(const network *net) { return (uint64_t)*net->seen; }
void mn_net_set_seen(network *net, uint64_t seen) { *net->seen = seen; }

float *mn_net_input(const network *net) { return net->input; }
void mn_net_set_train(network *net, int train) { net->train = train; }

void mn_net_set_hooks(network *net, const mn_net_hooks *h)
{
    net->ranks = h ? h->ranks : 1;
    net->sync = h ? h->sync : NULL;
    net->backward_hook = h ? h->backward : NULL;
    net->sync_arg = h ? h->arg : NULL;
}

void *mn_net_hook_arg(const network *net) { return net->sync_arg; }

void mn_net_set_bn_sync(network *net, mn_net_bn_sync f, void *arg)
{
    net->bn_sync = f;
    net->bn_sync_arg = arg;
}

void *mn_net_bn_sync_arg(const network *net) { return net->bn_sync_arg; }
