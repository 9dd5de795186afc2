/* hierarchical: per piece, (1) the node's sum at its leader, (2) an
 * allreduce among the leaders only (mn_rsag.c), (3) the result to the
 * node's ranks: each node puts one copy of the gradient on the network, for
 * nodes with one NIC (ChainerMN's table). Legs (1) and (3) use the node's
 * shared window, else MPI over c->intra, or NCCL on the device where every
 * rank has a GPU of its own. Nodes may differ in size. */
#include "coll/mn_coll.h"

#include <stdio.h>
#include <stdlib.h>
#include "transport/mn_gpu.h"
#include "transport/mn_nccl.h"
#include "transport/mn_shm.h"

typedef struct {
    mn_shm *shm;          /* or NULL */
    mn_nccl_node *nccl;   /* or NULL */
} hierarchical;

static void hierarchical_teardown(mn_comm *c)
{
    hierarchical *h = c->coll->state;
    if (!h) return;
    mn_shm_close(h->shm);
    mn_nccl_node_close(h->nccl);
    free(h);
    c->coll->state = NULL;
}

/* Below flat, which beat it wherever simulated. */
static void hierarchical_query(const mn_comm_shape *s, mn_comm_answer *a)
{
    a->priority = 20;
    snprintf(a->why, sizeof a->why, "%s: the node's sum, then an allreduce among the node leaders", s->said);
}

static mn_status hierarchical_setup(mn_comm *c)
{
    hierarchical *h = calloc(1, sizeof *h);
    c->coll->state = h;
    MN_CHECK(mn_agree(c, h ? MN_OK : MN_ERR_NOMEM));
    MN_CHECK(mn_shm_open(c, &h->shm));
    MN_CHECK(mn_nccl_node_open(c, &h->nccl));
    c->coll->device_f32 = h->nccl != NULL;
    return MN_OK;
}

static mn_status hierarchical_mean_grad_device(mn_comm *c, float **dev, const size_t *lens, int n)
{
    return mn_nccl_node_mean(c, ((hierarchical *)c->coll->state)->nccl, dev, lens, n, 0);
}

#if defined(MN_NCCL) && defined(GPU)
static void *hierarchical_device_stream(mn_comm *c)
{
    return mn_nccl_node_stream(((hierarchical *)c->coll->state)->nccl);
}
#endif

static mn_status hierarchical_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    mn_shm *s = ((hierarchical *)c->coll->state)->shm;
    mn_wire sum_only = *w;   /* the in-node legs sum; the leader divides at the end */
    sum_only.div = 1.0f;
    if (s && c->nodes == 1 && mn_shm_fits(s, count, w)) return mn_shm_allreduce(c, s, buf, count, w);
    if (s && c->nodes > 1) {
        /* A network piece outgrows the window: the node's legs walk it in
         * parts, the leaders' leg takes it whole (one latency). */
        int span = mn_shm_span(s, w), size;
        MN_MPI(c, MPI_Type_size(w->type, &size));
        char *b = buf;
        for (int off = 0, k; off < count; off += k) {
            k = count - off < span ? count - off : span;
            MN_CHECK(mn_shm_reduce_scatter(c, s, b + (size_t)off * size, k, &sum_only));
            MN_CHECK(mn_shm_allgather(c, s, b + (size_t)off * size, k, w, 0));
        }
        if (c->intra_rank == 0) MN_CHECK(mn_allreduce_rsag(c, c->inter, buf, count, w));
        for (int off = 0, k; off < count; off += k) {
            k = count - off < span ? count - off : span;
            MN_CHECK(mn_shm_bcast(c, s, b + (size_t)off * size, k, w, 0));
        }
        return MN_OK;
    }
    if (c->intra_size > 1)
        MN_MPI(c, MPI_Reduce(c->intra_rank == 0 ? MPI_IN_PLACE : buf, buf, count, w->type, w->op, 0, c->intra));
    if (c->intra_rank == 0) MN_CHECK(mn_allreduce_rsag(c, c->inter, buf, count, w));
    if (c->intra_size > 1)
        MN_MPI(c, MPI_Bcast(buf, count, w->type, 0, c->intra));
    return MN_OK;
}

const mn_comm_ops mn_comm_hierarchical_ops = {
    .name = "hierarchical",
    .query = hierarchical_query,
    .setup = hierarchical_setup,
    .sum = hierarchical_sum,
    .mean_grad_device = hierarchical_mean_grad_device,
#if defined(MN_NCCL) && defined(GPU)
    .device_stream = hierarchical_device_stream,
#endif
    .teardown = hierarchical_teardown,
};
