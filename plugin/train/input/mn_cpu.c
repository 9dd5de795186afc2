/* BLAS and loader threads: a rank uses its share of the node's cores, and no
 * more, so that N ranks on N cores do not oversubscribe them; the image
 * cache, its share of the memory the job may use on the node. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "train/input/mn_input.h"
#include "engine/mn_engine.h"
#include "core/mn_watchdog.h"
#ifdef MN_BLAS
#include <cblas.h>
#endif

int mn_blas_threads(void)
{
    mn_dnnl_threads();
#ifdef MN_BLAS
    /* OpenBLAS starts as many threads as the machine has cores: one rank per
     * core would run N x N. */
    if (!getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
    return openblas_get_num_threads();
#else
    return 0;
#endif
}

double mn_blas_sgemm_gflops(void)
{
#ifdef MN_BLAS
    enum { N = 1024, ROUNDS = 5 };
    float *a = malloc(sizeof(float) * N * N * 3);
    if (!a) return 0;
    float *b = a + N * N, *y = b + N * N;
    for (size_t k = 0; k < (size_t)N * N; ++k) a[k] = (float)(k % 97) / 97.0f, b[k] = (float)(k % 89) / 89.0f;
    int threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    double t[ROUNDS + 1];
    for (int r = 0; r <= ROUNDS; ++r) {   /* round 0 warms the caches and OpenBLAS's buffers */
        double t0 = mn_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, y, N);
        t[r] = mn_now() - t0;
    }
    openblas_set_num_threads(threads);
    free(a);
    qsort(t + 1, ROUNDS, sizeof *t, mn_cmp_double);
    return 2.0 * N * N * N / t[1 + ROUNDS / 2] / 1e9;
#else
    return 0;
#endif
}

mn_status mn_loader_threads(mn_comm *c, int *threads, int *cores, int *sharing)
{
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < 1) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; i < n && i < CPU_SETSIZE; ++i) CPU_SET(i, &mine);
    }
    /* mpiexec binds 2 ranks to a core each, more to a socket each, or none
     * to anything (--bind-to none): count who shares my cores either way. */
    cpu_set_t *all = malloc(sizeof mine * (size_t)c->intra_size);
    if (!all) return MN_ERR_NOMEM;
    int e = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, c->intra);
    int share = 0;
    for (int r = 0; e == MPI_SUCCESS && r < c->intra_size; ++r) {
        cpu_set_t both;
        CPU_AND(&both, &mine, &all[r]);
        share += CPU_COUNT(&both) > 0;
    }
    free(all);
    if (e != MPI_SUCCESS) {
        mn_error(c, "MPI_Allgather of the ranks' cores failed (MPI error %d)", e);
        return MN_ERR_MPI;
    }
    *cores = CPU_COUNT(&mine);
    *sharing = share < 1 ? 1 : share;
    *threads = *cores / *sharing < 1 ? 1 : *cores / *sharing;
    return MN_OK;
}

/* The least limit in MiB on the memory.max (cgroup v2) or
 * memory.limit_in_bytes (v1) files from the cgroup at dir up to root;
 * "max" and v1's near-2^63 mean none. 0: no limit found. */
static size_t cgroup_limit_mb(const char *root, const char *dir, const char *file)
{
    char path[4096];
    size_t least = 0;
    snprintf(path, sizeof path, "%s%s", root, dir);
    for (;;) {
        char file_path[4200];
        snprintf(file_path, sizeof file_path, "%s/%s", path, file);
        FILE *f = fopen(file_path, "r");
        unsigned long long b;
        if (f && fscanf(f, "%llu", &b) == 1 && b < (1ULL << 60) && (least == 0 || (size_t)(b >> 20) < least))
            least = (size_t)(b >> 20);
        if (f) fclose(f);
        char *slash = strrchr(path, '/');
        if (!slash || (size_t)(slash - path) < strlen(root)) break;
        *slash = 0;
    }
    return least;
}

/* What this job may use on the node, in MiB, and where that figure comes
 * from: the machine's memory, the cgroup the job runs in (Slurm's and
 * containers' limits) and Slurm's --mem or --mem-per-cpu, the least. */
static size_t node_memory_mb(char *from, size_t cap)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    size_t mb = pages > 0 && page > 0 ? (size_t)pages * (size_t)page >> 20 : 0;
    snprintf(from, cap, "the node's memory");
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *ctl = strchr(line, ':'), *dir = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!dir) continue;
        *dir++ = 0;
        size_t lim = 0;
        if (!ctl[1]) {   /* v2: one tree, mounted at one of these */
            lim = cgroup_limit_mb("/sys/fs/cgroup", dir, "memory.max");
            if (!lim) lim = cgroup_limit_mb("/sys/fs/cgroup/unified", dir, "memory.max");
        } else if (strstr(ctl + 1, "memory")) {
            lim = cgroup_limit_mb("/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes");
        }
        if (lim && lim < mb) {
            mb = lim;
            snprintf(from, cap, "the job's cgroup limit");
        }
    }
    if (f) fclose(f);
    const char *node = getenv("SLURM_MEM_PER_NODE"), *cpu = getenv("SLURM_MEM_PER_CPU"),
               *cpus = getenv("SLURM_CPUS_ON_NODE");
    size_t slurm = node ? strtoull(node, NULL, 10)
                        : cpu && cpus ? strtoull(cpu, NULL, 10) * strtoull(cpus, NULL, 10) : 0;
    if (slurm && slurm < mb) {
        mb = slurm;
        snprintf(from, cap, "Slurm's %s", node ? "--mem" : "--mem-per-cpu x the node's cpus");
    }
    return mb;
}

size_t mn_cache_budget_mb(const mn_comm *c, const mn_options *opt, char *why, size_t cap)
{
    if (opt->cache_mb >= 0) {
        snprintf(why, cap, "cache_mb");
        return (size_t)opt->cache_mb;
    }
    /* A quarter of what the job may use on the node among its ranks there,
     * at most 1 GiB each. */
    char from[64];
    size_t node = node_memory_mb(from, sizeof from);
    size_t mb = node / 4 / (size_t)c->intra_size;
    snprintf(why, cap, "a quarter of %zu MiB, %s, over %d rank%s%s", node, from, c->intra_size,
             c->intra_size > 1 ? "s" : "", mb > 1024 ? ", at most 1024" : "");
    return mb < 1024 ? mb : 1024;
}

mn_status mn_cache_report(mn_comm *c, mn_cache *k, size_t cache_mb)
{
    mn_cache_stats st = mn_cache_get_stats(k);
    unsigned long long v[5] = {st.hits, st.misses, st.over, st.bytes, st.images};
    mn_guard(c, "image cache statistics");
    int e = MPI_Reduce(c->rank == 0 ? MPI_IN_PLACE : v, v, 5, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, c->world);
    mn_unguard(c);
    if (e != MPI_SUCCESS) {
        mn_error(c, "MPI_Reduce of the image cache statistics failed (MPI error %d)", e);
        return mn_agree(c, MN_ERR_MPI);
    }
    if (c->rank == 0) {
        printf("darknet-mn: image cache (cache_mb=%zu a rank): %llu hits, %llu decoded and kept, %llu decoded past "
               "the budget; %llu images, %.1f MiB held on %d rank%s\n", cache_mb, v[0], v[1], v[2], v[4],
               v[3] / 1048576.0, c->size, c->size > 1 ? "s" : "");
        fflush(stdout);
    }
    return MN_OK;
}
