/* Communicator registry, topology and the collectives every algorithm shares. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mn_internal.h"
#include "mn_output.h"
#include "mn_fault.h"

/* The registry: the only global state, and it is constant. */
static const mn_comm_ops *const registry[] = {
    &mn_comm_naive_ops,
    &mn_comm_flat_ops,
    &mn_comm_hierarchical_ops,
    &mn_comm_two_dimensional_ops,
    &mn_comm_single_node_ops,
    &mn_comm_pure_nccl_ops,
};
#define NREG ((int)(sizeof(registry) / sizeof(registry[0])))
/* Every algorithm of ChainerMN's table is registered; pure_nccl is always
 * named, and a build without NCCL says so when it is selected. */

const char *mn_comm_names(void)
{
    return "naive, flat, hierarchical, two_dimensional, single_node, pure_nccl";
}

void mn_error(const mn_comm *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    FILE *f = mn_output_errors();
    if (c) fprintf(f, "darknet-mn: rank %d (%s): %s\n", c->rank, c->host, msg);
    else fprintf(f, "darknet-mn: %s\n", msg);
    fflush(f);
}

void mn_abort(const mn_comm *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mn_error(c, "fatal: %s", msg);
    mn_die(1);
}

mn_status mn_agree(mn_comm *c, mn_status mine)
{
    int in = (int)mine, out = 0;
    mn_guard(c, "waiting for every rank");
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, c->world) != MPI_SUCCESS)
        mn_abort(c, "MPI_Allreduce failed while agreeing on a status");
    mn_unguard(c);
    return (mn_status)out;
}

/* Ranks per node can be forced with MN_RANKS_PER_NODE=k (ranks r with the same
 * r/k form a node), so that one machine can test multi-node algorithms. */
static mn_status split_nodes(mn_comm *c)
{
    if (c->ranks_per_node > 0) {
        MN_MPI(c, MPI_Comm_split(c->world, (int)(c->rank / c->ranks_per_node), c->rank, &c->intra));
    } else {
        MN_MPI(c, MPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &c->intra));
    }
    MPI_Comm_rank(c->intra, &c->intra_rank);
    MPI_Comm_size(c->intra, &c->intra_size);
    MN_MPI(c, MPI_Comm_split(c->world, c->intra_rank, c->rank, &c->inter));
    MPI_Comm_rank(c->inter, &c->inter_rank);
    MPI_Comm_size(c->inter, &c->inter_size);
    int leaders = c->intra_rank == 0;
    MN_MPI(c, MPI_Allreduce(&leaders, &c->nodes, 1, MPI_INT, MPI_SUM, c->world));
    return MN_OK;
}

/* Rank 0's MN_PIECE_BYTES, MN_RANKS_PER_NODE and MN_SHM into v (0 where
 * unset); it prints those set when report. */
static mn_status read_env(const mn_comm *c, long *v, int report)
{
    static const char *const names[] = {"MN_PIECE_BYTES", "MN_RANKS_PER_NODE", "MN_SHM"};
    static const char *const want[] = {"an integer of at least 4", "a positive integer", "0 or 1"};
    static const long lo[] = {4, 1, 0}, hi[] = {LONG_MAX, INT_MAX, 1};
    char said[256] = "";
    size_t len = 0;
    for (int i = 0; i < 3; ++i) {
        const char *e = getenv(names[i]);
        if (!e || !*e) continue;
        char *end;
        errno = 0;
        long x = strtol(e, &end, 10);
        if (*end || errno || x < lo[i] || x > hi[i]) {
            mn_error(c, "%s='%s' is not %s", names[i], e, want[i]);
            return MN_ERR_USER;
        }
        v[i] = i == 2 ? !x : x;
        if (len < sizeof said) len += (size_t)snprintf(said + len, sizeof said - len, " %s=%s", names[i], e);
    }
    if (report && len) {
        printf("darknet-mn: rank 0's environment holds on every rank:%s\n", said);
        fflush(stdout);
    }
    return MN_OK;
}

/* mpiexec forwards the environment to other hosts only with -x, so ranks
 * may read different values, and ranks with different pieces or node
 * splits truncate or hang a collective: rank 0's values hold everywhere. */
static mn_status env_settings(mn_comm *c, int report)
{
    long v[4] = {0, 0, 0, MN_OK};   /* piece bytes, ranks per node, shm off, rank 0's status */
    if (c->rank == 0) v[3] = read_env(c, v, report);
    MN_MPI(c, MPI_Bcast(v, 4, MPI_LONG, 0, c->world));
    /* 1 MiB pieces measured best-or-near on 2-rank shared memory (bench/results);
       MN_PIECE_BYTES overrides it for tuning on other fabrics. */
    c->piece_floats = (size_t)(v[0] ? v[0] : 1 << 20) / sizeof(float);
    c->ranks_per_node = v[1];
    c->shm_off = (int)v[2];
    return (mn_status)v[3];
}

static mn_comm *create(MPI_Comm world, const mn_comm *like, mn_status *status)
{
    mn_comm *c = calloc(1, sizeof *c);
    if (!c) { *status = MN_ERR_NOMEM; return NULL; }
    MPI_Comm_dup(world, &c->world);
    MPI_Comm_rank(c->world, &c->rank);
    MPI_Comm_size(c->world, &c->size);
    if (gethostname(c->host, sizeof c->host - 1) != 0) strcpy(c->host, "?");
    c->half_sum = MPI_OP_NULL;
    if (like) c->gpu = like->gpu;
    mn_status s = env_settings(c, !like);
    if (s == MN_OK) s = mn_agree(c, split_nodes(c));
    if (s == MN_OK) s = mn_comm_select(c, "flat");
    *status = s;
    if (s != MN_OK) { mn_comm_free(c); return NULL; }
    return c;
}

mn_comm *mn_comm_create(MPI_Comm world, mn_status *status)
{
    return create(world, NULL, status);
}

mn_comm *mn_comm_create_like(const mn_comm *c, mn_status *status)
{
    return create(c->world, c, status);
}

mn_comm *mn_comm_for_thread(mn_comm *c, const char *feature, mn_status *status)
{
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    mn_status st = MN_OK;
    if (level < MPI_THREAD_MULTIPLE) {
        if (c->rank == 0)
            mn_error(c, "%s averages on a thread of its own and needs MPI_THREAD_MULTIPLE, "
                        "which this MPI did not grant (level %d)", feature, level);
        st = MN_ERR_UNAVAILABLE;
    }
    mn_comm *t = NULL;
    if ((st = mn_agree(c, st)) == MN_OK) t = mn_comm_create_like(c, &st);
    if (st == MN_OK) st = mn_comm_select(t, c->ops->name);
    if (st == MN_OK) st = mn_comm_set_dtype(t, c->half);
    *status = mn_agree(c, st);
    if (*status != MN_OK) {
        mn_comm_free(t);
        return NULL;
    }
    return t;
}

static const mn_comm_ops *lookup(const char *name)
{
    for (int i = 0; i < NREG; ++i)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const char *mn_comm_check_name(const char *name)
{
    if (!name || !*name || lookup(name)) return NULL;
    return "is unknown";
}

/* The new algorithm is set up next to the old one; if any rank refuses it,
 * every rank tears down what it built and keeps the old one. */
mn_status mn_comm_select(mn_comm *c, const char *name)
{
    const char *fallback;
    MN_CHECK(mn_gpu_check(c, name, &fallback));
    if (!name || !*name) name = fallback;
    const mn_comm_ops *ops = lookup(name);
    if (!ops) {
        if (c->rank == 0)
            mn_error(c, "communicator '%s' %s; valid communicators: %s", name, mn_comm_check_name(name), mn_comm_names());
        return MN_ERR_USER;
    }
    if (ops == c->ops) return MN_OK;
    const mn_comm_ops *old_ops = c->ops;
    void *old_state = c->state;
    int old_f32 = c->device_f32, old_f16 = c->device_f16;
    c->ops = ops;
    c->state = NULL;
    c->device_f32 = c->device_f16 = 0;
    mn_status s = mn_agree(c, ops->setup ? ops->setup(c) : MN_OK);
    void *new_state = c->state;
    if (s != MN_OK) {
        if (ops->teardown) ops->teardown(c);
        c->ops = old_ops;
        c->state = old_state;
        c->device_f32 = old_f32;
        c->device_f16 = old_f16;
        return s;
    }
    if (old_ops && old_ops->teardown) {
        c->state = old_state;
        old_ops->teardown(c);
    }
    c->state = new_state;
    return MN_OK;
}

mn_status mn_comm_set_dtype(mn_comm *c, int half)
{
    if (half && c->half_sum == MPI_OP_NULL) MN_CHECK(mn_half_op_create(c, &c->half_sum));
    c->half = half != 0;
    return MN_OK;
}

void mn_comm_free(mn_comm *c)
{
    if (!c) return;
    if (c->ops && c->ops->teardown) c->ops->teardown(c);
    mn_comm_arena_release(c);
    if (c->intra != MPI_COMM_NULL && c->intra) MPI_Comm_free(&c->intra);
    if (c->inter != MPI_COMM_NULL && c->inter) MPI_Comm_free(&c->inter);
    if (c->world != MPI_COMM_NULL && c->world) MPI_Comm_free(&c->world);
    if (c->half_sum != MPI_OP_NULL) MPI_Op_free(&c->half_sum);
    free(c->fused);
    free(c);
}

mn_status mn_comm_fused(mn_comm *c, size_t n)
{
    if (n <= c->fused_cap) return MN_OK;
    float *p = realloc(c->fused, n * sizeof(float));
    if (!p) { mn_error(c, "out of memory for a %zu-byte fused buffer", n * sizeof(float)); return MN_ERR_NOMEM; }
    c->fused = p;
    c->fused_cap = n;
    return MN_OK;
}

mn_status mn_sum_floats(mn_comm *c, MPI_Comm comm, float *p, size_t n)
{
    while (n > 0) {
        int k = n > INT_MAX ? INT_MAX : (int)n;
        MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, p, k, MPI_FLOAT, MPI_SUM, comm));
        p += k;
        n -= (size_t)k;
    }
    return MN_OK;
}

static int power_of_two(float d)
{
    uint32_t u;
    memcpy(&u, &d, sizeof u);
    uint32_t e = (u >> 23) & 0xffu;
    return (u & 0x7fffffu) == 0 && e != 0 && e != 0xffu;
}

/* x * (1/d) rounds the same real number as x / d when d = 2^k, so the
 * result is identical; mulps costs a fraction of divps, and at 2 and 4
 * ranks the division was a pass as long as the allreduce itself. */
void mn_div_floats(float *p, size_t n, float d)
{
    if (d == 1.0f) return;
    if (power_of_two(d)) {
        const float r = 1.0f / d;
        for (size_t i = 0; i < n; ++i) p[i] *= r;
    } else {
        for (size_t i = 0; i < n; ++i) p[i] /= d;
    }
}

void mn_add_floats(float *dst, const float *src, size_t n, float d)
{
    if (d == 1.0f) {
        for (size_t i = 0; i < n; ++i) dst[i] += src[i];
    } else if (power_of_two(d)) {
        const float r = 1.0f / d;
        for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) * r;
    } else {
        for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) / d;
    }
}

void mn_wire_div(const mn_wire *w, void *buf, int count)
{
    if (!w->half && count > 0) mn_div_floats(buf, (size_t)count, w->div);
}

mn_status mn_allreduce_wire(mn_comm *c, MPI_Comm comm, void *buf, int count, const mn_wire *w)
{
    if (count > 0) MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, buf, count, w->type, w->op, comm));
    mn_wire_div(w, buf, count);
    return MN_OK;
}

mn_status mn_comm_layout(mn_comm *c, char *out, size_t cap, int *even)
{
    int mine[2] = {c->intra_rank, c->intra_size};
    int *all = malloc(sizeof(int) * 2 * (size_t)c->size);
    if (!all) return MN_ERR_NOMEM;
    if (MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, c->world) != MPI_SUCCESS) {
        free(all);
        mn_error(c, "MPI_Allgather failed while learning the node layout");
        return MN_ERR_MPI;
    }
    size_t len = (size_t)snprintf(out, cap, "%d rank%s on %d node%s (", c->size, c->size > 1 ? "s" : "",
                                  c->nodes, c->nodes > 1 ? "s" : "");
    int first = 1;
    *even = 1;
    for (int r = 0; r < c->size; ++r) {
        if (all[2 * r] != 0) continue;
        if (all[2 * r + 1] != c->intra_size) *even = 0;
        if (len < cap) len += (size_t)snprintf(out + len, cap - len, "%s%d", first ? "" : "+", all[2 * r + 1]);
        first = 0;
    }
    if (len < cap) snprintf(out + len, cap - len, ")");
    free(all);
    return MN_OK;
}

void mn_split(int count, int parts, int k, int *off, int *n)
{
    int q = count / parts, r = count % parts;
    *n = q + (k < r);
    *off = k * q + (k < r ? k : r);
}

mn_status mn_sum_world(mn_comm *c, void *buf, int count, const mn_wire *w)
{
    return mn_allreduce_wire(c, c->world, buf, count, w);
}

/* The arrays as one sequence of floats, walked piece by piece. */
typedef struct {
    float **arrays;
    const size_t *lens;
    int n, i;
    size_t j;
} cursor;

/* The next run of at most want floats that lie together in one array. */
static size_t next_run(cursor *cu, size_t want, float **p)
{
    while (cu->i < cu->n && cu->j == cu->lens[cu->i]) { ++cu->i; cu->j = 0; }
    size_t k = cu->lens[cu->i] - cu->j;
    if (k > want) k = want;
    *p = cu->arrays[cu->i] + cu->j;
    cu->j += k;
    return k;
}

/* k floats from the cursor into out, as floats (half = NULL) or as halves of x/div. */
static void pack(cursor *cu, size_t k, float *out, uint16_t *half, float div)
{
    for (size_t done = 0, m; done < k; done += m) {
        float *p;
        m = next_run(cu, k - done, &p);
        if (half) mn_floats_to_halves(half + done, p, m, div);
        else memcpy(out + done, p, m * sizeof(float));
    }
}

/* k floats back to the arrays, from floats or from halves. */
static void unpack(cursor *cu, size_t k, const float *in, const uint16_t *half)
{
    for (size_t done = 0, m; done < k; done += m) {
        float *p;
        m = next_run(cu, k - done, &p);
        if (half) mn_halves_to_floats(p, half + done, m);
        else memcpy(p, in + done, m * sizeof(float));
    }
}

/* The first element when the non-empty arrays lie back to back, else NULL. */
static float *contiguous_start(float **arrays, const size_t *lens, int n)
{
    float *start = NULL, *next = NULL;
    for (int i = 0; i < n; ++i) {
        if (!lens[i]) continue;
        if (!start) start = next = arrays[i];
        if (arrays[i] != next) return NULL;
        next += lens[i];
    }
    return start;
}

/* k floats from the cursor through sum as float32 (divided by the rank
 * count on the way), in pieces of at most `piece`, packed through f. */
static mn_status mean_packed(mn_comm *c, cursor *cu, size_t k, size_t piece, float *f, mn_sum_fn sum)
{
    const mn_wire f32 = {MPI_FLOAT, MPI_SUM, 0, (float)c->size};
    for (size_t done = 0, m; done < k; done += m) {
        m = k - done < piece ? k - done : piece;
        cursor at = *cu;
        pack(cu, m, f, NULL, 1.0f);
        MN_CHECK(sum(c, f, (int)m, &f32));
        unpack(&at, m, f, NULL);
    }
    return MN_OK;
}

/* Pieces keep each collective's buffer in cache for the division and bound
 * the scratch; float32 arrays that lie back to back (the optimizer's arena)
 * are reduced in place with no copy. The division by the rank count is the
 * wire's (mn_wire.div): each algorithm does it on its last leg, where only
 * the rank that finishes a part of the piece touches it.
 *
 * float16: a piece holds as many bytes as a float32 one, so twice the
 * elements: half the bytes and half the collectives, which is what makes it
 * pay off where each collective costs latency. Each rank divides by the rank
 * count BEFORE rounding to half, so
 * the halves summed are x/N and every partial sum is bounded by the largest
 * |x| of any rank: gradients up to 65504 cannot overflow in the sum however
 * many ranks there are (dividing after the sum would overflow once the sum of
 * N gradients passes 65504, e.g. 4 ranks of 20000). The price is at the small
 * end: x/N goes subnormal below 2^-14*N, keeping fewer bits there. A piece
 * whose reduced halves still hold Inf or NaN (a gradient beyond the half
 * range, or a rounding up past 65504) is summed again in float32, so nothing
 * turns into Inf silently; every rank holds the same reduced bytes, so every
 * rank takes the same branch without another message. */
mn_status mn_mean_by_pieces(mn_comm *c, float **arrays, const size_t *lens, int n, size_t piece, mn_sum_fn sum)
{
    const mn_wire f32 = {MPI_FLOAT, MPI_SUM, 0, (float)c->size}, f16 = {MPI_UINT16_T, c->half_sum, 1, 1.0f};
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (total == 0 || c->size == 1) return MN_OK;
    if (piece > INT_MAX) piece = INT_MAX;
    if (piece == 0) piece = 1;
    size_t hpiece = piece > INT_MAX / 2 ? INT_MAX : 2 * piece;
    if (piece > total) piece = total;
    if (hpiece > total) hpiece = total;
    float *in_place = c->half ? NULL : contiguous_start(arrays, lens, n);
    if (in_place) {
        for (size_t off = 0, k; off < total; off += k) {
            k = total - off < piece ? total - off : piece;
            MN_CHECK(sum(c, in_place + off, (int)k, &f32));
        }
        return mn_shm_arena_fence(c);
    }
    cursor cu = {arrays, lens, n, 0, 0};
    if (!c->half) {
        MN_CHECK(mn_comm_fused(c, piece));
        return mean_packed(c, &cu, total, piece, c->fused, sum);
    }
    /* scratch: piece floats for the float32 fallback, then hpiece halves */
    MN_CHECK(mn_comm_fused(c, piece + hpiece / 2 + 1));
    float *f = c->fused;
    uint16_t *h = (uint16_t *)(c->fused + piece);
    for (size_t off = 0, k; off < total; off += k) {
        k = total - off < hpiece ? total - off : hpiece;
        cursor at = cu;
        pack(&cu, k, NULL, h, (float)c->size);
        MN_CHECK(sum(c, h, (int)k, &f16));
        if (mn_halves_finite(h, k)) {
            unpack(&at, k, NULL, h);
            continue;
        }
        cu = at;
        MN_CHECK(mean_packed(c, &cu, k, piece, f, sum));
    }
    return MN_OK;
}

mn_status mn_comm_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    if (c->ops->mean_grad) return c->ops->mean_grad(c, arrays, lens, n);
    return mn_mean_by_pieces(c, arrays, lens, n, c->piece_floats, c->ops->sum);
}

int mn_comm_rank(const mn_comm *c) { return c->rank; }
int mn_comm_size(const mn_comm *c) { return c->size; }
int mn_comm_intra_rank(const mn_comm *c) { return c->intra_rank; }
int mn_comm_intra_size(const mn_comm *c) { return c->intra_size; }
int mn_comm_inter_rank(const mn_comm *c) { return c->inter_rank; }
int mn_comm_inter_size(const mn_comm *c) { return c->inter_size; }
const char *mn_comm_name(const mn_comm *c) { return c->ops->name; }
MPI_Comm mn_comm_world(const mn_comm *c) { return c->world; }
