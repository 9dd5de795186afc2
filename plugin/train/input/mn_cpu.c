/* BLAS and loader threads: a rank uses its share of the node's cores, and no
 * more, so that N ranks on N cores do not oversubscribe them. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include "mn_input.h"
#include "mn_engine.h"
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

size_t mn_cache_budget_mb(const mn_comm *c, const mn_options *opt)
{
    if (opt->cache_mb >= 0) return (size_t)opt->cache_mb;
    /* A quarter of the node's memory among its ranks, at most 1 GiB each. */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    size_t mb = pages > 0 && page > 0 ? (size_t)pages / 4 / (size_t)c->intra_size * (size_t)page >> 20 : 0;
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
