/* The rescue's copies in a GPU run (mn_rescue_gpu.h). Every array is listed once
 * in the device tables of an mn_grad_stage, so a copy is one pack launch and one
 * device-to-host copy on the copy stream, whatever the layer count. The
 * copies alternate between two page-locked slots (mn_rescue_order, whose
 * waits tests/unit/test_queue.c checks on host queues): the copy stream waits for
 * the update, the next step's work waits for the copy, and the rescue reads
 * the newest slot whose copy is complete. */
#ifdef GPU
#include <stdio.h>
#include <stdlib.h>
#include "train/optimizer/mn_rescue_gpu.h"
#include "base/mn_base.h"
#include "transport/mn_device.h"
#include "train/optimizer/mn_gpu_order.h"
#include "transport/mn_queue.h"
#include "train/optimizer/mn_grad_stage.h"

typedef struct {
    mn_rescue_gpu *h;
    int b;
} slot_arg;

struct mn_rescue_gpu {
    mn_comm *c;
    int device;
    mn_grad_stage *pack;          /* every array: parameters, then momentum */
    size_t nparams, total;
    float *slot[2];          /* page-locked copies */
    uint64_t it[2], seen[2];
    double done[2];
    slot_arg args[2];
    int has_order;
    mn_queue *base_q, *copy_q;
    mn_rescue_order order;
};

/* The parameters' device arrays and sizes, in the network's order, then the
 * update arrays; NULL where a parameter has no device copy (why says which). */
static float **list_arrays(network *net, float **dev, const size_t *lens, int n, size_t **all_lens, int *count,
                           size_t *nparams, char *why, size_t cap)
{
    int k = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) ++k;
    float **all = calloc((size_t)(k + n + 1), sizeof *all);
    *all_lens = calloc((size_t)(k + n + 1), sizeof **all_lens);
    if (!all || !*all_lens) {
        snprintf(why, cap, "out of memory");
        free(all);
        free(*all_lens);
        return NULL;
    }
    *count = 0;
    *nparams = 0;
    it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v); ++*count) {
        if (!v.data_gpu) {
            snprintf(why, cap, "layer %d's parameter array %d has no device copy on %s Darknet", v.layer, v.index,
                     mn_base_name());
            free(all);
            free(*all_lens);
            return NULL;
        }
        all[*count] = v.data_gpu;
        (*all_lens)[*count] = v.n;
        *nparams += v.n;
    }
    for (int i = 0; i < n; ++i, ++*count) {
        all[*count] = dev[i];
        (*all_lens)[*count] = lens[i];
    }
    return all;
}

/* Page-locked slots and the copy stream: what cannot be had is said, not fatal. */
static mn_status make_copies(mn_rescue_gpu *h, char *why, size_t cap)
{
    for (int b = 0; b < 2; ++b)
        if (mn_device_alloc_host((void **)&h->slot[b], (h->total + 1) * sizeof(float)) != 0) {
            mn_device_clear();   /* cleared, or Darknet's next check_error aborts on it */
            h->slot[b] = NULL;
            snprintf(why, cap, "no page-locked memory for two copies of %zu floats", h->total);
            return MN_ERR_NOMEM;
        }
    if (!(h->copy_q = mn_queue_copy_stream(h->c))) return MN_ERR_UNAVAILABLE;
    if (!(h->base_q = mn_queue_device(h->c, mn_base_stream()))) return MN_ERR_NOMEM;
    mn_status r = mn_rescue_order_init(&h->order, h->base_q, h->copy_q);
    h->has_order = r == MN_OK;
    return r;
}

mn_status mn_rescue_gpu_new(mn_comm *c, network *net, float **dev, const size_t *lens, int n, mn_rescue_gpu **out, char *why,
                      size_t cap)
{
    *out = NULL;
    *why = 0;
    size_t *all_lens = NULL;
    int count = 0;
    mn_rescue_gpu *h = calloc(1, sizeof *h);
    float **all = h ? list_arrays(net, dev, lens, n, &all_lens, &count, &h->nparams, why, cap) : NULL;
    if (!all) {
        if (!h) snprintf(why, cap, "out of memory");
        free(h);
        return MN_OK;
    }
    h->c = c;
    for (int i = 0; i < count; ++i) h->total += all_lens[i];
    for (int b = 0; b < 2; ++b) h->args[b] = (slot_arg){h, b};
    mn_status r = MN_ERR_UNAVAILABLE;
    if (mn_device_ok(c, mn_device_get(&h->device), "cudaGetDevice")) r = mn_grad_stage_packer(c, all, all_lens, count, &h->pack);
    if (r == MN_OK) r = make_copies(h, why, cap);
    free(all);
    free(all_lens);
    if (r == MN_OK) {
        *out = h;
        return MN_OK;
    }
    mn_rescue_gpu_free(h);
    /* Page-locked memory refused: a run without a rescue. Anything else is the GPU's fault. */
    return r == MN_ERR_NOMEM && *why ? MN_OK : r;
}

void mn_rescue_gpu_free(mn_rescue_gpu *h)
{
    if (!h) return;
    if (h->has_order) mn_rescue_order_free(&h->order);
    mn_queue_free(h->base_q);
    mn_queue_free(h->copy_q);   /* waits for the last copy */
    for (int b = 0; b < 2; ++b)
        if (h->slot[b]) mn_device_ok(h->c, mn_device_free_host(h->slot[b]), "cudaFreeHost");
    mn_grad_stage_free(h->pack);
    free(h);
}

void mn_rescue_gpu_before(mn_rescue_gpu *h) { mn_rescue_order_before_update(&h->order); }
void mn_rescue_gpu_drain(mn_rescue_gpu *h) { mn_rescue_order_drain(&h->order); }

static void copy_slot(void *arg, void *stream)
{
    slot_arg *a = arg;
    mn_grad_stage_pack_into(a->h->pack, a->h->slot[a->b], stream);
}

void mn_rescue_gpu_after(mn_rescue_gpu *h, uint64_t it, uint64_t seen, double done)
{
    void *const args[2] = {&h->args[0], &h->args[1]};
    int b = mn_rescue_order_after_update(&h->order, copy_slot, args);
    h->it[b] = it;
    h->seen[b] = seen;
    h->done[b] = done;
}

int mn_rescue_gpu_read(mn_rescue_gpu *h, long wait_us, mn_rescue_gpu_state *out)
{
    /* The rescue's thread: its first CUDA call; a failure means no rescue, not an abort. */
    if (mn_device_set(h->device) != 0) return -1;
    int b = mn_rescue_order_read(&h->order, wait_us);
    if (b < 0) return -1;
    *out = (mn_rescue_gpu_state){h->slot[b], h->slot[b] + h->nparams, h->nparams, h->total - h->nparams, h->it[b],
                           h->seen[b], h->done[b]};
    return 0;
}
#endif
