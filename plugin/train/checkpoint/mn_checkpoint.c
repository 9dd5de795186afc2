/* Checkpoints hold everything needed to continue exactly, which weights
 * files lose: the momentum, double buffering's mean in flight, seen and the
 * iteration. It is the same on every rank, so rank 0 alone writes one file
 * and on resume reads and broadcasts it: only rank 0's host needs the
 * backup folder, and any rank count resumes. */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "train/checkpoint/mn_checkpoint.h"
#include "core/mn_fault.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "core/mn_output.h"
#include "core/mn_watchdog.h"

#define CKPT_MAGIC "MNCKPT03"
#define CKPT_MAGIC_02 "MNCKPT02"   /* no experiment recorded: refused, it may be another's */
#define MAX_GENERATIONS 256
#define MAX_EXPERIMENT (64u << 20)   /* a larger experiment text is a corrupt header */
#define LOCK_NAME ".darknet_mn.lock"
#define TOKEN_NAME ".darknet_mn.token"

typedef struct {
    char magic[8];
    uint32_t ranks, images;   /* the writer's rank count, images per rank per update */
    uint64_t iteration, seen, nparams, nmomentum;
    uint64_t run;             /* the run that wrote it: pruning touches only its own */
    uint64_t written;         /* ns since the epoch, on the writer's clock */
    /* MNCKPT02 ends here. */
    uint64_t experiment;      /* bytes of the experiment's text, after the header */
    double best;              /* the best evaluation score so far (-1: none) */
    uint64_t best_iteration;
} ckpt_header;
#define HEADER_02 offsetof(ckpt_header, experiment)

size_t mn_checkpoint_bytes(const network *net, mn_optimizer *o, const char *experiment)
{
    size_t nmom = 0;
    mn_optimizer_arena(o, &nmom);
    return sizeof(ckpt_header) + (experiment ? strlen(experiment) : 0) +
           (mn_params_count(net) + nmom) * sizeof(float) + sizeof(uint64_t);
}

static void ckpt_path(char *buf, size_t n, const char *dir, const char *base, uint64_t it)
{
    snprintf(buf, n, "%s/%s.ckpt-%llu", dir, base, (unsigned long long)it);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define HOLDER 320

/* The run id of a holder (lock_holder's text); 0 for none. */
static uint64_t holder_run(const char *holder)
{
    unsigned long long run = 0;
    return sscanf(holder, "%*s %*s %llx", &run) == 1 ? run : 0;
}

/* The lock record's "<host> <pid> <run>" into buf ("" for none), and its
 * run id. */
static uint64_t lock_holder(const char *dir, char *buf)
{
    char path[4096], host[256] = "", pid[32] = "", run[32] = "";
    snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (fscanf(f, "%255s %31s %31s", host, pid, run) == 3) snprintf(buf, HOLDER, "%s %s %s", host, pid, run);
    fclose(f);
    return holder_run(buf);
}

/* A checkpoint's header (*old: MNCKPT02) and its experiment text (NULL
 * for MNCKPT02), which the caller frees. 0 when the file is not whole. */
static int read_head(FILE *f, ckpt_header *h, int *old, char **exp)
{
    struct stat st;
    *exp = NULL;
    memset(h, 0, sizeof *h);
    if (fread(h, HEADER_02, 1, f) != 1 || fstat(fileno(f), &st) != 0) return 0;
    *old = !memcmp(h->magic, CKPT_MAGIC_02, 8);
    if (!*old && (memcmp(h->magic, CKPT_MAGIC, 8) ||
                  fread((char *)h + HEADER_02, sizeof *h - HEADER_02, 1, f) != 1 || h->experiment > MAX_EXPERIMENT))
        return 0;
    uint64_t body = (h->nparams + h->nmomentum) * sizeof(float);
    if (h->nparams > (uint64_t)st.st_size || h->nmomentum > (uint64_t)st.st_size ||
        (uint64_t)st.st_size != (*old ? HEADER_02 : sizeof *h) + h->experiment + body + sizeof(uint64_t))
        return 0;
    if (*old) return 1;
    char *t = malloc(h->experiment + 1);
    int ok = t && fread(t, 1, h->experiment, f) == h->experiment;
    if (ok) t[h->experiment] = 0;
    if (!ok || strlen(t) != h->experiment) { free(t); return 0; }
    *exp = t;
    return 1;
}

/* Reads a whole checkpoint, its body into buf when that holds exactly n
 * floats; 0 when its checksum does not verify. */
static int read_ckpt(const char *path, ckpt_header *h, int *old, char **exp, float *buf, size_t n)
{
    *exp = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int ok = 0;
    if (read_head(f, h, old, exp)) {
        uint64_t sum = mn_fnv1a(MN_FNV_SEED, h, *old ? HEADER_02 : sizeof *h), stored = 0;
        if (*exp) sum = mn_fnv1a(sum, *exp, h->experiment);
        size_t total = (size_t)(h->nparams + h->nmomentum), done = 0, chunk = 1 << 18;
        float *into = buf && total == n ? buf : malloc(chunk * sizeof(float));
        ok = into != NULL;
        while (ok && done < total) {
            size_t k = into == buf ? total : (total - done < chunk ? total - done : chunk);
            ok = fread(into, sizeof(float), k, f) == k;
            if (ok) sum = mn_fnv1a(sum, into, k * sizeof(float));
            done += k;
        }
        ok = ok && fread(&stored, sizeof stored, 1, f) == 1 && sum == stored;
        if (into != buf) free(into);
    }
    fclose(f);
    if (!ok) { free(*exp); *exp = NULL; }
    return ok;
}

/* The header alone, unverified: for listing and pruning. */
static int peek_ckpt(const char *path, ckpt_header *h, int *old)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char *exp;
    int ok = read_head(f, h, old, &exp);
    free(exp);
    fclose(f);
    return ok;
}

/* Iterations of the files <base>.ckpt-<iteration> in dir (unverified). */
static int list_gens(const char *dir, const char *base, uint64_t *gens, int max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s.ckpt-", base);
    size_t lp = strlen(prefix);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (strncmp(e->d_name, prefix, lp) || e->d_name[lp] < '0' || e->d_name[lp] > '9') continue;
        char *end;
        unsigned long long it = strtoull(e->d_name + lp, &end, 10);
        if (*end == 0) gens[n++] = it;
    }
    closedir(d);
    return n;
}

void mn_backup_remove_tmp(const mn_comm *c, const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return;
    size_t lb = strlen(base), n = 0;
    double bytes = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (strncmp(name, base, lb) || (name[lb] != '.' && name[lb] != '_') || !strstr(name + lb, ".tmp.")) continue;
        char path[4352];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (remove(path) == 0) { ++n; bytes += (double)st.st_size; }
        else mn_error(c, "cannot remove the temporary file %s left by an earlier run: %s", path, strerror(errno));
    }
    closedir(d);
    if (n) printf("darknet-mn: removed %zu temporary file%s (%.1f MiB) that an earlier run in %s left unfinished\n", n,
                  n > 1 ? "s" : "", bytes / (1 << 20), dir);
}

/* Whether the generation at path loads: its checksum verifies. */
static int verifies(const char *path)
{
    ckpt_header h;
    int old;
    char *exp;
    int ok = read_ckpt(path, &h, &old, &exp, NULL, 0);
    free(exp);
    return ok;
}

/* Rank 0: of this run's generations, newest first, the `keep` that load
 * stay and older ones that load go; one that does not load neither counts
 * nor is removed. The iteration orders them, not the writers' clocks. */
static void prune(const mn_comm *c, const char *dir, const char *base, uint64_t run, int keep, uint64_t written)
{
    uint64_t gens[MAX_GENERATIONS];
    int n = list_gens(dir, base, gens, MAX_GENERATIONS), m = 0, good = 0;
    if (run == 0) return;   /* the lock file gave no run id: nothing is surely ours */
    for (int i = 0; i < n; ++i) {
        char path[4096];
        ckpt_header h;
        int old;
        ckpt_path(path, sizeof path, dir, base, gens[i]);
        if (peek_ckpt(path, &h, &old) && !old && h.run == run) gens[m++] = gens[i];
    }
    for (int i = 0; i < m; ++i)   /* newest first */
        for (int j = i + 1; j < m; ++j)
            if (gens[j] > gens[i]) { uint64_t t = gens[i]; gens[i] = gens[j]; gens[j] = t; }
    for (int i = 0; i < m; ++i) {
        char path[4096];
        ckpt_path(path, sizeof path, dir, base, gens[i]);
        if (good < keep) good += gens[i] == written || verifies(path);
        else if (verifies(path) && remove(path) != 0)
            mn_error(c, "cannot remove old checkpoint %s: %s", path, strerror(errno));
    }
}

/* Writes a checkpoint file, streamed from the arrays so that no copy of
 * the model is made. Closes f; 1 when every byte was written. */
typedef struct {
    FILE *f;
    uint64_t sum;
    int ok;
} ckpt_out;

static void put(ckpt_out *w, const void *p, size_t n)
{
    w->sum = mn_fnv1a(w->sum, p, n);
    w->ok = w->ok && fwrite(p, 1, n, w->f) == n;
}

static void put_floats(const float *p, size_t n, void *arg) { put(arg, p, n * sizeof(float)); }

/* params, where set: a GPU run's rescue must not touch the device. */
static int write_ckpt(FILE *f, const ckpt_header *h, const char *experiment, network *net, const float *params,
                      const float *stats, const float *momentum)
{
    ckpt_out w = {f, MN_FNV_SEED, 1};
    put(&w, h, sizeof *h);
    put(&w, experiment ? experiment : "", h->experiment);
    if (params) put_floats(params, h->nparams, &w);
    else mn_params_each(net, stats, put_floats, &w);
    put_floats(momentum, h->nmomentum, &w);
    uint64_t sum = w.sum;
    w.ok = fwrite(&sum, sizeof sum, 1, f) == 1 && w.ok;
    return (fclose(f) == 0) && w.ok;
}

/* One try at a checkpoint file (mn_write_retried's write). */
typedef struct {
    const ckpt_header *h;
    const char *experiment;
    network *net;
    const float *momentum;
} ckpt_job;

static int write_ckpt_to(void *arg, const char *tmp)
{
    const ckpt_job *j = arg;
    FILE *f = fopen(tmp, "wb");
    return f && write_ckpt(f, j->h, j->experiment, j->net, NULL, NULL, j->momentum);
}

static mn_status save_rank0(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base, int keep,
                            const char *experiment, const mn_best *best, double retry_s)
{
    char path[4096];
    uint64_t it = mn_base_iteration(net);
    ckpt_path(path, sizeof path, dir, base, it);
    size_t nmom = 0, np = mn_params_count(net), nexp = experiment ? strlen(experiment) : 0;
    float *mom = mn_optimizer_host_state(o, net, 0, &nmom);
    char holder[HOLDER];
    uint64_t run = lock_holder(dir, holder);
    mn_net_info in = mn_net_get(net);
    ckpt_header h = {{0}, (uint32_t)c->size, (uint32_t)(in.batch * in.subdivisions), it, mn_net_seen(net),
                     np, nmom, run, now_ns(), nexp, best ? best->score : -1, best ? best->iteration : 0};
    memcpy(h.magic, CKPT_MAGIC, 8);
    ckpt_job j = {&h, experiment, net, mom};
    MN_CHECK(mn_write_retried(c, "checkpoint", path, retry_s, write_ckpt_to, &j));
    if (keep > 0) prune(c, dir, base, run, keep, it);
    return MN_OK;
}

mn_status mn_checkpoint_save(mn_comm *c, network *net, mn_optimizer *o, const mn_options *opt, const char *dir,
                             const char *base, const char *experiment, const mn_best *best)
{
    if (opt->bn_average) MN_CHECK(mn_agree(c, mn_average_bn_stats(c, net, o)));
    return mn_agree(c, c->rank == 0 ? save_rank0(c, net, o, dir, base, opt->checkpoint_keep, experiment, best,
                                                 mn_save_retry_s(opt))
                                    : MN_OK);
}

/* The rescue writes what a checkpoint save writes, from the arrays the
 * last completed update left (mn_optimizer_hold). */
struct mn_rescue {
    mn_comm *c;
    network *net;
    mn_optimizer *o;
    const char *dir, *base;   /* the caller's */
    char *experiment;     /* rank 0's, on every rank */
    const mn_best *best;
    uint64_t start;       /* the iteration the run started at */
    char holder[HOLDER];  /* rank 0's lock record (lock_holder), on every rank */
    int stopping;         /* every rank reached a stop's iteration end */
    int64_t noted_us;     /* when the last iteration ended (mn_now, us; 0: none yet) */
    int64_t step_us;      /* the iterations' mean length (0: not measured) */
};

void mn_rescue_note(mn_rescue *r, int stopping)
{
    if (!r) return;
    if (stopping) __atomic_store_n(&r->stopping, 1, __ATOMIC_RELEASE);
    /* Written by this thread only, read by the rescue's. */
    int64_t now = (int64_t)(mn_now() * 1e6), last = __atomic_load_n(&r->noted_us, __ATOMIC_RELAXED);
    int64_t step = __atomic_load_n(&r->step_us, __ATOMIC_RELAXED);
    if (last > 0) __atomic_store_n(&r->step_us, step ? (4 * step + (now - last)) / 5 : now - last, __ATOMIC_RELAXED);
    __atomic_store_n(&r->noted_us, now, __ATOMIC_RELEASE);
}

/* The launcher's delay between SIGTERM and SIGKILL: Open MPI's
 * odls_base_sigkill_timeout, else Slurm's KillWait (a task cannot read it:
 * its default). */
static double kill_delay(void)
{
    const char *v = getenv("OMPI_MCA_odls_base_sigkill_timeout");
    if (v && atof(v) > 0) return atof(v);
    return getenv("SLURM_JOB_ID") ? 30.0 : 1.0;
}

/* Whether the ranks stop together with the orderly checkpoint: the rescue
 * waits for it up to 70% of the kill delay where the iteration in progress
 * ends before the kill, else writes at once. Without a SIGTERM no stop
 * comes. */
static int stopping_together(mn_rescue *r)
{
    if (mn_stop_signal() != SIGTERM) return 0;
    double t0 = mn_now(), kd = kill_delay();
    double last = __atomic_load_n(&r->noted_us, __ATOMIC_ACQUIRE) * 1e-6;
    double step = __atomic_load_n(&r->step_us, __ATOMIC_RELAXED) * 1e-6;
    if (step > 0 && last + step > t0 + kd) return 0;
    double until = t0 + (step > 0 ? 0.7 : 0.3) * kd;
    while (!__atomic_load_n(&r->stopping, __ATOMIC_ACQUIRE)) {
        if (mn_now() >= until) return 0;
        usleep(2000);
    }
    return 1;
}

static void rescue_write(void *arg)
{
    mn_rescue *r = arg;
    mn_snapshot s;
    if (stopping_together(r)) return;
    /* A job frozen past its lease may find the folder another's. Read
     * before the hold, which the update waits on. */
    char holder[HOLDER];
    lock_holder(r->dir, holder);
    if (strcmp(holder, r->holder)) {
        fprintf(mn_output_errors(), "darknet-mn: rank %d (%s): ending: no rescue: backup folder %s now belongs to "
                "another job (its lock file names %s; this job's rank 0 held it as %s)\n", r->c->rank, r->c->host,
                r->dir, holder[0] ? holder : "no holder", r->holder);
        return;
    }
    uint64_t run = holder_run(r->holder);
    if (mn_optimizer_hold(r->o, &s) != 0) return;
    char path[4096], tmp[4224];
    ckpt_path(path, sizeof path, r->dir, r->base, s.iteration);
    if (s.iteration <= r->start || !mn_tmp_path(r->c, tmp, sizeof tmp, path)) {
        mn_optimizer_release(r->o);
        return;
    }
    mn_net_info in = mn_net_get(r->net);
    size_t nexp = strlen(r->experiment);
    ckpt_header h = {{0}, (uint32_t)r->c->size, (uint32_t)(in.batch * in.subdivisions), s.iteration, s.seen,
                     mn_params_count(r->net), s.nmomentum, run, (uint64_t)(s.done * 1e9), nexp,
                     r->best->score, r->best->iteration};
    memcpy(h.magic, CKPT_MAGIC, 8);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len), *f;
    int ok = m && write_ckpt(m, &h, r->experiment, r->net, s.params, s.stats, s.momentum), opened;
    if (ok) {
        mn_optimizer_release(r->o);
        opened = (f = fopen(tmp, "wb")) != NULL;
        ok = opened && fwrite(buf, 1, len, f) == len;
        ok = (opened && fclose(f) == 0) && ok;
    } else {
        opened = (f = fopen(tmp, "wb")) != NULL;
        ok = opened && write_ckpt(f, &h, r->experiment, r->net, s.params, s.stats, s.momentum);   /* closes f */
        mn_optimizer_release(r->o);
    }
    free(buf);
    /* Without sync_bn each rank has its own running statistics, and a
     * checkpoint holds rank 0's: rank 0's file replaces another writer's. */
    int written = 1;
    if (ok && (r->c->rank == 0 ? mn_commit_file(r->c, tmp, path) : mn_commit_file_once(r->c, tmp, path, &written)) == MN_OK)
        fprintf(mn_output_errors(), "darknet-mn: rank %d (%s): ending: the last completed update, iteration %llu, "
                "%s %s (a rerun resumes there)\n", r->c->rank, r->c->host, (unsigned long long)s.iteration,
                written ? "written to" : "already written by another rank to", path);
    else if (opened) remove(tmp);
}

/* Who writes a rescue: ranks 0 and 1 of the first and the last node, at
 * most 4 model-sized writes within the kill delay, unlikely all lost. */
static int rescue_writer(const mn_comm *c)
{
    return c->intra_rank < 2 && (c->inter_rank == 0 || c->inter_rank == c->inter_size - 1);
}

mn_status mn_rescue_open(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                         const char *experiment, const mn_best *best, mn_rescue **out)
{
    *out = NULL;
    if (!mn_optimizer_rescues(o)) return MN_OK;   /* off for this run */
    uint64_t n = c->rank == 0 && experiment ? strlen(experiment) : 0;
    MN_MPI(c, MPI_Bcast(&n, 1, MPI_UINT64_T, 0, c->world));
    mn_rescue *r = calloc(1, sizeof *r);
    char *text = r ? malloc(n + 1) : NULL;
    mn_status s = mn_agree(c, text ? MN_OK : MN_ERR_NOMEM);
    if (s != MN_OK) { free(r); free(text); return s; }
    if (c->rank == 0) memcpy(text, experiment, n);
    text[n] = 0;
    MN_MPI(c, MPI_Bcast(text, (int)n, MPI_CHAR, 0, c->world));
    *r = (mn_rescue){c, net, o, dir, base, text, best, mn_base_iteration(net), "", 0, 0, 0};
    if (c->rank == 0) lock_holder(dir, r->holder);
    MN_MPI(c, MPI_Bcast(r->holder, sizeof r->holder, MPI_CHAR, 0, c->world));
    if (rescue_writer(c)) mn_rescue_register(rescue_write, r);
    *out = r;
    return MN_OK;
}

void mn_rescue_close(mn_rescue *r)
{
    if (!r) return;
    if (rescue_writer(r->c)) mn_rescue_register(NULL, NULL);
    free(r->experiment);
    free(r);
}

char *mn_experiment(const mn_comm *c, const char *cfgfile, const mn_options *opt, const char *trainfile,
                    const mn_list *train)
{
    if (c->rank != 0) return NULL;
    char *t = mn_cfg_experiment(cfgfile), tail[4400];
    /* The list's path is only for messages. Delay compensation and
     * prediction are named only where on, so that checkpoints without them
     * stay of the same experiment. */
    int dc = opt->double_buffering && opt->dbuf_compensation > 0, wp = opt->double_buffering && opt->dbuf_prediction > 0;
    int k = snprintf(tail, sizeof tail, "distributed\tdouble_buffering\t%d\n%s%sdata\ttrain\t%zu %016llx\npath\ttrain\t%s\n",
                     opt->double_buffering, dc ? "distributed\tdouble_buffering_compensation\ton\n" : "",
                     wp ? "distributed\tdouble_buffering_prediction\ton\n" : "",
                     train->global_n, (unsigned long long)train->digest, trainfile);
    char *all = t ? realloc(t, strlen(t) + (size_t)k + 1) : NULL;
    if (!all) { free(t); return NULL; }
    return strcat(all, tail);
}

/* The experiment's text as lines of scope, key and value (tab-separated). */
typedef struct {
    const char *scope, *key, *val;
} xline;

static int xlines(char *t, xline *v, int max)
{
    int n = 0;
    for (char *line = t, *next; line && *line && n < max; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *k = strchr(line, '\t'), *val = k ? strchr(k + 1, '\t') : NULL;
        if (!val) continue;
        *k = *val = 0;
        v[n++] = (xline){line, k + 1, val + 1};
    }
    return n;
}

/* An experiment's text parsed: its copy *t, which the lines *v point into
 * (the caller frees both); the line count, -1 out of memory. */
static int xparse(const char *text, char **t, xline **v)
{
    int n = 1;
    for (const char *p = text; *p; ++p) n += *p == '\n';
    *t = strdup(text);
    *v = *t ? malloc(sizeof **v * (size_t)n) : NULL;
    return *v ? xlines(*t, *v, n) : -1;
}

static const char *xget(const xline *v, int n, const char *scope, const char *key)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(v[i].scope, scope) && !strcmp(v[i].key, key)) return v[i].val;
    return NULL;
}

/* The [net] keys of the learning-rate schedule: Darknet users extend a
 * finished training by changing them, so they resume with a word, not a
 * refusal. */
static const char *const schedule_keys[] = {"learning_rate", "policy", "steps", "scales", "step", "scale", "gamma",
                                            "power", "burn_in", "sgdr_cycle", "sgdr_mult", NULL};

static int is_schedule_key(const char *scope, const char *key)
{
    if (strcmp(scope, "net")) return 0;
    for (const char *const *k = schedule_keys; *k; ++k)
        if (!strcmp(*k, key)) return 1;
    return 0;
}

/* The first key of scope from the start-th line on whose value differs,
 * among the schedule's keys or the others; 0 when none. */
static int xkey_differs_from(const xline *a, int na, const xline *b, int nb, const char *scope, int schedule,
                             int *start, const char **key, const char **va, const char **vb)
{
    for (int j = *start; j < na + nb; ++j) {
        const xline *v = j < na ? &a[j] : &b[j - na];
        if (strcmp(v->scope, scope) || is_schedule_key(scope, v->key) != schedule) continue;
        const char *x = xget(a, na, scope, v->key), *y = xget(b, nb, scope, v->key);
        if (j >= na && x) continue;   /* a key both have was compared in a's pass */
        if (!x || !y || strcmp(x, y)) {
            *key = v->key;
            *va = x;
            *vb = y;
            *start = j + 1;
            return 1;
        }
    }
    return 0;
}

static int xkey_differs(const xline *a, int na, const xline *b, int nb, const char *scope, const char **key,
                        const char **va, const char **vb)
{
    int start = 0;
    return xkey_differs_from(a, na, b, nb, scope, 0, &start, key, va, vb);
}

/* Rank 0: one line for each schedule key that changed since the checkpoint. */
static void say_schedule_changes(const char *then, const char *now, const char *path)
{
    char *ta, *tb;
    xline *a, *b;
    int na = xparse(then, &ta, &a), nb = xparse(now, &tb, &b);
    if (na >= 0 && nb >= 0) {
        const char *key, *x, *y;
        for (int start = 0; xkey_differs_from(a, na, b, nb, "net", 1, &start, &key, &x, &y);)
            printf("darknet-mn: the schedule goes on changed: %s %s in the run of %s, %s now\n", key,
                   x ? x : "not set", path, y ? y : "not set");
    }
    free(ta);
    free(tb);
    free(a);
    free(b);
}

static int xlayers(const xline *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; ++i) k += !v[i].key[0];   /* one type line per layer */
    return k;
}

/* A layer's type line "[convolutional]" as "convolutional". */
static const char *bare(const char *type, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.*s", type[0] == '[' ? (int)strlen(type) - 2 : (int)strlen(type), type + (type[0] == '['));
    return buf;
}

/* What differs between the checkpoint's experiment and this run's, in
 * words; 0 when nothing does. */
static int experiment_differs(const char *then, const char *now, char *what, size_t cap)
{
    char *ta, *tb;
    xline *a, *b;
    int na = xparse(then, &ta, &a), nb = xparse(now, &tb, &b), found = 1;
    if (na < 0 || nb < 0) {
        snprintf(what, cap, "(out of memory comparing them)");
        goto out;
    }
    const char *key, *x, *y;
    if (xkey_differs(a, na, b, nb, "net", &key, &x, &y)) {
        snprintf(what, cap, "%s %s in the checkpoint's run, %s now", key, x ? x : "not set", y ? y : "not set");
        goto out;
    }
    int la = xlayers(a, na), lb = xlayers(b, nb);
    for (int i = 0; i < la && i < lb; ++i) {
        char scope[16], t1[64], t2[64];
        snprintf(scope, sizeof scope, "%d", i);
        const char *ya = xget(a, na, scope, ""), *yb = xget(b, nb, scope, "");
        if (strcmp(ya, yb)) {
            snprintf(what, cap, "layer %d: %s in the checkpoint, %s in the cfg", i, bare(ya, t1, sizeof t1),
                     bare(yb, t2, sizeof t2));
            goto out;
        }
        if (xkey_differs(a, na, b, nb, scope, &key, &x, &y)) {
            snprintf(what, cap, "layer %d (%s): %s %s in the checkpoint, %s in the cfg", i, bare(ya, t1, sizeof t1),
                     key, x ? x : "not set", y ? y : "not set");
            goto out;
        }
    }
    if (la != lb) {
        snprintf(what, cap, "the checkpoint's network has %d layers, the cfg's %d", la, lb);
        goto out;
    }
    if (xkey_differs(a, na, b, nb, "distributed", &key, &x, &y)) {
        snprintf(what, cap, "[distributed] %s=%s in the checkpoint's run, %s now", key, x ? x : "0", y ? y : "0");
        goto out;
    }
    if (xkey_differs(a, na, b, nb, "data", &key, &x, &y)) {
        /* "<images> <digest>", the list's path apart */
        const char *pa = xget(a, na, "path", key), *pb = xget(b, nb, "path", key);
        unsigned long long ia = x ? strtoull(x, NULL, 10) : 0, ib = y ? strtoull(y, NULL, 10) : 0;
        if (ia != ib)
            snprintf(what, cap, "the %s list %s held %llu images in the checkpoint's run, %s holds %llu now", key,
                     pa ? pa : "?", ia, pb ? pb : "?", ib);
        else
            snprintf(what, cap, "the %s list %s in the checkpoint's run and %s now hold %llu images each, but not "
                     "the same ones", key, pa ? pa : "?", pb ? pb : "?", ib);
        goto out;
    }
    found = 0;
out:
    free(ta);
    free(tb);
    free(a);
    free(b);
    return found;
}

/* Which checkpoint to try first: the newest of the run the lock's record
 * named, else of the run written last. Hosts' clocks are compared only
 * between runs: within one, a rescue from a host whose clock runs ahead
 * could pass a later update. */
static int first_to_try(const uint64_t *gens, const uint64_t *runs, const uint64_t *written, int m, uint64_t last_run)
{
    int newest = 0, has_last = 0, best = -1;
    for (int i = 0; i < m; ++i) {
        if (written[i] > written[newest]) newest = i;
        has_last |= last_run && runs[i] == last_run;
    }
    uint64_t run = has_last ? last_run : runs[newest];
    for (int i = 0; i < m; ++i)
        if (runs[i] == run && (best < 0 || gens[i] > gens[best])) best = i;
    return best;
}

void mn_backup_anew(const char *dir, const char *base, char *buf, size_t cap)
{
    snprintf(buf, cap, "move its files aside (mkdir %s/old && mv %s/%s.ckpt-* %s/%s_*.weights %s/old/) to start "
             "this run anew there, or give the data cfg another backup= folder", dir, dir, base, dir, base, dir);
}

/* Rank 0: the first checkpoint that verifies, into buf and *h, naming
 * corrupt ones. 1 found, 0 none there, -1 another experiment's, -2 none
 * loads; rank 0 has said why. */
static int find_rank0(const mn_comm *c, const char *dir, const char *base, const char *experiment,
                      uint64_t last_run, size_t np, size_t nmom, float *buf, ckpt_header *h, char *path, size_t cap)
{
    uint64_t gens[MAX_GENERATIONS], written[MAX_GENERATIONS], runs[MAX_GENERATIONS];
    int n = list_gens(dir, base, gens, MAX_GENERATIONS), m = 0, old;
    char anew[8192];
    mn_backup_anew(dir, base, anew, sizeof anew);
    for (int i = 0; i < n; ++i) {
        ckpt_path(path, cap, dir, base, gens[i]);
        if (!peek_ckpt(path, h, &old)) {
            mn_error(c, "checkpoint %s is incomplete or corrupt: skipped", path);
            continue;
        }
        gens[m] = gens[i];
        runs[m] = old ? 0 : h->run;
        written[m++] = h->written;
    }
    while (m > 0) {
        int best = first_to_try(gens, runs, written, m, last_run);
        ckpt_path(path, cap, dir, base, gens[best]);
        char *exp = NULL, what[2048];
        if (read_ckpt(path, h, &old, &exp, buf, np + nmom)) {
            int refused = 1;
            if (old)
                mn_error(c, "checkpoint %s is of an earlier darknet-mn (format %s), which did not record its "
                         "experiment: it may be another run's; %s (or finish that run with the darknet-mn that wrote it)",
                         path, CKPT_MAGIC_02, anew);
            else if (experiment && experiment_differs(exp, experiment, what, sizeof what))
                mn_error(c, "checkpoint %s is of another experiment: %s; %s", path, what, anew);
            else if (h->nparams != np || h->nmomentum != nmom)
                mn_error(c, "checkpoint %s holds %llu parameters and %llu optimizer values, this network %zu and %zu; %s",
                         path, (unsigned long long)h->nparams, (unsigned long long)h->nmomentum, np, nmom, anew);
            else refused = 0;
            if (!refused && experiment) say_schedule_changes(exp, experiment, path);
            free(exp);
            return refused ? -1 : 1;
        }
        mn_error(c, "checkpoint %s is incomplete or corrupt: skipped", path);
        gens[best] = gens[m - 1];
        runs[best] = runs[m - 1];
        written[best] = written[--m];
    }
    if (n > 0)
        mn_error(c, "none of the %d checkpoint%s of %s in %s loads (each named above): not starting over from the "
                 "weights; restore one, or %s", n, n > 1 ? "s" : "", base, dir, anew);
    return n > 0 ? -2 : 0;
}

mn_status mn_checkpoint_resume(mn_comm *c, network *net, mn_optimizer *o, const char *dir, const char *base,
                               mn_lock *lock, const char *experiment, mn_resumed *r)
{
    memset(r, 0, sizeof *r);
    r->best.score = -1;   /* no evaluation yet: the first one is the best */
    size_t np = mn_params_count(net), nmom = 0;
    float *state = mn_optimizer_arena(o, &nmom);
    float *buf = malloc((np + nmom + 1) * sizeof(float));
    ckpt_header h;
    memset(&h, 0, sizeof h);
    mn_status s = buf ? MN_OK : MN_ERR_NOMEM;
    if (s == MN_OK && c->rank == 0) {
        int got = find_rank0(c, dir, base, experiment, mn_backup_last_run(lock), np, nmom, buf, &h, r->path,
                             sizeof r->path);
        if (got < 0) s = got == -2 ? MN_ERR_USAGE : MN_ERR_REFUSED;
        r->found = got > 0;
        if (got > 0) mn_backup_set_run(lock, h.run);   /* this run continues the checkpoint's */
    }
    s = mn_agree(c, s);
    uint64_t info[6] = {(uint64_t)r->found, h.iteration, h.ranks, (uint64_t)h.ranks * h.images, 0, h.best_iteration};
    memcpy(&info[4], &h.best, sizeof h.best);
    if (s == MN_OK && MPI_Bcast(info, 6, MPI_UINT64_T, 0, c->world) != MPI_SUCCESS) {
        mn_error(c, "broadcasting the checkpoint's header failed");
        s = MN_ERR_MPI;
    }
    if (s == MN_OK && info[0]) s = mn_bcast_floats(c, buf, np + nmom);
    if (s == MN_OK && info[0]) {
        mn_params_unpack(net, buf);
        memcpy(state, buf + np, nmom * sizeof(float));
        /* seen follows this job's global batch; set first: the optimizer's
         * state reads it. */
        mn_net_info in = mn_net_get(net);
        mn_net_set_seen(net, (size_t)info[1] * (size_t)in.batch * in.subdivisions * c->size);
        mn_base_set_iteration(net, (size_t)info[1]);
        mn_optimizer_host_state(o, net, 1, &nmom);
        r->found = 1;
        r->iteration = info[1];
        r->ranks = (int)info[2];
        r->batch = info[3];
        memcpy(&r->best.score, &info[4], sizeof r->best.score);
        r->best.iteration = info[5];
    }
    free(buf);
    return s;
}

/* The folder every node sees. */

mn_status mn_backup_shared(mn_comm *c, const char *dir, int checkpoint_interval)
{
    /* A fresh name each run, so that no host holds a cached "no such file"
     * for it (NFS). */
    char token[128] = "", path[4352];
    if (c->rank == 0) {
        uint64_t t = now_ns();
        pid_t pid = getpid();
        uint64_t h = mn_fnv1a(mn_fnv1a(mn_fnv1a(MN_FNV_SEED, c->host, strlen(c->host)), &t, sizeof t), &pid, sizeof pid);
        snprintf(token, sizeof token, "%s.%016llx", TOKEN_NAME, (unsigned long long)h);
    }
    MN_MPI(c, MPI_Bcast(token, sizeof token, MPI_CHAR, 0, c->world));
    snprintf(path, sizeof path, "%s/%s", dir, token);
    mn_status s = MN_OK;
    if (c->rank == 0) {
        FILE *f = fopen(path, "w");
        int ok = f && fputs(token, f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok) {
            mn_error(c, "cannot write %s into the backup folder: %s", path, strerror(errno));
            remove(path);
            s = MN_ERR_USER;
        }
    }
    MN_CHECK(mn_agree(c, s));
    int seen = c->rank == 0;
    for (int tries = 0; !seen && tries < 10; ++tries) {   /* a second for a slow file system's view */
        char got[128] = "";
        FILE *f = fopen(path, "r");
        if (f) {
            seen = fgets(got, sizeof got, f) && !strcmp(got, token);
            fclose(f);
        }
        if (!seen) usleep(100000);
    }
    int *all = c->rank == 0 ? malloc(sizeof(int) * (size_t)c->size) : NULL;
    char *hosts = c->rank == 0 ? malloc(sizeof c->host * (size_t)c->size) : NULL;
    s = mn_agree(c, c->rank != 0 || (all && hosts) ? MN_OK : MN_ERR_NOMEM);
    if (s == MN_OK) {
        mn_guard(c, "the backup folder check");   /* a rank hung on a dead mount ends the job */
        MN_MPI(c, MPI_Gather(&seen, 1, MPI_INT, all, 1, MPI_INT, 0, c->world));
        MN_MPI(c, MPI_Gather(c->host, sizeof c->host, MPI_CHAR, hosts, sizeof c->host, MPI_CHAR, 0, c->world));
        mn_unguard(c);
    }
    if (c->rank == 0) remove(path);
    if (s == MN_OK && c->rank == 0) {
        char who[512] = "";
        int blind = 0, k = 0;
        for (int r = 0; r < c->size; ++r) {
            if (all[r]) continue;
            if (++blind <= 4 && k < (int)sizeof who)
                k += snprintf(who + k, sizeof who - (size_t)k, "%srank %d (%.64s)", blind > 1 ? ", " : "", r,
                              hosts + (size_t)r * sizeof c->host);
        }
        if (blind > 4) snprintf(who + k, sizeof who - (size_t)k, " and %d more", blind - 4);
        if (blind && checkpoint_interval > 0) {
            mn_error(c, "backup folder %s is not seen by %s: the backup folder must be on storage every node sees, "
                     "or a rerun on another node starts from iteration 0 (checkpoint_interval=%d writes checkpoints "
                     "there); give the data cfg a backup= folder on a shared file system, or set checkpoint_interval=0",
                     dir, who, checkpoint_interval);
            s = MN_ERR_REFUSED;
        } else if (blind) {
            mn_error(c, "warning: backup folder %s is not seen by %s: rank 0 alone writes there, which is fine "
                     "without checkpoint_interval; a checkpoint of checkpoint_minutes or of a stop signal resumes "
                     "only where rank 0 sees it", dir, who);
        }
    }
    free(all);
    free(hosts);
    return mn_agree(c, s);
}
