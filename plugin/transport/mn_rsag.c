/* The network legs' own allreduce, so that their cost hangs neither on the
 * MPI's choice of algorithm nor on where the launcher put the ranks. A
 * reduce-scatter by recursive halving, then an allgather by recursive
 * doubling, partners nearest first:
 * at step k a rank swaps half of what it still holds with the rank 2^k away
 * and adds the half it keeps. On a communicator ordered node by node
 * (c->transport->by_node), the first steps stay inside a node while the halves are
 * large, and a node's link carries the gradient about once each way in all
 * (2(1 - 1/nodes) of it), where a ring carries 2(p-1)/p of it over every
 * edge and pays 2(p-1) latencies rather than 2 log2 p. Open MPI 4.1 picks
 * the same algorithm (Rabenseifner's) at these sizes, but pairs ranks by
 * number: dealt to the nodes round robin (mpirun --map-by node), every step
 * of it crosses the network, 7-8 times as long in the simulation
 * (docs/benchmarks.md, "The network legs' own allreduce").
 *
 * Rank counts that are not a power of two fold first: of the first 2r ranks
 * (r = p - 2^floor(log2 p)) each even one hands its whole buffer to the odd
 * one after it and takes the result back at the end. Each part of the result
 * is summed on one rank and copied to the others, so every rank ends with
 * the same bits. */
#include <stdlib.h>
#include "mn_transport.h"

enum { RSAG_TAG = 7701 };

/* c->transport->wire_tmp holds at least bytes. */
static mn_status tmp_room(mn_comm *c, size_t bytes)
{
    if (bytes <= c->transport->wire_tmp_cap) return MN_OK;
    void *p = realloc(c->transport->wire_tmp, bytes);
    if (!p) { mn_error(c, "out of memory for a %zu-byte receive buffer", bytes); return MN_ERR_NOMEM; }
    c->transport->wire_tmp = p;
    c->transport->wire_tmp_cap = bytes;
    return MN_OK;
}

/* The rank in comm of a rank among the 2^k that take part after the fold. */
static int real_rank(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }

/* One exchange with peer: ns elements from out, nr into in; with sum set,
 * they arrive in c->transport->wire_tmp and are added into in. */
static mn_status swap(mn_comm *c, MPI_Comm comm, int peer, const char *out, int ns, char *in, int nr, int sum,
                      const mn_wire *w)
{
    void *to = sum ? c->transport->wire_tmp : in;
    MN_MPI(c, MPI_Sendrecv(out, ns, w->type, peer, RSAG_TAG, to, nr, w->type, peer, RSAG_TAG, comm,
                           MPI_STATUS_IGNORE));
    if (sum && nr) MN_MPI(c, MPI_Reduce_local(to, in, nr, w->type, w->op));
    return MN_OK;
}

mn_status mn_allreduce_rsag(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w)
{
    int p, me, size;
    MN_MPI(c, MPI_Comm_size(comm, &p));
    MN_MPI(c, MPI_Comm_rank(comm, &me));
    if (p == 1 || count < p) return mn_allreduce_wire(c, comm, buf, count, w);   /* all latency: MPI's call */
    MN_MPI(c, MPI_Type_size(w->type, &size));
    int pof2 = 1, steps = 0;
    while (2 * pof2 <= p) { pof2 *= 2; ++steps; }
    int rem = p - pof2, v = me - rem, half = count - count / 2;
    char *b = buf, *upper = b + (size_t)half * size;
    MN_CHECK(tmp_room(c, (size_t)half * (size_t)size));   /* the most one message brings */
    if (me < 2 * rem) {   /* the fold, in two halves */
        if (me % 2 == 0) {
            MN_CHECK(swap(c, comm, me + 1, b, half, NULL, 0, 0, w));
            MN_CHECK(swap(c, comm, me + 1, upper, count - half, NULL, 0, 0, w));
            return swap(c, comm, me + 1, NULL, 0, b, count, 0, w);   /* the result */
        }
        MN_CHECK(swap(c, comm, me - 1, NULL, 0, b, half, 1, w));
        MN_CHECK(swap(c, comm, me - 1, NULL, 0, upper, count - half, 1, w));
        v = me / 2;
    }
    /* lo[k], len[k]: the part held before step k; the last entry, after all */
    int lo[32], len[32];
    lo[0] = 0;
    len[0] = count;
    for (int k = 0; k < steps; ++k) {
        int d = 1 << k, peer = real_rank(v ^ d, rem), off, n0;
        mn_split(len[k], 2, 0, &off, &n0);
        int keep_low = (v & d) == 0;
        int kept = keep_low ? lo[k] : lo[k] + n0, nk = keep_low ? n0 : len[k] - n0;
        int sent = keep_low ? lo[k] + n0 : lo[k];
        MN_CHECK(swap(c, comm, peer, b + (size_t)sent * size, len[k] - nk, b + (size_t)kept * size, nk, 1, w));
        lo[k + 1] = kept;
        len[k + 1] = nk;
    }
    mn_wire_div(w, b + (size_t)lo[steps] * size, len[steps]);
    for (int k = steps - 1; k >= 0; --k) {
        int d = 1 << k, peer = real_rank(v ^ d, rem);
        int other = (v & d) == 0 ? lo[k] + len[k + 1] : lo[k];
        MN_CHECK(swap(c, comm, peer, b + (size_t)lo[k + 1] * size, len[k + 1], b + (size_t)other * size,
                      len[k] - len[k + 1], 0, w));
    }
    if (me < 2 * rem) MN_CHECK(swap(c, comm, me - 1, b, count, NULL, 0, 0, w));
    return MN_OK;
}
