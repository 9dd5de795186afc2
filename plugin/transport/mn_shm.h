/* The node's shared-memory windows and the gradient arena (mn_shm.c). */
#ifndef MN_MN_SHM_H
#define MN_MN_SHM_H

#include "mn_transport.h"

/* The node's MPI-3 shared-memory window (mn_shm.c), for intra-node legs
 * without MPI messages. mn_shm_open (collective over c->intra) gives NULL,
 * with MN_OK, where the node has one rank, its ranks share no memory, or
 * MN_SHM=0. A piece is cut in near-equal chunks, chunk k owned by intra-rank k. */
typedef struct mn_shm mn_shm;
mn_status mn_shm_open(mn_comm *c, mn_shm **out);
void mn_shm_close(mn_shm *s);
/* Whether count wire elements fit the window's areas (one piece). */
int mn_shm_fits(const mn_shm *s, int count, const mn_wire *w);
/* How many wire elements one area holds. */
int mn_shm_span(const mn_shm *s, const mn_wire *w);
/* Chunk intra_rank of buf becomes the node's sum of that chunk, divided by w->div. */
mn_status mn_shm_reduce_scatter(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w);
/* Every rank's chunk into buf: on every rank (root < 0) or on root alone. */
mn_status mn_shm_allgather(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root);
/* root's buf to every rank of the node. */
mn_status mn_shm_bcast(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root);
/* reduce-scatter, then allgather: the node's sum on every rank of it. */
mn_status mn_shm_allreduce(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w);
/* The gradient arena (n floats and one spare, zeroed) in a node-shared
 * window where the node has one, so that the shm allreduce of flat,
 * single_node and one-node hierarchical reads the peers' arenas in place
 * (else calloc). One per communicator; collective over the node, every rank
 * with the same n. Free it with mn_comm_arena_free (collective for a window). */
mn_status mn_comm_arena_alloc(mn_comm *c, size_t n, float **out);
void mn_comm_arena_free(mn_comm *c, float *p);
/* c uses owner's arena window too (the bench's variants); owner must
 * outlive c's use of it. */
void mn_comm_arena_borrow(mn_comm *c, const mn_comm *owner);
/* Frees c's own arena window or drops a borrowed one (mn_comm_free). */
void mn_comm_arena_release(mn_comm *c);
/* Ends a mean over the arena: the last barrier before any arena may change. */
mn_status mn_shm_arena_fence(mn_comm *c);
#endif
