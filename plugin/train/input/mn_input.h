/* What training reads (plugin/train/input): the cfg and its [distributed]
 * options (mn_cfg.c, mn_options.c), the data cfg and the checks of every
 * input a user gives (mn_data.c), path lists scattered over the ranks
 * (mn_scatter.c; declared in mn_training.h), and what a rank takes of its
 * machine: threads, the reference sgemm, the decoded-image cache (mn_cpu.c,
 * mn_cache.c). */
#ifndef MN_INPUT_H
#define MN_INPUT_H

#include <stddef.h>
#include "mn_training.h"
#include "mn_coll.h"
#include "mn_base.h"

/* What a data cfg says (mn_data.c). Read on every rank: it is small. */
typedef struct {
    char *train, *valid, *backup, *labels_file;
    char **labels;
    int classes;
    int nlabels;      /* lines in the labels file (>= classes) */
    list *options;    /* the parsed data cfg; the strings above point into it */
} mn_data_cfg;
/* On error nothing is left to free; on success mn_free_data_cfg releases it. */
mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d);
void mn_free_data_cfg(mn_data_cfg *d);
/* An integer option of a data cfg (options), or def where it is not given. */
int mn_data_int(list *options, const char *key, int def);

/* Input checks (mn_cfg.c, mn_data.c): every bad input a user can
 * give ends in one message naming the file, line, key or rank, before
 * Darknet reads it (Darknet's own parser warns and goes on, or crashes). */

/* The one reading of a network cfg (mn_cfg.c): as Darknet will read it
 * (whitespace dropped, CRLF and inline '#' comments accepted), checked:
 * text, section headers, key=value lines, known section types, activations
 * and policy, finite numbers, the [net] batch geometry for this many ranks,
 * the layers' shapes, and every [distributed] key (into opt, which may be
 * NULL). Then every rank's whole cfg (sections and options in order) must
 * equal rank 0's: the first differing rank names itself and the first
 * differing key. Collective; the lowest failing rank prints, with file:line. */
mn_status mn_cfg_read(mn_comm *c, const char *cfgfile, mn_options *opt);

/* What of the cfg makes a run one experiment, as text a checkpoint keeps
 * (mn_checkpoint.c): "net\t<key>\t<value>" for every [net] key but batch,
 * subdivisions and max_batches (how a run is split and how long it goes),
 * then for layer i "<i>\t\t[<type>]" and "<i>\t<key>\t<value>"; keys sorted
 * (the last of a repeated key, as Darknet reads it), numbers in one spelling
 * (.001 = 0.001 = 1e-3), [distributed] left out. NULL when the cfg cannot
 * be read (or no memory); rank 0 calls it after mn_cfg_read passed. */
char *mn_cfg_experiment(const char *cfgfile);

/* After parsing (arrays are allocated but not yet touched): each layer's
 * batch*outputs fits Darknet's int sizes, and outputs and deltas fit the
 * machine's physical memory. Every rank gets the same answer; rank 0 prints. */
mn_status mn_check_net_size(const mn_comm *c, const network *net, const char *cfgfile);

/* bad_labels=skip: the bad label lines a rank dropped; the first few are
 * printed as they are found, never none. */
typedef struct {
    int classes;   /* what read_boxes' filter checks class ids against */
    long lines, files;
    int shown;
} mn_label_skip;

/* Training's start, on every rank over its own shard (deterministic runs,
 * which hold the whole list, over the part mn_shard_bounds gives): each image
 * is readable, a classifier image matches exactly one label, a detector
 * image has a label file whose class ids are in 0..classes-1; the eval list
 * (eval_interval > 0) opens. Collective. With bad_labels=skip, bad detector
 * label lines are counted in skip and reported instead. */
mn_status mn_check_training_input(mn_comm *c, mn_task task, const mn_data_cfg *dc, const mn_options *opt,
                                  const network *net, const mn_list *shard, mn_label_skip *skip);

/* One line of a detector's label file: 0 when it is 'class x y w h' with an
 * integer class in 0..classes-1, finite numbers, x, y in [0, 1] and w, h in
 * (0, 1] (or blank); else 1 with why (the value and its likely cause). */
int mn_label_line_bad(const char *line, int classes, char *why, size_t cap);
/* Every line of image's label file lp (an empty file is an image without
 * objects): an error names the file, the line and why, or the image and lp
 * when lp cannot be read. With skip, a bad line is counted (and one of the
 * first few printed) instead. */
mn_status mn_check_label_lines(const mn_comm *c, const char *image, const char *lp, int classes, mn_label_skip *skip);
/* Collective: the ranks' dropped lines summed; rank 0 says how many, of what. */
mn_status mn_label_skip_report(mn_comm *c, const mn_label_skip *skip, const char *what);
/* Darknet's read_boxes drops the lines mn_label_line_bad refuses (patch
 * 0011 / alexeyab 0009); skip outlives the install. */
void mn_label_filter_install(mn_label_skip *skip);
void mn_label_filter_uninstall(void);
/* Rank 0: the data cfg's classes=, the cfg's yolo/region/detection layers
 * and the names file agree; an error names the three. Not collective. */
mn_status mn_check_detector_classes(const mn_comm *c, const char *datacfg, const char *cfgfile,
                                    const mn_data_cfg *dc, const network *net);

/* Where Darknet's fill_truth_detection looks for an image's labels. */
void mn_train_label_path(const char *path, char *out, size_t cap);
/* Both layouts users have, on every base: where no file is at lp (the
 * base's rule for image), the first that exists of the file beside the
 * image (x.png -> x.txt: AlexeyAB's and hank-ai's guides) and the one in
 * Darknet's images -> labels folder (pjreddie's) is written over lp
 * (cap >= 4096). Returns which: */
enum { MN_LABELS_RULE, MN_LABELS_BESIDE, MN_LABELS_FOLDER };
int mn_label_fallback(const char *image, char *lp, size_t cap);
/* Darknet's loader takes the same fallback (patch 0014, alexeyab 0014). */
void mn_label_path_install(void);
void mn_label_path_uninstall(void);

/* Whether training evaluates after iteration it (mn_options.c): every eval_interval
 * iterations; else, with -map (eval_epochs), at AlexeyAB's and hank-ai's
 * cadence: max(100, eval_epochs * images / global_batch) iterations after
 * the last evaluation (last: the iteration training started at, before the
 * first), not before burn_in, and at max_batches. */
int mn_eval_due(const mn_options *opt, size_t it, size_t last, size_t max_batches, size_t burn_in, size_t images,
                size_t global_batch);
/* What asked for evaluation, for messages: "eval_interval=50" or "-map". */
const char *mn_eval_asker(const mn_options *opt, char *buf, size_t n);

/* The class of a path: the one label it contains (Darknet matches labels as
 * substrings); -1 when none or several match, with their count in *matches. */
int mn_path_class(char **labels, int k, const char *path, int *matches);
/* An image that cannot be opened is reported with its path and this rank. */
mn_status mn_check_readable(const mn_comm *c, const char *path);

/* What a rank takes of its machine: BLAS threads, loader threads and a
 * reference sgemm (mn_cpu.c), the decoded-image cache and its budget
 * (mn_cache.c). (The CPU engine that runs the layers is plugin/engine.) */

/* OpenBLAS threads of this rank: 1, unless OPENBLAS_NUM_THREADS is set
 * (OpenBLAS read it at load time; it stands); oneDNN's likewise
 * (mn_dnnl_threads). Returns OpenBLAS's count in use, 0 in a BLAS=0 build
 * (Darknet's own gemm, one thread). */
int mn_blas_threads(void);
/* What this core's OpenBLAS sgemm reaches in GFLOP/s on one thread (the
 * median of 5 products of two n x n matrices, n = 1024: 2.1 GFLOP each),
 * the reference bench step -layers sets a step against; 0 in a BLAS=0
 * build. */
double mn_blas_sgemm_gflops(void);
/* Darknet loader threads for this rank: the cores it may run on
 * (sched_getaffinity) divided by the ranks of its node that may run on them
 * too, at least 1; *cores and *sharing get the two counts. Collective over
 * the node. */
mn_status mn_loader_threads(mn_comm *c, int *threads, int *cores, int *sharing);

/* cache_mb from the cfg, or the default: a quarter of the memory the job
 * may use on the node (the least of the machine's, the cgroup's limit and
 * Slurm's --mem or --mem-per-cpu) shared among its ranks there, at most
 * 1024; why gets how it was sized, for rank 0's line. */
size_t mn_cache_budget_mb(const mn_comm *c, const mn_options *opt, char *why, size_t cap);

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
