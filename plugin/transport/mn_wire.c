/* The MPI wire: float sums over a communicator, in pieces MPI's int counts
 * allow, and the division that turns a sum into a mean. */
#include <limits.h>
#include <string.h>
#include "transport/mn_transport.h"

mn_status mn_sum_floats(mn_comm *c, MPI_Comm comm, float *p, size_t n)
{
    while (n > 0) {
        int k = n > INT_MAX ? INT_MAX : (int)n;
        MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, p, k, MPI_FLOAT, MPI_SUM, comm));
        p += k;
        n -= (size_t)k;
    }
    return MN_OK;
}

static int power_of_two(float d)
{
    uint32_t u;
    memcpy(&u, &d, sizeof u);
    uint32_t e = (u >> 23) & 0xffu;
    return (u & 0x7fffffu) == 0 && e != 0 && e != 0xffu;
}

/* x * (1/d) is x / d exactly when d = 2^k, and far cheaper. */
void mn_div_floats(float *p, size_t n, float d)
{
    if (d == 1.0f) return;
    if (power_of_two(d)) {
        const float r = 1.0f / d;
        for (size_t i = 0; i < n; ++i) p[i] *= r;
    } else {
        for (size_t i = 0; i < n; ++i) p[i] /= d;
    }
}

void mn_add_floats(float *dst, const float *src, size_t n, float d)
{
    if (d == 1.0f) {
        for (size_t i = 0; i < n; ++i) dst[i] += src[i];
    } else if (power_of_two(d)) {
        const float r = 1.0f / d;
        for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) * r;
    } else {
        for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) / d;
    }
}

void mn_wire_div(const mn_wire *w, void *buf, int count)
{
    if (!w->half && count > 0) mn_div_floats(buf, (size_t)count, w->div);
}

/* In place, divided by w->div. */
mn_status mn_allreduce_wire(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w)
{
    if (count > 0) MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, buf, count, w->type, w->op, comm));
    mn_wire_div(w, buf, count);
    return MN_OK;
}

void mn_split(int count, int parts, int k, int *off, int *n)
{
    int q = count / parts, r = count % parts;
    *n = q + (k < r);
    *off = k * q + (k < r ? k : r);
}
