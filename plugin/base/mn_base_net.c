/* mn_base.h's network accessors for the two C bases: pjreddie's and
 * AlexeyAB's struct network name these fields alike, and the patches add
 * the same hook fields to both, so one file serves both adapters. Where
 * their types differ it is here: seen is size_t * on pjreddie's and
 * uint64_t * on the fork, both converted to and from uint64_t. The layer
 * types are numbered differently but named alike, so one switch maps both
 * to mn_layer_kind (and random is an int on one, a float on the other:
 * read into a float). A C++ base
 * (hank-ai's Darknet V5) will define these functions in its own adapter
 * and leave this file out. */
#include "mn_base.h"
#ifndef MN_BASE_ALEXEYAB
#include "network.h"   /* get_layer_string (mn_base.h declares the fork's) */
#endif
#ifdef GPU
#include "convolutional_layer.h"
#include "connected_layer.h"
#include "batchnorm_layer.h"
#include "local_layer.h"
#endif

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

/* By name: both bases' LAYER_TYPE has these, at different numbers. */
static mn_layer_kind kind_of(LAYER_TYPE t)
{
    switch (t) {
    case CONVOLUTIONAL: return MN_LAYER_CONVOLUTIONAL;
    case DECONVOLUTIONAL: return MN_LAYER_DECONVOLUTIONAL;
    case CONNECTED: return MN_LAYER_CONNECTED;
    case BATCHNORM: return MN_LAYER_BATCHNORM;
    case YOLO: return MN_LAYER_YOLO;
    case REGION: return MN_LAYER_REGION;
    case DETECTION: return MN_LAYER_DETECTION;
    default: return MN_LAYER_OTHER;
    }
}

mn_layer_info mn_layer_get(const network *net, int i)
{
    const layer *l = &net->layers[i];
    mn_layer_info in = {
        .kind = kind_of(l->type),
        .name = get_layer_string(l->type),
        .batch = l->batch,
        .inputs = l->inputs,
        .outputs = l->outputs,
        .out_w = l->out_w,
        .out_h = l->out_h,
        .n = l->n,
        .batch_normalize = l->batch_normalize,
        .dontsave = l->dontsave,
        .dontload = l->dontload,
        .dontloadscales = l->dontloadscales,
        .classes = l->classes,
        .coords = l->coords,
        .max_boxes = l->max_boxes,
        .jitter = l->jitter,
        .random = l->random,
        .rolling_mean = l->rolling_mean,
        .rolling_variance = l->rolling_variance,
        .updates = {l->weight_updates, l->bias_updates, l->scale_updates},
#ifdef GPU
        .rolling_mean_gpu = l->rolling_mean_gpu,
        .rolling_variance_gpu = l->rolling_variance_gpu,
        .updates_gpu = {l->weight_updates_gpu, l->bias_updates_gpu, l->scale_updates_gpu},
#endif
    };
    return in;
}

mn_layer_info mn_layer_last(const network *net) { return mn_layer_get(net, net->n - 1); }

void mn_layer_set_update(network *net, int i, int which, float *p)
{
    layer *l = &net->layers[i];
    if (which == MN_UPDATE_WEIGHTS) l->weight_updates = p;
    else if (which == MN_UPDATE_BIASES) l->bias_updates = p;
    else l->scale_updates = p;
}

#ifdef GPU
/* In a GPU run the device copies are the live ones. */
void mn_layer_move(const layer *l, int to_device)
{
    if (gpu_index < 0) return;
    if (l->type == CONVOLUTIONAL) (to_device ? push_convolutional_layer : pull_convolutional_layer)(*l);
    else if (l->type == CONNECTED) (to_device ? push_connected_layer : pull_connected_layer)(*l);
    else if (l->type == BATCHNORM) (to_device ? push_batchnorm_layer : pull_batchnorm_layer)(*l);
    else if (l->type == LOCAL) (to_device ? push_local_layer : pull_local_layer)(*l);
    else mn_base_move_layer(l, to_device);
}
#else
void mn_layer_move(const layer *l, int to_device) { (void)l; (void)to_device; }
#endif
