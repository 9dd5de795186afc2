/* The staged route's copies (mn_grad_stage.h). Whole: the device arrays are
 * packed into one buffer on the base's stream and copied to the arena in
 * one copy, and the mean comes back the same way: two launches and two
 * copies a step, whatever the layer count.
 *
 * overlap=1: as backward hands bucket k over, a copy stream waits for the
 * base's work so far, packs that range and copies it down; the averaging
 * thread waits for that copy alone before it reduces the bucket
 * (mn_overlap_order, tests/unit/test_queue.c). The mean goes up whole on the
 * base's stream once the host has every bucket. */
#ifdef GPU
#include <math.h>
#include <stdlib.h>
#include "train/optimizer/mn_grad_stage.h"
#include "base/mn_base.h"
#include "transport/mn_device.h"
#include "train/optimizer/mn_gpu_order.h"
#include "transport/mn_queue.h"

typedef struct {
    mn_grad_stage *s;
    size_t off, len;
    int poison;   /* the arena's first float is made NaN once this bucket is down */
} bucket_copy;

struct mn_grad_stage {
    mn_comm *c;
    float *arena;
    int device, pinned;
    mn_pack_tables tab;      /* the arrays' addresses and offsets in packed */
    float *packed;          /* device: the arrays back to back */
    /* overlap=1 */
    mn_queue *base_q, *copy_q;
    mn_overlap_order order;
    int has_order;
    bucket_copy *buckets;
};

/* The device tables of the n arrays, and the packed buffer where asked. */
static mn_status make_stage(mn_comm *c, float **dev, const size_t *lens, int n, int packed, mn_grad_stage **out)
{
    *out = NULL;
    mn_grad_stage *s = calloc(1, sizeof *s);
    if (!s) return MN_ERR_NOMEM;
    s->c = c;
    mn_status r = mn_device_ok(c, mn_device_get(&s->device), "cudaGetDevice") ? MN_OK : MN_ERR_UNAVAILABLE;
    if (r == MN_OK) r = mn_pack_tables_make(c, dev, lens, n, mn_base_stream(), &s->tab);
    if (r == MN_OK && packed &&
        !mn_device_ok(c, mn_device_alloc((void **)&s->packed, (s->tab.total + 1) * sizeof(float)), "cudaMalloc"))
        r = MN_ERR_NOMEM;
    if (r == MN_OK) *out = s;
    else mn_grad_stage_free(s);
    return r;
}

/* The arena is page-locked so that the copies are DMA, not bounced. */
mn_status mn_grad_stage_new(mn_comm *c, float **dev, const size_t *lens, int n, float *arena, int *pinned, mn_grad_stage **out)
{
    *pinned = 0;
    mn_status r = make_stage(c, dev, lens, n, arena != NULL, out);
    if (r != MN_OK || !arena) return r;
    mn_grad_stage *s = *out;
    s->arena = arena;
    /* Best effort: a refusal (the locked-memory limit) is cleared, or
     * Darknet's next check_error would abort on it. */
    s->pinned = mn_device_pin(arena, (s->tab.total + 1) * sizeof(float)) == 0;
    if (!s->pinned) mn_device_clear();
    *pinned = s->pinned;
    return MN_OK;
}

mn_status mn_grad_stage_packer(mn_comm *c, float **dev, const size_t *lens, int n, mn_grad_stage **out)
{
    return make_stage(c, dev, lens, n, 1, out);
}

void mn_grad_stage_pack_into(mn_grad_stage *s, float *host, void *stream)
{
    mn_device_must(s->c, mn_gpu_pack(s->packed, s->tab.ptrs, s->tab.offs, s->tab.n, 0, s->tab.total, stream), "packing the state");
    mn_device_must(s->c, mn_device_copy(host, s->packed, s->tab.total * sizeof(float), MN_TO_HOST, stream),
                   "copying the state down");
}

void mn_grad_stage_free(mn_grad_stage *s)
{
    if (!s) return;
    if (s->has_order) mn_overlap_order_free(&s->order);
    mn_queue_free(s->base_q);
    mn_queue_free(s->copy_q);
    if (s->pinned) mn_device_ok(s->c, mn_device_unpin(s->arena), "cudaHostUnregister");
    if (s->packed) mn_device_ok(s->c, mn_device_free(s->packed), "cudaFree");
    mn_pack_tables_free(s->c, &s->tab);
    free(s->buckets);
    free(s);
}

/* One launch over every array, through the device tables. */
void mn_grad_stage_nonfinite(mn_grad_stage *s, int *flag, void *stream)
{
    mn_device_must(s->c, mn_gpu_arrays_nonfinite(s->tab.ptrs, s->tab.offs, s->tab.n, s->tab.total, flag, stream), "the Inf/NaN check");
}

void mn_grad_stage_down(mn_grad_stage *s)
{
    void *st = mn_base_stream();
    mn_device_must(s->c, mn_gpu_pack(s->packed, s->tab.ptrs, s->tab.offs, s->tab.n, 0, s->tab.total, st), "packing the gradient");
    mn_device_must(s->c, mn_device_copy(s->arena, s->packed, s->tab.total * sizeof(float), MN_TO_HOST, st),
                   "copying the gradient down");
    mn_device_must(s->c, mn_device_wait(st), "copying the gradient down");
}

void mn_grad_stage_up(mn_grad_stage *s)
{
    void *st = mn_base_stream();
    mn_device_must(s->c, mn_device_copy(s->packed, s->arena, s->tab.total * sizeof(float), MN_TO_DEVICE, st), "copying the mean up");
    mn_device_must(s->c, mn_gpu_unpack(s->tab.ptrs, s->packed, s->tab.offs, s->tab.n, s->tab.total, st), "unpacking the mean");
}

mn_status mn_grad_stage_buckets(mn_grad_stage *s, int nb)
{
    if (!(s->copy_q = mn_queue_copy_stream(s->c))) return MN_ERR_UNAVAILABLE;
    s->base_q = mn_queue_device(s->c, mn_base_stream());
    s->buckets = calloc((size_t)nb + 1, sizeof *s->buckets);
    if (!s->base_q || !s->copy_q || !s->buckets) return MN_ERR_NOMEM;
    mn_status r = mn_overlap_order_init(&s->order, s->base_q, s->copy_q, nb);
    s->has_order = r == MN_OK;
    return r;
}

/* On the copy stream, after backward made the bucket: pack it, copy it down. */
static void copy_down(void *arg, void *stream)
{
    bucket_copy *b = arg;
    mn_grad_stage *s = b->s;
    mn_device_must(s->c, mn_gpu_pack(s->packed, s->tab.ptrs, s->tab.offs, s->tab.n, b->off, b->off + b->len, stream),
                   "packing a bucket");
    mn_device_must(s->c, mn_device_copy(s->arena + b->off, s->packed + b->off, b->len * sizeof(float), MN_TO_HOST, stream),
                   "copying a bucket down");
}

void mn_grad_stage_handed(void *arg, int k, size_t off, size_t len, int poison)
{
    mn_grad_stage *s = arg;
    s->buckets[k] = (bucket_copy){s, off, len, poison};
    mn_overlap_order_bucket(&s->order, k, copy_down, &s->buckets[k]);
}

void mn_grad_stage_ready(void *arg, int k)
{
    mn_grad_stage *s = arg;
    mn_device_must(s->c, mn_device_set(s->device), "cudaSetDevice");   /* the averaging thread's first CUDA call */
    mn_overlap_order_sent(&s->order, k);
    if (s->buckets[k].poison) s->arena[0] = NAN;   /* as the blocking path marks a rank's non-finite loss */
}
#endif
