/* The training driver for classifier and detector alike. Each rank runs the
 * same loop: load b*subdivisions images, train_network (whose update hook
 * averages the gradients over the ranks), report on rank 0. Data come from
 * the rank's shard of the list with Darknet's loaders and augmentation, or
 * in deterministic mode from fixed global positions, rank r taking its
 * slice of the next N*b paths. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/time.h>
#include "cmd/mn_cmd.h"
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "base/mn_base_util.h"
#include "engine/mn_engine.h"
#include "train/observe/mn_observe.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "core/mn_output.h"
#include "core/mn_fault.h"
#include "core/mn_watchdog.h"

/* Deterministic batch: rows[j*b + i] is list position first + j*N*b + r*b +
 * i (mod its length); no augmentation. */
static mn_status load_fixed(mn_comm *c, network *net, mn_task task, const mn_data_cfg *dc,
                            const mn_list *l, size_t first, mn_batch *out)
{
    mn_net_info in = mn_net_get(net);
    int b = in.batch, s = in.subdivisions, rows = b * s;
    int boxes = mn_layer_last(net).max_boxes;
    mn_batch d = mn_base_make_batch(rows, in.w * in.h * in.c,
                               task == MN_TASK_CLASSIFIER ? dc->classes : mn_base_truth_size(net) * (boxes ? boxes : 90));
    for (int j = 0; j < s; ++j) {
        for (int i = 0; i < b; ++i) {
            size_t g = (first + (size_t)j * c->size * b + (size_t)c->rank * b + i) % l->global_n;
            char *path = l->paths[g];
            MN_CHECK(mn_check_readable(c, path));
            mn_image im = mn_base_load_image(path, in.w, in.h);
            memcpy(d.x[j * b + i], im.data, sizeof(float) * (size_t)d.x_cols);
            mn_base_free_image(im);
            if (task == MN_TASK_CLASSIFIER) {
                int m, cls = mn_path_class(dc->labels, dc->classes, path, &m);
                if (cls < 0) {
                    mn_error(c, "image %s matches %d labels of %s; it must contain exactly one", path, m, dc->labels_file);
                    mn_base_free_batch(&d);
                    return MN_ERR_USER;
                }
                d.y[j * b + i][cls] = 1;
            } else {
                /* Darknet shuffles an image's boxes with rand(), and box
                 * order decides which of two boxes in one cell trains: a
                 * stream per path keeps that the same however ranks split
                 * the batch. */
                mn_base_seed(mn_stream_seed(0, -2, mn_fnv1a(MN_FNV_SEED, path, strlen(path))));
                mn_base_fill_truth(net, path, boxes ? boxes : 90, d.y[j * b + i], dc->classes);
            }
        }
    }
    *out = d;
    return MN_OK;
}

static void format_duration(double s, char *buf, size_t n)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

static mn_status ensure_dir(mn_comm *c, const char *dir)
{
    mn_status s = MN_OK;
    if (c->rank == 0) {
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
            mn_error(c, "cannot create backup directory %s: %s", dir, strerror(errno));
            s = MN_ERR_USER;
        } else if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
            mn_error(c, "backup path %s is not a directory", dir);
            s = MN_ERR_USER;
        }
    }
    return mn_agree(c, s);
}

/* Rank 0, before training: every name the run may write into dir, its
 * temporary name included, fits the file system's limit, so no save fails
 * at the end. */
static mn_status check_names(mn_comm *c, const char *dir, const char *base, int max_batches)
{
    if (c->rank != 0) return mn_agree(c, MN_OK);
    char digits[32], longest[512] = "";
    snprintf(digits, sizeof digits, "%d", max_batches > 0 ? max_batches : 1);
    /* Each name is base + a word, an iteration and an ending. */
    const char *names[][3] = {{".ckpt-", digits, ""}, {"_", digits, ".weights"}, {"_final.weights", "", ""},
                              {"_best.weights", "", ""}, {".backup", "", ""}, {"_log.csv", "", ""},
                              {"_chart.png", "", ""}};
    size_t most = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i) {
        char name[512];
        size_t n = (size_t)snprintf(name, sizeof name, "%s%s%s%s", base, names[i][0], names[i][1], names[i][2]);
        if (n > most) {
            most = n;
            snprintf(longest, sizeof longest, "%s", name);
        }
    }
    size_t tmp = strlen(".tmp.") + strlen(c->host) + 2 * (1 + 7);   /* ".<pid>.<tid>", 7 digits each at most */
    long cap = pathconf(dir, _PC_NAME_MAX);
    if (cap <= 0) cap = 255;
    mn_status s = MN_OK;
    if ((long)(most + tmp) > cap) {
        mn_error(c, "cfg name %s makes backup files named up to %zu bytes (%s, and %zu more for its temporary name "
                 "while it is written), past the %ld bytes a name may have in %s: give the cfg a shorter name",
                 base, most, longest, tmp, cap, dir);
        s = MN_ERR_USER;
    } else if (strlen(dir) + 1 + most + tmp >= 4000) {
        mn_error(c, "backup folder %s is too deep: its files' paths pass 4000 bytes; give the data cfg a shorter backup=",
                 dir);
        s = MN_ERR_USER;
    }
    return mn_agree(c, s);
}

/* Before anything is saved: one model on every rank (double_buffering_local
 * lets them drift apart) and the check that they hold it. */
static mn_status one_model(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt, size_t it)
{
    MN_CHECK(mn_optimizer_align(c, net, mo));
    return mn_replica_check(c, net, mo, opt->sync_bn, it, NULL);
}

/* A stop signal reached `signaled` ranks: checkpoint this update unless the
 * iteration wrote one, and end with MN_ERR_STOPPED, whose exit status asks
 * for a rerun that resumes here. */
static mn_status stop_here(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt, const char *dir,
                           const char *base, const char *experiment, const mn_best *best, size_t it, int sig,
                           int signaled, int checked, int written)
{
    double t = mn_now();
    if (!checked) MN_CHECK(one_model(c, net, mo, opt, it));
    if (!written) MN_CHECK(mn_checkpoint_save(c, net, mo, opt, dir, base, experiment, best));
    if (c->rank == 0) {
        printf("darknet-mn: stopped at iteration %zu by %s (on %d of %d ranks): checkpoint %s/%s.ckpt-%zu written "
               "in %.1f s; exit status %d: run the same command again to resume\n", it, mn_signal_name(sig),
               signaled, c->size, dir, base, it, mn_now() - t, MN_EXIT_RERUN);
        fflush(stdout);
    }
    return MN_ERR_STOPPED;
}

/* <dir>/<base>_final.weights, after the replica check. */
static mn_status write_final(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt, const char *dir,
                             const char *base)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_final.weights", dir, base);
    MN_CHECK(one_model(c, net, mo, opt, mn_base_iteration(net)));
    MN_CHECK(mn_save_weights_all(c, net, mo, opt, path));
    if (c->rank == 0) printf("darknet-mn: wrote %s\n", path);
    return MN_OK;
}

/* One training run, what its phases share: run_open, then each iteration
 * run_load, run_step, run_report and run_save, then run_close. */
typedef struct {
    mn_comm *c;
    mn_task task;
    const mn_data_cfg *dc;
    const mn_options *opt;
    network *net;
    mn_optimizer *mo;
    const mn_list *shard;
    const char *base, *cfgfile, *experiment;
    mn_timeline *tl;
    mn_lock *lock;
    mn_best best;
    mn_net_info in;       /* w and h as parsed */
    long global_imgs;     /* images per update, all ranks */
    size_t cache_mb;
    mn_cache *cache;
    mn_base_loader *loader;
    int resizes, count;   /* random=1's resizes */
    double start, avg_loss;
    double checkpointed;  /* rank 0's clock at the last checkpoint */
    int timed;            /* checkpoint_minutes wrote one */
    size_t first_batch, last_eval;
    mn_eval_state *ev;
    mn_report *rep;
    mn_rescue *rescue;
} train_run;

/* An iteration, as its phases hand it on. */
typedef struct {
    double t0, tstep;   /* its start; the end of the loss allreduce */
    double now;         /* when the step was done */
    float loss;         /* the mean over the ranks */
    int signaled;       /* ranks a stop signal reached */
    int stop_sig;       /* the signal that reached most */
    int lost;           /* another job took the backup folder over */
    int due;            /* checkpoint_minutes passed on rank 0's clock */
} train_step;

/* The banner, the image cache and the loader; on error what was made is
 * released. */
static mn_status run_open(train_run *r)
{
    mn_comm *c = r->c;
    const mn_options *opt = r->opt;
    int imgs = r->in.batch * r->in.subdivisions;   /* per rank, per update */
    r->global_imgs = (long)imgs * c->size;
    int threads, cores, sharing, blas = mn_blas_threads();
    char sized[160];
    r->cache_mb = mn_cache_budget_mb(c, opt, sized, sizeof sized);
    MN_CHECK(mn_agree(c, mn_loader_threads(c, &threads, &cores, &sharing)));
    if (c->rank == 0) {
        printf("darknet-mn: %s on %d ranks (%d node%s), communicator %s, batch %d x %d ranks = %ld images per update, "
               "lr %g, momentum %g, decay %g, %zu images%s\n",
               r->base, c->size, c->nodes, c->nodes > 1 ? "s" : "", mn_comm_name(c), imgs, c->size, r->global_imgs,
               r->in.learning_rate, r->in.momentum, r->in.decay, r->shard->global_n,
               opt->deterministic ? ", deterministic" : "");
        if (*mn_comm_auto_why(c)) printf("darknet-mn: communicator=auto: %s (%s)\n", mn_comm_name(c), mn_comm_auto_why(c));
        char gemm[64];
        if (blas) snprintf(gemm, sizeof gemm, "OpenBLAS sgemm, %d thread%s", blas, blas > 1 ? "s" : "");
        else snprintf(gemm, sizeof gemm, "Darknet's own (BLAS=0)");
        char conv[160] = "", what[128];
        /* The CPU's convolution engine, even where it is not oneDNN. */
        int cpu = mn_gpu_device(c) < 0;
        if (mn_dnnl_describe(r->net, mn_base_dnnl_ops(), what, sizeof what) || (cpu && !mn_dnnl_engine(what, sizeof what)))
            snprintf(conv, sizeof conv, "; convolution %s", what);
        printf("darknet-mn: rank 0: gemm %s%s; %d loader thread%s (%d core%s, %d rank%s on them); image cache %zu MiB "
               "(%s)\n", gemm, conv, threads, threads > 1 ? "s" : "", cores, cores > 1 ? "s" : "", sharing,
               sharing > 1 ? "s" : "", r->cache_mb, sized);
        if (opt->eval_interval <= 0 && opt->eval_epochs > 0) {   /* -map: when, as the fork would */
            size_t each = (size_t)opt->eval_epochs * r->shard->global_n / (size_t)r->global_imgs;
            printf("darknet-mn: -map: evaluating %s every %zu iterations (%d epochs of %zu images, at least 100), "
                   "not before iteration %d (burn_in), and at %d (max_batches); the best into %s/%s_best.weights\n",
                   r->task == MN_TASK_DETECTOR ? "mAP@0.5" : "top-1", each < 100 ? 100 : each, opt->eval_epochs,
                   r->shard->global_n, r->in.burn_in, r->in.max_batches, r->dc->backup, r->base);
        }
    }
    char who[96];
    snprintf(who, sizeof who, "rank %d (%s): ", c->rank, c->host);
    r->cache = mn_cache_create(r->shard->paths, r->shard->n, r->cache_mb << 20, who);
    if (!r->cache) mn_error(c, "no memory for the image cache's table of %zu paths", r->shard->n);
    mn_status s = mn_agree(c, r->cache ? MN_OK : MN_ERR_NOMEM);
    if (s != MN_OK) { mn_cache_free(r->cache); return s; }
    mn_cache_install(r->cache);

    mn_base_loader_cfg lc = {r->shard->paths, (int)r->shard->n, threads, r->task == MN_TASK_DETECTOR, r->dc->classes,
                             r->dc->labels};
    r->loader = mn_base_loader_create(r->net, &lc);
    if (!r->loader) mn_error(c, "no memory for the loader");
    s = mn_agree(c, r->loader ? MN_OK : MN_ERR_NOMEM);
    if (s != MN_OK) { mn_cache_uninstall(); mn_cache_free(r->cache); mn_base_loader_free(r->loader); return s; }
    r->resizes = r->task == MN_TASK_DETECTOR && mn_layer_last(r->net).random && !opt->deterministic;
    /* Each batch's random draws start from a seed of (seed, rank,
     * iteration), so a resumed run goes on with new data instead of
     * replaying its first batches. */
    if (!opt->deterministic && !r->resizes) {
        mn_base_seed(mn_stream_seed(opt->seed, c->rank, mn_base_iteration(r->net)));
        mn_base_loader_start(r->loader, 0, 0);
    }
    r->start = r->checkpointed = mn_now();
    r->avg_loss = -1;
    r->first_batch = r->last_eval = mn_base_iteration(r->net);
    return MN_OK;
}

/* This iteration's batch into *train, at a new size every 10 iterations
 * where random=1. */
static mn_status run_load(train_run *r, mn_batch *train, train_step *o)
{
    mn_comm *c = r->c;
    const mn_options *opt = r->opt;
    o->t0 = mn_now();
    mn_output_trim();
    if (r->resizes && r->count++ % 10 == 0) {
        /* Every rank draws the same size from the job's own stream, so no
         * rank waits on a larger one: stock's range for a 416 cfg, scaled
         * to the cfg's width. */
        size_t now = mn_base_iteration(r->net);
        int d = (int)(mn_stream_seed(opt->seed, -1, now) % 10 + 10) * 32;
        if (now + 200 > (size_t)r->in.max_batches) d = 608;
        d = d * r->in.w / 416 / 32 * 32;
        if (d < 32) d = 32;
        if (c->rank == 0) printf("resizing to %dx%d on every rank\n", d, d);
        mn_batch old = mn_base_loader_wait(r->loader);   /* a batch of the old size */
        mn_base_free_batch(&old);
        mn_base_resize(r->net, d, d);
        mn_base_seed(mn_stream_seed(opt->seed, c->rank, now));
        mn_base_loader_start(r->loader, d, d);
    }
    double td = mn_now();
    if (opt->deterministic) {
        MN_CHECK(mn_agree(c, load_fixed(c, r->net, r->task, r->dc, r->shard,
                                        mn_base_iteration(r->net) * (size_t)r->global_imgs, train)));
    } else {
        *train = mn_base_loader_wait(r->loader);
        mn_base_seed(mn_stream_seed(opt->seed, c->rank, mn_base_iteration(r->net) + 1));
        mn_base_loader_start(r->loader, 0, 0);
    }
    mn_timeline_add(r->tl, 0, MN_TL_DATA, td, mn_now(), 0, 0, 0);
    return MN_OK;
}

/* The passes, the loss over the ranks, and what a NaN or Inf does. */
static mn_status run_step(train_run *r, mn_batch *train, train_step *o)
{
    mn_comm *c = r->c;
    mn_optimizer_begin_step(r->mo, r->net);
    float loss = mn_base_train(r->net, train);
    mn_optimizer_end_step(r->mo, r->net);
    double tu = mn_now();
    mn_timeline_add(r->tl, 0, MN_TL_UPDATE, mn_optimizer_synced_at(r->mo), tu, 0, 0, 0);
    mn_base_free_batch(train);
    /* The loss allreduce also carries how many ranks each stop signal
     * reached, whether another job took the backup folder over, and whether
     * rank 0's clock says a checkpoint is due, so every rank learns each at
     * the same iteration with no extra message. A count per signal lets
     * rank 0 name one it did not get itself. */
    enum { LOST = 1 + MN_STOP_SIGNALS, DUE };
    float sum[DUE + 1] = {loss};
    for (int i = 0; i < MN_STOP_SIGNALS; ++i) sum[1 + i] = mn_stop_signal() == mn_stop_signals[i];
    sum[LOST] = mn_backup_lost(r->lock) ? 1.f : 0.f;
    sum[DUE] = c->rank == 0 && r->opt->checkpoint_minutes > 0 &&
               tu - r->checkpointed >= r->opt->checkpoint_minutes * 60;
    mn_guard(c, "loss allreduce");
    MPI_Allreduce(MPI_IN_PLACE, sum, DUE + 1, MPI_FLOAT, MPI_SUM, c->world);
    mn_unguard(c);
    o->loss = sum[0] / c->size;
    int most = 0;
    o->signaled = 0;
    for (int i = 0; i < MN_STOP_SIGNALS; ++i) {
        o->signaled += (int)sum[1 + i];
        if (sum[1 + i] > sum[1 + most]) most = i;
    }
    o->stop_sig = o->signaled ? mn_stop_signals[most] : 0;
    o->lost = sum[LOST] > 0;
    o->due = sum[DUE] > 0;
    mn_rescue_note(r->rescue, o->signaled > 0);
    if (o->lost) return mn_backup_check(c, r->lock);
    o->tstep = mn_now();
    mn_timeline_add(r->tl, 0, MN_TL_LOSS, tu, o->tstep, 0, 0, 0);
    if (mn_optimizer_nonfinite(r->mo) || !isfinite(o->loss)) {
        /* nonfinite=skip: the hook dropped the update; stop: the job ends
         * without writing it. */
        size_t at = mn_base_iteration(r->net);
        if (!r->opt->nonfinite_skip) {
            if (c->rank == 0)
                mn_error(c, "iteration %zu: the loss or the averaged gradient is NaN or Inf; stopping "
                         "without writing weights (nonfinite=skip in [distributed] skips such updates)", at);
            return MN_ERR_USER;
        }
        if (c->rank == 0)
            mn_error(c, "iteration %zu: NaN or Inf in the loss or gradient; update skipped "
                     "(weights, momentum and running statistics as before)", at);
    } else {
        r->avg_loss = r->avg_loss < 0 ? o->loss : r->avg_loss * .9 + o->loss * .1;
    }
    o->now = mn_now();
    return MN_OK;
}

/* Rank 0's line for the iteration. */
static void run_report(const train_run *r, const train_step *o)
{
    if (r->c->rank != 0) return;
    size_t it = mn_base_iteration(r->net);
    double per = (o->now - r->start) / (double)(it - r->first_batch);
    char el[32], eta[32];
    format_duration(o->now - r->start, el, sizeof el);
    format_duration(per * (double)(r->in.max_batches - it), eta, sizeof eta);
    printf("%zu: loss %f, avg %f, rate %f, %.1f img/s, %s elapsed, ETA %s, %zu images\n", it, o->loss, r->avg_loss,
           mn_base_rate(r->net), r->global_imgs / (o->now - o->t0), el, eta, (size_t)mn_net_seen(r->net));
    fflush(stdout);
}

/* What is due after the iteration: the replica check before anything is
 * saved, the evaluation, the chart, the weights files, the checkpoint; a
 * stop signal ends the run in a checkpoint. */
static mn_status run_save(train_run *r, const train_step *o)
{
    mn_comm *c = r->c;
    const mn_options *opt = r->opt;
    const mn_data_cfg *dc = r->dc;
    size_t it = mn_base_iteration(r->net);
    double rate = r->global_imgs / (o->now - o->t0);
    int stopping = o->signaled > 0;
    /* Every K iterations, when checkpoint_minutes have passed, and at
     * max_batches where either wrote checkpoints, so an extended training
     * resumes at the end. */
    int periodic = opt->checkpoint_interval > 0 || r->timed;
    int ckpt = o->due || (opt->checkpoint_interval > 0 && it % (size_t)opt->checkpoint_interval == 0) ||
               (periodic && it == (size_t)r->in.max_batches);
    int eval = mn_eval_due(opt, it, r->last_eval, (size_t)r->in.max_batches, (size_t)r->in.burn_in, r->shard->global_n,
                           (size_t)r->global_imgs);
    if (eval) r->last_eval = it;
    int saves = ckpt || it % (size_t)opt->backup_interval == 0 || it % (size_t)opt->save_interval == 0 || eval;
    double ts = mn_now();
    mn_status s = MN_OK;
    /* Nothing is written into a folder another job took over. */
    if (saves || stopping) s = mn_backup_check(c, r->lock);
    if (s == MN_OK && saves) s = one_model(c, r->net, r->mo, opt, it);
    double te = mn_now();
    if (s == MN_OK && eval)
        s = mn_eval_during_training(c, r->net, r->mo, r->task, dc, opt, it, r->base, r->cfgfile, &r->ev, &r->best);
    double tw = mn_now();
    mn_timeline_add(r->tl, 0, MN_TL_EVAL, te, tw, 0, 0, 0);
    /* Rank 0 writes the log and chart only into a folder still its own;
     * once it is not, the next loss allreduce stops every rank. */
    if (s == MN_OK && (saves || stopping || mn_backup_mine(r->lock)))
        mn_report_iteration(&r->rep, c, r->net, opt, dc->backup, r->base, o->loss, r->avg_loss, rate,
                            mn_eval_score(r->ev, it));
    char path[4096];
    if (s == MN_OK && it % (size_t)opt->backup_interval == 0) {
        snprintf(path, sizeof path, "%s/%s.backup", dc->backup, r->base);
        s = mn_save_weights_all(c, r->net, r->mo, opt, path);
    }
    if (s == MN_OK && it % (size_t)opt->save_interval == 0) {
        snprintf(path, sizeof path, "%s/%s_%zu.weights", dc->backup, r->base, it);
        s = mn_save_weights_all(c, r->net, r->mo, opt, path);
    }
    if (s == MN_OK && ckpt) {
        double t = mn_now();
        s = mn_checkpoint_save(c, r->net, r->mo, opt, dc->backup, r->base, r->experiment, &r->best);
        if (s == MN_OK && c->rank == 0)
            printf("checkpoint %zu: %.1f MiB written by rank 0 in %.3f s%s\n", it,
                   mn_checkpoint_bytes(r->net, r->mo, r->experiment) / 1048576.0, mn_now() - t,
                   o->due ? " (checkpoint_minutes)" : "");
        r->checkpointed = mn_now();
        r->timed |= o->due;
    }
    if (saves) {   /* the replica check, then the files */
        mn_timeline_add(r->tl, 0, MN_TL_SAVE, ts, te, 0, 0, 0);
        mn_timeline_add(r->tl, 0, MN_TL_SAVE, tw, mn_now(), 0, 0, 0);
    }
    if (s == MN_OK) s = mn_timeline_step(r->tl, it, o->t0, o->tstep);
    if (s == MN_OK && stopping && it < (size_t)r->in.max_batches)
        s = stop_here(c, r->net, r->mo, opt, dc->backup, r->base, r->experiment, &r->best, it, o->stop_sig,
                      o->signaled, saves, ckpt);
    return s;
}

/* The loader and the cache handed back; after a whole run, the cache's
 * figures and the final weights. */
static mn_status run_close(train_run *r, mn_status s)
{
    mn_rescue_close(r->rescue);
    mn_base_loader_free(r->loader);
    mn_cache_uninstall();
    if (s == MN_OK) s = mn_cache_report(r->c, r->cache, r->cache_mb);
    mn_cache_free(r->cache);
    if (s == MN_OK) s = mn_backup_check(r->c, r->lock);
    if (s == MN_OK) s = write_final(r->c, r->net, r->mo, r->opt, r->dc->backup, r->base);
    mn_eval_free(r->ev);
    mn_report_free(r->rep);
    return s;
}

/* The loop: load, step, report, save, until max_batches. */
static mn_status train_loop(train_run *r)
{
    r->in = mn_net_get(r->net);   /* after resume, which may change subdivisions */
    MN_CHECK(run_open(r));
    /* rescue=1: a lost rank costs no iteration (mn_checkpoint.h). */
    mn_status s = r->opt->rescue ? mn_rescue_open(r->c, r->net, r->mo, r->dc->backup, r->base, r->experiment, &r->best,
                                                  &r->rescue)
                                 : MN_OK;
    while (s == MN_OK && mn_base_iteration(r->net) < (size_t)r->in.max_batches) {
        mn_batch train = {0};
        train_step o = {0};
        if ((s = run_load(r, &train, &o)) != MN_OK) {
            mn_base_free_batch(&train);   /* this rank's, where another rank's failed */
            break;
        }
        s = run_step(r, &train, &o);
        if (s != MN_OK || o.lost) break;
        run_report(r, &o);
        s = run_save(r, &o);
    }
    return run_close(r, s);
}


/* A checkpoint of another rank count keeps its global batch by setting
 * subdivisions to what this rank count needs, the same training by the
 * equivalence contract (global_batch=keep); where the passes do not divide
 * it, say what changes, or stop for a rerun on more ranks (strict). Every
 * rank computes the same. */
static mn_status keep_global_batch(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt,
                                   const mn_resumed *r)
{
    mn_net_info in = mn_net_get(net);
    unsigned long long was = r->batch, now = (unsigned long long)in.batch * in.subdivisions * c->size,
                       pass = (unsigned long long)in.batch * c->size;   /* images of one pass on every rank */
    if (was == now || opt->global_batch == MN_GLOBAL_BATCH_CFG) return MN_OK;
    if (was % pass == 0) {
        int s = (int)(was / pass);
        mn_net_set_subdivisions(net, s);
        mn_net_set_seen(net, (uint64_t)r->iteration * was);
        /* Darknet's momentum is a sum over a rank's images of an update, so
         * more images a rank make a larger sum. */
        mn_optimizer_rescale(mo, net, (float)((double)in.batch * s * r->ranks / (double)was));
        /* Where each rank stands for a whole number of the cfg's ranks,
         * their batch-norm running statistics are kept apart. */
        int ways = s % in.subdivisions == 0 ? s / in.subdivisions : 1, kept = 0;
        MN_CHECK(mn_agree(c, mn_optimizer_ways(c, mo, net, ways, &kept)));
        if (c->rank == 0) {
            printf("darknet-mn: the checkpoint's global batch %llu kept on %d ranks: subdivisions %d -> %d "
                   "(%d ranks x %d images x %d passes an update), the same training as on the %d ranks that wrote it "
                   "(global_batch=keep)%s\n", was, c->size, in.subdivisions, s, c->size, in.batch, s, r->ranks,
                   kept ? "; batch norm's running statistics kept apart for each rank a rank stands for" : "");
            if (opt->sync_bn)
                printf("darknet-mn: warning: sync_bn=1 normalizes over the %d ranks' %d images of a pass, where the "
                       "%d ranks that wrote the checkpoint normalized over %d: not the same training\n", c->size,
                       c->size * in.batch, r->ranks, r->ranks * in.batch);
        }
        return MN_OK;
    }
    if (opt->global_batch == MN_GLOBAL_BATCH_STRICT) {
        if (c->rank == 0)
            mn_error(c, "global_batch=strict: the checkpoint's global batch %llu (%d ranks) cannot be kept on %d ranks "
                        "of %d-image passes (%llu is not a multiple of %llu); stopping, for a rerun on a rank count "
                        "that divides it", was, r->ranks, c->size, in.batch, was, pass);
        return MN_ERR_STOPPED;
    }
    if (c->rank == 0)
        printf("darknet-mn: warning: the checkpoint's global batch %llu cannot be kept on %d ranks of %d-image passes "
               "(%llu is not a multiple of %llu): going on with %llu images an update. Darknet steps by learning_rate "
               "times the mean gradient, so each step is as long but averages %s images: not the same training "
               "(the linear scaling rule would set learning_rate x %.3g); global_batch=strict stops instead, for a "
               "rerun on a rank count that divides %llu\n", was, c->size, in.batch, was, pass, now,
               now < was ? "fewer" : "more", (double)now / (double)was, was);
    return MN_OK;
}

/* Whether the final weights were written after the checkpoint at path (rank
 * 0). */
static int finished_after(const char *dir, const char *base, const char *path)
{
    char final[4096];
    struct stat f, k;
    snprintf(final, sizeof final, "%s/%s_final.weights", dir, base);
    if (stat(final, &f) != 0 || stat(path, &k) != 0) return 0;
    return f.st_mtim.tv_sec > k.st_mtim.tv_sec ||
           (f.st_mtim.tv_sec == k.st_mtim.tv_sec && f.st_mtim.tv_nsec >= k.st_mtim.tv_nsec);
}

/* What a run does once resume() has found where it starts. */
enum { START_TRAIN, START_FINAL_ONLY, START_DONE };

/* Rank 0: the files an earlier training of base left in dir that a run
 * starting over would replace, into list; 0 where there are none. */
static int earlier_training(const char *dir, const char *base, char *list, size_t cap)
{
    static const char *const kinds[] = {"_final.weights", "_best.weights"};
    size_t k = 0;
    int n = 0;
    list[0] = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; ++i) {
        char path[4352];
        snprintf(path, sizeof path, "%s/%s%s", dir, base, kinds[i]);
        if (access(path, F_OK) != 0) continue;
        if (k < cap) k += (size_t)snprintf(list + k, cap - k, "%s%s", n ? ", " : "", path);
        ++n;
    }
    return n;
}

/* Where training starts: the experiment's newest checkpoint in the backup
 * folder (with or without -clear, so a job resubmitted with the same flags
 * goes on), else the weights file, else the initial weights. A run that
 * would replace an earlier training's files (no checkpoint loads, or
 * iteration 0 beside its final or best weights) is refused before it writes
 * anything. At max_batches: START_FINAL_ONLY where the run ended before its
 * final weights, START_DONE where this job already wrote them (a requeue
 * after a run that finished), else refused. */
static mn_status resume(mn_comm *c, network *net, mn_optimizer *mo, const mn_options *opt, const char *dir,
                        const char *base, const char *cfgfile, const char *weightfile, int clear, mn_lock *lock,
                        const char *experiment, mn_resumed *r, int *start)
{
    memset(r, 0, sizeof *r);
    r->best.score = -1;
    *start = START_TRAIN;
    int given = weightfile && *weightfile;
    if (c->rank == 0) mn_backup_remove_tmp(c, dir, base);   /* the folder is this job's now */
    /* Without checkpoint_interval only a stopped run leaves a checkpoint. */
    MN_CHECK(mn_checkpoint_resume(c, net, mo, dir, base, lock, experiment, r));
    if (r->found) MN_CHECK(keep_global_batch(c, net, mo, opt, r));
    size_t it = mn_base_iteration(net);
    mn_net_info in = mn_net_get(net);
    int global = in.batch * in.subdivisions * c->size;
    int at_end = r->found && in.max_batches > 0 && it == (size_t)in.max_batches && c->rank == 0;
    int finished = at_end && finished_after(dir, base, r->path);
    int last = at_end && !finished;
    const char *job = mn_backup_rerun_of(lock);
    int done = finished && job;
    char earlier[8192];
    int over = c->rank == 0 && !r->found && it == 0 && in.max_batches > 0 &&
               earlier_training(dir, base, earlier, sizeof earlier);
    if (c->rank == 0) {
        if (in.max_batches <= 0)
            mn_error(c, "%s: max_batches is %d: nothing to train; set it to the number of updates to run",
                     cfgfile, in.max_batches);
        else if (last)
            printf("darknet-mn: checkpoint %s is at max_batches %d and its run ended before writing its final "
                   "weights: writing %s/%s_final.weights from it\n", r->path, in.max_batches, dir, base);
        else if (done)
            printf("darknet-mn: an earlier run of this job (%s) finished: checkpoint %s is at max_batches %d and "
                   "%s/%s_final.weights was written after it; nothing left to do\n", job, r->path, in.max_batches,
                   dir, base);
        else if (it >= (size_t)in.max_batches && r->found) {
            char anew[8192];
            mn_backup_anew(dir, base, anew, sizeof anew);
            mn_error(c, "checkpoint %s is at iteration %zu and the cfg's max_batches is %d: nothing to train; raise "
                     "max_batches to go on, or %s", r->path, it, in.max_batches, anew);
        }
        else if (it >= (size_t)in.max_batches)
            mn_error(c, "weights file %s is at iteration %zu and the cfg's max_batches is %d: nothing to train; "
                     "raise max_batches to go on, or add -clear to start from it at iteration 0", weightfile, it,
                     in.max_batches);
        else if (over)
            mn_error(c, "backup folder %s holds an earlier training of %s (%s) and this run would start over at "
                     "iteration 0, replacing them: to start anew, move them aside (mkdir %s/old && mv %s/%s_*.weights %s/old/) "
                     "or give the data cfg another backup= folder; to go on from them, pass its weights without -clear "
                     "(checkpoint_interval or checkpoint_minutes in [distributed] make a rerun resume from the "
                     "training's checkpoints)",
                     dir, base, earlier, dir, dir, base, dir);
        else if (r->found && r->ranks == c->size && r->batch == (uint64_t)in.batch * in.subdivisions * c->size)
            printf("darknet-mn: resuming from checkpoint %s: iteration %zu of max_batches %d, seen %zu "
                   "(written by %d ranks, as now)\n", r->path, it, in.max_batches, (size_t)mn_net_seen(net), r->ranks);
        else if (r->found)
            printf("darknet-mn: resuming from checkpoint %s: iteration %zu of max_batches %d, written by %d ranks "
                   "(global batch %llu); now %d ranks (global batch %d), seen = %zu x %d = %zu\n",
                   r->path, it, in.max_batches, r->ranks, (unsigned long long)r->batch, c->size,
                   global, it, global, (size_t)mn_net_seen(net));
        else if (given)
            printf("darknet-mn: starting from %s at iteration %zu%s\n", weightfile, it, clear ? " (-clear: seen set to 0)" : "");
        if (r->found && given && (last || it < (size_t)in.max_batches))
            printf("darknet-mn: %s is not loaded: the checkpoint continues the run (move the checkpoints aside to "
                   "start from it instead)\n", weightfile);
        if (r->found && r->best.score >= 0 && it < (size_t)in.max_batches)
            printf("darknet-mn: the best evaluation so far, %.4f at iteration %llu, carries on: %s/%s_best.weights "
                   "is replaced only by a better one\n", r->best.score, (unsigned long long)r->best.iteration, dir, base);
        fflush(stdout);
    }
    int what[3] = {last, done, over};
    MN_MPI(c, MPI_Bcast(what, 3, MPI_INT, 0, c->world));
    *start = what[0] ? START_FINAL_ONLY : what[1] ? START_DONE : START_TRAIN;
    if (in.max_batches <= 0 || (it >= (size_t)in.max_batches && *start == START_TRAIN)) return mn_agree(c, MN_ERR_USER);
    return mn_agree(c, what[2] ? MN_ERR_USAGE : MN_OK);
}

/* What the loaded cfg asks that this version or base cannot train. Collective. */
static mn_status refuse_net(mn_comm *c, mn_task task, const char *cfgfile, network *net, const mn_options *opt)
{
    if (mn_net_get(net).adam) {   /* docs/troubleshooting.md, "Limits of this version" */
        if (c->rank == 0)
            mn_error(c, "%s: adam=1 is not supported: Darknet's CPU update ignores it, and on a GPU the mean over "
                        "N ranks would turn Adam's eps into N*eps; remove it to train with momentum SGD", cfgfile);
        return mn_agree(c, MN_ERR_USER);
    }
    const char *refused = mn_base_refuse(net, opt->sync_bn, task == MN_TASK_DETECTOR);
    if (refused) {
        if (c->rank == 0) mn_error(c, "%s: %s is not supported on %s Darknet", cfgfile, refused, mn_base_name());
        return mn_agree(c, MN_ERR_USER);
    }
    return MN_OK;
}

/* The last layer fits the task and the data cfg. Collective. */
static mn_status check_outputs(mn_comm *c, mn_task task, const char *datacfg, const char *cfgfile,
                               const mn_data_cfg *dc, network *net)
{
    mn_layer_kind last = mn_layer_last(net).kind;
    if (task == MN_TASK_DETECTOR && last != MN_LAYER_YOLO && last != MN_LAYER_REGION && last != MN_LAYER_DETECTION) {
        if (c->rank == 0) mn_error(c, "%s: the last layer is not a yolo, region or detection layer", cfgfile);
        return mn_agree(c, MN_ERR_USER);
    }
    /* Darknet copies `outputs` truth values per image from rows of `classes`. */
    int outputs = mn_net_get(net).outputs;
    if (task == MN_TASK_CLASSIFIER && outputs != dc->classes) {
        if (c->rank == 0)
            mn_error(c, "%s: the last layer (%d) gives %d values per image but %s says classes=%d; the layer "
                        "before the softmax must have classes outputs", cfgfile, mn_net_layers(net) - 1, outputs,
                        datacfg, dc->classes);
        return mn_agree(c, MN_ERR_USER);
    }
    return MN_OK;
}

mn_status mn_train(mn_comm *c, mn_task task, const char *datacfg, const char *cfgfile,
                   const char *weightfile, int clear, int map_epochs)
{
    /* Every step below is collective and agreed, so all ranks leave
     * together, releasing what was set up. */
    mn_data_cfg dc;
    network *net = NULL;
    mn_optimizer *mo = NULL;
    mn_timeline *tl = NULL;
    mn_list shard = {0};
    mn_label_skip skip;
    char *base = NULL, *experiment = NULL;
    mn_options opt;
    mn_lock *lock = NULL;
    mn_resumed r;
    int start = START_TRAIN;
    mn_status s = mn_agree(c, mn_read_data_cfg(c, datacfg, task, &dc));
    if (s != MN_OK) return s;
    if (!dc.train) {
        if (c->rank == 0) mn_error(c, "%s: no 'train' list given", datacfg);
        s = mn_agree(c, MN_ERR_USER);
        goto out;
    }
    /* What the task alone rules out, before a fork's parser can stop on the
     * cfg without a reason. */
    const char *early = mn_base_refuse(NULL, 0, task == MN_TASK_DETECTOR);
    if (early) {
        if (c->rank == 0) mn_error(c, "%s: %s is not supported on %s Darknet", cfgfile, early, mn_base_name());
        s = mn_agree(c, MN_ERR_USER);
        goto out;
    }
    if ((s = mn_load_network(c, cfgfile, weightfile, clear ? MN_LOAD_CLEAR : 0, &net, &opt)) != MN_OK) goto out;
    opt.eval_epochs = map_epochs;
    /* The watchdog starts as soon as the cfg gave its timeout: every setup
     * collective from here on is guarded, so a rank that stalls in one ends
     * the job. */
    if ((s = mn_agree(c, mn_watchdog_open(c, opt.collective_timeout))) != MN_OK) goto out;
    if ((s = refuse_net(c, task, cfgfile, net, &opt)) != MN_OK) goto out;
    if ((s = mn_comm_select(c, opt.communicator)) != MN_OK) goto out;
    if ((s = check_outputs(c, task, datacfg, cfgfile, &dc, net)) != MN_OK) goto out;
    mn_base_seed(mn_stream_seed(opt.seed, c->rank, mn_base_iteration(net)));
    s = opt.deterministic ? mn_bcast_list(c, dc.train, opt.shuffle, opt.seed, &shard)
                          : mn_scatter_list(c, dc.train, opt.shuffle, opt.seed, &shard);
    if (s == MN_OK && task == MN_TASK_DETECTOR) s = mn_agree(c, mn_check_detector_classes(c, datacfg, cfgfile, &dc, net));
    if (s != MN_OK || (s = mn_check_training_input(c, task, &dc, &opt, net, &shard, &skip)) != MN_OK) goto out;
    experiment = mn_experiment(c, cfgfile, &opt, dc.train, &shard);
    if (c->rank == 0 && !experiment) mn_error(c, "out of memory describing the experiment of %s", cfgfile);
    if ((s = mn_agree(c, c->rank != 0 || experiment ? MN_OK : MN_ERR_NOMEM)) != MN_OK) goto out;
    if (task == MN_TASK_DETECTOR && opt.bad_labels_skip) mn_label_filter_install(&skip);
    if (task == MN_TASK_DETECTOR) mn_label_path_install();
    if ((s = ensure_dir(c, dc.backup)) != MN_OK) goto out;
    if ((s = mn_backup_lock(c, dc.backup, opt.lock_lease, &lock)) != MN_OK) goto out;
    if ((s = mn_backup_shared(c, dc.backup, opt.checkpoint_interval)) != MN_OK) goto out;
    mn_install_stop_handlers();   /* from here a stop signal ends in a checkpoint */
    if ((s = mn_agree(c, mn_attach(c, net, &opt, &mo))) != MN_OK) goto out;
    if ((s = mn_agree(c, mn_attach_sync_bn(c, net, &opt))) != MN_OK) goto out;
    if ((s = mn_timeline_open(c, opt.timeline[0] ? opt.timeline : NULL, &tl)) != MN_OK) goto out;
    mn_optimizer_set_timeline(mo, net, tl);
    base = mn_base_cfg_name(cfgfile);
    if ((s = check_names(c, dc.backup, base, mn_net_get(net).max_batches)) != MN_OK) goto out;
    if ((s = resume(c, net, mo, &opt, dc.backup, base, cfgfile, weightfile, clear, lock, experiment, &r, &start)) !=
        MN_OK)
        goto out;
    if (start == START_FINAL_ONLY) {
        s = write_final(c, net, mo, &opt, dc.backup, base);
    } else if (start == START_TRAIN) {
        train_run run = {.c = c, .task = task, .dc = &dc, .opt = &opt, .net = net, .mo = mo, .shard = &shard,
                         .base = base, .cfgfile = cfgfile, .experiment = experiment, .tl = tl, .lock = lock,
                         .best = r.best};
        s = train_loop(&run);
    }
    if (mn_timeline_close(tl, s == MN_OK && start != START_DONE) != MN_OK && s == MN_OK) s = MN_ERR_MPI;
    tl = NULL;
out:
    mn_label_filter_uninstall();
    mn_label_path_uninstall();
    mn_timeline_close(tl, 0);
    mn_backup_unlock(lock);
    if (mo) mn_detach(net, mo);
    mn_watchdog_close(c);
    if (net) mn_base_free(net);
    mn_free_list(&shard);
    mn_free_data_cfg(&dc);
    free(base);
    free(experiment);
    return s;
}
