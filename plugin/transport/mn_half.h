/* IEEE half precision (mn_half.c). */
#ifndef MN_MN_HALF_H
#define MN_MN_HALF_H

#include "transport/mn_transport.h"

/* Round to nearest even, overflow to Inf, subnormals kept. */
uint16_t mn_float_to_half(float f);
float mn_half_to_float(uint16_t h);
/* out[i] = half(in[i] / div) */
void mn_floats_to_halves(uint16_t *out, const float *in, size_t n, float div);
void mn_halves_to_floats(float *out, const uint16_t *in, size_t n);
/* 0 if any is Inf or NaN. */
int mn_halves_finite(const uint16_t *h, size_t n);
/* A commutative MPI op summing halves (free with MPI_Op_free). */
mn_status mn_half_op_create(mn_comm *c, MPI_Op *op);

#endif
