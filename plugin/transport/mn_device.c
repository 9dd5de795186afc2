/* The device's runtime for the layers above transport (mn_device.h): each
 * call is CUDA's, on the stream it is given, and returns its status for the
 * caller to check, so that train/ makes no CUDA call of its own. */
#ifdef GPU
#include <stdlib.h>
#include <cuda_runtime.h>
#include "transport/mn_device.h"
#include "transport/mn_nccl.h"
#include "transport/mn_pack.h"

int mn_cuda_ok(const mn_comm *c, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    mn_error(c, "%s failed: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 0;
}

void mn_cuda_must(const mn_comm *c, cudaError_t e, const char *what)
{
    if (e != cudaSuccess) mn_abort(c, "%s failed: %s", what, cudaGetErrorString(e));
}

mn_status mn_pack_tables_make(const mn_comm *c, float *const *dev, const size_t *lens, int n, void *stream,
                             mn_pack_tables *t)
{
    *t = (mn_pack_tables){0};
    size_t *offs = malloc((size_t)(n + 1) * sizeof *offs);
    if (!offs) return MN_ERR_NOMEM;
    t->n = n;
    t->total = mn_pack_offsets(lens, n, offs);
    mn_status r = MN_OK;
    if (!mn_cuda_ok(c, cudaMalloc((void **)&t->ptrs, (size_t)(n + 1) * sizeof(float *)), "cudaMalloc") ||
        !mn_cuda_ok(c, cudaMalloc((void **)&t->offs, (size_t)(n + 1) * sizeof(size_t)), "cudaMalloc"))
        r = MN_ERR_NOMEM;
    else if (!mn_cuda_ok(c, cudaMemcpyAsync(t->ptrs, dev, (size_t)n * sizeof(float *), cudaMemcpyHostToDevice, stream),
                         "cudaMemcpyAsync") ||
             !mn_cuda_ok(c, cudaMemcpyAsync(t->offs, offs, (size_t)(n + 1) * sizeof(size_t), cudaMemcpyHostToDevice, stream),
                         "cudaMemcpyAsync") ||
             !mn_cuda_ok(c, cudaStreamSynchronize(stream), "cudaStreamSynchronize"))   /* offs is freed next */
        r = MN_ERR_UNAVAILABLE;
    free(offs);
    if (r != MN_OK) mn_pack_tables_free(c, t);
    return r;
}

void mn_pack_tables_free(const mn_comm *c, mn_pack_tables *t)
{
    if (t->ptrs) mn_cuda_ok(c, cudaFree(t->ptrs), "cudaFree");
    if (t->offs) mn_cuda_ok(c, cudaFree(t->offs), "cudaFree");
    *t = (mn_pack_tables){0};
}

int mn_device_ok(const mn_comm *c, int e, const char *what) { return mn_cuda_ok(c, (cudaError_t)e, what); }
void mn_device_must(const mn_comm *c, int e, const char *what) { mn_cuda_must(c, (cudaError_t)e, what); }
void mn_device_clear(void) { (void)cudaGetLastError(); }

int mn_device_alloc(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
int mn_device_free(void *p) { return cudaFree(p); }
int mn_device_alloc_host(void **p, size_t bytes) { return cudaMallocHost(p, bytes); }
int mn_device_free_host(void *p) { return cudaFreeHost(p); }
int mn_device_pin(void *p, size_t bytes) { return cudaHostRegister(p, bytes, cudaHostRegisterPortable); }
int mn_device_unpin(void *p) { return cudaHostUnregister(p); }
int mn_device_get(int *device) { return cudaGetDevice(device); }
int mn_device_set(int device) { return cudaSetDevice(device); }

int mn_device_copy(void *to, const void *from, size_t bytes, mn_copy_way way, void *stream)
{
    enum cudaMemcpyKind kind = way == MN_TO_HOST     ? cudaMemcpyDeviceToHost
                               : way == MN_TO_DEVICE ? cudaMemcpyHostToDevice
                                                     : cudaMemcpyDeviceToDevice;
    return cudaMemcpyAsync(to, from, bytes, kind, (cudaStream_t)stream);
}

int mn_device_zero(void *p, size_t bytes, void *stream) { return cudaMemsetAsync(p, 0, bytes, (cudaStream_t)stream); }
int mn_device_wait(void *stream) { return cudaStreamSynchronize((cudaStream_t)stream); }

int mn_device_event_new(void **e, int timing)
{
    return cudaEventCreateWithFlags((cudaEvent_t *)e, timing ? cudaEventDefault : cudaEventDisableTiming);
}

int mn_device_event_free(void *e) { return cudaEventDestroy((cudaEvent_t)e); }
int mn_device_event_record(void *e, void *stream) { return cudaEventRecord((cudaEvent_t)e, (cudaStream_t)stream); }
int mn_device_event_wait(void *e) { return cudaEventSynchronize((cudaEvent_t)e); }
int mn_device_event_ms(float *ms, void *e0, void *e1) { return cudaEventElapsedTime(ms, (cudaEvent_t)e0, (cudaEvent_t)e1); }
#endif
