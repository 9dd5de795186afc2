/* The cfg's [distributed] keys in one table, from which reading, bounds,
 * defaults, the valid keys of an error and info's listing are made
 * (tests/static/config_doc.py holds docs/config.md to it). mn_cfg.c adds the line. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/input/mn_input.h"
#include "coll/mn_coll.h"

/* 0 or 1; an integer from lo; a number; the i-th word of says, as i. */
typedef enum { OPT_FLAG, OPT_INT, OPT_REAL, OPT_WORD, OPT_PATH, OPT_COMM } opt_kind;
/* OPT_EMPTY: an empty value is -1, decided later; OPT_ABOVE: lo itself is out. */
enum { OPT_EMPTY = 1, OPT_ABOVE = 2, OPT_STALE = 4 };

typedef struct {
    const char *name;
    opt_kind kind;
    size_t off, size;   /* the field */
    const char *def;    /* as a cfg spells it */
    double lo, hi;
    int flags;
    const char *says;   /* the words; a real's bounds in its error (a format of lo, hi) */
    double stale;       /* OPT_STALE: the default with double_buffering_local=0 */
    const char *help;
} option;

/* A field's place and size; a number's must be its type's (else no compile). */
#define SIZE(field) sizeof ((mn_options *)0)->field
#define AT(field) offsetof(mn_options, field), SIZE(field)
#define OF(field, type) \
    offsetof(mn_options, field) + 0 * sizeof(char[SIZE(field) == sizeof(type) ? 1 : -1]), SIZE(field)
#define TOP 2147483647.0
#define FLAG(key, field, def, help) {key, OPT_FLAG, OF(field, int), def, 0, 1, 0, NULL, 0, help}
#define INT(key, field, def, lo, flags, help) {key, OPT_INT, OF(field, int), def, lo, TOP, flags, NULL, 0, help}
#define WORD(key, field, def, words, help) {key, OPT_WORD, OF(field, int), def, 0, 0, 0, words, 0, help}
#define PATH(key, field, help) {key, OPT_PATH, AT(field), "", 0, 0, 0, NULL, 0, help}

/* In the order the valid keys are listed. */
static const option options[] = {
    {"communicator", OPT_COMM, AT(communicator), "auto", 0, 0, 0, NULL, 0,
     "the allreduce algorithm (auto: chosen for the job's shape)"},
    WORD("allreduce_grad_dtype", grad_dtype_half, "float32", "float32, float16", "the type gradients travel in"),
    FLAG("double_buffering", double_buffering, "0", "step t's mean is computed during step t+1 and applied then"),
    INT("double_buffering_fresh", dbuf_fresh, "", 0, OPT_EMPTY, "iterations averaged fresh first (empty: burn_in)"),
    FLAG("double_buffering_local", dbuf_local, "1", "each rank's own gradient is applied fresh"),
    {"double_buffering_handover", OPT_INT, OF(dbuf_handover, int), "", 0, TOP, OPT_EMPTY | OPT_STALE, NULL, 300,
     "stale steps whose rate climbs back to the cfg's"},
    {"double_buffering_compensation", OPT_REAL, OF(dbuf_compensation, double), "", 0, 1e6, OPT_EMPTY | OPT_STALE,
     "a number from %.15g (none) to %.15g (100 by default with double_buffering_local=0)", 100,
     "delay compensation's lambda"},
    {"double_buffering_prediction", OPT_REAL, OF(dbuf_prediction, double), "", 0, 1, OPT_EMPTY | OPT_STALE,
     "a number from %.15g (none) to %.15g (1 by default with double_buffering_local=0)", 1,
     "weight prediction's k"},
    FLAG("overlap", overlap, "0", "buckets are averaged while backward goes on"),
    {"bucket_mb", OPT_REAL, OF(bucket_mb, double), "1", 0, 1048576, OPT_ABOVE,
     "a number of MiB above %.15g and at most %.15g (e.g. 4 or 0.5)", 0, "overlap's bucket size in MiB"},
    PATH("timeline", timeline, "a Chrome trace of every rank's phases (empty: none)"),
    FLAG("bn_average", bn_average, "0", "batch-norm statistics averaged over ranks before saves"),
    FLAG("sync_bn", sync_bn, "0", "batch norm uses the global batch's statistics"),
    INT("eval_interval", eval_interval, "0", 0, 0, "iterations between evaluations (0: none)"),
    PATH("eval_list", eval_list, "the list evaluated (empty: the data cfg's valid)"),
    FLAG("deterministic", deterministic, "0", "the global batch in list order, no augmentation"),
    FLAG("shuffle", shuffle, "1", "rank 0 shuffles the list"),
    INT("seed", seed, "1", 0, 0, "initial weights, the shuffle and the random streams"),
    INT("backup_interval", backup_interval, "100", 1, 0, "iterations between <cfg>.backup saves"),
    INT("save_interval", save_interval, "1000", 1, 0, "iterations between <cfg>_<iteration>.weights saves"),
    INT("checkpoint_interval", checkpoint_interval, "0", 0, 0, "iterations between checkpoints (0: none)"),
    INT("checkpoint_keep", checkpoint_keep, "3", 1, 0, "checkpoint generations kept"),
    WORD("nonfinite", nonfinite_skip, "stop", "stop, skip", "NaN/Inf in the loss or mean: stop, or skip the update"),
    WORD("bad_labels", bad_labels_skip, "stop", "stop, skip", "a bad label line: stop, or skip the line"),
    INT("collective_timeout", collective_timeout, "300", 0, 0, "seconds a collective may wait (0: forever)"),
    INT("lock_lease", lock_lease, "60", 1, 0, "seconds the backup folder's lease lasts unrenewed"),
    FLAG("chart", chart, "1", "rank 0 keeps <cfg>_chart.png"),
    INT("cache_mb", cache_mb, "", 0, OPT_EMPTY, "MiB of decoded images a rank keeps (empty: from the node's memory)"),
    WORD("global_batch", global_batch, "keep", "keep, strict, cfg", "resumed on other ranks: its batch, stop or cfg's"),
    FLAG("rescue", rescue, "1", "a job losing a rank writes its last update"),
    INT("save_retry", save_retry, "120", 0, 0, "seconds a refused save is retried"),
    {"checkpoint_minutes", OPT_REAL, OF(checkpoint_minutes, double), "30", 0, 1e6, 0,
     "a number of minutes from %.15g (none) to %.15g (e.g. 30 or 0.5)", 0, "minutes between checkpoints (0: none)"},
};
#define NOPT (sizeof options / sizeof *options)

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

/* Which of the comma-separated words v is, or -1. */
static int word_index(const char *words, const char *v)
{
    size_t n = strlen(v);
    for (int i = 0;; ++i) {
        const char *e = strchr(words, ',');
        size_t len = e ? (size_t)(e - words) : strlen(words);
        if (n && len == n && !strncmp(words, v, n)) return i;
        if (!e) return -1;
        words = e + 2;
    }
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

static int set_comm(char *dst, size_t n, const char *v, char *why, size_t cap)
{
    const char *bad = *v ? mn_comm_check_name(v) : "is empty";
    if (bad) {
        snprintf(why, cap, "[distributed] communicator '%s' %s; valid communicators: %s", v, bad, mn_comm_names());
        return 0;
    }
    snprintf(dst, n, "%s", v);
    return 1;
}

/* What a bad number must be. */
static int must_be(const option *o, const char *v, char *why, size_t cap)
{
    char range[160];
    if (o->kind == OPT_REAL) snprintf(range, sizeof range, o->says, o->lo, o->hi);
    else snprintf(range, sizeof range, "%s", o->kind == OPT_FLAG ? "0 or 1" : o->lo ? "a positive integer"
                                                                 : "a non-negative integer");
    snprintf(why, cap, "[distributed] %s='%s' must be %s", o->name, v, range);
    return 0;
}

/* A number's field as a double. */
static double value_of(const mn_options *opt, const option *o)
{
    const void *f = (const char *)opt + o->off;
    return o->kind == OPT_REAL ? *(const double *)f : *(const int *)f;
}

static void store(mn_options *opt, const option *o, double x)
{
    void *f = (char *)opt + o->off;
    if (o->kind == OPT_REAL) *(double *)f = x;
    else *(int *)f = (int)x;
}

/* v into o's field of opt: 1, or 0 with why. */
static int set(mn_options *opt, const option *o, const char *v, char *why, size_t cap)
{
    void *f = (char *)opt + o->off;
    double x;
    int i;
    if (!*v && o->flags & OPT_EMPTY) {
        store(opt, o, -1);
        return 1;
    }
    switch (o->kind) {
    case OPT_FLAG:
    case OPT_INT: return parse_int(v, (long)o->lo, (long)o->hi, f) || must_be(o, v, why, cap);
    case OPT_REAL:
        if (!parse_real(v, &x) || !((o->flags & OPT_ABOVE ? x > o->lo : x >= o->lo) && x <= o->hi))
            return must_be(o, v, why, cap);
        store(opt, o, x);
        return 1;
    case OPT_WORD:
        if ((i = word_index(o->says, v)) < 0) break;
        store(opt, o, i);
        return 1;
    case OPT_PATH: return copy_path(f, o->size, o->name, v, why, cap);
    case OPT_COMM: return set_comm(f, o->size, v, why, cap);
    }
    snprintf(why, cap, "[distributed] %s='%s' is invalid; valid: %s", o->name, v, o->says);
    return 0;
}

void mn_default_options(mn_options *opt)
{
    char why[256];
    memset(opt, 0, sizeof *opt);
    for (size_t i = 0; i < NOPT; ++i) set(opt, &options[i], options[i].def, why, sizeof why);
}

int mn_option_set(mn_options *opt, const char *k, const char *v, char *why, size_t cap)
{
    for (size_t i = 0; i < NOPT; ++i)
        if (!strcmp(k, options[i].name)) return set(opt, &options[i], v, why, cap);
    size_t len = (size_t)snprintf(why, cap, "unknown key '%s' in [distributed]; valid keys: ", k);
    for (size_t i = 0; i < NOPT && len < cap; ++i)
        len += (size_t)snprintf(why + len, cap - len, "%s%s", i ? ", " : "", options[i].name);
    return 0;
}

const char *mn_option_line(size_t i, char *buf, size_t cap)
{
    if (i >= NOPT) return NULL;
    const option *o = &options[i];
    char values[160], help[256];
    if (o->kind == OPT_FLAG) snprintf(values, sizeof values, "0, 1");
    else if (o->kind == OPT_INT || o->kind == OPT_REAL)
        snprintf(values, sizeof values, "%s%.15g to %.15g%s", o->flags & OPT_ABOVE ? "above " : "", o->lo, o->hi,
                 o->flags & OPT_EMPTY ? ", or empty" : "");
    else snprintf(values, sizeof values, "%s", o->kind == OPT_WORD ? o->says : o->kind == OPT_PATH ? "a file"
                                                                             : mn_comm_names());
    if (o->flags & OPT_STALE)
        snprintf(help, sizeof help, "%s (empty: %.15g with double_buffering_local=0, else 0)", o->help, o->stale);
    else snprintf(help, sizeof help, "%s", o->help);
    snprintf(buf, cap, "%s=%s | %s | %s", o->name, o->def, values, help);
    return buf;
}

double mn_save_retry_s(const mn_options *o)
{
    double bound = o->save_retry;
    if (o->collective_timeout > 0 && bound > 0.8 * o->collective_timeout) bound = 0.8 * o->collective_timeout;
    return bound;
}

/* double_buffering_local=1 applies each rank's own gradient fresh and only
 * the rest of the mean one step late, so the corrections of a stale mean
 * (OPT_STALE) have nothing to correct (bench/results/accuracy-dbuf-local.txt):
 * unset they are off, set they are refused. With double_buffering_local=0
 * (ChainerMN's stale mean) they default to what measured best there. */
const char *mn_options_resolve(mn_options *opt, char *why, size_t cap)
{
    for (size_t i = 0; i < NOPT; ++i)
        if (options[i].flags & OPT_STALE && opt->double_buffering && opt->dbuf_local && value_of(opt, &options[i]) > 0) {
            snprintf(why, cap, "[distributed] %s=%g corrects a stale mean, which double_buffering_local=1 (the "
                     "default) does not apply: each rank's own gradient is applied fresh; set "
                     "double_buffering_local=0 to use it", options[i].name, value_of(opt, &options[i]));
            return options[i].name;
        }
    for (size_t i = 0; i < NOPT; ++i)
        if (options[i].flags & OPT_STALE && value_of(opt, &options[i]) < 0)
            store(opt, &options[i], opt->dbuf_local ? 0 : options[i].stale);
    return NULL;
}

/* Every eval_interval iterations; else, with -map, max(100, eval_epochs *
 * images / global_batch) after last, not before burn_in, and at
 * max_batches. */
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
