/* The keys of the cfg's [distributed] section, their defaults and what a bad
 * value gets told; mn_cfg.c, which reads the cfg, calls this for each line
 * and reports with the file and line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mn_input.h"
#include "mn_coll.h"

void mn_default_options(mn_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->shuffle = 1;
    opt->seed = 1;
    opt->backup_interval = 100;
    opt->save_interval = 1000;
    opt->checkpoint_keep = 3;
    opt->collective_timeout = 300;
    opt->lock_lease = 60;
    opt->chart = 1;
    opt->bucket_mb = 1;
    opt->cache_mb = -1;
    opt->dbuf_fresh = -1;
    opt->dbuf_local = 1;
    opt->dbuf_handover = -1;
    opt->dbuf_compensation = -1;
    opt->dbuf_prediction = -1;
    opt->rescue = 1;
    opt->save_retry = 120;
    opt->checkpoint_minutes = 30;
}

double mn_save_retry_s(const mn_options *o)
{
    double bound = o->save_retry;
    if (o->collective_timeout > 0 && bound > 0.8 * o->collective_timeout) bound = 0.8 * o->collective_timeout;
    return bound;
}

static int parse_int(const char *v, long lo, long hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) return 0;
    *out = (int)x;
    return 1;
}

/* A number, the whole value (its bounds are the caller's). */
static int parse_real(const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    return end != v && !*end;
}

/* A path value, kept in the options (the cfg's text is freed once read). */
static int copy_path(char *dst, size_t n, const char *k, const char *v, char *why, size_t cap)
{
    if (strlen(v) >= n) {
        snprintf(why, cap, "[distributed] %s is longer than %zu bytes", k, n - 1);
        return 0;
    }
    snprintf(dst, n, "%s", v);
    return 1;
}

static const char *const keys =
    "communicator, allreduce_grad_dtype, double_buffering, double_buffering_fresh, double_buffering_local, double_buffering_handover, double_buffering_compensation, double_buffering_prediction, overlap, bucket_mb, timeline, bn_average, sync_bn, eval_interval, eval_list, deterministic, "
    "shuffle, seed, backup_interval, save_interval, checkpoint_interval, checkpoint_keep, nonfinite, bad_labels, collective_timeout, lock_lease, chart, "
    "cache_mb, global_batch, rescue, save_retry, checkpoint_minutes";

/* A real key of [distributed] within [lo, hi] into *out; range says so. */
static int real_key(const char *k, const char *v, double lo, double hi, const char *range, double *out, char *why,
                    size_t cap)
{
    double x;
    if (!parse_real(v, &x) || !(x >= lo && x <= hi)) {
        snprintf(why, cap, "[distributed] %s='%s' must be %s", k, v, range);
        return 0;
    }
    *out = x;
    return 1;
}

int mn_option_set(mn_options *opt, const char *k, const char *v, char *why, size_t cap)
{
    int ok = 1, *flag = NULL, *num = NULL;
    long lo = 0, hi = 2147483647L;
    if (!strcmp(k, "communicator")) {
        const char *bad = *v ? mn_comm_check_name(v) : "is empty";
        if (bad) {
            snprintf(why, cap, "[distributed] communicator '%s' %s; valid communicators: %s", v, bad, mn_comm_names());
            return 0;
        }
        snprintf(opt->communicator, sizeof opt->communicator, "%s", v);
    } else if (!strcmp(k, "allreduce_grad_dtype")) {
        if (!strcmp(v, "float32")) opt->grad_dtype_half = 0;
        else if (!strcmp(v, "float16")) opt->grad_dtype_half = 1;
        else {
            snprintf(why, cap, "[distributed] allreduce_grad_dtype='%s' is invalid; valid: float32, float16", v);
            return 0;
        }
    } else if (!strcmp(k, "double_buffering")) flag = &opt->double_buffering;
    else if (!strcmp(k, "double_buffering_fresh")) num = *v ? &opt->dbuf_fresh : NULL;   /* empty: burn_in */
    else if (!strcmp(k, "double_buffering_local")) flag = &opt->dbuf_local;
    /* The corrections' empty value: their default, mn_options_resolve's. */
    else if (!*v && !strcmp(k, "double_buffering_handover")) opt->dbuf_handover = -1;
    else if (!*v && !strcmp(k, "double_buffering_compensation")) opt->dbuf_compensation = -1;
    else if (!*v && !strcmp(k, "double_buffering_prediction")) opt->dbuf_prediction = -1;
    else if (!strcmp(k, "double_buffering_handover")) num = &opt->dbuf_handover;
    else if (!strcmp(k, "double_buffering_compensation"))
        ok = real_key(k, v, 0, 1e6, "a number from 0 (none) to 1000000 (100 by default with double_buffering_local=0)",
                      &opt->dbuf_compensation, why, cap);
    else if (!strcmp(k, "double_buffering_prediction"))
        ok = real_key(k, v, 0, 1, "a number from 0 (none) to 1 (1 by default with double_buffering_local=0)",
                      &opt->dbuf_prediction, why, cap);
    else if (!strcmp(k, "overlap")) flag = &opt->overlap;
    else if (!strcmp(k, "bucket_mb")) {   /* above 0, not from 0 */
        double x;
        if (!parse_real(v, &x) || !(x > 0 && x <= 1048576)) {
            snprintf(why, cap, "[distributed] bucket_mb='%s' must be a number of MiB above 0 and at most 1048576 "
                     "(e.g. 4 or 0.5)", v);
            return 0;
        }
        opt->bucket_mb = x;
    } else if (!strcmp(k, "timeline")) ok = copy_path(opt->timeline, sizeof opt->timeline, k, v, why, cap);   /* empty: none */
    else if (!strcmp(k, "bn_average")) flag = &opt->bn_average;
    else if (!strcmp(k, "sync_bn")) flag = &opt->sync_bn;
    else if (!strcmp(k, "eval_interval")) num = &opt->eval_interval;
    else if (!strcmp(k, "eval_list")) ok = copy_path(opt->eval_list, sizeof opt->eval_list, k, v, why, cap);   /* empty: the data cfg's valid list */
    else if (!strcmp(k, "deterministic")) flag = &opt->deterministic;
    else if (!strcmp(k, "shuffle")) flag = &opt->shuffle;
    else if (!strcmp(k, "seed")) num = &opt->seed;
    else if (!strcmp(k, "backup_interval")) { num = &opt->backup_interval; lo = 1; }
    else if (!strcmp(k, "save_interval")) { num = &opt->save_interval; lo = 1; }
    else if (!strcmp(k, "checkpoint_interval")) num = &opt->checkpoint_interval;
    else if (!strcmp(k, "checkpoint_minutes"))
        ok = real_key(k, v, 0, 1e6, "a number of minutes from 0 (none) to 1000000 (e.g. 30 or 0.5)",
                      &opt->checkpoint_minutes, why, cap);
    else if (!strcmp(k, "checkpoint_keep")) { num = &opt->checkpoint_keep; lo = 1; }
    else if (!strcmp(k, "collective_timeout")) num = &opt->collective_timeout;
    else if (!strcmp(k, "lock_lease")) { num = &opt->lock_lease; lo = 1; }
    else if (!strcmp(k, "chart")) flag = &opt->chart;
    else if (!strcmp(k, "rescue")) flag = &opt->rescue;
    else if (!strcmp(k, "save_retry")) num = &opt->save_retry;
    else if (!strcmp(k, "cache_mb")) num = *v ? &opt->cache_mb : NULL;   /* empty: the default */
    else if (!strcmp(k, "nonfinite") || !strcmp(k, "bad_labels")) {
        if (strcmp(v, "stop") && strcmp(v, "skip")) {
            snprintf(why, cap, "[distributed] %s='%s' is invalid; valid: stop, skip", k, v);
            return 0;
        }
        int *skip = !strcmp(k, "nonfinite") ? &opt->nonfinite_skip : &opt->bad_labels_skip;
        *skip = !strcmp(v, "skip");
    } else if (!strcmp(k, "global_batch")) {
        if (!strcmp(v, "keep")) opt->global_batch = MN_GLOBAL_BATCH_KEEP;
        else if (!strcmp(v, "strict")) opt->global_batch = MN_GLOBAL_BATCH_STRICT;
        else if (!strcmp(v, "cfg")) opt->global_batch = MN_GLOBAL_BATCH_CFG;
        else {
            snprintf(why, cap, "[distributed] global_batch='%s' is invalid; valid: keep, strict, cfg", v);
            return 0;
        }
    } else {
        snprintf(why, cap, "unknown key '%s' in [distributed]; valid keys: %s", k, keys);
        return 0;
    }
    if (flag) ok = parse_int(v, 0, 1, flag);
    if (num) ok = parse_int(v, lo, hi, num);
    if (!ok && (flag || num))
        snprintf(why, cap, "[distributed] %s='%s' must be %s", k, v,
                 flag ? "0 or 1" : lo ? "a positive integer" : "a non-negative integer");
    return ok;
}

/* double_buffering_local=1 applies each rank's own gradient fresh and only
 * the rest of the mean one step late, so nothing is left for the three
 * corrections of a stale mean to correct (bench/results/accuracy-dbuf-local.txt):
 * unset they are off, set they are refused. With double_buffering_local=0
 * (ChainerMN's stale mean) they default to what measured best there. */
const char *mn_options_resolve(mn_options *opt, char *why, size_t cap)
{
    static const char *const names[] = {"double_buffering_handover", "double_buffering_compensation",
                                        "double_buffering_prediction"};
    double set[3] = {opt->dbuf_handover, opt->dbuf_compensation, opt->dbuf_prediction};
    static const double defaults[3] = {300, 100, 1};
    for (int i = 0; i < 3; ++i) {
        if (opt->double_buffering && opt->dbuf_local && set[i] > 0) {
            snprintf(why, cap, "[distributed] %s=%g corrects a stale mean, which double_buffering_local=1 (the "
                     "default) does not apply: each rank's own gradient is applied fresh; set "
                     "double_buffering_local=0 to use it", names[i], set[i]);
            return names[i];
        }
        if (set[i] < 0) set[i] = opt->dbuf_local ? 0 : defaults[i];
    }
    opt->dbuf_handover = (int)set[0];
    opt->dbuf_compensation = set[1];
    opt->dbuf_prediction = set[2];
    return NULL;
}

/* When training evaluates: the options decide it (mn_input.h). */
int mn_eval_due(const mn_options *opt, size_t it, size_t last, size_t max_batches, size_t burn_in, size_t images,
                size_t global_batch)
{
    if (opt->eval_interval > 0) return it % (size_t)opt->eval_interval == 0;
    if (opt->eval_epochs <= 0) return 0;
    /* As the fork's train_detector: in its units, batch * subdivisions
     * (times -gpus) images an iteration, our global batch. */
    size_t each = (size_t)opt->eval_epochs * images / (global_batch ? global_batch : 1);
    if (each < 100) each = 100;
    size_t next = last + each > burn_in ? last + each : burn_in;
    return it >= next || it == max_batches;
}

const char *mn_eval_asker(const mn_options *opt, char *buf, size_t n)
{
    if (opt->eval_interval > 0) snprintf(buf, n, "eval_interval=%d", opt->eval_interval);
    else snprintf(buf, n, "-map");
    return buf;
}
