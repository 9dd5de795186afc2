/* Communicator registry, topology and the collectives every algorithm shares. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mn_internal.h"

/* The registry: the only global state, and it is constant. */
static const mn_comm_ops *const registry[] = {
    &mn_comm_naive_ops,
    &mn_comm_flat_ops,
};
#define NREG ((int)(sizeof(registry) / sizeof(registry[0])))
/* Algorithms ChainerMN offers that are not built yet: named in errors. */
static const char *const planned[] = {"hierarchical", "two_dimensional", "single_node", "pure_nccl"};

const char *mn_comm_names(void)
{
    return "naive, flat";
}

void mn_error(const mn_comm *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c) fprintf(stderr, "darknet-mn: rank %d (%s): %s\n", c->rank, c->host, msg);
    else fprintf(stderr, "darknet-mn: %s\n", msg);
    fflush(stderr);
}

void mn_abort(const mn_comm *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mn_error(c, "fatal: %s", msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
    abort();
}

mn_status mn_agree(mn_comm *c, mn_status mine)
{
    int in = (int)mine, out = 0;
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, c->world) != MPI_SUCCESS)
        mn_abort(c, "MPI_Allreduce failed while agreeing on a status");
    return (mn_status)out;
}

/* Ranks per node can be forced with MN_RANKS_PER_NODE=k (ranks r with the same
 * r/k form a node), so that one machine can test multi-node algorithms. */
static mn_status split_nodes(mn_comm *c)
{
    const char *forced = getenv("MN_RANKS_PER_NODE");
    if (forced && *forced) {
        char *end;
        long k = strtol(forced, &end, 10);
        if (*end || k < 1) {
            if (c->rank == 0) mn_error(c, "MN_RANKS_PER_NODE='%s' is not a positive integer", forced);
            return MN_ERR_USER;
        }
        MN_MPI(c, MPI_Comm_split(c->world, (int)(c->rank / k), c->rank, &c->intra));
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

mn_comm *mn_comm_create(MPI_Comm world, mn_status *status)
{
    mn_comm *c = calloc(1, sizeof *c);
    if (!c) { *status = MN_ERR_NOMEM; return NULL; }
    MPI_Comm_dup(world, &c->world);
    MPI_Comm_rank(c->world, &c->rank);
    MPI_Comm_size(c->world, &c->size);
    if (gethostname(c->host, sizeof c->host - 1) != 0) strcpy(c->host, "?");
    /* 1 MiB pieces measured best-or-near on 2-rank shared memory (bench/results);
       MN_PIECE_BYTES overrides it for tuning on other fabrics. */
    const char *pb = getenv("MN_PIECE_BYTES");
    long bytes = pb ? atol(pb) : 0;
    c->piece_floats = (size_t)(bytes >= 4 ? bytes : 1 << 20) / sizeof(float);
    mn_status s = mn_agree(c, split_nodes(c));
    if (s == MN_OK) s = mn_comm_select(c, "");
    *status = s;
    if (s != MN_OK) { mn_comm_free(c); return NULL; }
    return c;
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
    for (size_t i = 0; i < sizeof planned / sizeof planned[0]; ++i)
        if (strcmp(planned[i], name) == 0) return "is not available in this version";
    return "is unknown";
}

mn_status mn_comm_select(mn_comm *c, const char *name)
{
    if (!name || !*name) name = "flat";
    const mn_comm_ops *ops = lookup(name);
    if (!ops) {
        if (c->rank == 0)
            mn_error(c, "communicator '%s' %s; valid communicators: %s", name, mn_comm_check_name(name), mn_comm_names());
        return MN_ERR_USER;
    }
    if (c->ops && c->ops->teardown) c->ops->teardown(c);
    c->ops = ops;
    c->state = NULL;
    return mn_agree(c, ops->setup ? ops->setup(c) : MN_OK);
}

void mn_comm_free(mn_comm *c)
{
    if (!c) return;
    if (c->ops && c->ops->teardown) c->ops->teardown(c);
    if (c->intra != MPI_COMM_NULL && c->intra) MPI_Comm_free(&c->intra);
    if (c->inter != MPI_COMM_NULL && c->inter) MPI_Comm_free(&c->inter);
    if (c->world != MPI_COMM_NULL && c->world) MPI_Comm_free(&c->world);
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

void mn_div_floats(float *p, size_t n, float d)
{
    if (d == 1.0f) return;
    for (size_t i = 0; i < n; ++i) p[i] /= d;
}

mn_status mn_comm_mean_grad(mn_comm *c, float **arrays, const size_t *lens, int n)
{
    return c->ops->mean_grad(c, arrays, lens, n);
}

int mn_comm_rank(const mn_comm *c) { return c->rank; }
int mn_comm_size(const mn_comm *c) { return c->size; }
int mn_comm_intra_rank(const mn_comm *c) { return c->intra_rank; }
int mn_comm_intra_size(const mn_comm *c) { return c->intra_size; }
int mn_comm_inter_rank(const mn_comm *c) { return c->inter_rank; }
int mn_comm_inter_size(const mn_comm *c) { return c->inter_size; }
const char *mn_comm_name(const mn_comm *c) { return c->ops->name; }
MPI_Comm mn_comm_world(const mn_comm *c) { return c->world; }
