/* The node's shared-memory window and arena (mn_shm.c). */
#ifndef MN_MN_SHM_H
#define MN_MN_SHM_H

#include "transport/mn_transport.h"

typedef struct mn_shm mn_shm;
/* NULL with one rank on the node, no shared memory, or MN_SHM=0. */
mn_status mn_shm_open(mn_comm *c, mn_shm **out);
void mn_shm_close(mn_shm *s);
int mn_shm_fits(const mn_shm *s, int count, const mn_wire *w);
int mn_shm_span(const mn_shm *s, const mn_wire *w);
mn_status mn_shm_reduce_scatter(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w);
mn_status mn_shm_allgather(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root);
mn_status mn_shm_bcast(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root);
mn_status mn_shm_allreduce(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w);
/* Collective over the node. */
mn_status mn_comm_arena_alloc(mn_comm *c, size_t n, float **out);
void mn_comm_arena_free(mn_comm *c, float *p);
void mn_comm_arena_borrow(mn_comm *c, const mn_comm *owner);
void mn_comm_arena_release(mn_comm *c);
mn_status mn_shm_arena_fence(mn_comm *c);
#endif
