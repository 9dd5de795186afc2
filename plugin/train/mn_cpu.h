/* What a rank takes of its machine: BLAS threads, loader threads and a
 * reference sgemm (mn_cpu.c), the decoded-image cache and its budget
 * (mn_cache.c). (The CPU engine that runs the layers is plugin/engine.) */
#ifndef MN_CPU_H
#define MN_CPU_H

#include "mn_internal.h"

/* OpenBLAS threads of this rank: 1, unless OPENBLAS_NUM_THREADS is set
 * (OpenBLAS read it at load time; it stands); oneDNN's likewise
 * (mn_dnnl_threads). Returns OpenBLAS's count in use, 0 in a BLAS=0 build
 * (Darknet's own gemm, one thread). */
int mn_blas_threads(void);
/* What this core's OpenBLAS sgemm reaches in GFLOP/s on one thread (the
 * median of 5 products of two n x n matrices, n = 1024: 2.1 GFLOP each,
 * about 30 ms on a 70 GFLOP/s core), the reference bench step -layers
 * sets a step against; 0 in a BLAS=0 build. */
double mn_blas_sgemm_gflops(void);
/* Darknet loader threads for this rank: the cores it may run on
 * (sched_getaffinity) divided by the ranks of its node that may run on them
 * too, at least 1; *cores and *sharing get the two counts. Collective over
 * the node. */
mn_status mn_loader_threads(mn_comm *c, int *threads, int *cores, int *sharing);

/* cache_mb from the cfg, or the default: a quarter of the node's memory
 * shared among its ranks, at most 1024. */
size_t mn_cache_budget_mb(const mn_comm *c, const mn_options *opt);

/* A rank's decoded originals, shared by Darknet's loader threads
 * (mn_cache.c). Images are kept as stb decodes them (8 bits a sample), up to
 * a budget in bytes; an image past the budget is decoded on every use. Only
 * the paths given at creation are cached (the rank's shard). */
typedef struct mn_cache mn_cache;
typedef struct {
    size_t hits;      /* served from memory */
    size_t misses;    /* decoded and kept */
    size_t over;      /* decoded, not kept: the budget was full (or 0) */
    size_t bytes;     /* held */
    size_t images;    /* held */
} mn_cache_stats;
/* who prefixes the message that ends the job when an image cannot be
 * decoded (every load_image goes through the cache once installed). */
mn_cache *mn_cache_create(char **paths, size_t n, size_t budget_bytes, const char *who);
void mn_cache_free(mn_cache *k);
/* Darknet's image-decode hook (patch 0010): while installed, every
 * load_image of a cached path with 3 channels goes through k. */
void mn_cache_install(mn_cache *k);
void mn_cache_uninstall(void);
mn_cache_stats mn_cache_get_stats(mn_cache *k);
/* Rank 0 prints the cache's counts summed over the ranks. Collective. */
mn_status mn_cache_report(mn_comm *c, mn_cache *k, size_t cache_mb);

#endif
