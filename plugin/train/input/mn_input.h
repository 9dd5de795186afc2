/* Training's input, checked (plugin/train/input). */
#ifndef MN_INPUT_H
#define MN_INPUT_H

#include <stddef.h>
#include "train/mn_training.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"

/* A data cfg (mn_data.c), read on every rank. */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
    int nlabels;      /* lines in the labels file (>= classes) */
    list *options;    /* the parsed cfg; the strings point into it */
} mn_data_cfg;
/* On success mn_free_data_cfg releases it; on error nothing is left. */
mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d);
void mn_free_data_cfg(mn_data_cfg *d);
/* An integer option, or def. */
int mn_data_int(list *options, const char *key, int def);

/* Input checks: one message naming file, line, key or rank, before
 * Darknet's parser. */

/* Collective: reads and checks a network cfg as Darknet will, [distributed]
 * keys into opt (may be NULL); every rank's must equal rank 0's. */
mn_status mn_cfg_read(mn_comm *c, const char *cfgfile, mn_options *opt);

/* The cfg's experiment text for a checkpoint; NULL when unreadable. Rank 0,
 * after mn_cfg_read. */
char *mn_cfg_experiment(const char *cfgfile);

/* After parsing: layers fit Darknet's ints and memory. Same answer on
 * every rank. */
mn_status mn_check_net_size(const mn_comm *c, const network *net, const char *cfgfile);

/* bad_labels=skip: the label lines a rank dropped. */
typedef struct {
    int classes;   /* class ids must be below it */
    long lines, files;
    int shown;
} mn_label_skip;

/* Collective, each rank's shard: images open with valid labels, the eval
 * list opens; skip counts bad label lines. */
mn_status mn_check_training_input(mn_comm *c, mn_task task, const mn_data_cfg *dc, const mn_options *opt,
                                  const network *net, const mn_list *shard, mn_label_skip *skip);

/* 0 for a blank or valid 'class x y w h' detector line; else 1 with why. */
int mn_label_line_bad(const char *line, int classes, char *why, size_t cap);
/* Every line of image's label file lp; with skip, bad lines are counted. */
mn_status mn_check_label_lines(const mn_comm *c, const char *image, const char *lp, int classes, mn_label_skip *skip);
/* Collective: rank 0 prints the lines all ranks dropped. */
mn_status mn_label_skip_report(mn_comm *c, const mn_label_skip *skip, const char *what);
/* Darknet's read_boxes drops lines mn_label_line_bad refuses (patch 0011);
 * skip must outlive it. */
void mn_label_filter_install(mn_label_skip *skip);
void mn_label_filter_uninstall(void);
/* Rank 0: classes=, the detection layers and the names file agree. */
mn_status mn_check_detector_classes(const mn_comm *c, const char *datacfg, const char *cfgfile,
                                    const mn_data_cfg *dc, const network *net);

/* Darknet's label path for an image. */
void mn_train_label_path(const char *path, char *out, size_t cap);
/* Where lp (the base's rule) is missing, x.txt beside x.png or the labels
 * folder's replaces it (cap >= 4096). Returns: */
enum { MN_LABELS_RULE, MN_LABELS_BESIDE, MN_LABELS_FOLDER };
int mn_label_fallback(const char *image, char *lp, size_t cap);
/* Darknet's loader takes the same fallback (patch 0014). */
void mn_label_path_install(void);
void mn_label_path_uninstall(void);

/* Whether training evaluates after iteration it; last: the previous
 * evaluation or the start (docs/evaluation.md). */
int mn_eval_due(const mn_options *opt, size_t it, size_t last, size_t max_batches, size_t burn_in, size_t images,
                size_t global_batch);
/* For messages: "eval_interval=50" or "-map". */
const char *mn_eval_asker(const mn_options *opt, char *buf, size_t n);

/* The one label a path contains; -1 for none or several (*matches). */
int mn_path_class(char **labels, int k, const char *path, int *matches);
/* Reports an image that cannot be opened. */
mn_status mn_check_readable(const mn_comm *c, const char *path);

/* A rank's share of its node (mn_cpu.c, mn_cache.c). */

/* OpenBLAS and oneDNN: 1 thread unless OPENBLAS_NUM_THREADS; returns
 * OpenBLAS's, 0 with BLAS=0. */
int mn_blas_threads(void);
/* One thread's sgemm GFLOP/s, for bench step -layers; 0 with BLAS=0. */
double mn_blas_sgemm_gflops(void);
/* Collective over the node: loader threads, *cores / *sharing, >= 1. */
mn_status mn_loader_threads(mn_comm *c, int *threads, int *cores, int *sharing);

/* cache_mb, or a share of the node's memory; why says which. */
size_t mn_cache_budget_mb(const mn_comm *c, const mn_options *opt, char *why, size_t cap);

/* Decoded images shared by the loader threads, up to a budget. */
typedef struct mn_cache mn_cache;
typedef struct {
    size_t hits;      /* served from memory */
    size_t misses;    /* decoded and kept */
    size_t over;      /* decoded, not kept (budget full) */
    size_t bytes;     /* held */
    size_t images;    /* held */
} mn_cache_stats;
/* who prefixes the fatal error for an image that cannot be decoded. */
mn_cache *mn_cache_create(char **paths, size_t n, size_t budget_bytes, const char *who);
void mn_cache_free(mn_cache *k);
/* Darknet's decode hook (patch 0010): 3-channel cached paths go through k. */
void mn_cache_install(mn_cache *k);
void mn_cache_uninstall(void);
mn_cache_stats mn_cache_get_stats(mn_cache *k);
/* Collective: rank 0 prints the summed counts. */
mn_status mn_cache_report(mn_comm *c, mn_cache *k, size_t cache_mb);

#endif
