/* Communicator registry, topology and the collectives every algorithm shares. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coll/mn_coll.h"
#include "core/mn_output.h"
#include "core/mn_fault.h"
#include "transport/mn_half.h"
#include "transport/mn_shm.h"
#include "core/mn_watchdog.h"

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

const char *mn_comm_names(void)
{
    return "naive, flat, hierarchical, two_dimensional, single_node, pure_nccl, auto";
}

/* Ranks per node can be forced with MN_RANKS_PER_NODE=k (ranks r with the same
 * r/k form a node), so that one machine can test multi-node algorithms. */
static mn_status split_nodes(mn_comm *c)
{
    if (c->coll->ranks_per_node > 0) {
        MN_MPI(c, MPI_Comm_split(c->world, (int)(c->rank / c->coll->ranks_per_node), c->rank, &c->intra));
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
    if (c->nodes == 1) return MN_OK;
    /* The network legs' partners nearest first (mn_rsag.c) need the ranks
     * node by node; a launcher may place them round robin. Ranks of one
     * node share a key (their leader's rank) and keep their order. */
    int leader = c->rank;
    MN_MPI(c, MPI_Bcast(&leader, 1, MPI_INT, 0, c->intra));
    MN_MPI(c, MPI_Comm_split(c->world, 0, leader, &c->transport->by_node));
    return MN_OK;
}

/* Rank 0's MN_PIECE_BYTES, MN_RANKS_PER_NODE, MN_SHM and MN_NET_PIECE_BYTES
 * into v (0 where unset); it prints those set when report. */
static mn_status read_env(const mn_comm *c, long *v, int report)
{
    static const char *const names[] = {"MN_PIECE_BYTES", "MN_RANKS_PER_NODE", "MN_SHM", "MN_NET_PIECE_BYTES"};
    static const char *const want[] = {"an integer of at least 4", "a positive integer", "0 or 1",
                                       "an integer of at least 4"};
    static const long lo[] = {4, 1, 0, 4}, hi[] = {LONG_MAX, INT_MAX, 1, LONG_MAX};
    char said[320] = "";
    size_t len = 0;
    for (int i = 0; i < 4; ++i) {
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
    long v[5] = {0, 0, 0, 0, MN_OK};   /* piece bytes, ranks per node, shm off, network piece bytes, rank 0's status */
    if (c->rank == 0) v[4] = read_env(c, v, report);
    MN_MPI(c, MPI_Bcast(v, 5, MPI_LONG, 0, c->world));
    /* 1 MiB pieces (why: docs/benchmarks.md) */
    c->piece_floats = (size_t)(v[0] ? v[0] : 1 << 20) / sizeof(float);
    /* Across nodes a piece pays 2 log2(p) latencies (mn_rsag.c), so it grows
     * half a MiB per doubling of p past 4 ranks, keeping their share. */
    int log_p = 0;
    while ((2 << log_p) <= c->size) ++log_p;
    size_t net_bytes = (size_t)(log_p < 2 ? 2 : log_p) << 19;
    c->coll->net_piece_floats = v[3] ? (size_t)v[3] / sizeof(float) : v[0] ? c->piece_floats : net_bytes / sizeof(float);
    c->coll->ranks_per_node = v[1];
    c->transport->shm_off = (int)v[2];
    return (mn_status)v[4];
}

/* One allocation: the handle first (mn_comm_free frees it), then the state
 * it points to. */
typedef struct {
    mn_comm c;
    struct mn_coll coll;
    struct mn_transport transport;
} comm_block;

static mn_comm *create(MPI_Comm world, const mn_comm *like, mn_status *status)
{
    comm_block *b = calloc(1, sizeof *b);
    if (!b) { *status = MN_ERR_NOMEM; return NULL; }
    mn_comm *c = &b->c;
    c->coll = &b->coll;
    c->transport = &b->transport;
    MPI_Comm_dup(world, &c->world);
    MPI_Comm_rank(c->world, &c->rank);
    MPI_Comm_size(c->world, &c->size);
    if (gethostname(c->host, sizeof c->host - 1) != 0) strcpy(c->host, "?");
    c->transport->half_sum = MPI_OP_NULL;
    if (like) c->transport->gpu = like->transport->gpu;
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
    if (st == MN_OK) st = mn_comm_select(t, c->coll->ops->name);
    if (st == MN_OK) st = mn_comm_set_dtype(t, c->coll->half);
    *status = mn_agree(c, st);
    if (*status != MN_OK) {
        mn_comm_free(t);
        return NULL;
    }
    return t;
}

static mn_status setup_ops(mn_comm *c, const mn_comm_ops *ops);

static const mn_comm_ops *lookup(const char *name)
{
    for (int i = 0; i < NREG; ++i)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

static int is_auto(const char *name) { return !name || !*name || !strcmp(name, "auto"); }

const char *mn_comm_check_name(const char *name)
{
    if (is_auto(name) || lookup(name)) return NULL;
    return "is unknown";
}

/* The job's shape as the queries see it. Collective. */
static mn_status shape_of(mn_comm *c, mn_comm_shape *s)
{
    int even, per = c->intra_size;   /* the same on every rank where even */
    memset(s, 0, sizeof *s);
    MN_CHECK(mn_comm_layout(c, s->layout, sizeof s->layout, &even));
    s->ranks = c->size;
    s->nodes = c->nodes;
    s->per_node = even ? per : 0;
    if (even)
        snprintf(s->said, sizeof s->said, "%d node%s of %d rank%s", c->nodes, c->nodes > 1 ? "s" : "", per,
                 per > 1 ? "s" : "");
    else
        snprintf(s->said, sizeof s->said, "%d ranks on %d nodes of unequal size", c->size, c->nodes);
    s->gpu = *mn_gpu_placement(c);
    mn_gpu_out o;
    mn_gpu_select(&s->gpu, &o);
    s->device = o.device;
    s->own = o.own;
    return MN_OK;
}

static void ask(const mn_comm_ops *ops, const mn_comm_shape *s, mn_comm_answer *a)
{
    memset(a, 0, sizeof *a);
    if (ops->query) ops->query(s, a);
}

/* communicator=auto: the algorithm every rank accepts with the highest
 * priority (the first registered on a tie); no timing enters, so every rank
 * chooses the same. The reason names what each one ranked above it lacks. */
static mn_status choose_auto(mn_comm *c, const mn_comm_ops **ops, char *why, size_t cap)
{
    mn_comm_shape s;
    mn_comm_answer a[NREG];
    int agreed[NREG], best = 0;
    MN_CHECK(mn_agree(c, shape_of(c, &s)));
    for (int i = 0; i < NREG; ++i) {
        ask(registry[i], &s, &a[i]);
        agreed[i] = a[i].refused == MN_OK ? a[i].priority : -1;
    }
    MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, agreed, NREG, MPI_INT, MPI_MIN, c->world));
    for (int i = 1; i < NREG; ++i)
        if (agreed[i] > agreed[best]) best = i;
    *ops = registry[best];
    size_t n = (size_t)snprintf(why, cap, "%s", a[best].why);
    for (int i = 0; i < NREG; ++i)
        if (agreed[i] < 0 && a[i].needs && a[i].priority > a[best].priority && n < cap)
            n += (size_t)snprintf(why + n, cap - n, "; %s would need %s", registry[i]->name, a[i].needs);
    return MN_OK;
}

/* Whether every rank's shape accepts ops; the first rank that refuses says
 * why, and every rank gets its status. Collective. */
static mn_status accepted(mn_comm *c, const mn_comm_ops *ops)
{
    mn_comm_shape s;
    mn_comm_answer a;
    MN_CHECK(mn_agree(c, shape_of(c, &s)));
    ask(ops, &s, &a);
    if (mn_first_with(c, a.refused != MN_OK)) mn_error(c, "%s", a.why);
    return mn_agree(c, a.refused);
}

static mn_status select_named(mn_comm *c, const char *name)
{
    char why[sizeof c->coll->auto_why] = "";
    const mn_comm_ops *ops;
    if (is_auto(name)) MN_CHECK(choose_auto(c, &ops, why, sizeof why));
    else ops = lookup(name);
    if (!ops) {
        if (c->rank == 0)
            mn_error(c, "communicator '%s' %s; valid communicators: %s", name, mn_comm_check_name(name), mn_comm_names());
        return MN_ERR_USER;
    }
    mn_status s = mn_comm_select_ops(c, ops);
    if (s == MN_OK) memcpy(c->coll->auto_why, why, sizeof why);
    return s;
}

/* Setup is collective: under the guard, a rank that stalls in it ends the
 * job after the collective timeout. */
mn_status mn_comm_select(mn_comm *c, const char *name)
{
    mn_guard(c, "communicator setup");
    mn_status s = select_named(c, name);
    mn_unguard(c);
    return s;
}

/* The new algorithm is set up next to the old one; if any rank refuses it,
 * every rank tears down what it built and keeps the old one. */
mn_status mn_comm_select_ops(mn_comm *c, const mn_comm_ops *ops)
{
    if (ops == c->coll->ops) return MN_OK;
    mn_guard(c, "communicator setup");
    mn_status s = accepted(c, ops);
    if (s == MN_OK) s = setup_ops(c, ops);
    mn_unguard(c);
    return s;
}

static mn_status setup_ops(mn_comm *c, const mn_comm_ops *ops)
{
    const mn_comm_ops *old_ops = c->coll->ops;
    void *old_state = c->coll->state;
    int old_f32 = c->coll->device_f32, old_f16 = c->coll->device_f16;
    c->coll->ops = ops;
    c->coll->state = NULL;
    c->coll->device_f32 = c->coll->device_f16 = 0;
    mn_status s = mn_agree(c, ops->setup ? ops->setup(c) : MN_OK);
    void *new_state = c->coll->state;
    if (s != MN_OK) {
        if (ops->teardown) ops->teardown(c);
        c->coll->ops = old_ops;
        c->coll->state = old_state;
        c->coll->device_f32 = old_f32;
        c->coll->device_f16 = old_f16;
        return s;
    }
    if (old_ops && old_ops->teardown) {
        c->coll->state = old_state;
        old_ops->teardown(c);
    }
    c->coll->state = new_state;
    return MN_OK;
}

mn_status mn_comm_set_dtype(mn_comm *c, int half)
{
    if (half && c->transport->half_sum == MPI_OP_NULL) MN_CHECK(mn_half_op_create(c, &c->transport->half_sum));
    c->coll->half = half != 0;
    return MN_OK;
}

void mn_comm_free(mn_comm *c)
{
    if (!c) return;
    if (c->coll->ops && c->coll->ops->teardown) c->coll->ops->teardown(c);
    mn_comm_arena_release(c);
    if (c->intra != MPI_COMM_NULL && c->intra) MPI_Comm_free(&c->intra);
    if (c->inter != MPI_COMM_NULL && c->inter) MPI_Comm_free(&c->inter);
    if (c->transport->by_node != MPI_COMM_NULL && c->transport->by_node) MPI_Comm_free(&c->transport->by_node);
    if (c->world != MPI_COMM_NULL && c->world) MPI_Comm_free(&c->world);
    if (c->transport->half_sum != MPI_OP_NULL) MPI_Op_free(&c->transport->half_sum);
    free(c->coll->fused);
    free(c->transport->wire_tmp);
    free(c);
}

mn_status mn_comm_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    if (c->coll->ops->mean_grad) return c->coll->ops->mean_grad(c, arrays, lens, n);
    return mn_mean_by_pieces(c, arrays, lens, n, c->nodes > 1 ? c->coll->net_piece_floats : c->piece_floats, c->coll->ops->sum);
}

int mn_comm_rank(const mn_comm *c) { return c->rank; }
int mn_comm_size(const mn_comm *c) { return c->size; }
int mn_comm_intra_rank(const mn_comm *c) { return c->intra_rank; }
int mn_comm_intra_size(const mn_comm *c) { return c->intra_size; }
int mn_comm_inter_rank(const mn_comm *c) { return c->inter_rank; }
int mn_comm_inter_size(const mn_comm *c) { return c->inter_size; }
const char *mn_comm_name(const mn_comm *c) { return c->coll->ops->name; }
int mn_comm_half(const mn_comm *c) { return c->coll->half; }
int mn_comm_by_array(const mn_comm *c) { return c->coll->ops->mean_grad != NULL; }

/* Whether the algorithm's device paths take the dtype set now. */
static int device_dtype(const mn_comm *c) { return c->coll->half ? c->coll->device_f16 : c->coll->device_f32; }
int mn_comm_device_mean(const mn_comm *c) { return c->coll->ops->mean_grad_device && device_dtype(c); }
int mn_comm_device_packed(const mn_comm *c) { return c->coll->ops->mean_packed && device_dtype(c); }

mn_status mn_comm_mean_grad_device(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    return c->coll->ops->mean_grad_device(c, arrays, lens, n);
}

mn_status mn_comm_mean_packed(mn_comm *c, float *buf, size_t n) { return c->coll->ops->mean_packed(c, buf, n); }
void *mn_comm_device_stream(mn_comm *c) { return c->coll->ops->device_stream ? c->coll->ops->device_stream(c) : NULL; }
mn_status mn_comm_device_wait(mn_comm *c, const char *what) { return c->coll->ops->device_wait(c, what); }
const char *mn_comm_auto_why(const mn_comm *c) { return c->coll->auto_why; }
MPI_Comm mn_comm_world(const mn_comm *c) { return c->world; }
