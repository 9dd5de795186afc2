/* Transports (docs/design.md): MPI's sums here; shared memory, float16,
 * NCCL, the device, the queues, the wait and the packing maths each in
 * their own header, included where they are used. */
#ifndef MN_TRANSPORT_H
#define MN_TRANSPORT_H

#include "core/mn_core.h"
#include "base/mn_base.h"

/* float32 is divided by div on the last leg; halves come divided. */
typedef struct {
    MPI_Datatype type;
    MPI_Op op;
    int half;
    float div;
} mn_wire;
mn_status mn_allreduce_wire(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w);
mn_status mn_allreduce_rsag(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w);
mn_status mn_sum_floats(mn_comm *c, MPI_Comm comm, float *p, size_t n);
/* p[i] / d, correctly rounded */
void mn_div_floats(float *p, size_t n, float d);
void mn_add_floats(float *dst, const float *src, size_t n, float d);
void mn_wire_div(const mn_wire *w, void *buf, int count);
/* Part k of `parts` near-equal parts, larger first. */
void mn_split(int count, int parts, int k, int *off, int *n);

#include "transport/mn_gpu.h"

/* c->transport */
struct mn_transport {
    MPI_Comm by_node;             /* world ordered node by node */
    int shm_off;
    mn_gpu_in gpu;
    void *wire_tmp;
    size_t wire_tmp_cap;
    MPI_Op half_sum;
    struct mn_arena *arena;
    int arena_borrowed;
};

#endif
