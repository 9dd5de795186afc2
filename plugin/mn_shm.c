/* The node's intra-node legs through an MPI-3 shared-memory window instead
 * of MPI messages (flat and single_node inside one node, hierarchical and
 * two_dimensional for their in-node legs).
 *
 * Every rank of the node owns two sets of two areas in one window made by
 * MPI_Win_allocate_shared: an input area and a result area of one piece
 * each. Calls use the sets in turn, so that a rank may start filling the
 * next piece while a slower one still reads the previous: a set is written
 * again only two calls later, when every rank has passed the barriers of
 * the call in between. The legs:
 *
 *  reduce-scatter: the piece is cut in near-equal chunks, chunk k belongs to
 *    intra-rank k. Each rank copies the chunks it does not own into its
 *    input area; barrier; each rank adds every other rank's copy of its own
 *    chunk onto its private buffer, dividing by the wire's div in the last
 *    addition (float16 goes through MPI_Reduce_local, the same half sum as
 *    the MPI path). Each element is read and added once, where MPI's
 *    shared-memory transport copies it into a bounce buffer or a temporary
 *    on the way.
 *  allgather: each rank publishes its finished chunk in its result area;
 *    barrier; every rank (or one root) copies the other chunks back.
 *  bcast: the root publishes the whole piece; barrier; the others copy it.
 *
 * A barrier is MPI_Win_sync, MPI_Barrier over the node, MPI_Win_sync: the
 * memory model of a passive-target epoch held for the window's lifetime. */
#include <stdlib.h>
#include <string.h>
#include "mn_internal.h"

struct mn_shm {
    MPI_Win win;
    MPI_Comm node;           /* c->intra, not owned */
    unsigned char **in;      /* per intra-rank: its two input areas, then its two result areas */
    size_t cap;              /* bytes of one area */
    int set;                 /* the set this call uses */
};

static mn_status node_sync(mn_comm *c, mn_shm *s)
{
    MN_MPI(c, MPI_Win_sync(s->win));
    MN_MPI(c, MPI_Barrier(s->node));
    MN_MPI(c, MPI_Win_sync(s->win));
    return MN_OK;
}

static unsigned char *input_area(const mn_shm *s, int rank) { return s->in[rank] + (size_t)s->set * s->cap; }
static unsigned char *result_area(const mn_shm *s, int rank) { return s->in[rank] + (size_t)(2 + s->set) * s->cap; }

mn_status mn_shm_open(mn_comm *c, mn_shm **out)
{
    *out = NULL;
    if (c->intra_size < 2) return MN_OK;
    /* A forced node (MN_RANKS_PER_NODE) may span machines: then no window.
     * The node agrees, so that a rank with MN_SHM=0 cannot split it. */
    const char *env = getenv("MN_SHM");
    MPI_Comm shared;
    int ssize = 0, all;
    MN_MPI(c, MPI_Comm_split_type(c->intra, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    MPI_Comm_size(shared, &ssize);
    MPI_Comm_free(&shared);
    all = ssize == c->intra_size && !(env && !strcmp(env, "0"));
    MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, c->intra));
    if (!all) return MN_OK;

    mn_shm *s = calloc(1, sizeof *s);
    if (s) s->in = calloc((size_t)c->intra_size, sizeof *s->in);
    if (!s || !s->in) { free(s); mn_error(c, "out of memory for the shared-memory window"); return MN_ERR_NOMEM; }
    s->node = c->intra;
    s->cap = c->piece_floats * sizeof(float);
    unsigned char *base;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");   /* each rank's areas on its own NUMA node */
    int e = MPI_Win_allocate_shared((MPI_Aint)(4 * s->cap), 1, info, c->intra, &base, &s->win);
    MPI_Info_free(&info);
    if (e != MPI_SUCCESS) {
        mn_error(c, "MPI_Win_allocate_shared of %zu bytes failed (MPI error %d)", 4 * s->cap, e);
        free(s->in);
        free(s);
        return MN_ERR_MPI;
    }
    for (int r = 0; r < c->intra_size; ++r) {
        MPI_Aint size;
        int unit;
        MN_MPI(c, MPI_Win_shared_query(s->win, r, &size, &unit, &s->in[r]));
    }
    MN_MPI(c, MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win));
    *out = s;
    return MN_OK;
}

void mn_shm_close(mn_shm *s)
{
    if (!s) return;
    MPI_Win_unlock_all(s->win);
    MPI_Win_free(&s->win);
    free(s->in);
    free(s);
}

int mn_shm_fits(const mn_shm *s, int count, const mn_wire *w)
{
    int size = 4;
    MPI_Type_size(w->type, &size);
    return s && (size_t)count * (size_t)size <= s->cap;
}

mn_status mn_shm_reduce_scatter(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w)
{
    int p = c->intra_size, me = c->intra_rank, size, off, n;
    MN_MPI(c, MPI_Type_size(w->type, &size));
    unsigned char *b = buf;
    s->set ^= 1;
    for (int k = 0; k < p; ++k) {
        if (k == me) continue;
        mn_split(count, p, k, &off, &n);
        memcpy(input_area(s, me) + (size_t)off * size, b + (size_t)off * size, (size_t)n * size);
    }
    MN_CHECK(node_sync(c, s));
    mn_split(count, p, me, &off, &n);
    int last = me == p - 1 ? p - 2 : p - 1;
    for (int k = 0; k < p && n > 0; ++k) {
        if (k == me) continue;
        unsigned char *src = input_area(s, k) + (size_t)off * size, *dst = b + (size_t)off * size;
        if (w->half) MN_MPI(c, MPI_Reduce_local(src, dst, n, w->type, w->op));
        else mn_add_floats((float *)dst, (const float *)src, (size_t)n, k == last ? w->div : 1.0f);
    }
    return MN_OK;
}

mn_status mn_shm_allgather(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root)
{
    int p = c->intra_size, me = c->intra_rank, size, off, n;
    MN_MPI(c, MPI_Type_size(w->type, &size));
    unsigned char *b = buf;
    mn_split(count, p, me, &off, &n);
    memcpy(result_area(s, me) + (size_t)off * size, b + (size_t)off * size, (size_t)n * size);
    MN_CHECK(node_sync(c, s));
    if (root >= 0 && root != me) return MN_OK;
    for (int k = 0; k < p; ++k) {
        if (k == me) continue;
        mn_split(count, p, k, &off, &n);
        memcpy(b + (size_t)off * size, result_area(s, k) + (size_t)off * size, (size_t)n * size);
    }
    return MN_OK;
}

mn_status mn_shm_bcast(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root)
{
    int size;
    MN_MPI(c, MPI_Type_size(w->type, &size));
    if (c->intra_rank == root) memcpy(result_area(s, root), buf, (size_t)count * size);
    MN_CHECK(node_sync(c, s));
    if (c->intra_rank != root) memcpy(buf, result_area(s, root), (size_t)count * size);
    return MN_OK;
}

mn_status mn_shm_allreduce(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w)
{
    MN_CHECK(mn_shm_reduce_scatter(c, s, buf, count, w));
    return mn_shm_allgather(c, s, buf, count, w, -1);
}

/* flat and single_node: the window, kept in c->state, when the whole job is
 * one node; their sum then never leaves shared memory. */
mn_status mn_shm_setup_job(mn_comm *c)
{
    mn_shm *s = NULL;
    if (c->nodes == 1) MN_CHECK(mn_shm_open(c, &s));
    c->state = s;
    return MN_OK;
}

void mn_shm_teardown_job(mn_comm *c)
{
    mn_shm_close(c->state);
    c->state = NULL;
}

mn_status mn_sum_job(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    mn_shm *s = c->state;
    if (s && mn_shm_fits(s, count, w)) return mn_shm_allreduce(c, s, buf, count, w);
    return mn_allreduce_wire(c, c->world, buf, count, w);
}
