/* The sync modes, one file each: a mode says where the mean is; the
 * optimizer finishes it. */
#ifndef MN_SYNC_H
#define MN_SYNC_H

#include "mn_training.h"
#include "mn_coll.h"
#include "mn_observe.h"
#include "mn_wait.h"

typedef struct {
    mn_comm *comm;
    mn_watchdog *watch;
    mn_route route;
    float *arena;
    float **arrays;
    float **arrays_gpu;
    const size_t *lens;
    const int *layer_of;
    int n;
    struct mn_stage *stage;
    mn_timeline *tl;
} mn_sync_ctx;

/* Where the mean is: the arena, staged, or the device arrays. */
typedef enum { MN_MEAN_HOST, MN_MEAN_STAGED, MN_MEAN_DEVICE } mn_mean_at;

typedef struct {
    const char *name;
    /* Collective. */
    mn_status (*start)(const mn_sync_ctx *x, const mn_options *opt, void **state);
    /* Layers from `layer` up are done: buckets handed over; NULL: none. */
    int (*ready)(void *state, int layer, int poison);
    /* At the hook; poison: a non-finite loss. */
    mn_mean_at (*mean)(void *state, const mn_sync_ctx *x, network *net, int poison, int *bad);
    void (*say)(void *state, const mn_options *opt);
    void (*stop)(void *state);
} mn_sync_ops;

extern const mn_sync_ops mn_sync_blocking;
extern const mn_sync_ops mn_sync_overlap;

#endif
