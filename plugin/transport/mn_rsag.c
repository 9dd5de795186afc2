/* The network legs' allreduce: recursive halving, then doubling, partners
 * nearest first, so on ranks ordered node by node a node's link carries the
 * gradient about once each way, whatever MPI or the launcher would do
 * (docs/benchmarks.md). Counts not a power of two fold first. Every rank
 * ends with the same bits. */
#include <stdlib.h>
#include "transport/mn_transport.h"

enum { RSAG_TAG = 7701 };

static mn_status tmp_room(mn_comm *c, size_t bytes)
{
    if (bytes <= c->transport->wire_tmp_cap) return MN_OK;
    void *p = realloc(c->transport->wire_tmp, bytes);
    if (!p) { mn_error(c, "out of memory for a %zu-byte receive buffer", bytes); return MN_ERR_NOMEM; }
    c->transport->wire_tmp = p;
    c->transport->wire_tmp_cap = bytes;
    return MN_OK;
}

/* The rank in comm of one of the 2^k after the fold. */
static int real_rank(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }

/* ns elements out to peer, nr in (added into in where sum). */
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
    /* lo[k], len[k]: the part held before step k */
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
