/* The staged route's copies (mn_stage.h). Whole: the device arrays are
 * packed into one buffer on the base's stream and copied to the arena in
 * one copy, and the mean comes back the same way, so a step costs two
 * launches and two copies whatever the layer count.
 *
 * overlap=1: as backward hands bucket k over (floats [off, off+len) of the
 * packed order, which is the arena's), a copy stream waits for the base's
 * work so far, packs that range and copies it down; the averaging thread
 * waits for that copy alone before it reduces the bucket in the host arena
 * (mn_overlap_order, tested with host queues in tests/test_queue.c). The
 * copies of later buckets run while backward goes on; the mean goes up whole
 * on the base's stream once the host has every bucket, which needs no
 * device-side wait: the host issues it after the last copy was done. */
#ifdef GPU
#include <math.h>
#include <stdlib.h>
#include "mn_stage.h"
#include "mn_base.h"
#include "mn_nccl.h"
#include "mn_order.h"
#include "mn_queue.h"

typedef struct {
    mn_stage *s;
    size_t off, len;
    int poison;   /* the arena's first float is made NaN once this bucket is down */
} bucket_copy;

struct mn_stage {
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
static mn_status make_stage(mn_comm *c, float **dev, const size_t *lens, int n, int packed, mn_stage **out)
{
    *out = NULL;
    mn_stage *s = calloc(1, sizeof *s);
    if (!s) return MN_ERR_NOMEM;
    s->c = c;
    mn_status r = mn_cuda_ok(c, cudaGetDevice(&s->device), "cudaGetDevice") ? MN_OK : MN_ERR_UNAVAILABLE;
    if (r == MN_OK) r = mn_pack_tables_make(c, dev, lens, n, MN_STREAM(), &s->tab);
    if (r == MN_OK && packed &&
        !mn_cuda_ok(c, cudaMalloc((void **)&s->packed, (s->tab.total + 1) * sizeof(float)), "cudaMalloc"))
        r = MN_ERR_NOMEM;
    if (r == MN_OK) *out = s;
    else mn_stage_free(s);
    return r;
}

mn_status mn_stage_new(mn_comm *c, float **dev, const size_t *lens, int n, float *arena, int *pinned, mn_stage **out)
{
    *pinned = 0;
    mn_status r = make_stage(c, dev, lens, n, arena != NULL, out);
    if (r != MN_OK || !arena) return r;
    mn_stage *s = *out;
    s->arena = arena;
    /* Best effort: a refusal (the locked-memory limit) is cleared, or
     * Darknet's next check_error would abort on it. */
    s->pinned = cudaHostRegister(arena, (s->tab.total + 1) * sizeof(float), cudaHostRegisterPortable) == cudaSuccess;
    if (!s->pinned) (void)cudaGetLastError();
    *pinned = s->pinned;
    return MN_OK;
}

mn_status mn_stage_packer(mn_comm *c, float **dev, const size_t *lens, int n, mn_stage **out)
{
    return make_stage(c, dev, lens, n, 1, out);
}

void mn_stage_pack_into(mn_stage *s, float *host, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    mn_cuda_must(s->c, (cudaError_t)mn_gpu_pack(s->packed, s->tab.ptrs, s->tab.offs, s->tab.n, 0, s->tab.total, st), "packing the state");
    mn_cuda_must(s->c, cudaMemcpyAsync(host, s->packed, s->tab.total * sizeof(float), cudaMemcpyDeviceToHost, st),
                 "copying the state down");
}

void mn_stage_free(mn_stage *s)
{
    if (!s) return;
    if (s->has_order) mn_overlap_order_free(&s->order);
    mn_queue_free(s->base_q);
    mn_queue_free(s->copy_q);
    if (s->pinned) mn_cuda_ok(s->c, cudaHostUnregister(s->arena), "cudaHostUnregister");
    if (s->packed) mn_cuda_ok(s->c, cudaFree(s->packed), "cudaFree");
    mn_pack_tables_free(s->c, &s->tab);
    free(s->buckets);
    free(s);
}

void mn_stage_nonfinite(mn_stage *s, int *flag, void *stream)
{
    mn_cuda_must(s->c, (cudaError_t)mn_gpu_arrays_nonfinite(s->tab.ptrs, s->tab.offs, s->tab.n, s->tab.total, flag, stream), "the Inf/NaN check");
}

void mn_stage_down(mn_stage *s)
{
    cudaStream_t st = MN_STREAM();
    mn_cuda_must(s->c, (cudaError_t)mn_gpu_pack(s->packed, s->tab.ptrs, s->tab.offs, s->tab.n, 0, s->tab.total, st), "packing the gradient");
    mn_cuda_must(s->c, cudaMemcpyAsync(s->arena, s->packed, s->tab.total * sizeof(float), cudaMemcpyDeviceToHost, st),
       "copying the gradient down");
    mn_cuda_must(s->c, cudaStreamSynchronize(st), "copying the gradient down");
}

void mn_stage_up(mn_stage *s)
{
    cudaStream_t st = MN_STREAM();
    mn_cuda_must(s->c, cudaMemcpyAsync(s->packed, s->arena, s->tab.total * sizeof(float), cudaMemcpyHostToDevice, st), "copying the mean up");
    mn_cuda_must(s->c, (cudaError_t)mn_gpu_unpack(s->tab.ptrs, s->packed, s->tab.offs, s->tab.n, s->tab.total, st), "unpacking the mean");
}

mn_status mn_stage_buckets(mn_stage *s, int nb)
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
    mn_stage *s = b->s;
    cudaStream_t st = (cudaStream_t)stream;
    mn_cuda_must(s->c, (cudaError_t)mn_gpu_pack(s->packed, s->tab.ptrs, s->tab.offs, s->tab.n, b->off, b->off + b->len, st), "packing a bucket");
    mn_cuda_must(s->c, cudaMemcpyAsync(s->arena + b->off, s->packed + b->off, b->len * sizeof(float), cudaMemcpyDeviceToHost, st),
       "copying a bucket down");
}

void mn_stage_handed(void *arg, int k, size_t off, size_t len, int poison)
{
    mn_stage *s = arg;
    s->buckets[k] = (bucket_copy){s, off, len, poison};
    mn_overlap_order_bucket(&s->order, k, copy_down, &s->buckets[k]);
}

void mn_stage_ready(void *arg, int k)
{
    mn_stage *s = arg;
    mn_cuda_must(s->c, cudaSetDevice(s->device), "cudaSetDevice");   /* the averaging thread's first CUDA call */
    mn_overlap_order_sent(&s->order, k);
    if (s->buckets[k].poison) s->arena[0] = NAN;   /* as the blocking path marks a rank's non-finite loss */
}
#endif
