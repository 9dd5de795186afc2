/* The cfg's [distributed] section: every key is checked, and a bad key or
 * value is reported with the cfg file name and the list of valid choices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mn_internal.h"
#include "option_list.h"

void mn_default_options(mn_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->shuffle = 1;
    opt->seed = 1;
    opt->backup_interval = 100;
    opt->save_interval = 1000;
    opt->checkpoint_keep = 3;
    opt->collective_timeout = 300;
    opt->chart = 1;
    opt->bucket_mb = 1;
    opt->cache_mb = -1;
}

static int parse_int(const char *v, long lo, long hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) return 0;
    *out = (int)x;
    return 1;
}

static const char *const keys =
    "communicator, allreduce_grad_dtype, double_buffering, overlap, bucket_mb, timeline, bn_average, sync_bn, eval_interval, eval_list, deterministic, "
    "shuffle, seed, backup_interval, save_interval, checkpoint_interval, checkpoint_keep, nonfinite, bad_labels, collective_timeout, chart, cache_mb";

mn_status mn_parse_options(const network *net, const char *cfgfile, int report, mn_options *opt)
{
    mn_default_options(opt);
    if (!net->distributed) return MN_OK;
    for (node *n = net->distributed->front; n; n = n->next) {
        kvp *p = n->val;
        const char *k = p->key, *v = p->val;
        int ok = 1, *flag = NULL, *num = NULL;
        long lo = 0, hi = 2147483647L;
        if (!v) {   /* Darknet's read_option keeps a line without '=' with no value */
            if (report) fprintf(stderr, "darknet-mn: %s: [distributed] line '%s' has no '='; write key=value\n", cfgfile, k);
            return MN_ERR_USER;
        }
        if (!strcmp(k, "communicator")) {
            const char *why = *v ? mn_comm_check_name(v) : "is empty";
            if (why) {
                if (report) fprintf(stderr, "darknet-mn: %s: [distributed] communicator '%s' %s; valid communicators: %s\n",
                        cfgfile, v, why, mn_comm_names());
                return MN_ERR_USER;
            }
            snprintf(opt->communicator, sizeof opt->communicator, "%s", v);
        } else if (!strcmp(k, "allreduce_grad_dtype")) {
            if (!strcmp(v, "float32")) opt->grad_dtype_half = 0;
            else if (!strcmp(v, "float16")) opt->grad_dtype_half = 1;
            else {
                if (report) fprintf(stderr, "darknet-mn: %s: [distributed] allreduce_grad_dtype='%s' is invalid; valid: float32, float16\n",
                        cfgfile, v);
                return MN_ERR_USER;
            }
        } else if (!strcmp(k, "double_buffering")) flag = &opt->double_buffering;
        else if (!strcmp(k, "overlap")) flag = &opt->overlap;
        else if (!strcmp(k, "bucket_mb")) {
            char *end;
            double x = strtod(v, &end);
            if (end == v || *end || !(x > 0 && x <= 1048576)) {
                if (report) fprintf(stderr, "darknet-mn: %s: [distributed] bucket_mb='%s' must be a number of MiB "
                                    "above 0 and at most 1048576 (e.g. 4 or 0.5)\n", cfgfile, v);
                return MN_ERR_USER;
            }
            opt->bucket_mb = x;
        } else if (!strcmp(k, "timeline")) opt->timeline = *v ? v : NULL;   /* empty: none */
        else if (!strcmp(k, "bn_average")) flag = &opt->bn_average;
        else if (!strcmp(k, "sync_bn")) flag = &opt->sync_bn;
        else if (!strcmp(k, "eval_interval")) num = &opt->eval_interval;
        else if (!strcmp(k, "eval_list")) opt->eval_list = *v ? v : NULL;   /* empty: the data cfg's valid list */
        else if (!strcmp(k, "deterministic")) flag = &opt->deterministic;
        else if (!strcmp(k, "shuffle")) flag = &opt->shuffle;
        else if (!strcmp(k, "seed")) num = &opt->seed;
        else if (!strcmp(k, "backup_interval")) { num = &opt->backup_interval; lo = 1; }
        else if (!strcmp(k, "save_interval")) { num = &opt->save_interval; lo = 1; }
        else if (!strcmp(k, "checkpoint_interval")) num = &opt->checkpoint_interval;
        else if (!strcmp(k, "checkpoint_keep")) { num = &opt->checkpoint_keep; lo = 1; }
        else if (!strcmp(k, "collective_timeout")) num = &opt->collective_timeout;
        else if (!strcmp(k, "chart")) flag = &opt->chart;
        else if (!strcmp(k, "cache_mb")) num = *v ? &opt->cache_mb : NULL;   /* empty: the default */
        else if (!strcmp(k, "nonfinite")) {
            if (!strcmp(v, "stop") || !strcmp(v, "skip")) opt->nonfinite_skip = !strcmp(v, "skip");
            else {
                if (report) fprintf(stderr, "darknet-mn: %s: [distributed] nonfinite='%s' is invalid; valid: stop, skip\n", cfgfile, v);
                return MN_ERR_USER;
            }
        }
        else if (!strcmp(k, "bad_labels")) {
            if (!strcmp(v, "stop") || !strcmp(v, "skip")) opt->bad_labels_skip = !strcmp(v, "skip");
            else {
                if (report) fprintf(stderr, "darknet-mn: %s: [distributed] bad_labels='%s' is invalid; valid: stop, skip\n", cfgfile, v);
                return MN_ERR_USER;
            }
        }
        else {
            if (report) fprintf(stderr, "darknet-mn: %s: unknown key '%s' in [distributed]; valid keys: %s\n",
                    cfgfile, k, keys);
            return MN_ERR_USER;
        }
        if (flag) ok = parse_int(v, 0, 1, flag);
        if (num) ok = parse_int(v, lo, hi, num);
        if (!ok) {
            if (report) fprintf(stderr, "darknet-mn: %s: [distributed] %s='%s' must be %s\n", cfgfile, k, v,
                    flag ? "0 or 1" : lo ? "a positive integer" : "a non-negative integer");
            return MN_ERR_USER;
        }
        p->used = 1;
    }
    return MN_OK;
}

/* Before MPI_Init: whether the cfg's [distributed] section sets
 * double_buffering to 1 (spaces and # or ; comments allowed), so that only
 * such a run asks MPI for MPI_THREAD_MULTIPLE (locking in every MPI call).
 * An unreadable file says 0; the full parse reports it later. */
int mn_cfg_peek(const char *cfgfile, const char *key, char *out, size_t cap)
{
    FILE *f = cfgfile ? fopen(cfgfile, "r") : NULL;
    if (!f) return 0;
    char line[512];
    size_t klen = strlen(key);
    int in_section = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = line, *q = line;
        for (; *p && *p != '#' && *p != ';' && *p != '\n' && *p != '\r'; ++p)
            if (*p != ' ' && *p != '\t') *q++ = *p;
        *q = 0;
        if (line[0] == '[') in_section = !strcmp(line, "[distributed]");
        else if (in_section && !strncmp(line, key, klen) && line[klen] == '=') {
            snprintf(out, cap, "%s", line + klen + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

int mn_cfg_wants_threads(const char *cfgfile)
{
    char v[32], w[32];
    return (mn_cfg_peek(cfgfile, "double_buffering", v, sizeof v) && !strcmp(v, "1")) ||
           (mn_cfg_peek(cfgfile, "overlap", w, sizeof w) && !strcmp(w, "1"));
}
