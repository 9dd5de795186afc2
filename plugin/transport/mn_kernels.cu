/* CUDA kernels for averaging gradients on the device (GPU=1 builds): the
 * float16 casts of many arrays into one half buffer with the 1/N scale
 * folded in, and back (one launch each way, through the pack tables), the check
 * for Inf/NaN in a reduced half buffer or in all the gradient arrays at
 * once (through the pack tables), y += x, and
 * the packing of many arrays into one buffer and back (its index maths is
 * mn_pack_find, tested on the host); for double buffering on the device,
 * the same on one packed buffer (the casts, the check, x *= s), delay
 * compensation and the local step (mn_dbuf_compensate's and mn_dbuf_local's
 * arithmetic, operation for operation). Each takes the stream to run on; the C
 * side sees them through mn_nccl.h (void * for the stream, so that the
 * shared header needs no CUDA include). Each returns the launch's
 * cudaError_t, read (and so cleared) once, here. Thin by design: the logic
 * lives in host functions. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include "transport/mn_pack.h"

static const int threads = 256;

static unsigned blocks(size_t n)
{
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

/* h[i] = half(ptrs[k][i - offs[k]] * scale) (to) or the array's element =
 * float(h[i]) (!to), over the packed order of the arrays. */
__global__ void pack_halves(__half *h, float *const *ptrs, const size_t *offs, int n, size_t total, float scale, int to)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int k = mn_pack_find(offs, n, i);
        float *p = ptrs[k] + (i - offs[k]);
        if (to) h[i] = __float2half_rn(*p * scale);
        else *p = __half2float(h[i]);
    }
}

__global__ void add(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

/* Sets *flag when any half has the exponent of Inf/NaN. */
__global__ void halves_nonfinite(const uint16_t *h, size_t n, int *flag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if ((h[i] & 0x7c00u) == 0x7c00u) *flag = 1;
}

/* *flag = 1 where an element of the arrays, in their packed order, is Inf or NaN. */
__global__ void arrays_nonfinite(float *const *ptrs, const size_t *offs, int n, size_t total, int *flag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int k = mn_pack_find(offs, n, i);
        if (!isfinite(ptrs[k][i - offs[k]])) *flag = 1;
    }
}

/* packed[i] = ptrs[k][i - offs[k]] (to) or back (!to), for lo <= i < hi. */
__global__ void pack(float *packed, float *const *ptrs, const size_t *offs, int n, size_t lo, size_t hi, int to)
{
    for (size_t i = lo + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < hi; i += (size_t)gridDim.x * blockDim.x) {
        int k = mn_pack_find(offs, n, i);
        float *p = ptrs[k] + (i - offs[k]);
        if (to) packed[i] = *p;
        else *p = packed[i];
    }
}

/* h[i] = half(x[i] * scale) (to) or x[i] = float(h[i]) (!to). */
__global__ void halves(__half *h, float *x, size_t n, float scale, int to)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (to) h[i] = __float2half_rn(x[i] * scale);
        else x[i] = __half2float(h[i]);
    }
}

__global__ void floats_nonfinite(const float *x, size_t n, int *flag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (!isfinite(x[i])) *flag = 1;
}

__global__ void scale(float *x, size_t n, float s)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = __fmul_rn(x[i], s);
}

/* mn_dbuf_compensate (mn_dbuf.c) element by element, each operation rounded
 * on its own as the host's (the _rn intrinsics: nvcc would otherwise fuse a
 * multiply and an add into one FMA), so that both routes give the same bits. */
__global__ void compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda,
                           int apply)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
        float uj = u[j];
        float q = __fadd_rn(__fmul_rn(0.95f, v[j]), __fmul_rn(__fmul_rn(0.05f, uj), uj));
        if (apply && isfinite(q)) {
            v[j] = q;
            float d = q > 0 ? __fmul_rn(__fdiv_rn(__fmul_rn(__fmul_rn(lambda, uj), uj), __fsqrt_rn(q)), __fsub_rn(w[j], prev[j])) : 0;
            float lim = fabsf(uj);
            u[j] = __fsub_rn(uj, fminf(fmaxf(d, -lim), lim));
        }
        prev[j] = eval[j];
    }
}

/* mn_dbuf_local (mn_dbuf.h) element by element, rounded as the host's: u
 * holds the mean (had) and becomes g + (mean - own); own becomes g. u may
 * be g itself. */
__global__ void local_step(float *u, const float *g, float *own, size_t n, int had)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
        float gj = g[j];
        u[j] = had ? __fadd_rn(gj, __fsub_rn(u[j], own[j])) : gj;
        own[j] = gj;
    }
}

/* mn_dbuf_predict_floats (mn_dbuf_predict.c), rounded as the host's. */
__global__ void predict(float *w, float *k0, size_t n, float k)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
        float now = w[j], d = __fsub_rn(now, k0[j]);
        k0[j] = now;
        w[j] = __fadd_rn(now, __fmul_rn(k, d));
    }
}

extern "C" {

int mn_gpu_pack_halves(uint16_t *h, float *const *ptrs, const size_t *offs, int n, size_t total, float scale, void *stream)
{
    if (total) pack_halves<<<blocks(total), threads, 0, (cudaStream_t)stream>>>((__half *)h, ptrs, offs, n, total, scale, 1);
    return (int)cudaGetLastError();
}

int mn_gpu_unpack_halves(float *const *ptrs, const uint16_t *h, const size_t *offs, int n, size_t total, void *stream)
{
    if (total) pack_halves<<<blocks(total), threads, 0, (cudaStream_t)stream>>>((__half *)h, ptrs, offs, n, total, 1, 0);
    return (int)cudaGetLastError();
}

int mn_gpu_add(float *y, const float *x, size_t n, void *stream)
{
    if (n) add<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(y, x, n);
    return (int)cudaGetLastError();
}

int mn_gpu_halves_nonfinite(const uint16_t *h, size_t n, int *dev_flag, void *stream)
{
    if (n) halves_nonfinite<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(h, n, dev_flag);
    return (int)cudaGetLastError();
}

int mn_gpu_arrays_nonfinite(float *const *ptrs, const size_t *offs, int n, size_t total, int *dev_flag, void *stream)
{
    if (total) arrays_nonfinite<<<blocks(total), threads, 0, (cudaStream_t)stream>>>(ptrs, offs, n, total, dev_flag);
    return (int)cudaGetLastError();
}

int mn_gpu_pack(float *packed, float *const *ptrs, const size_t *offs, int n, size_t lo, size_t hi, void *stream)
{
    if (hi > lo) pack<<<blocks(hi - lo), threads, 0, (cudaStream_t)stream>>>(packed, ptrs, offs, n, lo, hi, 1);
    return (int)cudaGetLastError();
}

int mn_gpu_unpack(float *const *ptrs, const float *packed, const size_t *offs, int n, size_t total, void *stream)
{
    if (total) pack<<<blocks(total), threads, 0, (cudaStream_t)stream>>>((float *)packed, ptrs, offs, n, 0, total, 0);
    return (int)cudaGetLastError();
}

int mn_gpu_halves(uint16_t *h, float *x, size_t n, float scale, int to, void *stream)
{
    if (n) halves<<<blocks(n), threads, 0, (cudaStream_t)stream>>>((__half *)h, x, n, scale, to);
    return (int)cudaGetLastError();
}

int mn_gpu_floats_nonfinite(const float *x, size_t n, int *dev_flag, void *stream)
{
    if (n) floats_nonfinite<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(x, n, dev_flag);
    return (int)cudaGetLastError();
}

int mn_gpu_scale(float *x, size_t n, float s, void *stream)
{
    if (n) scale<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(x, n, s);
    return (int)cudaGetLastError();
}

int mn_gpu_compensate(float *u, const float *w, const float *eval, float *prev, float *v, size_t n, float lambda, int apply,
                      void *stream)
{
    if (n) compensate<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(u, w, eval, prev, v, n, lambda, apply);
    return (int)cudaGetLastError();
}

int mn_gpu_local(float *u, const float *g, float *own, size_t n, int had, void *stream)
{
    if (n) local_step<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(u, g, own, n, had);
    return (int)cudaGetLastError();
}

int mn_gpu_predict(float *w, float *k0, size_t n, float k, void *stream)
{
    if (n) predict<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(w, k0, n, k);
    return (int)cudaGetLastError();
}

}
