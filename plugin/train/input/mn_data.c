/* Data files shared by training and evaluation: the data cfg, labels, images. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "train/input/mn_input.h"
#include "base/mn_base_util.h"
#include "base/mn_base.h"

/* option_find_int_quiet: the key's value as Darknet's atoi reads it, else def. */
int mn_data_int(list *o, const char *key, int def)
{
    char *v = mn_base_option(o, key);
    return v ? atoi(v) : def;
}

static char *str_or(list *o, const char *key, char *def)
{
    char *v = mn_base_option(o, key);
    return v ? v : def;
}

/* Classifier labels: one a line, the first `classes` lines name the classes. */
static mn_status read_labels(mn_comm *c, const char *datacfg, mn_data_cfg *d)
{
    if (d->classes < 1) {
        if (c->rank == 0) mn_error(c, "%s: 'classes' must be a positive integer", datacfg);
        return MN_ERR_USER;
    }
    if (!d->labels_file) {
        if (c->rank == 0) mn_error(c, "%s: no 'labels' file given", datacfg);
        return MN_ERR_USER;
    }
    FILE *fp = fopen(d->labels_file, "r");
    if (!fp) {
        if (c->rank == 0) mn_error(c, "cannot open labels file %s (from %s): %s", d->labels_file, datacfg, strerror(errno));
        return MN_ERR_USER;
    }
    fclose(fp);
    d->labels = mn_base_read_lines(d->labels_file, &d->nlabels);
    if (d->nlabels < d->classes) {
        if (c->rank == 0)
            mn_error(c, "labels file %s has %d labels, but %s says classes=%d", d->labels_file, d->nlabels, datacfg, d->classes);
        return MN_ERR_USER;
    }
    /* An empty label is a substring of every path: no image would have one class. */
    for (int i = 0; i < d->classes; ++i)
        if (!d->labels[i][0]) {
            if (c->rank == 0) mn_error(c, "labels file %s: line %d is empty; its first %d lines name the classes", d->labels_file, i + 1, d->classes);
            return MN_ERR_USER;
        }
    return MN_OK;
}

mn_status mn_read_data_cfg(mn_comm *c, const char *datacfg, mn_task task, mn_data_cfg *d)
{
    memset(d, 0, sizeof *d);
    FILE *fp = fopen(datacfg, "r");
    if (!fp) {
        if (c->rank == 0) mn_error(c, "cannot open data file %s: %s", datacfg, strerror(errno));
        return MN_ERR_USER;
    }
    fclose(fp);
    list *o = mn_base_read_options(datacfg);
    d->options = o;
    d->train = str_or(o, "train", NULL);
    d->valid = str_or(o, "valid", NULL);
    d->backup = str_or(o, "backup", "backup");
    d->classes = mn_data_int(o, "classes", 0);
    d->labels_file = str_or(o, "labels", NULL);
    mn_status s = task == MN_TASK_CLASSIFIER ? read_labels(c, datacfg, d) : MN_OK;
    if (s != MN_OK) mn_free_data_cfg(d);
    return s;
}

void mn_free_data_cfg(mn_data_cfg *d)
{
    for (int i = 0; d->labels && i < d->nlabels; ++i) free(d->labels[i]);
    free(d->labels);
    mn_base_free_options(d->options);
    memset(d, 0, sizeof *d);
}

int mn_path_class(char **labels, int k, const char *path, int *matches)
{
    int cls = -1;
    *matches = 0;
    for (int i = 0; i < k; ++i)
        if (strstr(path, labels[i])) { cls = i; ++*matches; }
    return *matches == 1 ? cls : -1;
}

mn_status mn_check_readable(const mn_comm *c, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) { mn_error(c, "cannot read image %s: %s", path, strerror(errno)); return MN_ERR_USER; }
    fclose(fp);
    return MN_OK;
}

/* pjreddie's rule: images -> labels, .jpg -> .txt, each once. */
static void folder_rule(const char *path, char *out, size_t cap)
{
    static const char *const from[] = {"images", "JPEGImages", "raw", ".jpg", ".png", ".JPG", ".JPEG"};
    static const char *const to[] = {"labels", "labels", "labels", ".txt", ".txt", ".txt", ".txt"};
    char tmp[4096];
    snprintf(out, cap, "%s", path);
    /* find_replace replaces the first match only, as Darknet's loader does. */
    for (int i = 0; i < 7; ++i) {
        char *at = strstr(out, from[i]);
        if (!at) continue;
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(at - out), out, to[i], at + strlen(from[i]));
        snprintf(out, cap, "%s", tmp);
    }
}

void mn_train_label_path(const char *path, char *out, size_t cap)
{
    if (!mn_base_label_path(path, out, cap)) folder_rule(path, out, cap);
}

int mn_label_fallback(const char *image, char *lp, size_t cap)
{
    if (access(lp, F_OK) == 0) return MN_LABELS_RULE;
    char alt[4096];
    /* Beside: the image's own name with its extension (if any) made .txt. */
    const char *slash = strrchr(image, '/'), *dot = strrchr(image, '.');
    int stem = dot && (!slash || dot > slash) ? (int)(dot - image) : (int)strlen(image);
    snprintf(alt, sizeof alt, "%.*s.txt", stem, image);
    if (strcmp(alt, lp) && access(alt, F_OK) == 0) {
        snprintf(lp, cap, "%s", alt);
        return MN_LABELS_BESIDE;
    }
    folder_rule(image, alt, sizeof alt);
    if (strcmp(alt, lp) && access(alt, F_OK) == 0) {
        snprintf(lp, cap, "%s", alt);
        return MN_LABELS_FOLDER;
    }
    return MN_LABELS_RULE;
}

static void label_path_hook_fn(void *ctx, const char *image, char *labelpath)
{
    (void)ctx;
    mn_label_fallback(image, labelpath, 4096);
}

void mn_label_path_install(void) { mn_base_set_label_path_hook(label_path_hook_fn, NULL); }
void mn_label_path_uninstall(void) { mn_base_set_label_path_hook(NULL, NULL); }

/* YOLO label coordinates are relative to the image; a float rounding past
 * the edge by this much is not a mistake. */
#define MN_LABEL_SLACK 1e-5

int mn_label_line_bad(const char *line, int classes, char *why, size_t cap)
{
    char tok[6][64];
    int n = sscanf(line, "%63s %63s %63s %63s %63s %63s", tok[0], tok[1], tok[2], tok[3], tok[4], tok[5]);
    if (n <= 0) return 0;   /* a blank line: Darknet's reader skips it */
    if (n != 5) {
        snprintf(why, cap, "%d field%s; a label line is 'class x y w h'", n, n == 1 ? "" : "s");
        return 1;
    }
    char *end;
    long id = strtol(tok[0], &end, 10);
    if (*end || end == tok[0]) {
        snprintf(why, cap, "class '%s' is not an integer; a label line is 'class x y w h'", tok[0]);
        return 1;
    }
    if (id < 0 || id >= classes) {
        snprintf(why, cap, "class id %ld is outside 0..%d (the cfg's last layer has classes=%d)", id, classes - 1, classes);
        return 1;
    }
    static const char *const name[4] = {"x", "y", "w", "h"};
    float v[4];
    for (int i = 0; i < 4; ++i) {
        v[i] = strtof(tok[i + 1], &end);
        if (*end || end == tok[i + 1]) {
            snprintf(why, cap, "%s='%s' is not a number; a label line is 'class x y w h'", name[i], tok[i + 1]);
            return 1;
        }
        if (!isfinite(v[i])) {
            snprintf(why, cap, "%s=%s is not a finite number", name[i], tok[i + 1]);
            return 1;
        }
    }
    for (int i = 0; i < 4; ++i)
        if (v[i] > 2) {
            snprintf(why, cap, "%s=%s: coordinates look like pixels; YOLO labels are relative to the image size "
                     "(x, y, w, h in 0..1: divide by the image's width or height)", name[i], tok[i + 1]);
            return 1;
        }
    for (int i = 0; i < 4; ++i) {
        int size = i >= 2;
        int too_low = size ? v[i] <= 0 : v[i] < -MN_LABEL_SLACK;
        if (too_low || v[i] > 1 + MN_LABEL_SLACK) {
            snprintf(why, cap, "%s=%s is outside %s (the box's %s, relative to the image)", name[i], tok[i + 1],
                     size ? "(0, 1]" : "[0, 1]", size ? (i == 2 ? "width" : "height") : "centre");
            return 1;
        }
    }
    return 0;
}

/* The first bad lines of a rank that bad_labels=skip prints. */
#define MN_SKIP_SHOWN 3

mn_status mn_check_label_lines(const mn_comm *c, const char *image, const char *lp, int classes, mn_label_skip *skip)
{
    FILE *fp = fopen(lp, "r");
    if (!fp) { mn_error(c, "cannot read the labels of %s: %s: %s", image, lp, strerror(errno)); return MN_ERR_USER; }
    char line[1024], why[256];
    mn_status s = MN_OK;
    int dropped = 0;
    for (int no = 1; s == MN_OK && fgets(line, sizeof line, fp); ++no) {
        if (!mn_label_line_bad(line, classes, why, sizeof why)) continue;
        if (!skip) {
            mn_error(c, "%s:%d: %s", lp, no, why);
            s = MN_ERR_USER;
        } else {
            if (skip->shown < MN_SKIP_SHOWN) mn_error(c, "bad_labels=skip drops %s:%d: %s", lp, no, why);
            skip->shown += skip->shown < MN_SKIP_SHOWN;
            ++skip->lines;
            dropped = 1;
        }
    }
    if (skip) skip->files += dropped;
    fclose(fp);
    return s;
}

mn_status mn_label_skip_report(mn_comm *c, const mn_label_skip *skip, const char *what)
{
    long mine[2] = {skip->lines, skip->files}, all[2];
    if (MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, c->world) != MPI_SUCCESS) {
        mn_error(c, "MPI_Allreduce of the dropped label lines failed");
        return MN_ERR_MPI;
    }
    if (c->rank == 0 && all[0] > 0)
        printf("darknet-mn: bad_labels=skip: dropped %ld bad label line%s in %ld file%s of %s (the first of each "
               "rank are above)\n", all[0], all[0] == 1 ? "" : "s", all[1], all[1] == 1 ? "" : "s", what);
    return MN_OK;
}

/* read_boxes' filter: keep the lines the check accepts. */
static int keep_label_line(void *ctx, const char *line)
{
    char why[256];
    return !mn_label_line_bad(line, ((const mn_label_skip *)ctx)->classes, why, sizeof why);
}

void mn_label_filter_install(mn_label_skip *skip)
{
    mn_base_set_box_line_hook(keep_label_line, skip);
}

void mn_label_filter_uninstall(void)
{
    mn_base_set_box_line_hook(NULL, NULL);
}

/* What the start's check learned of where the labels are: the count of
 * each rule (MN_LABELS_*), and for the two fallbacks a first example (the
 * rule's path, then the one used). */
typedef struct {
    long found[3];
    char eg[3][2][4096];
} label_rules;

/* A detector image's label file, where the training loader looks for it. */
static mn_status check_label_file(const mn_comm *c, const char *image, int classes, mn_label_skip *skip,
                                  label_rules *r)
{
    char lp[4096];
    mn_train_label_path(image, lp, sizeof lp);
    char rule[4096];
    snprintf(rule, sizeof rule, "%s", lp);
    int k = mn_label_fallback(image, lp, sizeof lp);
    if (!r->found[k]++ && k != MN_LABELS_RULE) {
        snprintf(r->eg[k][0], sizeof r->eg[k][0], "%s", rule);
        snprintf(r->eg[k][1], sizeof r->eg[k][1], "%s", lp);
    }
    return mn_check_label_lines(c, image, lp, classes, skip);
}

/* Once, on rank 0: how many images found their labels elsewhere than the
 * base's rule says, and where. Collective. */
static mn_status report_label_rules(mn_comm *c, const label_rules *r)
{
    long all[3];
    if (MPI_Allreduce(r->found, all, 3, MPI_LONG, MPI_SUM, c->world) != MPI_SUCCESS) {
        mn_error(c, "MPI_Allreduce of the label counts failed");
        return MN_ERR_MPI;
    }
    static const char *const how[] = {"", "beside the image", "in Darknet's images -> labels folder"};
    for (int k = MN_LABELS_BESIDE; k <= MN_LABELS_FOLDER && c->rank == 0; ++k) {
        if (!all[k]) continue;
        printf("darknet-mn: labels: %ld of %ld training images have no label file where %s Darknet looks and use "
               "the one %s", all[k], all[0] + all[1] + all[2], mn_base_name(), how[k]);
        if (r->found[k]) printf(" (%s, not %s)", r->eg[k][1], r->eg[k][0]);   /* rank 0's first */
        printf("\n");
    }
    fflush(stdout);
    return MN_OK;
}

/* Non-empty lines of a names file, or -1 when it cannot be read. */
static int count_names(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') ++p;
        n += *p != 0;
    }
    fclose(fp);
    return n;
}

mn_status mn_check_detector_classes(const mn_comm *c, const char *datacfg, const char *cfgfile,
                                    const mn_data_cfg *dc, const network *net)
{
    if (c->rank != 0) return MN_OK;
    int classes = mn_layer_last(net).classes;
    char layers[256] = "";
    size_t len = 0;
    for (int i = 0; i < mn_net_layers(net); ++i) {
        mn_layer_info l = mn_layer_get(net, i);
        if (l.kind != MN_LAYER_YOLO && l.kind != MN_LAYER_REGION && l.kind != MN_LAYER_DETECTION) continue;
        if (l.classes != classes) {
            mn_error(c, "%s: layer %d (%s) has classes=%d but the last layer %d has classes=%d; every detection "
                     "layer must have the same", cfgfile, i,
                     l.kind == MN_LAYER_YOLO ? "yolo" : l.kind == MN_LAYER_REGION ? "region" : "detection", l.classes,
                     mn_net_layers(net) - 1, classes);
            return MN_ERR_USER;
        }
        if (len + 16 < sizeof layers) len += (size_t)snprintf(layers + len, sizeof layers - len, "%s%d", len ? ", " : "", i);
    }
    const char *nf = mn_base_option(dc->options, "names");
    int names = nf ? count_names(nf) : -2;
    if (names == -1) {
        mn_error(c, "cannot read names file %s (from %s): %s", nf, datacfg, strerror(errno));
        return MN_ERR_USER;
    }
    int data_says = mn_base_option(dc->options, "classes") != NULL;
    if ((data_says && dc->classes != classes) || (names >= 0 && names != classes)) {
        char n_part[600] = "";
        if (names >= 0) snprintf(n_part, sizeof n_part, ", and names file %s has %d names", nf, names);
        char d_part[600] = "no classes=";
        if (data_says) snprintf(d_part, sizeof d_part, "classes=%d", dc->classes);
        mn_error(c, "%s says %s, the detection layers (%s) of %s have classes=%d%s: the three must agree", datacfg,
                 d_part, layers, cfgfile, classes, n_part);
        return MN_ERR_USER;
    }
    return MN_OK;
}

mn_status mn_check_training_input(mn_comm *c, mn_task task, const mn_data_cfg *dc, const mn_options *opt,
                                  const network *net, const mn_list *shard, mn_label_skip *skip)
{
    mn_status s = MN_OK;
    memset(skip, 0, sizeof *skip);
    skip->classes = mn_layer_last(net).classes;
    /* A deterministic run holds the whole list on every rank: each checks its part. */
    size_t from = 0, count = shard->n;
    label_rules *rules = calloc(1, sizeof *rules);   /* 24 KiB of examples: not on the stack */
    if (!rules) s = MN_ERR_NOMEM;
    if (opt->deterministic) mn_shard_bounds(shard->n, c->size, c->rank, &from, &count);
    /* Unreadable images are counted to the end of the part, so that a folder
     * gone or not mounted reads as such, not as its first file. */
    size_t unreadable = 0;
    const char *first = NULL;
    int first_err = 0;
    for (size_t i = from; s == MN_OK && i < from + count; ++i) {
        const char *p = shard->paths[i];
        if (access(p, R_OK) != 0) {
            if (!unreadable++) { first = p; first_err = errno; }
        } else if (unreadable) continue;
        else if (task == MN_TASK_CLASSIFIER) {
            int m;
            if (mn_path_class(dc->labels, dc->classes, p, &m) < 0) {
                mn_error(c, "image %s matches %d labels of %s; it must contain exactly one", p, m, dc->labels_file);
                s = MN_ERR_USER;
            }
        } else s = check_label_file(c, p, skip->classes, opt->bad_labels_skip ? skip : NULL, rules);
    }
    if (unreadable == 1) mn_error(c, "cannot read image %s: %s", first, strerror(first_err));
    else if (unreadable)
        mn_error(c, "cannot read image %s: %s; %zu more of the %zu images this rank checks cannot be read either",
                 first, strerror(first_err), unreadable - 1, count);
    if (unreadable) s = MN_ERR_USER;
    if (task == MN_TASK_DETECTOR) {
        s = mn_agree(c, s);
        if (s == MN_OK) s = report_label_rules(c, rules);
    }
    free(rules);
    if (task == MN_TASK_DETECTOR && opt->bad_labels_skip) {
        s = mn_agree(c, s);
        if (s == MN_OK) s = mn_label_skip_report(c, skip, "the training list");
    }
    if (c->rank == 0 && s == MN_OK && (opt->eval_interval > 0 || opt->eval_epochs > 0)) {
        const char *list = opt->eval_list[0] ? opt->eval_list : dc->valid;
        FILE *fp = list ? fopen(list, "r") : NULL;
        char who[64];
        mn_eval_asker(opt, who, sizeof who);
        if (!list) mn_error(c, "%s but there is nothing to evaluate: give 'valid' in the data cfg%s", who,
                            opt->eval_interval > 0 ? " or eval_list in [distributed]" : "");
        else if (!fp) mn_error(c, "cannot open list %s (evaluated during training: %s): %s", list, who,
                               strerror(errno));
        if (fp) fclose(fp);
        else s = MN_ERR_USER;
    }
    return mn_agree(c, s);
}
