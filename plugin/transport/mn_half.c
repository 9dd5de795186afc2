/* IEEE binary16 for float16 gradients: conversions, rounding to nearest
 * even as hardware does, and the MPI op that sums halves. */
#include <string.h>
#include "transport/mn_transport.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* cond ? x : y without a branch, so that the loops below vectorize. */
static uint32_t pick(int cond, uint32_t x, uint32_t y)
{
    uint32_t m = (uint32_t)0 - (uint32_t)(cond != 0);
    return (x & m) | (y & ~m);
}

static inline uint16_t to_half(float f)
{
    uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    /* Normal: rebias (127 -> 15), round away 13 mantissa bits to even. */
    uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
    /* Below 2^-14: 0.5 + |f| makes the FPU round |f| to multiples of 2^-24. */
    uint32_t subnormal = bits_of(float_of(a) + 0.5f) - 0x3f000000u;
    /* 65520 and up round to Inf; NaN stays a (quiet) NaN. */
    uint32_t huge = pick(a > 0x7f800000u, 0x7e00u | ((a >> 13) & 0x3ffu), 0x7c00u);
    uint32_t h = pick(a < 0x38800000u, subnormal, normal);
    return (uint16_t)(sign | pick(a >= 0x477ff000u, huge, h));
}

static inline float to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = h & 0x7c00u, em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t subnormal = bits_of((float)(int)(h & 0x3ffu) * 0x1p-24f);   /* m * 2^-24, exact */
    uint32_t f = pick(e == 0x7c00u, em | 0x7f800000u, em + 0x38000000u);   /* Inf/NaN, normal */
    return float_of(sign | pick(e == 0, subnormal, f));
}

uint16_t mn_float_to_half(float f) { return to_half(f); }
float mn_half_to_float(uint16_t h) { return to_float(h); }

/* F16C converts 8 floats at once, rounding alike (tests/unit/test_comm.c);
 * chosen at run time. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define F16C __attribute__((target("avx,f16c")))
/* CPUID's F16C, AVX and OSXSAVE bits, and XCR0's YMM state. */
static int have_f16c(void)
{
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (7u << 27)) != (7u << 27)) return 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
}

F16C static void to_halves_f16c(uint16_t *out, const float *in, size_t n, float s)
{
    const __m256 vs = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(in + i), vs), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) out[i] = to_half(in[i] * s);
}

F16C static void to_floats_f16c(float *out, const uint16_t *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
    for (; i < n; ++i) out[i] = to_float(in[i]);
}

F16C static void sum_halves_f16c(const uint16_t *a, uint16_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i)));
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i)));
        _mm_storeu_si128((__m128i *)(b + i), _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) b[i] = to_half(to_float(a[i]) + to_float(b[i]));
}
#else
static int have_f16c(void) { return 0; }
static void to_halves_f16c(uint16_t *out, const float *in, size_t n, float s) { (void)out; (void)in; (void)n; (void)s; }
static void to_floats_f16c(float *out, const uint16_t *in, size_t n) { (void)out; (void)in; (void)n; }
static void sum_halves_f16c(const uint16_t *a, uint16_t *b, size_t n) { (void)a; (void)b; (void)n; }
#endif

/* x * (1/div): rounded to half right after, so the ulp lost is not seen. */
void mn_floats_to_halves(uint16_t *out, const float *in, size_t n, float div)
{
    const float s = 1.0f / div;
    if (have_f16c()) { to_halves_f16c(out, in, n, s); return; }
    for (size_t i = 0; i < n; ++i) out[i] = to_half(in[i] * s);
}

void mn_halves_to_floats(float *out, const uint16_t *in, size_t n)
{
    if (have_f16c()) { to_floats_f16c(out, in, n); return; }
    for (size_t i = 0; i < n; ++i) out[i] = to_float(in[i]);
}

int mn_halves_finite(const uint16_t *h, size_t n)
{
    uint16_t any = 0;
    for (size_t i = 0; i < n; ++i) any |= (uint16_t)((h[i] & 0x7c00u) == 0x7c00u);
    return !any;
}

/* inout[i] = half(in[i] + inout[i]): the float sum of two halves is exact
 * enough that this is the correctly rounded half sum on every rank. */
static void sum_halves(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const uint16_t *a = in;
    uint16_t *b = inout;
    (void)type;
    if (have_f16c()) { sum_halves_f16c(a, b, (size_t)*len); return; }
    for (int i = 0; i < *len; ++i) b[i] = to_half(to_float(a[i]) + to_float(b[i]));
}

mn_status mn_half_op_create(mn_comm *c, MPI_Op *op)
{
    MN_MPI(c, MPI_Op_create(sum_halves, 1, op));
    return MN_OK;
}
