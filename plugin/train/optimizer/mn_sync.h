/* The sync modes, one file each: a mode says where the mean is; the
 * optimizer finishes it. */
#ifndef MN_SYNC_H
#define MN_SYNC_H

#include "train/mn_training.h"
#include "coll/mn_coll.h"
#include "train/observe/mn_observe.h"
#include "core/mn_watchdog.h"

/* Where an update step averages the gradient, by the run's device, ranks
 * and whether the communicator averages device arrays (mn_sync_route). */
typedef enum {
    MN_ROUTE_HOST,     /* CPU run: the host arena */
    MN_ROUTE_LOCAL,    /* GPU run on one rank: the Inf/NaN check alone */
    MN_ROUTE_DEVICE,   /* GPU run averaging device arrays (NCCL) */
    MN_ROUTE_STAGED    /* GPU run through MPI: via the host arena */
} mn_route;
mn_route mn_sync_route(int gpu, int ranks, int device_mean);

typedef struct {
    mn_comm *comm;
    mn_watchdog *watch;
    mn_route route;
    float *arena;
    size_t total;         /* the arena's floats */
    float **arrays;
    float **arrays_gpu;
    const size_t *lens;
    const int *layer_of;
    float **weights, **weights_gpu;   /* the parameters each array updates */
    int n;
    struct mn_grad_stage *stage;
    mn_timeline *tl;
} mn_sync_ctx;

/* Where the mean is: the arena, staged, or the device arrays (checked:
 * the mode found whether it is finite). */
typedef enum { MN_MEAN_HOST, MN_MEAN_STAGED, MN_MEAN_DEVICE, MN_MEAN_CHECKED } mn_mean_at;

typedef struct {
    const char *name;
    /* Collective; x stays where it is while the mode runs. */
    mn_status (*start)(const mn_sync_ctx *x, network *net, const mn_options *opt, void **state);
    /* Layers from `layer` up are done: buckets handed over; NULL: none. */
    int (*ready)(void *state, int layer, int poison);
    /* At the hook; poison: a non-finite loss; *bad: the mean is not finite
     * (MN_MEAN_CHECKED); *skip: no mean to apply this step. */
    mn_mean_at (*mean)(void *state, const mn_sync_ctx *x, network *net, int poison, int *bad, int *skip);
    /* Before forward. */
    void (*begin)(void *state, const network *net);
    /* Checkpoints, where the mode keeps more than the momentum: its slots,
     * the momentum's copy first; state fills them from the arena (in=0) or
     * puts them back (1); rescale scales what it keeps of the gradient. */
    float *(*slots)(void *state, size_t *n);
    void (*state)(void *state, const network *net, int in);
    void (*rescale)(void *state, float k);
    /* Whether the ranks' models drift apart, to be averaged before a save;
     * aligned: they were. */
    int (*drifts)(void *state);
    void (*aligned)(void *state);
    void (*say)(void *state, const mn_options *opt);
    void (*stop)(void *state);
} mn_sync_ops;

extern const mn_sync_ops mn_sync_blocking;
extern const mn_sync_ops mn_sync_overlap;
extern const mn_sync_ops mn_sync_dbuf;

#ifdef GPU
/* double_buffering=1's route in a GPU run: on the device where the
 * communicator packs there (pure_nccl, as ChainerMN), else staged. */
mn_route mn_sync_dbuf_route(const mn_comm *c);
#endif

#endif
