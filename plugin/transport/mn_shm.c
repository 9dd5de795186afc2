/* The in-node legs through an MPI-3 shared-memory window instead of MPI
 * messages. Every rank owns two sets of an input and a result area of one
 * piece each, used in turn, so a fast rank may fill the next piece while a
 * slow one still reads the last.
 *  reduce-scatter: chunk k of a piece belongs to intra-rank k; each rank
 *    copies the chunks it does not own into its input area; barrier; each
 *    adds the peers' copies of its chunk, dividing in the last addition.
 *    Each element is read and added once, with no bounce buffer.
 *  allgather: each publishes its chunk; barrier; all (or a root) copy.
 *  bcast: the root publishes; barrier; the others copy.
 * A barrier is MPI_Win_sync, MPI_Barrier, MPI_Win_sync (a passive-target
 * epoch held for the window's lifetime). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "transport/mn_transport.h"
#include "transport/mn_shm.h"

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

/* Whether the node's ranks may share a window: several, on one machine (a
 * forced node may span machines), MN_SHM not 0. Collective. */
static mn_status node_shares_memory(mn_comm *c, int *all)
{
    *all = 0;
    if (c->intra_size < 2) return MN_OK;
    MPI_Comm shared;
    int ssize = 0;
    MN_MPI(c, MPI_Comm_split_type(c->intra, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    MPI_Comm_size(shared, &ssize);
    MPI_Comm_free(&shared);
    *all = ssize == c->intra_size && !c->transport->shm_off;
    MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, all, 1, MPI_INT, MPI_MIN, c->intra));
    return MN_OK;
}

/* Per-rank segments of `bytes` (each on its owner's NUMA node), locked for
 * the window's lifetime; at[r] = intra-rank r's. */
static mn_status window(mn_comm *c, size_t bytes, MPI_Win *win, unsigned char **at)
{
    unsigned char *base;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    int e = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, info, c->intra, &base, win);
    MPI_Info_free(&info);
    if (e != MPI_SUCCESS) {
        mn_error(c, "MPI_Win_allocate_shared of %zu bytes failed (MPI error %d)", bytes, e);
        return MN_ERR_MPI;
    }
    for (int r = 0; r < c->intra_size; ++r) {
        MPI_Aint size;
        int unit;
        MN_MPI(c, MPI_Win_shared_query(*win, r, &size, &unit, &at[r]));
    }
    MN_MPI(c, MPI_Win_lock_all(MPI_MODE_NOCHECK, *win));
    return MN_OK;
}

/* Whether every rank sees the others' segments (each writes its rank in
 * its own and reads the peers'): an MPI that hands back the caller's own
 * segment (SimGrid's) gets no window. The closing allreduce keeps the marks
 * until all are read. Collective. */
static mn_status window_shared(mn_comm *c, MPI_Win *win, unsigned char **at, int *shared)
{
    int me = c->intra_rank;
    memcpy(at[me], &me, sizeof me);
    MN_MPI(c, MPI_Win_sync(*win));
    MN_MPI(c, MPI_Barrier(c->intra));
    MN_MPI(c, MPI_Win_sync(*win));
    *shared = 1;
    for (int k = 0; k < c->intra_size; ++k) {
        int mark;
        memcpy(&mark, at[k], sizeof mark);
        if (mark != k || (k != me && at[k] == at[me])) *shared = 0;
    }
    MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, shared, 1, MPI_INT, MPI_MIN, c->intra));
    if (*shared) return MN_OK;
    if (c->rank == 0)
        fprintf(stderr, "darknet-mn: this MPI's shared-memory window is not shared between the ranks of a node; "
                        "the in-node legs go through MPI messages\n");
    MPI_Win_unlock_all(*win);
    MPI_Win_free(win);
    return MN_OK;
}

mn_status mn_shm_open(mn_comm *c, mn_shm **out)
{
    *out = NULL;
    int all;
    MN_CHECK(node_shares_memory(c, &all));
    if (!all) return MN_OK;

    mn_shm *s = calloc(1, sizeof *s);
    if (s) s->in = calloc((size_t)c->intra_size, sizeof *s->in);
    if (!s || !s->in) { free(s); mn_error(c, "out of memory for the shared-memory window"); return MN_ERR_NOMEM; }
    s->node = c->intra;
    s->cap = c->piece_floats * sizeof(float);
    int shared = 0;
    mn_status st = window(c, 4 * s->cap, &s->win, s->in);
    if (st == MN_OK) st = window_shared(c, &s->win, s->in, &shared);
    if (st != MN_OK || !shared) {
        free(s->in);
        free(s);
        return st;
    }
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
    return s && count <= mn_shm_span(s, w);
}

int mn_shm_span(const mn_shm *s, const mn_wire *w)
{
    int size = 4;
    MPI_Type_size(w->type, &size);
    size_t n = s->cap / (size_t)size;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* dst += every peer's copy at base[k] + offset, divided in the last addition. */
static void add_peers(const mn_comm *c, float *dst, unsigned char *const *base, size_t offset, size_t n, float div)
{
    int p = c->intra_size, me = c->intra_rank, last = me == p - 1 ? p - 2 : p - 1;
    for (int k = 0; k < p; ++k)
        if (k != me) mn_add_floats(dst, (const float *)(base[k] + offset), n, k == last ? div : 1.0f);
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
    unsigned char *dst = b + (size_t)off * size;
    if (!w->half) {
        add_peers(c, (float *)dst, s->in, (size_t)s->set * s->cap + (size_t)off * size, (size_t)n, w->div);
        return MN_OK;
    }
    for (int k = 0; k < p && n > 0; ++k)
        if (k != me) MN_MPI(c, MPI_Reduce_local(input_area(s, k) + (size_t)off * size, dst, n, w->type, w->op));
    return MN_OK;
}

/* On every rank where root < 0, else on root alone. */
mn_status mn_shm_allgather(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w, int root)
{
    int p = c->intra_size, me = c->intra_rank, size, off, n;
    MN_MPI(c, MPI_Type_size(w->type, &size));
    unsigned char *b = buf;
    s->set ^= 1;
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
    s->set ^= 1;
    if (c->intra_rank == root) memcpy(result_area(s, root), buf, (size_t)count * size);
    MN_CHECK(node_sync(c, s));
    if (c->intra_rank != root) memcpy(buf, result_area(s, root), (size_t)count * size);
    return MN_OK;
}

/* The gradient arena in a window: every rank's arena is mapped in every
 * rank (at[r]), and a piece at offset x of mine lies at at[k] + x in rank
 * k's, so nothing is copied in. Barrier; each rank adds the peers' copies
 * of its chunk straight from their arenas; barrier; each copies the other
 * chunks from their owners. No read meets a write; mn_shm_arena_fence's
 * barrier keeps a peer's last copy from meeting the next step. */
typedef struct mn_arena {
    MPI_Win win;
    unsigned char **at;   /* per intra-rank: its arena */
    size_t bytes;
    int fence;            /* pieces were reduced here since the last fence */
} mn_arena;

static mn_status arena_sync(mn_comm *c, mn_arena *a)
{
    MN_MPI(c, MPI_Win_sync(a->win));
    MN_MPI(c, MPI_Barrier(c->intra));
    MN_MPI(c, MPI_Win_sync(a->win));
    return MN_OK;
}

/* buf's offset in this rank's arena, or -1 when it does not lie in it. */
static long arena_offset(const mn_comm *c, const void *buf, int count, const mn_wire *w)
{
    const mn_arena *a = c->transport->arena;
    const unsigned char *b = buf, *mine = a ? a->at[c->intra_rank] : NULL;
    if (!a || w->half || b < mine || b + (size_t)count * sizeof(float) > mine + a->bytes) return -1;
    return (long)(b - mine);
}

static mn_status arena_allreduce(mn_comm *c, float *buf, int count, const mn_wire *w, long at)
{
    mn_arena *a = c->transport->arena;
    int p = c->intra_size, me = c->intra_rank, off, n;
    MN_CHECK(arena_sync(c, a));
    mn_split(count, p, me, &off, &n);
    add_peers(c, buf + off, a->at, (size_t)at + (size_t)off * sizeof(float), (size_t)n, w->div);
    MN_CHECK(arena_sync(c, a));
    for (int k = 0; k < p; ++k) {
        if (k == me) continue;
        mn_split(count, p, k, &off, &n);
        memcpy(buf + off, (const float *)(a->at[k] + at) + off, (size_t)n * sizeof(float));
    }
    a->fence = 1;
    return MN_OK;
}

mn_status mn_shm_arena_fence(mn_comm *c)
{
    mn_arena *a = c->transport->arena;
    if (!a || !a->fence) return MN_OK;
    a->fence = 0;
    return arena_sync(c, a);
}

/* The arena in this rank's own memory (no window). */
static mn_status private_arena(mn_comm *c, size_t n, float **out)
{
    if (!(*out = calloc(n + 1, sizeof(float)))) {
        mn_error(c, "out of memory for a %zu-float gradient arena", n);
        return MN_ERR_NOMEM;
    }
    return MN_OK;
}

/* n floats and a spare, zeroed, in a window where the node has one, so the
 * window's allreduce reads the peers' arenas in place; else calloc. */
mn_status mn_comm_arena_alloc(mn_comm *c, size_t n, float **out)
{
    *out = NULL;
    int all = 0;
    if (!c->transport->arena) MN_CHECK(node_shares_memory(c, &all));
    if (!all) return private_arena(c, n, out);
    mn_arena *a = calloc(1, sizeof *a);
    if (a) a->at = calloc((size_t)c->intra_size, sizeof *a->at);
    if (!a || !a->at) {
        if (a) free(a->at);
        free(a);
        mn_error(c, "out of memory for the arena's window");
        return MN_ERR_NOMEM;
    }
    a->bytes = (n + 1) * sizeof(float);
    int shared = 0;
    mn_status st = window(c, a->bytes, &a->win, a->at);
    if (st == MN_OK) st = window_shared(c, &a->win, a->at, &shared);
    if (st != MN_OK || !shared) {
        free(a->at);
        free(a);
        return st != MN_OK ? st : private_arena(c, n, out);
    }
    memset(a->at[c->intra_rank], 0, a->bytes);
    c->transport->arena = a;
    *out = (float *)a->at[c->intra_rank];
    return MN_OK;
}

void mn_comm_arena_free(mn_comm *c, float *p)
{
    mn_arena *a = c->transport->arena;
    if (!a || c->transport->arena_borrowed || p != (float *)a->at[c->intra_rank]) { free(p); return; }
    MPI_Win_unlock_all(a->win);
    MPI_Win_free(&a->win);
    free(a->at);
    free(a);
    c->transport->arena = NULL;
}

/* owner must outlive c's use of its window (the bench's variants). */
void mn_comm_arena_borrow(mn_comm *c, const mn_comm *owner)
{
    if (!owner->transport->arena || c->transport->arena) return;
    c->transport->arena = owner->transport->arena;
    c->transport->arena_borrowed = 1;
}

void mn_comm_arena_release(mn_comm *c)
{
    if (c->transport->arena && !c->transport->arena_borrowed) mn_comm_arena_free(c, (float *)c->transport->arena->at[c->intra_rank]);
    c->transport->arena = NULL;
    c->transport->arena_borrowed = 0;
}

mn_status mn_shm_allreduce(mn_comm *c, mn_shm *s, void *buf, int count, const mn_wire *w)
{
    long at = arena_offset(c, buf, count, w);
    if (at >= 0) return arena_allreduce(c, buf, count, w, at);
    MN_CHECK(mn_shm_reduce_scatter(c, s, buf, count, w));
    return mn_shm_allgather(c, s, buf, count, w, -1);
}
