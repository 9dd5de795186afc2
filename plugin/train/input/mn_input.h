/* What training reads (plugin/train/input): the cfg and the data cfg,
 * checked, path lists scattered over the ranks, and a rank's share of its
 * machine's cores and memory. */
#ifndef MN_INPUT_H
#define MN_INPUT_H

#include <stddef.h>
#include "mn_training.h"
#include "mn_coll.h"
#include "mn_base.h"

/* What a data cfg says (mn_data.c); small, so read on every rank. */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
    int nlabels;      /* lines in the labels file (>= classes) */
    list *options;    /* the parsed data cfg, which the strings above point into */
} mn_data_cfg;
/* On success mn_free_data_cfg releases it; on error nothing is left. */
mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d);
void mn_free_data_cfg(mn_data_cfg *d);
/* An integer option of a data cfg, or def where it is not given. */
int mn_data_int(list *options, const char *key, int def);

/* Input checks: every bad input a user can give ends in one message
 * naming the file, line, key or rank, before Darknet's parser, which warns
 * and goes on or crashes. */

/* The one reading of a network cfg, as Darknet will read it, checked down
 * to the layers' shapes, with every [distributed] key into opt (may be
 * NULL); every rank's cfg must equal rank 0's. Collective; the lowest
 * failing rank prints, with file:line. */
mn_status mn_cfg_read(mn_comm *c, const char *cfgfile, mn_options *opt);

/* What of the cfg makes a run one experiment, as the text a checkpoint
 * keeps: tab-separated scope, key and value lines for every [net] key but
 * batch, subdivisions and max_batches, then each layer's type and keys;
 * keys sorted, numbers in one spelling. NULL when the cfg cannot be read;
 * rank 0 calls it after mn_cfg_read passed. */
char *mn_cfg_experiment(const char *cfgfile);

/* After parsing, before the arrays are touched: each layer's sizes fit
 * Darknet's ints and the machine's memory. Every rank gets the same
 * answer; rank 0 prints. */
mn_status mn_check_net_size(const mn_comm *c, const network *net, const char *cfgfile);

/* bad_labels=skip: the bad label lines a rank dropped, the first few
 * printed as they are found. */
typedef struct {
    int classes;   /* what the filter checks class ids against */
    long lines, files;
    int shown;
} mn_label_skip;

/* Collective, at training's start, each rank over its own shard: every
 * image opens and has a valid class or label file; the eval list opens.
 * With bad_labels=skip, bad label lines are counted in skip instead. */
mn_status mn_check_training_input(mn_comm *c, mn_task task, const mn_data_cfg *dc, const mn_options *opt,
                                  const network *net, const mn_list *shard, mn_label_skip *skip);

/* 0 when a detector label line is 'class x y w h' with a class in
 * 0..classes-1, x, y in [0, 1] and w, h in (0, 1], or blank; else 1 with
 * why. */
int mn_label_line_bad(const char *line, int classes, char *why, size_t cap);
/* Every line of image's label file lp: an error names the file, the line
 * and why; with skip, a bad line is counted instead. */
mn_status mn_check_label_lines(const mn_comm *c, const char *image, const char *lp, int classes, mn_label_skip *skip);
/* Collective: the ranks' dropped lines summed; rank 0 says how many, of what. */
mn_status mn_label_skip_report(mn_comm *c, const mn_label_skip *skip, const char *what);
/* Darknet's read_boxes drops the lines mn_label_line_bad refuses (patch
 * 0011); skip outlives the install. */
void mn_label_filter_install(mn_label_skip *skip);
void mn_label_filter_uninstall(void);
/* Rank 0: the data cfg's classes=, the cfg's detection layers and the
 * names file agree, or an error names the three. */
mn_status mn_check_detector_classes(const mn_comm *c, const char *datacfg, const char *cfgfile,
                                    const mn_data_cfg *dc, const network *net);

/* Where Darknet's fill_truth_detection looks for an image's labels. */
void mn_train_label_path(const char *path, char *out, size_t cap);
/* Both label layouts, on every base: where lp (the base's rule) has no
 * file, the first that exists of the file beside the image (x.png ->
 * x.txt) and the labels folder's is written over lp (cap >= 4096).
 * Returns which: */
enum { MN_LABELS_RULE, MN_LABELS_BESIDE, MN_LABELS_FOLDER };
int mn_label_fallback(const char *image, char *lp, size_t cap);
/* Darknet's loader takes the same fallback (patch 0014). */
void mn_label_path_install(void);
void mn_label_path_uninstall(void);

/* Whether training evaluates after iteration it: every eval_interval
 * iterations; else, with -map, max(100, eval_epochs * images /
 * global_batch) iterations after last (the previous evaluation, or the
 * start), not before burn_in, and at max_batches (docs/evaluation.md). */
int mn_eval_due(const mn_options *opt, size_t it, size_t last, size_t max_batches, size_t burn_in, size_t images,
                size_t global_batch);
/* What asked for evaluation, for messages: "eval_interval=50" or "-map". */
const char *mn_eval_asker(const mn_options *opt, char *buf, size_t n);

/* The class of a path: the one label it contains (Darknet matches labels
 * as substrings); -1 when none or several match, counted in *matches. */
int mn_path_class(char **labels, int k, const char *path, int *matches);
/* An image that cannot be opened is reported with its path and rank. */
mn_status mn_check_readable(const mn_comm *c, const char *path);

/* What a rank takes of its machine (mn_cpu.c, mn_cache.c): its share of
 * the node's cores and memory. */

/* OpenBLAS and oneDNN threads of this rank: 1, unless
 * OPENBLAS_NUM_THREADS is set. Returns OpenBLAS's count, 0 in a BLAS=0
 * build. */
int mn_blas_threads(void);
/* One thread's OpenBLAS sgemm GFLOP/s on this core, which bench step
 * -layers sets a step against; 0 in a BLAS=0 build. */
double mn_blas_sgemm_gflops(void);
/* Collective over the node: loader threads for this rank, the cores it may
 * run on over the ranks sharing them, at least 1; *cores and *sharing get
 * the two counts. */
mn_status mn_loader_threads(mn_comm *c, int *threads, int *cores, int *sharing);

/* cache_mb from the cfg, or the default: a share of the memory the job
 * may use on the node; why says how it was sized. */
size_t mn_cache_budget_mb(const mn_comm *c, const mn_options *opt, char *why, size_t cap);

/* A rank's decoded images of its shard, shared by Darknet's loader
 * threads up to a budget in bytes; past it an image is decoded each use. */
typedef struct mn_cache mn_cache;
typedef struct {
    size_t hits;      /* served from memory */
    size_t misses;    /* decoded and kept */
    size_t over;      /* decoded, not kept: the budget was full */
    size_t bytes;     /* held */
    size_t images;    /* held */
} mn_cache_stats;
/* who prefixes the message that ends the job when an image cannot be
 * decoded. */
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
