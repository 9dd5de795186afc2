/* Input checks (mn_cfg.c, mn_data.c, mn_weights.c): every bad input a user can
 * give ends in one message naming the file, line, key or rank, before
 * Darknet reads it (Darknet's own parser warns and goes on, or crashes). */
#ifndef MN_INPUT_H
#define MN_INPUT_H

#include "mn_training.h"

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

/* rank 0, after load_weights: every parameter and running statistic is
 * finite, or the error names the weights file and the first bad layer. */
mn_status mn_check_finite_params(const mn_comm *c, network *net, const char *path);

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

#endif
