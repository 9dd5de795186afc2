/* IEEE 754 binary16 ("half") for allreduce_grad_dtype=float16: conversions
 * from and to float, and the MPI reduction that sums halves.
 *
 * float -> half rounds to nearest, ties to even, like a hardware conversion:
 * magnitudes from 65520 up become Inf, NaN stays NaN, magnitudes below 2^-14
 * become subnormal halves (multiples of 2^-24) and below 2^-25 signed zero. */
#include <string.h>
#include "mn_internal.h"

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

uint16_t mn_float_to_half(float f)
{
    uint32_t x = bits_of(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x477ff000u) {               /* 65520 and up, Inf, NaN */
        if (x > 0x7f800000u) return sign | 0x7e00u | (uint16_t)((x >> 13) & 0x3ffu);
        return sign | 0x7c00u;
    }
    if (x < 0x38800000u) {                /* below 2^-14: subnormal half or zero */
        /* In 0.5 + |f| the float's last mantissa bit weighs 2^-24, so the FPU
         * rounds |f| to a multiple of 2^-24 (ties to even) and the count of
         * them is the sum's mantissa. */
        float s = float_of(x) + 0.5f;
        return sign | (uint16_t)(bits_of(s) - 0x3f000000u);
    }
    /* Normal: rebias the exponent (127 -> 15) and round away the 13 low
     * mantissa bits, to even on a tie; a carry moves into the exponent. */
    x += 0xc8000fffu + ((x >> 13) & 1u);
    return sign | (uint16_t)(x >> 13);
}

float mn_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {                         /* zero or subnormal: m * 2^-24, exact */
        float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    if (e == 31) return float_of(sign | 0x7f800000u | (m << 13));
    return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

void mn_floats_to_halves(uint16_t *out, const float *in, size_t n, float div)
{
    if (div == 1.0f) for (size_t i = 0; i < n; ++i) out[i] = mn_float_to_half(in[i]);
    else for (size_t i = 0; i < n; ++i) out[i] = mn_float_to_half(in[i] / div);
}

void mn_halves_to_floats(float *out, const uint16_t *in, size_t n)
{
    for (size_t i = 0; i < n; ++i) out[i] = mn_half_to_float(in[i]);
}

int mn_halves_finite(const uint16_t *h, size_t n)
{
    uint16_t any = 0;
    for (size_t i = 0; i < n; ++i) any |= (uint16_t)((h[i] & 0x7c00u) == 0x7c00u);
    return !any;
}

/* inout[i] = half(in[i] + inout[i]). The float sum of two halves rounds, if
 * at all, only in bits far below half precision, so the one rounding to half
 * that follows is the correctly rounded half sum: the op is commutative and
 * the same on every rank. */
static void sum_halves(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const uint16_t *a = in;
    uint16_t *b = inout;
    (void)type;
    for (int i = 0; i < *len; ++i) b[i] = mn_float_to_half(mn_half_to_float(a[i]) + mn_half_to_float(b[i]));
}

mn_status mn_half_op_create(mn_comm *c, MPI_Op *op)
{
    MN_MPI(c, MPI_Op_create(sum_halves, 1, op));
    return MN_OK;
}
