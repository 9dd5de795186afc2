/* CUDA kernels for averaging gradients on the device (GPU=1 builds): the
 * float16 casts with the 1/N scale folded in (one pass each way), the check
 * for Inf/NaN in a reduced half buffer or in float gradients, and y += x.
 * Each takes the stream to run on; the C side sees them through the
 * declarations in mn_internal.h (void * for the stream, so that the shared
 * header needs no CUDA include). A launch error comes back as non-zero. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

static const int threads = 256;

static unsigned blocks(size_t n)
{
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

__global__ void to_halves(__half *out, const float *in, size_t n, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2half_rn(in[i] * scale);
}

__global__ void to_floats(float *out, const __half *in, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __half2float(in[i]);
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

__global__ void floats_nonfinite(const float *x, size_t n, int *flag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (!isfinite(x[i])) *flag = 1;
}

extern "C" {

int mn_gpu_floats_to_halves(uint16_t *out, const float *in, size_t n, float scale, void *stream)
{
    if (n) to_halves<<<blocks(n), threads, 0, (cudaStream_t)stream>>>((__half *)out, in, n, scale);
    return cudaGetLastError() != cudaSuccess;
}

int mn_gpu_halves_to_floats(float *out, const uint16_t *in, size_t n, void *stream)
{
    if (n) to_floats<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(out, (const __half *)in, n);
    return cudaGetLastError() != cudaSuccess;
}

int mn_gpu_add(float *y, const float *x, size_t n, void *stream)
{
    if (n) add<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(y, x, n);
    return cudaGetLastError() != cudaSuccess;
}

int mn_gpu_halves_nonfinite(const uint16_t *h, size_t n, int *dev_flag, void *stream)
{
    if (n) halves_nonfinite<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(h, n, dev_flag);
    return cudaGetLastError() != cudaSuccess;
}

int mn_gpu_floats_nonfinite(const float *x, size_t n, int *dev_flag, void *stream)
{
    if (n) floats_nonfinite<<<blocks(n), threads, 0, (cudaStream_t)stream>>>(x, n, dev_flag);
    return cudaGetLastError() != cudaSuccess;
}

}
