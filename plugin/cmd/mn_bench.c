/* ./darknet_mn bench allreduce [cfg] [-iters K]: with a cfg, its whole
 * gradient in a training arena averaged by every communicator beside a bare
 * MPI_Allreduce of the same bytes; without, a size sweep in the manner of
 * nccl-tests. Each variant, in float32 and float16, shows the slowest
 * rank's median, min and max over K calls after two warm-up rounds,
 * variants interleaved in a fresh order each round, and busbw =
 * algbw*2(N-1)/N; `memcpy` is the reference of every rank copying the same
 * bytes at once. docs/benchmarks.md, "The allreduce on one node", reads the
 * figures. */
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "cmd/mn_cmd.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "transport/mn_shm.h"
#include "core/mn_watchdog.h"
#ifdef GPU
#include <cuda_runtime.h>
#endif

/* The guard of bench allreduce (per size) and bench replica (the run), in
 * seconds. */
#define BENCH_TIMEOUT 600
static const char *const algos[] = {"naive", "flat", "hierarchical", "two_dimensional", "single_node", "pure_nccl"};
#define MAX_VARIANTS 16

/* One timed variant: a name and its own communicator (variant 0: c itself,
 * for the bare MPI_Allreduce). */
typedef struct {
    char name[40];
    mn_comm *comm;
    mn_watchdog *wd;   /* "flat+watchdog": the training hook's arrival tokens and timer */
} variant;

static mn_status make_variants(mn_comm *c, variant *v, int *nv)
{
    snprintf(v[0].name, sizeof v[0].name, "mpi");
    v[0].comm = c;
    *nv = 1;
    for (size_t a = 0; a < sizeof algos / sizeof *algos; ++a) {
        for (int half = 0; half < 2 && *nv < MAX_VARIANTS; ++half) {
            mn_status s;
            mn_comm *x = mn_comm_create_like(c, &s);
            if (!x) return s;
            x->watch = c->watch;   /* its NCCL waits take the bench's deadline */
            if (mn_comm_select(x, algos[a]) != MN_OK) { mn_comm_free(x); break; }
            mn_comm_arena_borrow(x, c);
            MN_CHECK(mn_comm_set_dtype(x, half));
            snprintf(v[*nv].name, sizeof v[*nv].name, "%s%s", algos[a], half ? "/f16" : "");
            v[(*nv)++].comm = x;
        }
    }
    if (c->size > 1 && *nv < MAX_VARIANTS) {
        mn_status s;
        mn_comm *x = mn_comm_create_like(c, &s);
        if (!x) return s;
        v[*nv].comm = x;
        snprintf(v[*nv].name, sizeof v[*nv].name, "flat+watchdog");
        MN_CHECK(mn_comm_select(x, "flat"));
        mn_comm_arena_borrow(x, c);
        MN_CHECK(mn_watchdog_start(x, 300, &v[(*nv)++].wd));
    }
    return MN_OK;
}

static void free_variants(variant *v, int nv)
{
    for (int i = 1; i < nv; ++i) {
        mn_watchdog_stop(v[i].wd);
        mn_comm_free(v[i].comm);
    }
}

static void fill(float *p, size_t n, int rank)
{
    for (size_t i = 0; i < n; ++i) p[i] = (float)((i + (size_t)rank) % 7) - 3.0f;
}

/* One round's order: a fresh permutation, the same on every rank, so no
 * variant always follows the same one. */
static void shuffle(int *ord, int nv, unsigned *seed)
{
    for (int i = 0; i < nv; ++i) ord[i] = i;
    for (int i = nv - 1; i > 0; --i) {
        *seed = *seed * 1103515245u + 12345u;
        int j = (int)((*seed >> 8) % (unsigned)(i + 1)), x = ord[i];
        ord[i] = ord[j];
        ord[j] = x;
    }
}

/* The reference: every rank copies the same bytes at once between two
 * buffers of its own. An in-node allreduce moves at least 2(N-1)/N of its
 * bytes through each rank's memory, so at 2 ranks its busbw cannot beat
 * this copy's. */
typedef struct {
    unsigned char *src, *dst;
} copy_ref;

static mn_status copy_ref_alloc(mn_comm *c, size_t bytes, copy_ref *r)
{
    r->src = malloc(bytes);
    r->dst = malloc(bytes);
    if (!r->src || !r->dst) {
        mn_error(c, "out of memory for the %zu-byte memcpy reference", bytes);
        return MN_ERR_NOMEM;
    }
    memset(r->src, 1, bytes);
    memset(r->dst, 0, bytes);
    return MN_OK;
}

static void copy_ref_free(copy_ref *r)
{
    free(r->src);
    free(r->dst);
}

static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) ? 0 : u.ru_minflt;
}

/* One variant's figures: the slowest rank's min, median and max time per
 * call, and the most page faults of any rank per call. */
typedef struct {
    double min, med, max, faults;
} stats;

/* Times every variant and the memcpy reference on the same arrays, two
 * uncounted warm-up rounds first, each round in a fresh order. */
static mn_status time_all(mn_comm *c, const variant *vs, int nv, float **arrays, size_t *lens, int n,
                          int iters, const copy_ref *ref, stats *out)
{
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    int nr = nv + 1, ord[MAX_VARIANTS + 1];
    unsigned seed = 1;
    double *t = malloc(sizeof(double) * (size_t)iters * nr);
    double *f = calloc((size_t)nr, sizeof(double));
    if (!t || !f) { free(t); free(f); return MN_ERR_NOMEM; }
    mn_status s = MN_OK;
    for (int it = -2; it < iters && s == MN_OK; ++it) {
        shuffle(ord, nr, &seed);
        for (int k = 0; k < nr && s == MN_OK; ++k) {
            int v = ord[k];
            for (int i = 0; i < n; ++i) fill(arrays[i], lens[i], c->rank);
            MPI_Barrier(c->world);
            long f0 = minor_faults();
            double t0 = mn_now();
            if (v == nv) {
                memcpy(ref->dst, ref->src, total * sizeof(float));
            } else {
                mn_watchdog_enter(vs[v].wd, "bench allreduce", (size_t)(it + 2));
                s = v > 0 ? mn_comm_mean_grad(vs[v].comm, arrays, lens, n) : mn_sum_floats(c, c->world, arrays[0], total);
                mn_watchdog_leave(vs[v].wd);
            }
            if (it < 0) continue;
            t[v * iters + it] = mn_now() - t0;
            f[v] += (double)(minor_faults() - f0) / iters;
        }
    }
    if (s == MN_OK) MPI_Allreduce(MPI_IN_PLACE, t, iters * nr, MPI_DOUBLE, MPI_MAX, c->world);
    if (s == MN_OK) MPI_Allreduce(MPI_IN_PLACE, f, nr, MPI_DOUBLE, MPI_MAX, c->world);
    for (int v = 0; v < nr && s == MN_OK; ++v) {
        double *tv = t + v * iters;
        qsort(tv, (size_t)iters, sizeof(double), mn_cmp_double);
        out[v] = (stats){tv[0], tv[iters / 2], tv[iters - 1], f[v]};
    }
    free(t);
    free(f);
    return s;
}

/* x / y with 3 decimals, or "-" where y is 0. */
static const char *ratio(char *buf, size_t cap, double x, double y)
{
    if (y > 0) snprintf(buf, cap, "%.3f", x / y);
    else snprintf(buf, cap, "-");
    return buf;
}

static void row(const mn_comm *c, const char *name, size_t bytes, const stats *s, const stats *mpi, const stats *ref)
{
    if (c->rank != 0) return;
    char alg[32], bus[32], vm[32], vc[32];
    double bus_bytes = bytes * 2.0 * (c->size - 1) / c->size;
    printf("%-20s %12zu %10.1f %10.1f %10.1f %8s %8s %7s %7s %8.0f\n", name, bytes, s->med * 1e6, s->min * 1e6,
           s->max * 1e6, ratio(alg, sizeof alg, bytes / 1e9, s->med), ratio(bus, sizeof bus, bus_bytes / 1e9, s->med),
           ratio(vm, sizeof vm, s->med, mpi->med), ratio(vc, sizeof vc, s->med, ref->med), s->faults);
}

static void header(const mn_comm *c, int iters)
{
    if (c->rank != 0) return;
    printf("# time: the slowest rank's per call, median (min, max) of %d calls after 2 warm-up rounds, "
           "variants in a fresh order each round; faults: page faults per call\n", iters);
    printf("%-20s %12s %10s %10s %10s %8s %8s %7s %7s %8s\n", "algo", "bytes", "time_us", "min_us", "max_us", "algbw",
           "busbw", "vs_mpi", "vs_copy", "faults");
}

/* Every variant's row and the memcpy reference's, for one size. */
static void rows(const mn_comm *c, const variant *vs, int nv, size_t bytes, const stats *s)
{
    for (int v = 0; v < nv; ++v) row(c, vs[v].name, bytes, &s[v], &s[0], &s[nv]);
    row(c, "memcpy", bytes, &s[nv], &s[0], &s[nv]);
}

/* glibc maps large allocations fresh on every call and trims freed heap
 * tops, so a large bare MPI_Allreduce page-faults on every call, which a
 * training step in pieces never does; the bench keeps freed memory so that
 * its reference does not either. */
static void keep_freed_memory(void)
{
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

static mn_status bench_model(mn_comm *c, const char *cfg, int iters)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net, NULL));
    mn_options opt;
    mn_default_options(&opt);
    mn_optimizer *o;
    MN_CHECK(mn_attach(c, net, &opt, &o));
    /* The arena's arrays, in layer order, as the hook passes them. */
    int n = 0;
    float *arrays[4096];
    size_t lens[4096], total = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v) && n < 4096;)
        if (v.grad) { arrays[n] = v.grad; lens[n] = v.n; total += v.n; ++n; }
    if (c->rank == 0)
        printf("# model %s: %d gradient arrays, %zu floats (%.2f MiB), %d ranks, %d iterations\n",
               cfg, n, total, total * 4.0 / (1 << 20), c->size, iters);
    variant vs[MAX_VARIANTS];
    memset(vs, 0, sizeof vs);
    int nv;
    MN_CHECK(make_variants(c, vs, &nv));
    header(c, iters);
    stats t[MAX_VARIANTS + 1];
    copy_ref ref = {NULL, NULL};
    mn_status s = copy_ref_alloc(c, total * sizeof(float), &ref);
    mn_guard(c, "bench allreduce");
    if (mn_agree(c, s) == MN_OK) s = time_all(c, vs, nv, arrays, lens, n, iters, &ref, t);
    mn_unguard(c);
    if (s == MN_OK) rows(c, vs, nv, total * sizeof(float), t);
    copy_ref_free(&ref);
    free_variants(vs, nv);
    mn_detach(net, o);
    mn_base_free(net);
    return s;
}

static mn_status bench_sweep(mn_comm *c, int iters, size_t max_bytes)
{
    float *buf;
    MN_CHECK(mn_comm_arena_alloc(c, max_bytes / sizeof(float), &buf));
    variant vs[MAX_VARIANTS];
    memset(vs, 0, sizeof vs);
    int nv;
    MN_CHECK(make_variants(c, vs, &nv));
    copy_ref ref = {NULL, NULL};
    mn_status s = mn_agree(c, copy_ref_alloc(c, max_bytes, &ref));
    if (c->rank == 0 && s == MN_OK)
        printf("# size sweep, %d ranks on %d nodes, %d iterations per size (a fifth from 64 MiB)\n", c->size, c->nodes, iters);
    if (s == MN_OK) header(c, iters);
    for (size_t bytes = 4; s == MN_OK && bytes <= max_bytes; bytes *= 4) {
        size_t n = bytes / 4;
        int k = bytes >= (64u << 20) ? (iters + 4) / 5 : iters;
        stats t[MAX_VARIANTS + 1];
        mn_guard(c, "bench allreduce");
        s = time_all(c, vs, nv, &buf, &n, 1, k, &ref, t);
        mn_unguard(c);
        if (s == MN_OK) rows(c, vs, nv, bytes, t);
    }
    copy_ref_free(&ref);
    free_variants(vs, nv);
    mn_comm_arena_free(c, buf);
    return s;
}

mn_status mn_bench_allreduce(mn_comm *c, int argc, char **argv)
{
    long iters = 20, max_bytes = 256L << 20;
    const char *cfg = NULL, *bad = NULL;
    for (int i = 3; i < argc && !bad; ++i) {
        long *num = !strcmp(argv[i], "-iters") ? &iters : !strcmp(argv[i], "-max") ? &max_bytes : NULL;
        /* -iters 1..1000000; -max 4 B .. 4 GiB */
        long lo = num == &iters ? 1 : 4, hi = num == &iters ? 1000000 : 4L << 30;
        char *end;
        if (num && i + 1 < argc) {
            *num = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || *num < lo || *num > hi) bad = argv[i - 1];
        } else if (!strcmp(argv[i], "-nogpu")) {
            continue;   /* main's */
        } else if (num || argv[i][0] == '-' || cfg) bad = argv[i];
        else cfg = argv[i];
    }
    if (bad) {
        if (c->rank == 0)
            mn_error(c, "bench allreduce: bad argument at '%s'; usage: bench allreduce [cfg] [-iters 1..1000000] "
                     "[-max BYTES, 4..%ld]", bad, 4L << 30);
        return mn_agree(c, MN_ERR_USER);
    }
    keep_freed_memory();
    mn_status s = mn_agree(c, mn_watchdog_open(c, BENCH_TIMEOUT));
    if (s == MN_OK) s = mn_agree(c, cfg ? bench_model(c, cfg, (int)iters) : bench_sweep(c, (int)iters, (size_t)max_bytes));
    mn_watchdog_close(c);
    return s;
}

/* ./darknet_mn bench replica <cfg> [-iters K]: what the replica check costs
 * against a gradient allreduce, on the cfg's model with its optimizer
 * attached: K of each interleaved, the slowest rank's median of each and
 * their ratio. */
static double median_of_slowest(mn_comm *c, double *t, int k)
{
    qsort(t, (size_t)k, sizeof *t, mn_cmp_double);
    double m = t[k / 2];
    MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, c->world);
    return m;
}

static mn_status run(mn_comm *c, const char *cfg, int iters)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net, NULL));
    mn_options opt;
    mn_default_options(&opt);
    opt.collective_timeout = 0;
    mn_optimizer *o;
    mn_status s = mn_attach(c, net, &opt, &o);
    if (s != MN_OK) { mn_base_free(net); return s; }
    size_t total = 0, nparams = mn_params_count(net);
    float *arena = mn_optimizer_arena(o, &total);
    double *tc = calloc((size_t)iters + 2, sizeof *tc), *ta = calloc((size_t)iters + 2, sizeof *ta);
    s = mn_agree(c, tc && ta ? MN_OK : MN_ERR_NOMEM);
    for (int i = -2; s == MN_OK && i < iters; ++i) {   /* two warm-ups */
        MPI_Barrier(c->world);
        double t0 = mn_now();
        s = mn_replica_check(c, net, o, 0, 0, NULL);
        double t1 = mn_now();
        MPI_Barrier(c->world);
        double t2 = mn_now();
        if (s == MN_OK) s = mn_comm_mean_grad(c, &arena, &total, 1);
        double t3 = mn_now();
        if (i >= 0) { tc[i] = t1 - t0; ta[i] = t3 - t2; }
    }
    if (s == MN_OK) {
        double check = median_of_slowest(c, tc, iters), mean = median_of_slowest(c, ta, iters);
        double bytes = (double)(nparams + total) * sizeof(float);
        if (c->rank == 0) {
            printf("# model %s: %zu parameters and statistics, %zu momentum floats; %d ranks, %s, %d iterations\n",
                   cfg, nparams, total, c->size, mn_comm_name(c), iters);
            printf("%-18s %10s %10s %12s\n", "what", "time_ms", "MiB", "GB/s");
            printf("%-18s %10.3f %10.2f %12.2f\n", "replica check", check * 1e3, bytes / 1048576, bytes / check / 1e9);
            if (c->size > 1) {   /* one rank has nothing to average */
                printf("%-18s %10.3f %10.2f %12.2f\n", "gradient mean", mean * 1e3, total * 4.0 / 1048576, total * 4.0 / mean / 1e9);
                printf("# the check costs %.2f gradient allreduces; once per save (backup_interval=100): "
                       "%.4f of one per iteration\n", check / mean, check / mean / 100);
            }
        }
    }
    free(tc);
    free(ta);
    mn_detach(net, o);
    mn_base_free(net);
    return s;
}

mn_status mn_bench_replica(mn_comm *c, int argc, char **argv)
{
    int iters = 10;
    const char *cfg = NULL;
    for (int i = 3; i < argc; ++i) {
        if (!strcmp(argv[i], "-iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "-nogpu")) cfg = argv[i];
    }
    if (!cfg || iters < 1) {
        if (c->rank == 0) mn_error(c, "usage: bench replica <cfg> [-iters K] (K >= 1)");
        return MN_ERR_USER;
    }
    mn_status s = mn_agree(c, mn_watchdog_open(c, BENCH_TIMEOUT));
    mn_guard(c, "bench replica");
    if (s == MN_OK) s = mn_agree(c, run(c, cfg, iters));
    mn_unguard(c);
    mn_watchdog_close(c);
    return s;
}

/* ./darknet_mn bench step <cfg> [-iters K] [-batch N] [-layers]: one rank's
 * forward, backward and update times apart, medians of K after one warm-up,
 * on constant input with zero truth and no allreduce, in wall and CPU time
 * (the compute on a shared machine). It feeds bench/scale_model.py. -layers
 * adds each layer's times and GFLOP/s against this core's single-thread
 * sgemm. */
static void sync_device(const mn_comm *c)
{
#ifdef GPU
    if (mn_base_gpu() < 0) return;
    cudaError_t e = cudaDeviceSynchronize();   /* the passes launch asynchronously */
    if (e != cudaSuccess) mn_abort(c, "bench step: the device failed: %s", cudaGetErrorString(e));
#else
    (void)c;
#endif
}

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* -layers: layer i's time runs from the previous hook (or the pass's start)
 * to its own, so Darknet's work between layers counts to the layer it is
 * for. */
typedef struct {
    int n, it;
    double last;
    double *fwd, *bwd;   /* [iteration * n + layer] */
} layer_clock;

static void layer_forward(network *net, int i)
{
    layer_clock *k = mn_net_hook_arg(net);
    double now = mn_now();
    if (k->it >= 0) k->fwd[k->it * k->n + i] = now - k->last;
    k->last = now;
}

static void layer_backward(network *net, int i)
{
    layer_clock *k = mn_net_hook_arg(net);
    double now = mn_now();
    if (k->it >= 0 && i < k->n) k->bwd[k->it * k->n + i] = now - k->last;
    k->last = now;
}

static double median_of(double *t, int n, int stride)
{
    double v[n];
    for (int k = 0; k < n; ++k) v[k] = t[k * stride];
    qsort(v, (size_t)n, sizeof *v, mn_cmp_double);
    return v[n / 2];
}

/* Rank 0's -layers table: a layer's backward multiply-adds are twice its
 * forward's, once for layer 0 (no input gradient). */
static void print_layers(const network *net, const layer_clock *k, int iters, int batch, double sgemm)
{
    double f_all = 0, b_all = 0, flop_all = 0;
    printf("# per layer, medians of %d iterations, wall ms; GFLOP/s where the layer multiplies\n", iters);
    printf("# %3s %-16s %-14s %10s %10s %8s %10s %10s\n", "i", "layer", "output", "fwd ms", "bwd ms", "GFLOP",
           "fwd GF/s", "bwd GF/s");
    for (int i = 0; i < k->n; ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        double f = median_of(k->fwd + i, iters, k->n), b = median_of(k->bwd + i, iters, k->n);
        double ff = l.flops * batch, bf = ff * (i ? 2 : 1);
        char out[32];
        snprintf(out, sizeof out, "%dx%dx%d", l.out_w, l.out_h, l.out_w * l.out_h > 0 ? l.outputs / (l.out_w * l.out_h) : 0);
        printf("layer %3d %-16s %-14s %10.3f %10.3f %8.3f", i, l.name, out, f * 1e3, b * 1e3, ff / 1e9);
        if (ff > 0) printf(" %10.1f %10.1f\n", f > 0 ? ff / f / 1e9 : 0, b > 0 ? bf / b / 1e9 : 0);
        else printf(" %10s %10s\n", "-", "-");
        f_all += f, b_all += b, flop_all += ff + bf;
    }
    double gf = flop_all / (f_all + b_all) / 1e9;
    printf("layers forward_s=%.6f backward_s=%.6f gflop=%.3f gflops=%.1f", f_all, b_all, flop_all / 1e9, gf);
    if (sgemm > 0)
        printf(" sgemm_gflops=%.1f fraction=%.2f\n# the passes ran at %.0f%% of this core's single-thread sgemm "
               "(1024^3, timed in this run)\n", sgemm, gf / sgemm, 100 * gf / sgemm);
    else printf("\n# no sgemm reference: built without OpenBLAS (BLAS=0)\n");
}

static mn_status step(mn_comm *c, const char *cfg, int iters, int batch, int per_layer)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net, NULL));
    int cfg_batch = mn_net_get(net).batch;
    mn_status s = MN_OK;
    if (batch > cfg_batch) {
        if (c->rank == 0)
            mn_error(c, "bench step: -batch %d is more than %s's batch/subdivisions (%d)", batch, cfg, cfg_batch);
        s = MN_ERR_USER;
    }
    if (s == MN_OK && batch) mn_base_set_batch(net, batch);
    if (s == MN_OK && per_layer && mn_base_gpu() >= 0) {
        if (c->rank == 0)
            mn_error(c, "bench step -layers: per-layer times are of CPU passes; run it with -nogpu");
        s = MN_ERR_USER;
    }
    layer_clock clock = {.n = mn_net_layers(net)};
    if (per_layer) {
        clock.fwd = calloc((size_t)iters * clock.n, sizeof(double));
        clock.bwd = calloc((size_t)iters * clock.n, sizeof(double));
        if (!clock.fwd || !clock.bwd) s = MN_ERR_NOMEM;
        mn_net_hooks h = {.ranks = 1, .forward = layer_forward, .backward = layer_backward, .arg = &clock};
        mn_net_set_hooks(net, &h);
    }
    size_t floats = 0;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v);) floats += v.grad ? v.n : 0;
    mn_net_info in = mn_net_get(net);   /* after mn_base_set_batch */
    float *input = malloc(sizeof(float) * (size_t)in.inputs * in.batch);
    for (int i = 0; input && i < in.inputs * in.batch; ++i) input[i] = (float)(i % 255) / 255.0f;
    /* t: wall seconds of forward, backward, update, then the same in this
     * thread's CPU time, which other jobs on the core do not inflate. */
    double *t = calloc(6 * (size_t)iters, sizeof *t);
    if (!t || !input) s = MN_ERR_NOMEM;
    for (int it = -1; s == MN_OK && it < iters; ++it) {
        double w[4], u[4];
        mn_net_set_train(net, 1);
        clock.it = it;
        w[0] = clock.last = mn_now(), u[0] = thread_cpu_now();
        if (mn_base_forward(net, input)) {
            if (c->rank == 0)
                mn_error(c, "bench step %s: %s runs no pass alone on a GPU; pjreddie's base does (make GPU=1)", cfg,
                         mn_base_name());
            s = MN_ERR_UNAVAILABLE;
            break;
        }
        sync_device(c);
        w[1] = mn_now(), u[1] = thread_cpu_now();
        mn_base_backward(net, input);
        sync_device(c);
        w[2] = mn_now(), u[2] = thread_cpu_now();
        mn_base_update(net);
        sync_device(c);
        w[3] = mn_now(), u[3] = thread_cpu_now();
        for (int k = 0; k < 3 && it >= 0; ++k) {
            t[k * iters + it] = w[k + 1] - w[k];
            t[(3 + k) * iters + it] = u[k + 1] - u[k];
        }
    }
    if (s == MN_OK && c->rank == 0) {
        double med[6];
        for (int k = 0; k < 6; ++k) med[k] = median_of(t + k * iters, iters, 1);
        printf("# model %s: %zu gradient floats (%.2f MiB); batch %d per pass (cfg: batch/subdivisions %d, "
               "subdivisions %d), %d iterations, medians; wall and this thread's CPU seconds\n", cfg, floats,
               floats * 4.0 / 1048576, in.batch, cfg_batch, in.subdivisions, iters);
        printf("step cfg=%s grad_floats=%zu batch=%d cfg_batch=%d subdivisions=%d forward_s=%.6f backward_s=%.6f "
               "update_s=%.6f forward_cpu_s=%.6f backward_cpu_s=%.6f update_cpu_s=%.6f\n", cfg, floats, in.batch,
               cfg_batch, in.subdivisions, med[0], med[1], med[2], med[3], med[4], med[5]);
        if (per_layer) print_layers(net, &clock, iters, in.batch, mn_blas_sgemm_gflops());
    }
    free(clock.fwd);
    free(clock.bwd);
    free(t);
    free(input);
    mn_base_free(net);
    return s;
}

mn_status mn_bench_step(mn_comm *c, int argc, char **argv)
{
    long iters = 5, batch = 0;
    int per_layer = 0;
    const char *cfg = NULL, *bad = NULL;
    for (int i = 3; i < argc && !bad; ++i) {
        long *num = !strcmp(argv[i], "-iters") ? &iters : !strcmp(argv[i], "-batch") ? &batch : NULL;
        char *end;
        if (num && i + 1 < argc) {
            *num = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || *num < 1 || *num > 100000) bad = argv[i - 1];
        } else if (!strcmp(argv[i], "-nogpu")) {
            continue;   /* main's */
        } else if (!strcmp(argv[i], "-layers")) {
            per_layer = 1;
        } else if (num || argv[i][0] == '-' || cfg) bad = argv[i];
        else cfg = argv[i];
    }
    if (bad || !cfg) {
        if (c->rank == 0)
            mn_error(c, "bench step: bad argument at '%s'; usage: bench step <cfg> [-iters 1..100000] [-batch 1..100000] "
                     "[-layers]",
                     bad ? bad : "(no cfg)");
        return mn_agree(c, MN_ERR_USER);
    }
    return mn_agree(c, step(c, cfg, (int)iters, (int)batch, per_layer));
}
