/* two_dimensional: per piece, (1) a reduce-scatter in the node, leaving
 * intra-rank k the node's sum of shard k; (2) an allreduce of shard k among
 * the ranks with intra_rank k (c->inter, mn_rsag.c), so a node sends its
 * gradient over as many links as it has ranks, for nodes with several NICs
 * (ChainerMN's table); (3) the node's allgather. Legs (1) and (3) use the
 * node's window, else MPI, or NCCL where every rank has a GPU of its own.
 * Leg (2) needs nodes of equal size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "transport/mn_gpu.h"
#include "transport/mn_nccl.h"
#include "transport/mn_shm.h"

typedef struct {
    int *counts, *displs;   /* per intra-rank */
    void *shard;
    size_t shard_bytes;
    mn_shm *shm;            /* or NULL */
    mn_nccl_node *nccl;     /* or NULL */
} two_dimensional;

static void two_dimensional_teardown(mn_comm *c)
{
    two_dimensional *s = c->coll->state;
    if (!s) return;
    free(s->counts);
    free(s->displs);
    free(s->shard);
    mn_shm_close(s->shm);
    mn_nccl_node_close(s->nccl);
    free(s);
    c->coll->state = NULL;
}

/* Nodes of equal size only; ranked below flat and hierarchical, behind
 * them wherever simulated. */
static void two_dimensional_query(const mn_comm_shape *s, mn_comm_answer *a)
{
    a->priority = 10;
    if (s->per_node) {
        snprintf(a->why, sizeof a->why, "%s: the node's reduce-scatter, an allreduce per shard across nodes, "
                                         "the node's allgather", s->said);
        return;
    }
    a->refused = MN_ERR_USER;
    snprintf(a->why, sizeof a->why, "communicator 'two_dimensional' needs the same number of ranks on every node, "
                                     "but this job has %s; use hierarchical or flat", s->layout);
}

static mn_status two_dimensional_setup(mn_comm *c)
{
    two_dimensional *s = calloc(1, sizeof *s);
    if (s) {
        c->coll->state = s;
        s->counts = calloc((size_t)c->intra_size, sizeof(int));
        s->displs = calloc((size_t)c->intra_size, sizeof(int));
    }
    mn_status st = MN_OK;
    if (!s || !s->counts || !s->displs) {
        mn_error(c, "out of memory setting up two_dimensional");
        st = MN_ERR_NOMEM;
    }
    MN_CHECK(mn_agree(c, st));   /* the windows and NCCL below are collective */
    MN_CHECK(mn_shm_open(c, &s->shm));
    MN_CHECK(mn_nccl_node_open(c, &s->nccl));
    c->coll->device_f32 = s->nccl != NULL;
    return MN_OK;
}

static mn_status two_dimensional_mean_grad_device(mn_comm *c, float **dev, const size_t *lens, int n)
{
    return mn_nccl_node_mean(c, ((two_dimensional *)c->coll->state)->nccl, dev, lens, n, 1);
}

#if defined(MN_NCCL) && defined(GPU)
static void *two_dimensional_device_stream(mn_comm *c)
{
    return mn_nccl_node_stream(((two_dimensional *)c->coll->state)->nccl);
}
#endif

/* s->shard holds at least n elements of size bytes. */
static mn_status shard_room(mn_comm *c, two_dimensional *s, int n, int size)
{
    if ((size_t)n * (size_t)size <= s->shard_bytes) return MN_OK;
    void *p = realloc(s->shard, (size_t)n * (size_t)size);
    if (!p) { mn_error(c, "out of memory for a %d-element shard", n); return MN_ERR_NOMEM; }
    s->shard = p;
    s->shard_bytes = (size_t)n * (size_t)size;
    return MN_OK;
}

/* A network piece outgrowing the window: legs (1) and (3) by parts, leg (2)
 * once on this rank's chunks of every part, packed (one latency). */
static mn_status windowed_parts(mn_comm *c, two_dimensional *s, void *buf, int count, const mn_wire *w, int size)
{
    int span = mn_shm_span(s->shm, w), m = c->intra_size, me = c->intra_rank, mine = 0, off, n;
    char *b = buf;
    mn_wire sum_only = *w;   /* the shard is divided after its inter-node sum */
    sum_only.div = 1.0f;
    for (int at = 0, k; at < count; at += k) {
        k = count - at < span ? count - at : span;
        MN_CHECK(mn_shm_reduce_scatter(c, s->shm, b + (size_t)at * size, k, &sum_only));
        mn_split(k, m, me, &off, &n);
        mine += n;
    }
    MN_CHECK(shard_room(c, s, mine, size));
    char *sh = s->shard;
    for (int at = 0, k, done = 0; at < count; at += k, done += n) {   /* pack */
        k = count - at < span ? count - at : span;
        mn_split(k, m, me, &off, &n);
        memcpy(sh + (size_t)done * size, b + (size_t)(at + off) * size, (size_t)n * size);
    }
    MN_CHECK(mn_allreduce_rsag(c, c->inter, s->shard, mine, w));
    for (int at = 0, k, done = 0; at < count; at += k, done += n) {   /* unpack, then the node's allgather */
        k = count - at < span ? count - at : span;
        mn_split(k, m, me, &off, &n);
        memcpy(b + (size_t)(at + off) * size, sh + (size_t)done * size, (size_t)n * size);
        MN_CHECK(mn_shm_allgather(c, s->shm, b + (size_t)at * size, k, w, -1));
    }
    return MN_OK;
}

static mn_status two_dimensional_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    two_dimensional *s = c->coll->state;
    int m = c->intra_size, size;
    if (m == 1) return mn_allreduce_rsag(c, c->inter, buf, count, w);
    MN_MPI(c, MPI_Type_size(w->type, &size));
    if (s->shm && !mn_shm_fits(s->shm, count, w)) return windowed_parts(c, s, buf, count, w, size);
    if (s->shm) {
        int off, n;
        mn_split(count, m, c->intra_rank, &off, &n);
        mn_wire sum_only = *w;   /* the shard is divided after its inter-node sum */
        sum_only.div = 1.0f;
        MN_CHECK(mn_shm_reduce_scatter(c, s->shm, buf, count, &sum_only));
        MN_CHECK(mn_allreduce_rsag(c, c->inter, (char *)buf + (size_t)off * size, n, w));
        return mn_shm_allgather(c, s->shm, buf, count, w, -1);
    }
    for (int k = 0; k < m; ++k) mn_split(count, m, k, &s->displs[k], &s->counts[k]);
    int mine = s->counts[c->intra_rank];
    MN_CHECK(shard_room(c, s, mine, size));
    MN_MPI(c, MPI_Reduce_scatter(buf, s->shard, s->counts, w->type, w->op, c->intra));
    MN_CHECK(mn_allreduce_rsag(c, c->inter, s->shard, mine, w));
    MN_MPI(c, MPI_Allgatherv(s->shard, mine, w->type, buf, s->counts, s->displs, w->type, c->intra));
    return MN_OK;
}

const mn_comm_ops mn_comm_two_dimensional_ops = {
    .name = "two_dimensional",
    .query = two_dimensional_query,
    .setup = two_dimensional_setup,
    .sum = two_dimensional_sum,
    .mean_grad_device = two_dimensional_mean_grad_device,
#if defined(MN_NCCL) && defined(GPU)
    .device_stream = two_dimensional_device_stream,
#endif
    .teardown = two_dimensional_teardown,
};
