/* two_dimensional: three legs per piece, every rank busy in each. (1) A
 * reduce-scatter inside the node: intra-rank k ends with the node's sum of
 * shard k (near-equal shards; sizes differ by at most one element, so any
 * length works); (2) MPI_Allreduce of shard k among the ranks with
 * intra_rank k on every node (c->inter), all shards at once, so each node
 * sends its whole gradient across as many links as it has ranks; (3) an
 * allgather of the shards inside the node. Legs (1) and (3) go through the
 * node's shared-memory window where there is one (mn_shm.c), else
 * MPI_Reduce_scatter and MPI_Allgatherv over c->intra. For nodes with several NICs,
 * as in ChainerMN's table. Leg (2) needs every node to hold the same number of
 * ranks (else shard k has no partner on a smaller node): an uneven job is
 * refused at setup, naming its layout. In GPU runs legs (1) and (3) go
 * through NCCL on the device (mn_nccl_node.c) where every rank has a GPU of
 * its own. */
#include <stdlib.h>
#include "mn_coll.h"

typedef struct {
    int *counts, *displs;   /* shard sizes and offsets, one per intra-rank */
    void *shard;            /* this rank's shard */
    size_t shard_bytes;
    mn_shm *shm;            /* the node's window, or NULL */
    mn_nccl_node *nccl;     /* GPU runs: the in-node legs through NCCL (mn_nccl_node.c), or NULL */
} two_dimensional;

static void two_dimensional_teardown(mn_comm *c)
{
    two_dimensional *s = c->state;
    if (!s) return;
    free(s->counts);
    free(s->displs);
    free(s->shard);
    mn_shm_close(s->shm);
    mn_nccl_node_close(s->nccl);
    free(s);
    c->state = NULL;
}

static mn_status two_dimensional_setup(mn_comm *c)
{
    char layout[256];
    int even;
    MN_CHECK(mn_comm_layout(c, layout, sizeof layout, &even));
    if (!even) {
        if (c->rank == 0)
            mn_error(c, "communicator 'two_dimensional' needs the same number of ranks on every node, "
                        "but this job has %s; use hierarchical or flat", layout);
        return MN_ERR_USER;
    }
    two_dimensional *s = calloc(1, sizeof *s);
    if (s) {
        c->state = s;
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
    c->device_f32 = s->nccl != NULL;
    return MN_OK;
}

static mn_status two_dimensional_mean_grad_device(mn_comm *c, float **dev, const size_t *lens, int n)
{
    return mn_nccl_node_mean(c, ((two_dimensional *)c->state)->nccl, dev, lens, n, 1);
}

static mn_status two_dimensional_sum(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    two_dimensional *s = c->state;
    int m = c->intra_size, size;
    if (m == 1) return mn_allreduce_wire(c, c->inter, buf, count, w);
    MN_MPI(c, MPI_Type_size(w->type, &size));
    if (s->shm && mn_shm_fits(s->shm, count, w)) {
        int off, n;
        mn_split(count, m, c->intra_rank, &off, &n);
        mn_wire sum_only = *w;   /* the shard is divided after its inter-node sum */
        sum_only.div = 1.0f;
        MN_CHECK(mn_shm_reduce_scatter(c, s->shm, buf, count, &sum_only));
        MN_CHECK(mn_allreduce_wire(c, c->inter, (char *)buf + (size_t)off * size, n, w));
        return mn_shm_allgather(c, s->shm, buf, count, w, -1);
    }
    for (int k = 0; k < m; ++k) mn_split(count, m, k, &s->displs[k], &s->counts[k]);
    int mine = s->counts[c->intra_rank];
    if ((size_t)mine * (size_t)size > s->shard_bytes) {
        void *p = realloc(s->shard, (size_t)mine * (size_t)size);
        if (!p) { mn_error(c, "out of memory for a %d-element shard", mine); return MN_ERR_NOMEM; }
        s->shard = p;
        s->shard_bytes = (size_t)mine * (size_t)size;
    }
    MN_MPI(c, MPI_Reduce_scatter(buf, s->shard, s->counts, w->type, w->op, c->intra));
    MN_CHECK(mn_allreduce_wire(c, c->inter, s->shard, mine, w));
    MN_MPI(c, MPI_Allgatherv(s->shard, mine, w->type, buf, s->counts, s->displs, w->type, c->intra));
    return MN_OK;
}

const mn_comm_ops mn_comm_two_dimensional_ops = {
    .name = "two_dimensional",
    .setup = two_dimensional_setup,
    .sum = two_dimensional_sum,
    .mean_grad_device = two_dimensional_mean_grad_device,
    .teardown = two_dimensional_teardown,
};
