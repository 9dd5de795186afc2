/* partial, detector test, classifier predict: stock Darknet's one-image
 * commands. Rank 0 runs them over a communicator of its own (MPI_COMM_SELF),
 * so the plugin's checked loading serves; the others only learn the status. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "base/mn_base_util.h"
#include "train/observe/mn_observe.h"
#include "train/input/mn_input.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "cmd/mn_cmd.h"

#define TEST_THRESH .25f   /* stock detector test's default -thresh is .5; .25 shows more */
#define TEST_NMS .45f

typedef mn_status (*solo_fn)(mn_comm *self, const char **args);

/* fn on rank 0 alone; every rank returns its status. */
static mn_status on_rank0(mn_comm *c, solo_fn fn, const char **args)
{
    mn_status s = MN_OK;
    if (c->rank == 0) {
        mn_comm *self = mn_comm_create(MPI_COMM_SELF, &s);
        if (self) {
            s = fn(self, args);
            mn_comm_free(self);
        }
    }
    return mn_agree(c, s);
}

/* The temporary file must be writable before Darknet (which exits) tries. */
static mn_status check_writable(mn_comm *c, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) { mn_error(c, "cannot write %s: %s", path, strerror(errno)); return MN_ERR_USER; }
    fclose(f);
    return MN_OK;
}

static mn_status partial_solo(mn_comm *c, const char **a)
{
    network *net = NULL;
    char *end, tmp[4096];
    long max = strtol(a[3], &end, 10);
    if (end == a[3] || *end || max < 1) {
        mn_error(c, "partial: the layer count '%s' must be a positive integer", a[3]);
        return MN_ERR_USER;
    }
    MN_CHECK(mn_load_network(c, a[0], a[1], MN_LOAD_CLEAR, &net, NULL));
    mn_status s = MN_OK;
    if (max > mn_net_layers(net)) {
        mn_error(c, "partial: %s has %d layers; cannot cut the first %ld", a[0], mn_net_layers(net), max);
        s = MN_ERR_USER;
    }
    if (s == MN_OK && !mn_tmp_path(c, tmp, sizeof tmp, a[2])) {
        mn_error(c, "partial: the output path %s is too long", a[2]);
        s = MN_ERR_USER;
    }
    if (s == MN_OK) s = check_writable(c, tmp);
    if (s == MN_OK) {
        mn_base_save_weights(net, tmp, (int)max);
        s = mn_commit_file(c, tmp, a[2]);
    }
    if (s == MN_OK) printf("darknet-mn: wrote the first %ld of %d layers of %s to %s\n", max, mn_net_layers(net), a[1], a[2]);
    mn_base_free(net);
    return s;
}

mn_status mn_partial(mn_comm *c, const char *cfgfile, const char *weightfile, const char *out, const char *layers)
{
    const char *a[] = {cfgfile, weightfile, out, layers};
    return on_rank0(c, partial_solo, a);
}

/* The network with weights, for one image at a time. */
static mn_status load_for_image(mn_comm *c, const char *cfgfile, const char *weightfile, const char *image,
                                network **net)
{
    MN_CHECK(mn_check_readable(c, image));
    MN_CHECK(mn_load_network(c, cfgfile, weightfile, MN_LOAD_BATCH1, net, NULL));
    mn_base_inference(*net);
    return MN_OK;
}

/* A barely trained yolo layer can overflow exp() into Inf sizes: such boxes
 * are neither printed nor drawn. Returns how many were above the threshold. */
static int drop_nonfinite(detection *dets, int n, int classes, float thresh)
{
    int dropped = 0;
    for (int i = 0; i < n; ++i) {
        box b = dets[i].bbox;
        if (isfinite(b.x) && isfinite(b.y) && isfinite(b.w) && isfinite(b.h)) continue;
        for (int k = 0; k < classes; ++k) {
            dropped += dets[i].prob[k] > thresh;
            dets[i].prob[k] = 0;
        }
    }
    return dropped;
}

/* The picture: cairo is a build option (CAIRO=0 where a cluster has no
 * libcairo2-dev), and without it the printed detections are all there is. */
#ifdef MN_CAIRO
#include <cairo.h>

/* A class's colour: hues spread round the wheel. */
static void class_colour(int k, int n, double rgb[3])
{
    double h = 6.0 * k / (n > 0 ? n : 1), f = h - (int)h;
    double v[6][3] = {{1, f, 0}, {1 - f, 1, 0}, {0, 1, f}, {0, 1 - f, 1}, {f, 0, 1}, {1, 0, 1 - f}};
    memcpy(rgb, v[(int)h % 6], sizeof v[0]);
}

/* Boxes with "name NN%" labels over the image, to path (atomically); says so. */
static mn_status draw_png(mn_comm *c, mn_image im, detection *dets, int n, char **names, int classes, float thresh,
                          const char *path)
{
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, im.w, im.h);
    unsigned char *px = cairo_image_surface_get_data(sf);
    int stride = cairo_image_surface_get_stride(sf);
    cairo_surface_flush(sf);
    for (int y = 0; y < im.h; ++y)
        for (int x = 0; x < im.w; ++x) {
            uint32_t v = 0;
            for (int k = 0; k < 3; ++k) v = v << 8 | (uint32_t)(im.data[(k * im.h + y) * im.w + x] * 255 + .5f);
            *(uint32_t *)(px + y * stride + 4 * x) = v;
        }
    cairo_surface_mark_dirty(sf);
    cairo_t *cr = cairo_create(sf);
    double lw = im.h / 150.0 > 1 ? im.h / 150.0 : 1, fs = im.h / 18.0 > 9 ? im.h / 18.0 : 9;
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, fs);
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < classes; ++k) {
            if (dets[i].prob[k] <= thresh) continue;
            box b = dets[i].bbox;
            double rgb[3], x0 = (b.x - b.w / 2) * im.w, y0 = (b.y - b.h / 2) * im.h;
            class_colour(k, classes, rgb);
            cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
            cairo_set_line_width(cr, lw);
            cairo_rectangle(cr, x0, y0, b.w * im.w, b.h * im.h);
            cairo_stroke(cr);
            char text[300];
            cairo_text_extents_t te;
            snprintf(text, sizeof text, "%s %.0f%%", names[k], dets[i].prob[k] * 100);
            cairo_text_extents(cr, text, &te);
            double ty = y0 - te.height - 2 < 0 ? y0 : y0 - te.height - 2;
            cairo_rectangle(cr, x0, ty, te.x_advance + 4, te.height + 3);
            cairo_fill(cr);
            cairo_set_source_rgb(cr, 0, 0, 0);
            cairo_move_to(cr, x0 + 2, ty + te.height + 1 - (te.height + te.y_bearing));
            cairo_show_text(cr, text);
        }
    cairo_destroy(cr);
    mn_status s = mn_report_png(c, sf, path);
    cairo_surface_destroy(sf);
    if (s == MN_OK) printf("darknet-mn: wrote %s (%dx%d)\n", path, im.w, im.h);
    return s;
}
#else
static mn_status draw_png(mn_comm *c, mn_image im, detection *dets, int n, char **names, int classes, float thresh,
                          const char *path)
{
    printf("darknet-mn: %s not written: " MN_NO_CAIRO "\n", path);
    return MN_OK;
}
#endif

static mn_status detector_test_solo(mn_comm *c, const char **a)
{
    mn_data_cfg dc;
    network *net = NULL;
    MN_CHECK(mn_read_data_cfg(c, a[0], MN_TASK_DETECTOR, &dc));
    const char *names_file = mn_base_option(dc.options, "names");
    FILE *f = names_file ? fopen(names_file, "r") : NULL;
    mn_status s = MN_OK;
    if (!f) {
        mn_error(c, "%s: %s", a[0], names_file ? "cannot read its 'names' file" : "no 'names' file given");
        s = MN_ERR_USER;
    } else fclose(f);
    float thresh = TEST_THRESH;
    if (s == MN_OK && a[5]) {
        char *end;
        thresh = strtof(a[5], &end);
        if (end == a[5] || *end || !(thresh > 0 && thresh < 1)) {
            mn_error(c, "detector test: -thresh '%s' must be a number between 0 and 1", a[5]);
            s = MN_ERR_USER;
        }
    }
    if (s == MN_OK) s = load_for_image(c, a[1], a[2], a[3], &net);
    int classes = net ? mn_layer_last(net).classes : 0, nnames = 0;
    mn_layer_kind last = net ? mn_layer_last(net).kind : MN_LAYER_OTHER;
    if (s == MN_OK && last != MN_LAYER_YOLO && last != MN_LAYER_REGION && last != MN_LAYER_DETECTION) {
        mn_error(c, "%s: the last layer is not a yolo, region or detection layer", a[1]);
        s = MN_ERR_USER;
    }
    char **names = NULL;
    if (s == MN_OK) {
        names = mn_base_read_lines(names_file, &nnames);
        if (nnames < classes) {
            mn_error(c, "names file %s has %d names, but %s has %d classes", names_file, nnames, a[1], classes);
            s = MN_ERR_USER;
        }
    }
    if (s == MN_OK) {
        char path[4000];
        snprintf(path, sizeof path, "%s.png", a[4] ? a[4] : "predictions");
        mn_image im = mn_base_load_image(a[3], 0, 0);
        int letter;
        mn_image sized = mn_base_detector_input(net, im, &letter);
        double t = mn_now();
        mn_base_predict(net, sized.data);
        int n = 0;
        detection *dets = mn_base_boxes(net, im.w, im.h, thresh, .5f, 1, letter, &n);
        mn_base_nms(net, dets, n, classes, TEST_NMS, im.w, im.h, 1);
        printf("%s: Predicted in %f seconds.\n", a[3], mn_now() - t);
        int dropped = drop_nonfinite(dets, n, classes, thresh);
        if (dropped) printf("%d box%s with NaN or Inf coordinates left out (an undertrained network)\n", dropped,
                            dropped > 1 ? "es" : "");
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < classes; ++k)
                if (dets[i].prob[k] > thresh) {
                    box b = dets[i].bbox;
                    printf("%s: %.0f%% (x %.0f, y %.0f, w %.0f, h %.0f)\n", names[k], dets[i].prob[k] * 100,
                           (b.x - b.w / 2) * im.w, (b.y - b.h / 2) * im.h, b.w * im.w, b.h * im.h);
                }
        s = draw_png(c, im, dets, n, names, classes, thresh, path);
        mn_base_free_detections(dets, n);
        mn_base_free_image(sized);
        mn_base_free_image(im);
    }
    for (int i = 0; i < nnames; ++i) free(names[i]);
    free(names);
    if (net) mn_base_free(net);
    mn_free_data_cfg(&dc);
    return s;
}

mn_status mn_detector_test(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile,
                           const char *image, const char *prefix, const char *thresh)
{
    const char *a[] = {datacfg, cfgfile, weightfile, image, prefix, thresh};
    return on_rank0(c, detector_test_solo, a);
}

static mn_status classifier_predict_solo(mn_comm *c, const char **a)
{
    mn_data_cfg dc;
    network *net = NULL;
    MN_CHECK(mn_read_data_cfg(c, a[0], MN_TASK_CLASSIFIER, &dc));
    mn_status s = load_for_image(c, a[1], a[2], a[3], &net);
    mn_net_info in = {0};
    if (s == MN_OK) in = mn_net_get(net);
    if (s == MN_OK && in.outputs < dc.classes) {
        mn_error(c, "%s has %d outputs, but %s says classes=%d", a[1], in.outputs, a[0], dc.classes);
        s = MN_ERR_USER;
    }
    if (s == MN_OK) {
        int top = mn_data_int(dc.options, "top", 1);
        if (top < 1) top = 1;
        if (top > dc.classes) top = dc.classes;
        int *idx = calloc((size_t)top, sizeof *idx);
        mn_image im = mn_base_load_image(a[3], 0, 0);
        mn_image r = mn_base_letterbox_image(im, in.w, in.h);
        float *pred = mn_base_predict(net, r.data);
        if (in.hierarchy) mn_base_hierarchy(pred, in.outputs, in.hierarchy);
        mn_base_top_k(pred, dc.classes, top, idx);
        for (int i = 0; i < top; ++i) printf("%5.2f%%: %s\n", pred[idx[i]] * 100, dc.labels[idx[i]]);
        free(idx);
        mn_base_free_image(r);
        mn_base_free_image(im);
    }
    if (net) mn_base_free(net);
    mn_free_data_cfg(&dc);
    return s;
}

mn_status mn_classifier_predict(mn_comm *c, const char *datacfg, const char *cfgfile, const char *weightfile,
                                const char *image)
{
    const char *a[] = {datacfg, cfgfile, weightfile, image};
    return on_rank0(c, classifier_predict_solo, a);
}
