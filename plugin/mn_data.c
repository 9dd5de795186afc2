/* Data files shared by training and evaluation: the data cfg, labels, images. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "mn_internal.h"
#include "option_list.h"
#include "utils.h"

double mn_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static char *str_or(list *o, const char *key, char *def)
{
    char *v = option_find(o, (char *)key);
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
    list *l = get_paths(d->labels_file);
    d->nlabels = l->size;
    d->labels = (char **)list_to_array(l);
    free_list(l);
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
    list *o = read_data_cfg((char *)datacfg);
    d->options = o;
    d->train = str_or(o, "train", NULL);
    d->valid = str_or(o, "valid", NULL);
    d->backup = str_or(o, "backup", "backup");
    d->classes = option_find_int_quiet(o, "classes", 0);
    d->labels_file = str_or(o, "labels", NULL);
    mn_status s = task == MN_TASK_CLASSIFIER ? read_labels(c, datacfg, d) : MN_OK;
    if (s != MN_OK) mn_free_data_cfg(d);
    return s;
}

void mn_free_data_cfg(mn_data_cfg *d)
{
    for (int i = 0; d->labels && i < d->nlabels; ++i) free(d->labels[i]);
    free(d->labels);
    if (d->options) {
        /* Darknet's kvp: key and value share the line that key points to. */
        for (node *n = d->options->front; n; n = n->next) {
            kvp *p = n->val;
            free(p->key);
            free(p);
        }
        free_list(d->options);
    }
    memset(d, 0, sizeof *d);
}

/* The class of a path: the one label it contains (Darknet matches labels as
 * substrings). -1 when none or several match. */
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

