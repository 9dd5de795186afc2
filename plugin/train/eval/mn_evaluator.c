/* The multi-node evaluator (ChainerMN's create_multi_node_evaluator). The
 * valid list is scattered in contiguous shards and each rank runs the
 * network on its own images as stock Darknet's validate_* commands do.
 * Counts are summed with an allreduce; detections are gathered to rank 0
 * in rank order, which is list order, so rank 0 writes the same files a
 * one-rank run writes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/eval/mn_eval.h"
#include "base/mn_base_util.h"
#include "base/mn_base.h"
#include "engine/mn_engine.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_detwire.h"

/* Stock validate_detector's and validate_detector_recall's settings. */
#define VALID_THRESH .005f
#define VALID_NMS .45f
#define RECALL_THRESH .001f
#define RECALL_NMS .4f
#define HIER_THRESH .5f
#define MAP_IOU .5f

/* ------------------------------------------------------------------ runs */

/* What every evaluation command holds: the data cfg, the network at batch 1,
 * this rank's shard of the valid list; for the detector also stock's keys:
 * the class names (rank 0 writes them) and the results prefix. */
typedef struct {
    mn_data_cfg dc;
    network *net;
    mn_list shard;
    char **names;
    int nnames;
    mn_cache *cache;       /* installed for the run's image loads (mn_cache.c) */
    int classes;
    const char *prefix;   /* points into dc.options */
    int skip_on;          /* bad_labels=skip: read_boxes' filter is installed */
    mn_label_skip skip;
} eval_run;

static int is_detector(const network *net)
{
    mn_layer_kind t = mn_layer_last(net).kind;
    return t == MN_LAYER_YOLO || t == MN_LAYER_REGION || t == MN_LAYER_DETECTION;
}

/* Stock's keys: names (default data/names.list), results (default results),
 * eval (only voc). Checked on rank 0, where they are used. */
static mn_status read_det_keys(mn_comm *c, const char *datacfg, const char *cfgfile, int need_names, eval_run *r)
{
    mn_status s = MN_OK;
    list *o = r->dc.options;
    r->classes = mn_layer_last(r->net).classes;
    r->prefix = mn_base_option(o, "results");
    const char *eval = mn_base_option(o, "eval");
    if (!r->prefix) r->prefix = "results";
    if (!eval) eval = "voc";
    if (!is_detector(r->net)) {
        if (c->rank == 0) mn_error(c, "%s: the last layer is not a yolo, region or detection layer", cfgfile);
        s = MN_ERR_USER;
    } else if (strcmp(eval, "voc") != 0) {
        if (c->rank == 0) mn_error(c, "%s: eval=%s is not supported; darknet-mn writes VOC files (eval=voc)", datacfg, eval);
        s = MN_ERR_USER;
    } else if (need_names && c->rank == 0) {
        const char *nf = mn_base_option(o, "names");
        if (!nf) nf = "data/names.list";
        FILE *fp = fopen(nf, "r");
        if (!fp) {
            mn_error(c, "cannot open names file %s (from %s): %s", nf, datacfg, strerror(errno));
            s = MN_ERR_USER;
        } else {
            fclose(fp);
            r->names = mn_base_read_lines(nf, &r->nnames);
            if (r->nnames < r->classes) {
                mn_error(c, "names file %s has %d names, but the network has %d classes", nf, r->nnames, r->classes);
                s = MN_ERR_USER;
            }
        }
    }
    return mn_agree(c, s);
}

static void close_run(eval_run *r)
{
    if (r->skip_on) mn_label_filter_uninstall();
    if (r->cache) mn_cache_uninstall();
    mn_cache_free(r->cache);
    r->cache = NULL;
    for (int i = 0; r->names && i < r->nnames; ++i) free(r->names[i]);
    free(r->names);
    mn_free_data_cfg(&r->dc);
    mn_free_list(&r->shard);
    if (r->net) mn_base_free(r->net);
    r->names = NULL;
    r->net = NULL;
}

static mn_status open_run(mn_comm *c, const char *datacfg, mn_task task, const char *cfgfile,
                          const char *weightfile, int need_names, eval_run *r)
{
    memset(r, 0, sizeof *r);
    MN_CHECK(mn_agree(c, mn_read_data_cfg(c, datacfg, task, &r->dc)));
    if (!r->dc.valid) {
        if (c->rank == 0) mn_error(c, "%s: no 'valid' list given", datacfg);
        close_run(r);
        return mn_agree(c, MN_ERR_USER);
    }
    mn_options opt;
    mn_status s = mn_load_network(c, cfgfile, weightfile, MN_LOAD_BATCH1, &r->net, &opt);
    if (s == MN_OK && task == MN_TASK_DETECTOR) s = read_det_keys(c, datacfg, cfgfile, need_names, r);
    if (s == MN_OK && task == MN_TASK_DETECTOR && opt.bad_labels_skip) {
        r->skip_on = 1;
        r->skip.classes = mn_layer_last(r->net).classes;
        mn_label_filter_install(&r->skip);
    }
    if (s == MN_OK && task == MN_TASK_DETECTOR) s = mn_agree(c, mn_check_detector_classes(c, datacfg, cfgfile, &r->dc, r->net));
    if (s == MN_OK) {
        mn_base_inference(r->net);
        s = mn_scatter_list(c, r->dc.valid, 0, 0, &r->shard);
    }
    if (s == MN_OK) {   /* keeps nothing: an image that cannot be decoded gets darknet-mn's message */
        char who[96];
        snprintf(who, sizeof who, "rank %d (%s): ", c->rank, c->host);
        r->cache = mn_cache_create(NULL, 0, 0, who);
        if (!r->cache) mn_error(c, "out of memory");
        s = mn_agree(c, r->cache ? MN_OK : MN_ERR_NOMEM);
        if (r->cache) mn_cache_install(r->cache);
    }
    if (s != MN_OK) close_run(r);
    return s;
}

/* ------------------------------------------------------------------ classifier */

/* Scores one shard as stock validate_classifier_single does: hits[0] top-1,
 * hits[1] top-k, hits[2] images. */
static mn_status classify_shard(mn_comm *c, network *net, const mn_data_cfg *dc, const mn_list *shard,
                                int topk, long hits[3])
{
    int *idx = calloc((size_t)topk, sizeof(int));
    if (!idx) return MN_ERR_NOMEM;
    mn_net_info in = mn_net_get(net);
    mn_status s = MN_OK;
    for (size_t i = 0; i < shard->n && s == MN_OK; ++i) {
        int m, cls = mn_path_class(dc->labels, dc->classes, shard->paths[i], &m);
        if (cls < 0) {
            mn_error(c, "image %s matches %d labels of %s; it must contain exactly one", shard->paths[i], m, dc->labels_file);
            s = MN_ERR_USER;
            break;
        }
        if ((s = mn_check_readable(c, shard->paths[i])) != MN_OK) break;
        mn_image im = mn_base_load_image(shard->paths[i], 0, 0);
        mn_image resized = mn_base_resize_min(im, in.w);
        mn_image crop = mn_base_crop_image(resized, (resized.w - in.w) / 2, (resized.h - in.h) / 2, in.w, in.h);
        float *pred = mn_base_predict(net, crop.data);
        if (in.hierarchy) mn_base_hierarchy(pred, in.outputs, in.hierarchy);
        mn_base_top_k(pred, dc->classes, topk, idx);
        hits[0] += idx[0] == cls;
        for (int j = 0; j < topk; ++j) hits[1] += idx[j] == cls;
        hits[2] += 1;
        if (resized.data != im.data) mn_base_free_image(resized);
        mn_base_free_image(im);
        mn_base_free_image(crop);
    }
    free(idx);
    return s;
}

mn_status mn_classifier_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                              const char *weightfile)
{
    eval_run r;
    MN_CHECK(open_run(c, datacfg, MN_TASK_CLASSIFIER, cfgfile, weightfile, 0, &r));
    int topk = mn_data_int(r.dc.options, "top", 1);
    if (topk < 1 || topk > r.dc.classes) topk = r.dc.classes < 5 ? r.dc.classes : 5;
    long hits[3] = {0, 0, 0};   /* top-1, top-k, images */
    mn_status s = mn_agree(c, classify_shard(c, r.net, &r.dc, &r.shard, topk, hits));
    if (s == MN_OK) {
        MPI_Allreduce(MPI_IN_PLACE, hits, 3, MPI_LONG, MPI_SUM, c->world);
        if (c->rank == 0)
            printf("darknet-mn: %ld images on %d ranks: top-1 %.4f (%ld), top-%d %.4f (%ld)\n", hits[2], c->size,
                   (double)hits[0] / hits[2], hits[0], topk, (double)hits[1] / hits[2], hits[1]);
    }
    close_run(&r);
    return s;
}

/* ------------------------------------------------------------------ detections */

/* Where the labels of an image are: Darknet's convention (fill_truth_detection),
 * plus .png. */
static void label_path(const char *path, char *out)
{
    static const char *const from[] = {"images", "JPEGImages", ".jpg", ".JPG", ".JPEG", ".png"};
    static const char *const to[] = {"labels", "labels", ".txt", ".txt", ".txt", ".txt"};
    if (mn_base_label_path(path, out, 4096)) return;   /* out: read_truth's lp, as large */
    mn_base_replace(path, from, to, 6, out);
}

/* The truth boxes of an image (relative center x, y, w, h per Darknet's labels). */
static mn_status read_truth(mn_comm *c, const char *path, int classes, mn_label_skip *skip, mn_truth **out, int *n)
{
    char lp[4096];
    if (strlen(path) >= sizeof lp - 8) { mn_error(c, "path too long: %s", path); return MN_ERR_USER; }
    label_path(path, lp);
    mn_label_fallback(path, lp, sizeof lp);   /* as training found them */
    MN_CHECK(mn_check_label_lines(c, path, lp, classes, skip));
    *out = mn_base_read_boxes(lp, n);
    return MN_OK;
}

/* Runs the network on every image of the shard as stock validate_detector
 * does (letterbox, get_network_boxes, do_nms_sort) and appends the records. */
static mn_status detect_shard(mn_comm *c, network *net, const mn_list *shard, int with_truth, mn_label_skip *skip,
                              mn_bytes *out)
{
    int classes = mn_layer_last(net).classes;
    for (size_t i = 0; i < shard->n; ++i) {
        const char *path = shard->paths[i];
        mn_truth *truth = NULL;
        int ntruth = 0;
        MN_CHECK(mn_check_readable(c, path));
        if (with_truth) MN_CHECK(read_truth(c, path, classes, skip, &truth, &ntruth));
        mn_image im = mn_base_load_image(path, 0, 0);
        int letter;
        mn_image sized = mn_base_detector_input(net, im, &letter);
        mn_base_predict(net, sized.data);
        int nboxes = 0;
        detection *dets = mn_base_boxes(net, im.w, im.h, VALID_THRESH, HIER_THRESH, 0, letter, &nboxes);
        mn_base_nms(net, dets, nboxes, classes, VALID_NMS, im.w, im.h, 0);
        mn_put_record(out, path, im.w, im.h, truth, ntruth, dets, nboxes, classes);
        mn_base_free_detections(dets, nboxes);
        free(truth);
        mn_base_free_image(im);
        mn_base_free_image(sized);
        if (out->failed) { mn_error(c, "out of memory holding detections"); return MN_ERR_NOMEM; }
    }
    return MN_OK;
}

/* The VOC files of one run, written to temporary names and renamed at the end. */
typedef struct {
    FILE **fps;
    char **paths;
    int n;
} voc_files;

static void close_voc(voc_files *v, int keep)
{
    for (int j = 0; j < v->n; ++j) {
        if (v->fps && v->fps[j]) fclose(v->fps[j]);
        if (!keep && v->paths && v->paths[j]) {
            char tmp[4200];
            snprintf(tmp, sizeof tmp, "%s.tmp", v->paths[j]);
            remove(tmp);
        }
        if (v->paths) free(v->paths[j]);
    }
    free(v->fps);
    free(v->paths);
    memset(v, 0, sizeof *v);
}

/* Rank 0 opens every class file (as <path>.tmp). */
static mn_status open_voc(mn_comm *c, const eval_run *d, const char *outfile, voc_files *v)
{
    memset(v, 0, sizeof *v);
    v->fps = calloc((size_t)d->classes, sizeof *v->fps);
    v->paths = calloc((size_t)d->classes, sizeof *v->paths);
    if (!v->fps || !v->paths) return MN_ERR_NOMEM;
    v->n = d->classes;
    for (int j = 0; j < d->classes; ++j) {
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s/%s%s.txt", d->prefix, outfile, d->names[j]);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        v->paths[j] = strdup(path);
        if (!(v->fps[j] = fopen(tmp, "w"))) {
            mn_error(c, "cannot write %s: %s (the results folder must exist; 'results' in the data cfg names it)",
                     tmp, strerror(errno));
            close_voc(v, 0);
            return MN_ERR_USER;
        }
    }
    return MN_OK;
}

/* Writes every gathered row as print_detector_detections does, then renames. */
static mn_status write_voc(mn_comm *c, const mn_bytes *all, voc_files *v, size_t *images, size_t *rows)
{
    const unsigned char *p = all->p, *end = all->p + all->n;
    mn_record r;
    int ok = 1;
    *images = *rows = 0;
    while (mn_next_record(&p, end, &r)) {
        char *id = mn_base_cfg_name(r.path);
        for (int i = 0; i < r.rows; ++i) {
            float prob, x0, y0, x1, y1;
            int j = mn_get_row(&r, i, &prob, &x0, &y0, &x1, &y1);
            fprintf(v->fps[j], "%s %f %f %f %f %f\n", id, prob, x0, y0, x1, y1);
        }
        free(id);
        *rows += (size_t)r.rows;
        ++*images;
    }
    for (int j = 0; j < v->n; ++j) {
        ok &= !ferror(v->fps[j]) && fclose(v->fps[j]) == 0;
        v->fps[j] = NULL;
    }
    for (int j = 0; ok && j < v->n; ++j) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", v->paths[j]);
        if (rename(tmp, v->paths[j]) != 0) {
            mn_error(c, "cannot rename %s to %s: %s", tmp, v->paths[j], strerror(errno));
            ok = 0;
        }
    }
    if (!ok) mn_error(c, "writing the detection files under %s failed (disk full?)", v->paths[0]);
    close_voc(v, ok);
    return ok ? MN_OK : MN_ERR_USER;
}

mn_status mn_detector_valid(mn_comm *c, const char *datacfg, const char *cfgfile,
                            const char *weightfile, const char *outfile)
{
    eval_run r;
    double t0 = mn_now();
    if (!outfile) outfile = "comp4_det_test_";
    MN_CHECK(open_run(c, datacfg, MN_TASK_DETECTOR, cfgfile, weightfile, 1, &r));
    voc_files v = {0};
    /* Opened and removed before the network runs, so that a bad prefix fails
     * fast; opened again to write: a rank that dies on an image meanwhile
     * leaves no temporary files. */
    mn_status s = mn_agree(c, c->rank == 0 ? open_voc(c, &r, outfile, &v) : MN_OK);
    if (c->rank == 0) close_voc(&v, 0);
    mn_bytes mine = {0}, all = {0};
    if (s == MN_OK) s = mn_agree(c, detect_shard(c, r.net, &r.shard, 0, NULL, &mine));
    if (s == MN_OK) s = mn_gather_bytes(c, &mine, &all);
    if (s == MN_OK && c->rank == 0) s = open_voc(c, &r, outfile, &v);
    if (s == MN_OK && c->rank == 0) {
        size_t images, rows;
        s = write_voc(c, &all, &v, &images, &rows);
        if (s == MN_OK)
            printf("darknet-mn: %zu images on %d ranks, %zu detections, wrote %s/%s<class>.txt in %.1f s\n",
                   images, c->size, rows, r.prefix, outfile, mn_now() - t0);
    }
    if (c->rank == 0) close_voc(&v, 0);
    s = mn_agree(c, s);
    free(mine.p);
    free(all.p);
    close_run(&r);
    return s;
}

/* ------------------------------------------------------------------ recall */

/* Stock validate_detector_recall on one shard. sums: images, truth boxes,
 * found (best IoU > .5), proposals, sum of best IoUs. The best IoU is over
 * the boxes returned (stock reads l.w*l.h*l.n of them, past the end for a
 * yolo layer). */
static mn_status recall_shard(mn_comm *c, network *net, const mn_list *shard, mn_label_skip *skip, double sums[5])
{
    int classes = mn_layer_last(net).classes;
    mn_net_info in = mn_net_get(net);
    for (size_t i = 0; i < shard->n; ++i) {
        const char *path = shard->paths[i];
        mn_truth *truth = NULL;
        int ntruth = 0;
        MN_CHECK(mn_check_readable(c, path));
        MN_CHECK(read_truth(c, path, classes, skip, &truth, &ntruth));
        mn_image orig = mn_base_load_image(path, 0, 0);
        mn_image sized = mn_base_resize_image(orig, in.w, in.h);
        mn_base_predict(net, sized.data);
        int nboxes = 0;
        detection *dets = mn_base_boxes(net, sized.w, sized.h, RECALL_THRESH, HIER_THRESH, 1, 0, &nboxes);
        mn_base_nms_obj(dets, nboxes, 1, RECALL_NMS);
        for (int k = 0; k < nboxes; ++k) sums[3] += dets[k].objectness > RECALL_THRESH;
        for (int j = 0; j < ntruth; ++j) {
            box t = {truth[j].x, truth[j].y, truth[j].w, truth[j].h};
            float best = 0;
            for (int k = 0; k < nboxes; ++k) {
                float iou = mn_base_box_iou(dets[k].bbox, t);
                if (dets[k].objectness > RECALL_THRESH && iou > best) best = iou;
            }
            sums[1] += 1;
            sums[2] += best > MAP_IOU;
            sums[4] += best;
        }
        sums[0] += 1;
        mn_base_free_detections(dets, nboxes);
        free(truth);
        mn_base_free_image(orig);
        mn_base_free_image(sized);
    }
    return MN_OK;
}

mn_status mn_detector_recall(mn_comm *c, const char *datacfg, const char *cfgfile,
                             const char *weightfile)
{
    eval_run r;
    MN_CHECK(open_run(c, datacfg, MN_TASK_DETECTOR, cfgfile, weightfile, 0, &r));
    double sums[5] = {0, 0, 0, 0, 0};
    mn_status s = mn_agree(c, recall_shard(c, r.net, &r.shard, r.skip_on ? &r.skip : NULL, sums));
    if (s == MN_OK && r.skip_on) s = mn_label_skip_report(c, &r.skip, r.dc.valid);
    if (s == MN_OK) {
        MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_DOUBLE, MPI_SUM, c->world);
        if (c->rank == 0)
            printf("darknet-mn: %.0f images on %d ranks: %5.0f %5.0f %5.0f\tRPs/Img: %.2f\tIOU: %.2f%%\tRecall:%.2f%%\n",
                   sums[0], c->size, sums[0] - 1, sums[2], sums[1], sums[3] / sums[0],
                   sums[1] > 0 ? sums[4] * 100 / sums[1] : 0, sums[1] > 0 ? 100. * sums[2] / sums[1] : 0);
    }
    close_run(&r);
    return s;
}

/* ------------------------------------------------------------------ mAP */

/* Collective: the mAP of net on the shards (every rank returns rank 0's
 * value); rank 0 fills ap[classes] and counts when they are given. */
static mn_status shard_map(mn_comm *c, network *net, const mn_list *shard, mn_label_skip *skip, double *map,
                           double *ap, size_t counts[3])
{
    int classes = mn_layer_last(net).classes;
    mn_bytes mine = {0}, all = {0};
    mn_status s = mn_agree(c, detect_shard(c, net, shard, 1, skip, &mine));
    if (s == MN_OK) s = mn_gather_bytes(c, &mine, &all);
    free(mine.p);
    *map = -1;
    if (s == MN_OK && c->rank == 0) {
        mn_box *dets = NULL, *truth = NULL;
        size_t nd = 0, nt = 0, images = 0;
        double *tmp = ap ? NULL : malloc((size_t)classes * sizeof(double));
        s = mn_records_to_boxes(&all, &dets, &nd, &truth, &nt, &images);
        if (s == MN_OK && (ap || tmp)) *map = mn_voc_map(dets, nd, truth, nt, classes, MAP_IOU, ap ? ap : tmp);
        if (s == MN_OK && *map < -1.5) s = MN_ERR_NOMEM;
        if (counts) { counts[0] = images; counts[1] = nd; counts[2] = nt; }
        free(tmp);
        free(dets);
        free(truth);
    }
    free(all.p);
    s = mn_agree(c, s);
    if (s == MN_OK) MN_MPI(c, MPI_Bcast(map, 1, MPI_DOUBLE, 0, c->world));
    return s;
}

mn_status mn_detector_map(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile)
{
    eval_run r;
    MN_CHECK(open_run(c, datacfg, MN_TASK_DETECTOR, cfgfile, weightfile, 1, &r));
    double map, *ap = malloc((size_t)r.classes * sizeof(double));
    size_t counts[3] = {0, 0, 0};
    mn_status s = mn_agree(c, ap ? MN_OK : MN_ERR_NOMEM);
    if (s == MN_OK) s = shard_map(c, r.net, &r.shard, r.skip_on ? &r.skip : NULL, &map, ap, counts);
    if (s == MN_OK && r.skip_on) s = mn_label_skip_report(c, &r.skip, r.dc.valid);
    if (s == MN_OK && c->rank == 0) {
        for (int k = 0; k < r.classes; ++k) {
            if (ap[k] < 0) printf("darknet-mn: class %d %-16s AP n/a (no truth boxes)\n", k, r.names[k]);
            else printf("darknet-mn: class %d %-16s AP %.6f\n", k, r.names[k], ap[k]);
        }
        printf("darknet-mn: %zu images on %d ranks, %zu detections, %zu truth boxes: mAP@%.2f %.6f\n",
               counts[0], c->size, counts[1], counts[2], MAP_IOU, map < 0 ? 0 : map);
    }
    free(ap);
    close_run(&r);
    return s;
}

/* ------------------------------------------------------------------ during training */

struct mn_eval_state {
    mn_list shard;
    network *net;    /* the evaluation's own network, at batch 1 */
    float *params;   /* the training network's parameters on their way to it */
    double last;     /* the score at iteration last_it (for the chart) */
    size_t last_it;
    mn_label_skip skip;   /* bad_labels=skip: counted afresh at each evaluation */
};

/* The evaluation network: the same cfg (checked when training loaded it),
 * parsed at batch 1 on every rank, on the engine the commands load theirs
 * on (so the best mAP printed is what `detector map` finds). */
static mn_status open_net(mn_comm *c, const char *cfgfile, mn_eval_state *e)
{
    e->net = mn_base_parse_batch1(cfgfile);
    if (e->net) mn_dnnl_install(e->net, c, mn_base_dnnl_ops());
    if (e->net) e->params = malloc((mn_params_count(e->net) + 1) * sizeof(float));
    if (!e->net || !e->params) mn_error(c, "out of memory for the evaluation network of %s", cfgfile);
    return mn_agree(c, e->net && e->params ? MN_OK : MN_ERR_NOMEM);
}

static mn_status open_state(mn_comm *c, const mn_data_cfg *dc, const mn_options *opt, const char *cfgfile,
                            mn_eval_state **out)
{
    const char *list = opt->eval_list[0] ? opt->eval_list : dc->valid;
    if (!list) {
        char who[64];
        if (c->rank == 0) mn_error(c, "%s but there is nothing to evaluate: give eval_list in [distributed] "
                                   "or 'valid' in the data cfg", mn_eval_asker(opt, who, sizeof who));
        return mn_agree(c, MN_ERR_USER);
    }
    mn_eval_state *e = calloc(1, sizeof *e);
    MN_CHECK(mn_agree(c, e ? MN_OK : MN_ERR_NOMEM));
    mn_status s = mn_scatter_list(c, list, 0, 0, &e->shard);
    if (s == MN_OK) s = open_net(c, cfgfile, e);
    if (s != MN_OK) { mn_eval_free(e); return s; }
    *out = e;
    return MN_OK;
}

mn_status mn_eval_during_training(mn_comm *c, network *net, mn_optimizer *mo, mn_task task, const mn_data_cfg *dc,
                                  const mn_options *opt, size_t it, const char *base, const char *cfgfile,
                                  mn_eval_state **state, mn_best *best)
{
    if (!*state) MN_CHECK(open_state(c, dc, opt, cfgfile, state));
    mn_eval_state *e = *state;
    double t0 = mn_now(), score = 0;
    /* Evaluate the model that is saved: averaged statistics, or rank 0's. */
    MN_CHECK(mn_agree(c, opt->bn_average ? mn_average_bn_stats(c, net, mo) : mn_bcast_bn_stats(c, net, mo)));
    /* The best weights are chosen on a fixed yardstick: the cfg's own size,
     * which the evaluation network keeps whatever size random=1 trains at. */
    mn_params_pack(net, e->params);
    mn_params_unpack(e->net, e->params);
    mn_status s;
    if (task == MN_TASK_CLASSIFIER) {
        long hits[3] = {0, 0, 0};
        s = mn_agree(c, classify_shard(c, e->net, dc, &e->shard, 1, hits));
        if (s == MN_OK) {
            MPI_Allreduce(MPI_IN_PLACE, hits, 3, MPI_LONG, MPI_SUM, c->world);
            score = (double)hits[0] / (double)hits[2];
        }
    } else {
        e->skip.lines = e->skip.files = 0;
        e->skip.classes = mn_layer_last(e->net).classes;
        s = shard_map(c, e->net, &e->shard, opt->bad_labels_skip ? &e->skip : NULL, &score, NULL, NULL);
        if (s == MN_OK && opt->bad_labels_skip) s = mn_label_skip_report(c, &e->skip, "the evaluation list");
        if (score < 0) score = 0;
    }
    MN_CHECK(s);
    int better = score > best->score;
    if (better) *best = (mn_best){score, it};
    e->last = score;
    e->last_it = it;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_best.weights", dc->backup, base);
    if (c->rank == 0) {
        printf("%zu: eval %s %.4f on %zu images, best %.4f%s%s (%.1f s)\n", it,
               task == MN_TASK_CLASSIFIER ? "top-1" : "mAP@0.5", score, e->shard.global_n, best->score,
               better ? ", saving " : "", better ? path : "", mn_now() - t0);
        fflush(stdout);
    }
    if (!better) return MN_OK;
    mn_options o = *opt;
    o.bn_average = 0;   /* already averaged above */
    return mn_save_weights_all(c, net, NULL, &o, path);
}

double mn_eval_score(const mn_eval_state *state, size_t it)
{
    return state && state->last_it == it ? state->last : NAN;
}

void mn_eval_free(mn_eval_state *state)
{
    if (!state) return;
    mn_free_list(&state->shard);
    if (state->net) mn_base_free(state->net);
    free(state->params);
    free(state);
}
