/* The communicators on a simulated cluster (SimGrid's SMPI, bench/sim/sim.mk).
 *
 * What it measures: the time one gradient average takes, as the slowest
 * rank sees it, on the cluster the platform file describes. Every rank holds
 * one gradient of -floats float32 (carved into -arrays back-to-back arrays,
 * as the optimizer's arena holds them, or allocated apart with -scattered);
 * for each variant named by -comms it calls mn_comm_mean_grad (the plugin's
 * own code, unmodified, built with smpicc) after a barrier, once uncounted,
 * then -iters times, and prints the median over the calls of the slowest
 * rank's simulated time. The variant "allreduce" is the yardstick: one plain
 * MPI_Allreduce of the whole gradient (float32, or the plugin's half sum with
 * -half), without the division; "naive" and the others are communicators.
 *
 * SMPI runs every rank's own code for real and charges the CPU time it took
 * to the simulated host, so the packing, float16 conversion and shared-
 * memory sums are this machine's; messages cost what the platform says.
 *
 * -check fills rank r's element i with r + i % 7, whose mean over p ranks,
 * (p - 1) / 2 + i % 7, every algorithm must give exactly where p is a power
 * of two (sums of small integers, then a division by 2^k), float16 too; the
 * largest error of any rank is printed and the exit status is 1 when it is
 * not 0. Without -check the gradient's bytes are left as they come, and the
 * big runs fold every rank's gradient onto one (SMPI_SHARED_MALLOC) so that
 * 1,024 ranks of 236 MB fit in memory: the values are then garbage, the
 * times are not (only the bytes moved and summed count). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"

#ifndef SMPI_SHARED_MALLOC   /* built with a real MPI: -fold is plain memory */
#define SMPI_SHARED_MALLOC(n) malloc(n)
#define SMPI_SHARED_FREE(p) free(p)
#endif

/* transport/'s one call into the base layer, from mn_gpu_place, which the
 * driver never calls (simulated ranks have no GPU): no Darknet is linked. */
void mn_base_set_gpu(int device) { (void)device; }

typedef struct {
    size_t floats;     /* the gradient's length */
    int arrays;        /* it is cut in this many arrays */
    int scattered;     /* each array malloc'ed apart: the packing path */
    int half;          /* float16 on the wire */
    int iters;         /* timed calls per variant */
    int check;         /* known inputs, exact means checked */
    int fold;          /* SMPI_SHARED_MALLOC: one gradient's memory for all ranks */
    char comms[256];   /* variants, comma-separated */
} mn_sim_opts;

static int usage(void)
{
    fprintf(stderr, "usage: mn_sim [-floats N | -mb MB] [-arrays K] [-scattered] [-half] [-iters N] [-check] [-fold]\n"
                    "              [-comms allreduce,naive,flat,hierarchical,two_dimensional[,auto]]\n");
    return 2;
}

static int parse(int argc, char **argv, mn_sim_opts *o)
{
    *o = (mn_sim_opts){1 << 20, 1, 0, 0, 1, 0, 0, "allreduce,naive,flat,hierarchical,two_dimensional"};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "-scattered")) { o->scattered = 1; continue; }
        if (!strcmp(a, "-half")) { o->half = 1; continue; }
        if (!strcmp(a, "-check")) { o->check = 1; continue; }
        if (!strcmp(a, "-fold")) { o->fold = 1; continue; }
        if (i + 1 == argc) return usage();
        const char *v = argv[++i];   /* the options below take a value */
        if (!strcmp(a, "-floats")) o->floats = strtoull(v, NULL, 10);
        else if (!strcmp(a, "-mb")) o->floats = (size_t)(atof(v) * 1e6 / sizeof(float));
        else if (!strcmp(a, "-arrays")) o->arrays = atoi(v);
        else if (!strcmp(a, "-iters")) o->iters = atoi(v);
        else if (!strcmp(a, "-comms")) snprintf(o->comms, sizeof o->comms, "%s", v);
        else return usage();
    }
    if (o->floats == 0 || o->arrays < 1 || (size_t)o->arrays > o->floats || o->iters < 1) return usage();
    if (o->check && o->fold) return usage();   /* folded ranks overwrite each other's values */
    return 0;
}

/* The gradient: arrays[k] of lens[k] floats, back to back in one block
 * (freed through block) or each apart. */
typedef struct {
    float **arrays;
    size_t *lens;
    float *block;
    uint16_t *halves;   /* -half: the yardstick's whole gradient in halves */
} mn_sim_grad;

static void *grad_alloc(const mn_sim_opts *o, size_t bytes)
{
    return o->fold ? SMPI_SHARED_MALLOC(bytes) : malloc(bytes);
}

static void grad_free(const mn_sim_opts *o, void *p)
{
    if (!p) return;
    if (o->fold) SMPI_SHARED_FREE(p);
    else free(p);
}

static int grad_make(const mn_sim_opts *o, mn_sim_grad *g)
{
    int n = o->arrays;
    g->arrays = calloc((size_t)n, sizeof *g->arrays);
    g->lens = calloc((size_t)n, sizeof *g->lens);
    g->block = o->scattered ? NULL : grad_alloc(o, o->floats * sizeof(float));
    g->halves = o->half ? grad_alloc(o, (o->floats + 1) * sizeof(uint16_t)) : NULL;
    if (!g->arrays || !g->lens || (!o->scattered && !g->block) || (o->half && !g->halves)) return -1;
    if (o->half) memset(g->halves, 0, o->floats * sizeof(uint16_t));   /* zeros: no Inf in the sum */
    size_t q = o->floats / (size_t)n, r = o->floats % (size_t)n;
    for (int k = 0; k < n; ++k) {   /* near-equal arrays, the larger first, as mn_split cuts */
        g->lens[k] = q + ((size_t)k < r);
        size_t at = (size_t)k * q + ((size_t)k < r ? (size_t)k : r);
        g->arrays[k] = o->scattered ? grad_alloc(o, g->lens[k] * sizeof(float)) : g->block + at;
        if (!g->arrays[k]) return -1;
        memset(g->arrays[k], 0, g->lens[k] * sizeof(float));   /* finite: no float32 retry of a half piece */
    }
    return 0;
}

static void grad_free_all(const mn_sim_opts *o, mn_sim_grad *g)
{
    if (o->scattered && g->arrays)
        for (int k = 0; k < o->arrays; ++k) grad_free(o, g->arrays[k]);
    grad_free(o, g->block);
    grad_free(o, g->halves);
    free(g->arrays);
    free(g->lens);
}

/* -check's inputs: element i (counted over the whole gradient) of rank r. */
static void grad_fill(const mn_sim_opts *o, mn_sim_grad *g, int rank)
{
    size_t i = 0;
    for (int k = 0; k < o->arrays; ++k)
        for (size_t j = 0; j < g->lens[k]; ++j, ++i) g->arrays[k][j] = (float)(rank + (int)(i % 7));
}

/* The largest |mean - expected| of this rank's gradient. */
static double grad_error(const mn_sim_opts *o, const mn_sim_grad *g, int size)
{
    double worst = 0;
    size_t i = 0;
    for (int k = 0; k < o->arrays; ++k)
        for (size_t j = 0; j < g->lens[k]; ++j, ++i) {
            double e = fabs((double)g->arrays[k][j] - ((size - 1) / 2.0 + (double)(i % 7)));
            if (!(e <= worst)) worst = e;   /* NaN counts as the worst */
        }
    return worst;
}

/* The yardstick: one MPI_Allreduce of the whole gradient, in place; arrays
 * apart take one call each (a plain program's loop). */
static mn_status plain_allreduce(mn_comm *c, const mn_sim_opts *o, mn_sim_grad *g)
{
    MPI_Comm w = mn_comm_world(c);
    if (o->half) {   /* the bytes the communicators send, summed by the plugin's half op */
        for (size_t done = 0, k; done < o->floats; done += k) {
            k = o->floats - done > (size_t)1 << 30 ? (size_t)1 << 30 : o->floats - done;
            MN_MPI(c, MPI_Allreduce(MPI_IN_PLACE, g->halves + done, (int)k, MPI_UINT16_T, c->transport->half_sum, w));
        }
        return MN_OK;
    }
    if (g->block) return mn_sum_floats(c, w, g->block, o->floats);
    for (int k = 0; k < o->arrays; ++k) MN_CHECK(mn_sum_floats(c, w, g->arrays[k], g->lens[k]));
    return MN_OK;
}

/* One variant: the median of the slowest rank's time over o->iters calls
 * (after one uncounted), and with -check the largest error of any rank. */
static mn_status run_variant(mn_comm *c, const mn_sim_opts *o, mn_sim_grad *g, const char *name,
                             double *median, double *error)
{
    int plain = !strcmp(name, "allreduce");
    MPI_Comm w = mn_comm_world(c);
    if (!plain) MN_CHECK(mn_comm_select(c, name));
    double *times = calloc((size_t)o->iters, sizeof *times);
    if (!times) return MN_ERR_NOMEM;
    double worst = 0;
    mn_status s = MN_OK;
    for (int it = -1; it < o->iters && s == MN_OK; ++it) {
        if (o->check) grad_fill(o, g, c->rank);
        MPI_Barrier(w);
        double t0 = MPI_Wtime();
        s = plain ? plain_allreduce(c, o, g) : mn_comm_mean_grad(c, g->arrays, g->lens, o->arrays);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, w);
        if (it >= 0) times[it] = t;
        if (o->check && !plain && s == MN_OK) {
            double e = grad_error(o, g, c->size);
            if (!(e <= worst)) worst = e;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, w);
    qsort(times, (size_t)o->iters, sizeof *times, mn_cmp_double);
    *median = times[o->iters / 2];
    *error = worst;
    free(times);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mn_sim_opts o;
    int rc = parse(argc, argv, &o);
    if (rc) { MPI_Finalize(); return rc; }
    mn_status s;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &s);
    if (!c) { MPI_Finalize(); return 1; }
    if (o.half) s = mn_comm_set_dtype(c, 1);
    mn_sim_grad g = {0};
    if (s == MN_OK && grad_make(&o, &g) != 0) s = MN_ERR_NOMEM;
    s = mn_agree(c, s);
    if (c->rank == 0 && s == MN_OK)
        printf("sim ranks=%d nodes=%d per_node=%d floats=%zu bytes=%zu arrays=%d%s dtype=%s piece_bytes=%zu\n", c->size,
               c->nodes, c->intra_size, o.floats, o.floats * sizeof(float), o.arrays, o.scattered ? " scattered" : "",
               o.half ? "float16" : "float32", c->piece_floats * sizeof(float));
    char list[sizeof o.comms], *save = NULL;
    memcpy(list, o.comms, sizeof list);
    int failed = 0;
    for (char *name = strtok_r(list, ",", &save); name && s == MN_OK; name = strtok_r(NULL, ",", &save)) {
        double t = 0, err = 0;
        mn_status v = run_variant(c, &o, &g, name, &t, &err);
        if (v != MN_OK) {   /* a communicator the layout refuses (two_dimensional on 2+1) is skipped, said */
            if (c->rank == 0) printf("variant=%s refused (status %d)\n", name, (int)v);
            continue;
        }
        int bad_time = !(t > 0) || !isfinite(t), bad_mean = o.check && strcmp(name, "allreduce") && err != 0;
        failed |= bad_time || bad_mean;
        if (c->rank == 0) {
            printf("variant=%s time_s=%.6f", name, t);
            if (o.check && strcmp(name, "allreduce")) printf(" max_error=%g", err);
            printf("%s\n", bad_time ? " BAD_TIME" : bad_mean ? " BAD_MEAN" : "");
            if (*mn_comm_auto_why(c)) printf("auto: %s (%s)\n", mn_comm_name(c), mn_comm_auto_why(c));
            fflush(stdout);
        }
    }
    grad_free_all(&o, &g);
    mn_comm_free(c);
    MPI_Finalize();
    return s != MN_OK || failed;
}
