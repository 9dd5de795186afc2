/* ./darknet_mn bench allreduce [cfg] [-iters K]
 *
 * With a cfg: the full gradient of that model (its update arrays, in the
 * optimizer's arena) is averaged by every communicator, next to a bare
 * MPI_Allreduce of the same bytes, in the same run. Without a cfg: a size
 * sweep, 4 B .. 256 MiB, in the manner of nccl-tests. Times are the slowest
 * rank's median over K calls after two warm-ups, variants interleaved; busbw = algbw*2(N-1)/N.
 * Every algorithm runs in float32 and in float16 ("<name>/f16"; bytes and
 * bandwidths still count the float32 gradient, so they show the effective
 * rate); one that this node layout or build refuses is left out, after its
 * setup has said why. The buffer is a gradient arena as training has one
 * (mn_comm_arena_alloc: in a node-shared window where there is one), shared
 * by every variant, the bare MPI_Allreduce included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mn_internal.h"
#include "mn_replica.h"

static const char *const algos[] = {"naive", "flat", "hierarchical", "two_dimensional", "single_node", "pure_nccl"};
#define MAX_VARIANTS 16

/* One timed variant: a name and a communicator of its own (variant 0: c itself,
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times the bare MPI_Allreduce (variant 0) and every algorithm (1..) on the
 * same arrays, interleaved call by call so that machine noise hits them all
 * alike. out[v] = the slowest rank's median seconds per call. */
static mn_status time_all(mn_comm *c, const variant *vs, int nv, float **arrays, size_t *lens, int n,
                          int iters, double *out)
{
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += lens[i];
    double *t = malloc(sizeof(double) * (size_t)iters * nv);
    if (!t) return MN_ERR_NOMEM;
    for (int it = -2; it < iters; ++it) {
        for (int v = 0; v < nv; ++v) {
            for (int i = 0; i < n; ++i) fill(arrays[i], lens[i], c->rank);
            MPI_Barrier(c->world);
            double t0 = mn_now();
            mn_watchdog_enter(vs[v].wd, "bench allreduce", (size_t)(it + 2));
            if (v > 0) MN_CHECK(mn_comm_mean_grad(vs[v].comm, arrays, lens, n));
            else MN_CHECK(mn_sum_floats(c, c->world, arrays[0], total));
            mn_watchdog_leave(vs[v].wd);
            if (it >= 0) t[v * iters + it] = mn_now() - t0;
        }
    }
    for (int v = 0; v < nv; ++v) {
        qsort(t + v * iters, (size_t)iters, sizeof(double), cmp_double);
        out[v] = t[v * iters + iters / 2];
    }
    MPI_Allreduce(MPI_IN_PLACE, out, nv, MPI_DOUBLE, MPI_MAX, c->world);
    free(t);
    return MN_OK;
}

static void row(const mn_comm *c, const char *name, size_t bytes, double t, double base)
{
    if (c->rank != 0) return;
    double alg = bytes / t / 1e9, bus = alg * 2.0 * (c->size - 1) / c->size;
    printf("%-20s %12zu %10.1f %8.3f %8.3f %7.3f\n", name, bytes, t * 1e6, alg, bus, base > 0 ? t / base : 1.0);
}

static void header(const mn_comm *c)
{
    if (c->rank == 0)
        printf("%-20s %12s %10s %8s %8s %7s\n", "algo", "bytes", "time_us", "algbw", "busbw", "vs_mpi");
}

static mn_status bench_model(mn_comm *c, const char *cfg, int iters)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net));
    mn_options opt;
    mn_default_options(&opt);
    mn_optimizer *o;
    MN_CHECK(mn_attach(c, net, &opt, &o));
    /* The arena's arrays, in layer order, as the hook passes them. */
    int n = 0;
    float *arrays[4096];
    size_t lens[4096], total = 0;
    for (int i = 0; i < net->n; ++i) {
        layer *l = &net->layers[i];
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(l, p, MN_MAX_LAYER_PARAMS);
        for (int j = 0; j < k && n < 4096; ++j)
            if (p[j].grad) { arrays[n] = p[j].grad; lens[n] = p[j].n; total += p[j].n; ++n; }
    }
    if (c->rank == 0)
        printf("# model %s: %d gradient arrays, %zu floats (%.2f MiB), %d ranks, %d iterations\n",
               cfg, n, total, total * 4.0 / (1 << 20), c->size, iters);
    variant vs[MAX_VARIANTS];
    memset(vs, 0, sizeof vs);
    int nv;
    MN_CHECK(make_variants(c, vs, &nv));
    header(c);
    double t[MAX_VARIANTS];
    MN_CHECK(time_all(c, vs, nv, arrays, lens, n, iters, t));
    for (int v = 0; v < nv; ++v) row(c, vs[v].name, total * 4, t[v], t[0]);
    free_variants(vs, nv);
    mn_detach(net, o);
    mn_base_free(net);
    return MN_OK;
}

static mn_status bench_sweep(mn_comm *c, int iters, size_t max_bytes)
{
    float *buf;
    MN_CHECK(mn_comm_arena_alloc(c, max_bytes / sizeof(float), &buf));
    variant vs[MAX_VARIANTS];
    memset(vs, 0, sizeof vs);
    int nv;
    MN_CHECK(make_variants(c, vs, &nv));
    if (c->rank == 0) printf("# size sweep, %d ranks on %d nodes, %d iterations per size\n", c->size, c->nodes, iters);
    header(c);
    for (size_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
        size_t n = bytes / 4;
        int k = bytes >= (64u << 20) ? (iters + 4) / 5 : iters;
        double t[MAX_VARIANTS];
        MN_CHECK(time_all(c, vs, nv, &buf, &n, 1, k, t));
        for (int v = 0; v < nv; ++v) row(c, vs[v].name, bytes, t[v], t[0]);
    }
    free_variants(vs, nv);
    mn_comm_arena_free(c, buf);
    return MN_OK;
}

mn_status mn_bench_allreduce(mn_comm *c, int argc, char **argv)
{
    long iters = 20, max_bytes = 256L << 20;
    const char *cfg = NULL, *bad = NULL;
    for (int i = 3; i < argc && !bad; ++i) {
        long *num = !strcmp(argv[i], "-iters") ? &iters : !strcmp(argv[i], "-max") ? &max_bytes : NULL;
        /* -iters 1..1000000; -max 4 B (the sweep's first size) .. 4 GiB */
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
    return mn_agree(c, cfg ? bench_model(c, cfg, (int)iters) : bench_sweep(c, (int)iters, (size_t)max_bytes));
}

/* ./darknet_mn bench replica <cfg> [-iters K]: what the replica check costs.
 * On the cfg's model with its optimizer attached (so the momentum arena is
 * hashed too), K checks and K gradient allreduces (the job's communicator)
 * interleaved; the slowest rank's median of each, and their ratio. A check
 * runs once per save (backup_interval, 100 by default), the allreduce once
 * per iteration. */
static double median_of_slowest(mn_comm *c, double *t, int k)
{
    qsort(t, (size_t)k, sizeof *t, cmp_double);
    double m = t[k / 2];
    MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, c->world);
    return m;
}

static mn_status run(mn_comm *c, const char *cfg, int iters)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net));
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
    return mn_agree(c, run(c, cfg, iters));
}

/* ./darknet_mn bench step <cfg> [-iters K] [-batch N]: one rank's compute per
 * forward/backward pass, the scale model's input (bench/scale_model.py).
 * Forward, backward and update timed apart (the backward share bounds what
 * an overlapped allreduce can hide), medians of K after one warm-up, on
 * constant input with zero truth (detection layers see no objects). N
 * images per pass, at most the cfg's batch/subdivisions (a slow CPU can
 * time yolov3 one image at a time). No allreduce: the hook is not attached.
 * Wall and CPU times both: on a shared machine the CPU time is the compute. */
#ifdef MN_BASE_ALEXEYAB
/* The passes below are pjreddie's calls; the fork's take a network_state. */
static mn_status step(mn_comm *c, const char *cfg, int iters, int batch)
{
    (void)iters;
    (void)batch;
    if (c->rank == 0) mn_error(c, "bench step %s: available in the pjreddie build only (make, not make DARKNET=alexeyab)", cfg);
    return MN_ERR_UNAVAILABLE;
}
#else
static void sync_device(void)
{
#ifdef GPU
    if (gpu_index >= 0) cudaDeviceSynchronize();   /* the passes launch asynchronously */
#endif
}

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static mn_status step(mn_comm *c, const char *cfg, int iters, int batch)
{
    network *net;
    MN_CHECK(mn_load_network(c, cfg, NULL, 0, &net));
    int cfg_batch = net->batch;
    mn_status s = MN_OK;
    if (batch > cfg_batch) {
        if (c->rank == 0)
            mn_error(c, "bench step: -batch %d is more than %s's batch/subdivisions (%d)", batch, cfg, cfg_batch);
        s = MN_ERR_USER;
    }
    if (s == MN_OK && batch) set_batch_network(net, batch);
    size_t floats = 0;
    for (int i = 0; i < net->n; ++i) {
        mn_param p[MN_MAX_LAYER_PARAMS];
        int k = mn_layer_params(&net->layers[i], p, MN_MAX_LAYER_PARAMS);
        for (int j = 0; j < k; ++j) floats += p[j].grad ? p[j].n : 0;
    }
    for (int i = 0; i < net->inputs * net->batch; ++i) net->input[i] = (float)(i % 255) / 255.0f;
    /* t: wall seconds of forward, backward, update; then the same in this
     * thread's CPU time, which other jobs sharing the core do not inflate. */
    double *t = calloc(6 * (size_t)iters, sizeof *t);
    if (!t) s = MN_ERR_NOMEM;
    for (int it = -1; s == MN_OK && it < iters; ++it) {
        double w[4], u[4];
        w[0] = mn_now(), u[0] = thread_cpu_now();
        net->train = 1;
        forward_network(net);
        sync_device();
        w[1] = mn_now(), u[1] = thread_cpu_now();
        backward_network(net);
        sync_device();
        w[2] = mn_now(), u[2] = thread_cpu_now();
        update_network(net);
        sync_device();
        w[3] = mn_now(), u[3] = thread_cpu_now();
        for (int k = 0; k < 3 && it >= 0; ++k) {
            t[k * iters + it] = w[k + 1] - w[k];
            t[(3 + k) * iters + it] = u[k + 1] - u[k];
        }
    }
    if (s == MN_OK && c->rank == 0) {
        double med[6];
        for (int k = 0; k < 6; ++k) {
            qsort(t + k * iters, (size_t)iters, sizeof *t, cmp_double);
            med[k] = t[k * iters + iters / 2];
        }
        printf("# model %s: %zu gradient floats (%.2f MiB); batch %d per pass (cfg: batch/subdivisions %d, "
               "subdivisions %d), %d iterations, medians; wall and this thread's CPU seconds\n", cfg, floats,
               floats * 4.0 / 1048576, net->batch, cfg_batch, net->subdivisions, iters);
        printf("step cfg=%s grad_floats=%zu batch=%d cfg_batch=%d subdivisions=%d forward_s=%.6f backward_s=%.6f "
               "update_s=%.6f forward_cpu_s=%.6f backward_cpu_s=%.6f update_cpu_s=%.6f\n", cfg, floats, net->batch,
               cfg_batch, net->subdivisions, med[0], med[1], med[2], med[3], med[4], med[5]);
    }
    free(t);
    mn_base_free(net);
    return s;
}
#endif

mn_status mn_bench_step(mn_comm *c, int argc, char **argv)
{
    long iters = 5, batch = 0;
    const char *cfg = NULL, *bad = NULL;
    for (int i = 3; i < argc && !bad; ++i) {
        long *num = !strcmp(argv[i], "-iters") ? &iters : !strcmp(argv[i], "-batch") ? &batch : NULL;
        char *end;
        if (num && i + 1 < argc) {
            *num = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || *num < 1 || *num > 100000) bad = argv[i - 1];
        } else if (!strcmp(argv[i], "-nogpu")) {
            continue;   /* main's */
        } else if (num || argv[i][0] == '-' || cfg) bad = argv[i];
        else cfg = argv[i];
    }
    if (bad || !cfg) {
        if (c->rank == 0)
            mn_error(c, "bench step: bad argument at '%s'; usage: bench step <cfg> [-iters 1..100000] [-batch 1..100000]",
                     bad ? bad : "(no cfg)");
        return mn_agree(c, MN_ERR_USER);
    }
    return mn_agree(c, step(c, cfg, (int)iters, (int)batch));
}
