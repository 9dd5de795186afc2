/* ./darknet_mn info [cfg]: what the ChainerMN manual's installation and
 * troubleshooting chapters ask of a setup, in one report from rank 0: the
 * MPI library, its thread level and CUDA awareness; this build, its
 * CUDA/cuDNN/NCCL versions, engine and chart; every rank's host, node,
 * local rank and GPU; the node map; the cfg's [distributed] keys with their
 * defaults; the communicator a cfg would get and why; and proof that every rank can talk (a ping from rank 0 with a
 * deadline, then an allreduce with a known result through that
 * communicator). Exit status 0 only when all is well. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/mn_cmd.h"
#include "coll/mn_coll.h"
#include "engine/mn_engine.h"
#include "train/observe/mn_observe.h"
#include "train/input/mn_input.h"
#include "core/mn_fault.h"
#include "core/mn_watchdog.h"
#ifdef GPU
#include <cuda_runtime.h>
#endif
#ifdef CUDNN
#include <cudnn.h>
#endif
#if defined(MN_NCCL) && defined(GPU)
#include <nccl.h>
#endif

typedef struct {
    char host[64];
    int node, intra_rank, intra_size, gpu;
    char gpu_name[256];
    double gpu_gib;
} rank_info;

static void my_info(mn_comm *c, rank_info *me)
{
    memset(me, 0, sizeof *me);
    snprintf(me->host, sizeof me->host, "%s", c->host);
    me->intra_rank = c->intra_rank;
    me->intra_size = c->intra_size;
    me->node = c->inter_rank;   /* a leader's place among the leaders, sent to its node */
    MPI_Bcast(&me->node, 1, MPI_INT, 0, c->intra);
    me->gpu = -1;
#ifdef GPU
    struct cudaDeviceProp p;
    if (mn_base_gpu() >= 0 && cudaGetDeviceProperties(&p, mn_base_gpu()) == cudaSuccess) {
        me->gpu = mn_base_gpu();
        snprintf(me->gpu_name, sizeof me->gpu_name, "%s", p.name);
        me->gpu_gib = p.totalGlobalMem / 1073741824.0;
    }
    (void)cudaGetLastError();   /* a failed query is reported as no GPU, not left pending */
#endif
}

static void print_build(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, level = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    nl = strchr(lib, ',');
    if (nl) *nl = 0;
    MPI_Query_thread(&level);
    const char *lv = level == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
                   : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                   : level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_SINGLE";
    printf("darknet-mn %s\n", MN_VERSION);
    printf("mpi: %s; thread level %s; CUDA-aware: %s\n", lib, lv, mn_mpi_cuda_aware() ? "yes" : "no");
#ifdef GPU
    int rt = 0, drv = 0, devices = 0;   /* a failed query prints 0 */
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    (void)cudaGetLastError();
    printf("build: GPU=1 CUDNN=%d NCCL=%d; CUDA runtime %d.%d, driver %d.%d, %d device%s visible to rank 0\n",
#ifdef CUDNN
           1,
#else
           0,
#endif
#if defined(MN_NCCL)
           1,
#else
           0,
#endif
           rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10, devices, devices == 1 ? "" : "s");
#ifdef CUDNN
    int major, minor, patch;   /* cuDNN 8 and 9 count differently (mn_cudnn_version) */
    mn_cudnn_version(cudnnGetVersion(), &major, &minor, &patch);
    printf("cudnn: %d.%d.%d\n", major, minor, patch);
#endif
#if defined(MN_NCCL)
    int nv = 0;
    if (ncclGetVersion(&nv) == ncclSuccess)
        printf("nccl: %d.%d.%d\n", nv / 10000, nv / 100 % 100, nv % 100);
    else printf("nccl: version unknown\n");
#endif
#else
    printf("build: CPU (GPU=0 CUDNN=0 NCCL=0)\n");
#endif
    /* The engine every speed figure depends on: a build without oneDNN
     * trains at half the speed, so say which one this is. */
    char conv[128];
    mn_dnnl_engine(conv, sizeof conv);
#ifdef MN_BLAS
    const char *gemm = "OpenBLAS sgemm";
#else
    const char *gemm = "Darknet's own loops (BLAS=0)";
#endif
#ifdef GPU
    printf("engine: convolution on the GPU (%s); with -nogpu: %s, gemm %s\n",
#ifdef CUDNN
           "cuDNN",
#else
           "Darknet's CUDA im2col + cuBLAS",
#endif
           conv, gemm);
#else
    printf("engine: convolution %s, gemm %s\n", conv, gemm);
#endif
    /* A CAIRO=0 build trains the same but draws no PNG. */
    const char *cairo = mn_report_cairo();
    if (cairo) printf("chart: cairo %s\n", cairo);
    else printf("chart: none (built without cairo: no training chart, timeline picture or predictions.png)\n");
}

/* The [distributed] keys from the table that reads them (mn_options.c);
 * tests/static/config_doc.py holds docs/config.md to these lines. */
static void print_options(void)
{
    char line[512];
    printf("options: the cfg's [distributed] keys (docs/config.md): key=default | values | what it sets\n");
    for (size_t i = 0; mn_option_line(i, line, sizeof line); ++i) printf("  %s\n", line);
}

/* Rank 0 sends each rank a token and waits for it back, up to a deadline;
 * returns the number of ranks that did not answer (named on rank 0). */
static int ping(mn_comm *c, double timeout, double *worst)
{
    *worst = 0;
    if (c->rank != 0) {
        int t;
        MPI_Recv(&t, 1, MPI_INT, 0, 71, c->world, MPI_STATUS_IGNORE);
        MPI_Send(&t, 1, MPI_INT, 0, 72, c->world);
        return 0;
    }
    int n = c->size, missing = 0;
    MPI_Request *req = calloc((size_t)n * 2, sizeof *req);
    int *out = calloc((size_t)n, sizeof *out), *back = calloc((size_t)n, sizeof *back);
    double *t = calloc((size_t)n, sizeof *t);
    if (!req || !out || !back || !t) mn_abort(c, "out of memory for the ping");
    double t0 = mn_now();
    for (int r = 1; r < n; ++r) {
        out[r] = r;
        MPI_Irecv(&back[r], 1, MPI_INT, r, 72, c->world, &req[2 * r + 1]);
        MPI_Isend(&out[r], 1, MPI_INT, r, 71, c->world, &req[2 * r]);
    }
    for (int left = n - 1; left > 0 && mn_now() - t0 < timeout;) {
        for (int r = 1; r < n; ++r) {
            if (t[r] > 0) continue;
            int done = 0;
            MPI_Test(&req[2 * r + 1], &done, MPI_STATUS_IGNORE);
            if (done) { t[r] = mn_now() - t0; --left; if (t[r] > *worst) *worst = t[r]; }
        }
    }
    char late[512] = "";
    size_t len = 0;
    for (int r = 1; r < n; ++r)
        if (t[r] == 0 || back[r] != r) {
            ++missing;
            if (len < sizeof late - 16) len += (size_t)snprintf(late + len, sizeof late - len, " %d", r);
        }
    if (missing) {
        printf("ping: FAILED: rank%s%s did not answer rank 0 within %.0f s\n", missing > 1 ? "s" : "", late, timeout);
        fflush(stdout);
        mn_die(MN_EXIT_RERUN);   /* those ranks cannot be reached to agree on anything */
    }
    for (int r = 1; r < n; ++r) MPI_Wait(&req[2 * r], MPI_STATUS_IGNORE);
    free(req); free(out); free(back); free(t);
    return 0;
}

/* 1 MiB through the communicator, with a result known exactly: element i of
 * rank r is (i % 7) + r, so the mean is (i % 7) + (N-1)/2. */
static int allreduce_ok(mn_comm *c, double *secs)
{
    size_t n = 1 << 18;
    float *x = malloc(n * sizeof *x);
    int ok = x != NULL;
    if (mn_agree(c, ok ? MN_OK : MN_ERR_NOMEM) != MN_OK) { free(x); return 0; }
    for (size_t i = 0; i < n; ++i) x[i] = (float)(i % 7) + (float)c->rank;
    double t0 = mn_now();
    ok = mn_comm_mean_grad(c, &x, &n, 1) == MN_OK;
    *secs = mn_now() - t0;
    for (size_t i = 0; ok && i < n; ++i) ok = x[i] == (float)(i % 7) + (float)(c->size - 1) / 2.0f;
    free(x);
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->world);
    return all;
}

static mn_status info(mn_comm *c, const char *cfgfile);

/* Every collective of info under the guard: a rank that stalls (in NCCL's
 * creation, say) ends the job after INFO_TIMEOUT seconds. */
#define INFO_TIMEOUT 120
mn_status mn_info(mn_comm *c, const char *cfgfile)
{
    mn_status s = mn_agree(c, mn_watchdog_open(c, INFO_TIMEOUT));
    mn_guard(c, "info");
    if (s == MN_OK) s = info(c, cfgfile);
    mn_unguard(c);
    mn_watchdog_close(c);
    return s;
}

static mn_status info(mn_comm *c, const char *cfgfile)
{
    rank_info me, *all = c->rank == 0 ? calloc((size_t)c->size, sizeof *all) : NULL;
    if (mn_agree(c, c->rank != 0 || all ? MN_OK : MN_ERR_NOMEM) != MN_OK) return MN_ERR_NOMEM;
    my_info(c, &me);
    MPI_Gather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, 0, c->world);
    char layout[256];
    int even = 0;
    MN_CHECK(mn_comm_layout(c, layout, sizeof layout, &even));
    if (c->rank == 0) {
        print_build();
        print_options();
        printf("ranks: %s\n", layout);
        for (int node = 0; node < c->nodes; ++node) {
            const char *host = "?";
            for (int r = 0; r < c->size; ++r) if (all[r].node == node) { host = all[r].host; break; }
            printf("node %d (%s): ranks", node, host);
            for (int r = 0; r < c->size; ++r) if (all[r].node == node) printf(" %d", r);
            printf("\n");
        }
        for (int r = 0; r < c->size; ++r) {
            printf("rank %d: host %s, node %d, local rank %d of %d, ", r, all[r].host, all[r].node,
                   all[r].intra_rank, all[r].intra_size);
            if (all[r].gpu >= 0) printf("GPU %d (%s, %.1f GiB)\n", all[r].gpu, all[r].gpu_name, all[r].gpu_gib);
            else printf("no GPU\n");
        }
        fflush(stdout);
    }
    free(all);

    /* The communicator: the cfg's, else auto's choice for these ranks, with
     * the reason training's first lines give. */
    char name[32] = "";
    int named = cfgfile && mn_cfg_peek(cfgfile, "communicator", name, sizeof name) && *name;
    mn_status s = mn_comm_select(c, named ? name : "auto");
    if (c->rank == 0) {
        if (s != MN_OK) printf("communicator: %s: REFUSED (rank 0 says why)\n", named ? name : "auto");
        else if (*mn_comm_auto_why(c)) printf("communicator: auto: %s (%s)\n", mn_comm_name(c), mn_comm_auto_why(c));
        else printf("communicator: %s (from %s)\n", mn_comm_name(c), cfgfile);
        fflush(stdout);
    }
    double worst = 0, secs = 0;
    ping(c, 10, &worst);
    if (c->rank == 0) printf("ping: every rank answered rank 0 (slowest %.3f ms)\n", worst * 1e3);
    int ok = allreduce_ok(c, &secs);
    if (c->rank == 0) {
        printf("allreduce: 1 MiB through %s on %d rank%s: %s (%.3f ms)\n", mn_comm_name(c), c->size,
               c->size > 1 ? "s" : "", ok ? "OK" : "WRONG RESULT", secs * 1e3);
        printf("%s\n", ok && s == MN_OK ? "all well" : "NOT all well");
        fflush(stdout);
    }
    /* No rank leaves before rank 0 has said it: a launcher that sees a rank
     * exit non-zero kills the others, and rank 0's last lines with them. */
    return mn_agree(c, ok && s == MN_OK ? MN_OK : MN_ERR_USER);
}
