/* The training log (CSV) and chart (PNG, drawn with cairo where the build
 * has it) of rank 0. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "train/observe/mn_observe.h"
#include "base/mn_base.h"

typedef struct {
    double it, avg, rate, eval;
} point;

struct mn_report {
    FILE *csv;
    char chart[4096];     /* "" when chart=0, without cairo or after a failed write */
    point *pts;
    size_t n, cap;
    double last_draw;
    double img_s;         /* smoothed images/s */
    int ranks;
    const char *metric;   /* what the evaluation scores */
};

/* The CSV log, opened at the first row this run writes, iteration it: a
 * run from 1 starts it afresh; a resumed one keeps the rows before it and
 * drops those a lost run wrote from it on, which this run redoes. */
static FILE *open_log(const char *path, size_t it)
{
    if (it <= 1) return fopen(path, "w");
    FILE *f = fopen(path, "r+");
    if (!f) return fopen(path, "a");
    char line[4096];
    long keep = 0;
    while (fgets(line, sizeof line, f)) {
        char *end;
        unsigned long long row = strtoull(line, &end, 10);
        if (end != line && *end == ',' && row >= it) break;
        keep = ftell(f);
    }
    if (keep < 0 || ftruncate(fileno(f), keep) != 0 || fseek(f, 0, SEEK_END) != 0) {
        int err = errno;
        fclose(f);
        errno = err;
        return NULL;
    }
    return f;
}

static mn_report *open_report(const mn_comm *c, network *net, const mn_options *opt, const char *backup,
                              const char *base)
{
    mn_report *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_log.csv", backup, base);
    r->csv = open_log(path, mn_base_iteration(net));
    if (!r->csv) mn_error(c, "cannot write %s: %s; training goes on without the log", path, strerror(errno));
    else if (ftell(r->csv) == 0) fprintf(r->csv, "iteration,loss,avg_loss,rate,images_per_s,eval\n");
    if (opt->chart && mn_report_cairo()) snprintf(r->chart, sizeof r->chart, "%s/%s_chart.png", backup, base);
    else if (opt->chart) printf("darknet-mn: no chart: " MN_NO_CAIRO "; the log is %s\n", path);
    r->ranks = c->size;
    mn_layer_kind t = mn_layer_last(net).kind;
    r->metric = t == MN_LAYER_YOLO || t == MN_LAYER_REGION || t == MN_LAYER_DETECTION ? "mAP@0.5" : "top-1";
    r->last_draw = -1e9;
    return r;
}

/* The drawing, where the build has cairo. */
#ifdef MN_CAIRO
#include <cairo.h>

const char *mn_report_cairo(void)
{
    return cairo_version_string();
}

/* 1, 2 or 5 times a power of ten: about n steps over [0, hi]. */
static double nice_step(double hi, int n)
{
    double raw = hi / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

static void text_at(cairo_t *cr, double x, double y, double align, const char *s)
{
    cairo_text_extents_t te;
    cairo_text_extents(cr, s, &te);
    cairo_move_to(cr, x - align * te.x_advance, y + te.height / 2);
    cairo_show_text(cr, s);
}

/* One series over the plot area (x0, y0, w, h); field picks it; top is the axis maximum. */
static void plot_series(cairo_t *cr, const mn_report *r, size_t field, double xmax, double top, double x0,
                        double y0, double w, double h, int markers)
{
    int open = 0;
    for (size_t i = 0; i < r->n; ++i) {
        double v = *(const double *)((const char *)&r->pts[i] + field);
        if (!isfinite(v)) continue;
        double x = x0 + w * r->pts[i].it / xmax, y = y0 + h - h * fmin(v, top) / top;
        if (markers) {
            cairo_new_sub_path(cr);
            cairo_arc(cr, x, y, 4, 0, 2 * M_PI);
            continue;
        }
        if (open) cairo_line_to(cr, x, y);
        else cairo_move_to(cr, x, y);
        open = 1;
    }
}

mn_status mn_report_png(const mn_comm *c, cairo_surface_t *sf, const char *path)
{
    char tmp[4200];
    if (!mn_tmp_path(c, tmp, sizeof tmp, path)) {
        mn_error(c, "cannot write %s: the path is too long", path);
        return MN_ERR_USER;
    }
    errno = 0;
    cairo_status_t st = cairo_surface_write_to_png(sf, tmp);
    if (st != CAIRO_STATUS_SUCCESS) {
        /* cairo says only "error while writing to output stream"; its
         * fwrite or fclose left the system's reason in errno. */
        int err = errno;
        mn_error(c, "cannot write %s: %s%s%s", tmp, cairo_status_to_string(st), err ? ": " : "",
                 err ? strerror(err) : "");
        remove(tmp);
        return MN_ERR_USER;
    }
    return mn_commit_file(c, tmp, path);
}

static int draw(const mn_comm *c, mn_report *r, const char *base, double xmax)
{
    const double L = 80, R = 80, T = 56, B = 48, W = MN_CHART_W - L - R, H = MN_CHART_H - T - B;
    double lmax = 0, rmax = 0, emax = 0;
    /* The first tenth's loss (before burn-in ends) would squash the rest: it is clipped. */
    for (size_t i = 0; i < r->n; ++i) {
        if (isfinite(r->pts[i].avg) && (r->n < 20 || i >= r->n / 10)) lmax = fmax(lmax, r->pts[i].avg);
        rmax = fmax(rmax, r->pts[i].rate);
        if (isfinite(r->pts[i].eval)) emax = 1;
    }
    double lstep = nice_step(lmax > 0 ? lmax : 1, 5), rstep = nice_step(rmax > 0 ? rmax : 1e-3, 5);
    double ltop = lstep * ceil((lmax > 0 ? lmax : 1) / lstep), rtop = rstep * ceil((rmax > 0 ? rmax : 1e-3) / rstep);
    double xstep = nice_step(xmax, 8);
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, MN_CHART_W, MN_CHART_H);
    cairo_t *cr = cairo_create(sf);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);
    cairo_set_line_width(cr, 1);
    char s[256];
    /* Grid and the three axes' labels. */
    for (double v = 0; v <= ltop + lstep / 2; v += lstep) {
        double y = T + H - H * v / ltop;
        cairo_set_source_rgb(cr, .88, .88, .88);
        cairo_move_to(cr, L, y);
        cairo_line_to(cr, L + W, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, .1, .3, .8);
        snprintf(s, sizeof s, "%g", v);
        text_at(cr, L - 6, y, 1, s);
        cairo_set_source_rgb(cr, .8, .2, .1);
        snprintf(s, sizeof s, "%.3g", rtop * v / ltop);
        text_at(cr, L + W + 6, y, 0, s);
    }
    for (double v = 0; v <= xmax * (1 + 1e-9); v += xstep) {
        double x = L + W * v / xmax;
        cairo_set_source_rgb(cr, .88, .88, .88);
        cairo_move_to(cr, x, T);
        cairo_line_to(cr, x, T + H);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        snprintf(s, sizeof s, "%g", v);
        text_at(cr, x, T + H + 12, .5, s);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_rectangle(cr, L, T, W, H);
    cairo_stroke(cr);
    text_at(cr, L + W / 2, MN_CHART_H - 12, .5, "iteration");
    cairo_set_source_rgb(cr, .1, .3, .8);
    text_at(cr, 8, T - 14, 0, "avg loss");
    cairo_set_source_rgb(cr, .8, .2, .1);
    text_at(cr, MN_CHART_W - 8, T - 14, 1, "learning rate");
    /* The series: loss (left axis), rate (right axis), eval 0..1 as the grid's fraction. */
    cairo_set_line_width(cr, 2);
    cairo_set_source_rgb(cr, .1, .3, .8);
    plot_series(cr, r, offsetof(point, avg), xmax, ltop, L, T, W, H, 0);
    cairo_stroke(cr);
    cairo_set_line_width(cr, 1.5);
    cairo_set_source_rgb(cr, .8, .2, .1);
    plot_series(cr, r, offsetof(point, rate), xmax, rtop, L, T, W, H, 0);
    cairo_stroke(cr);
    if (emax > 0) {
        cairo_set_source_rgb(cr, .1, .6, .2);
        plot_series(cr, r, offsetof(point, eval), xmax, 1, L, T, W, H, 1);
        cairo_fill(cr);
        for (size_t i = 0; i < r->n; ++i)
            if (isfinite(r->pts[i].eval)) {
                snprintf(s, sizeof s, "%.1f%%", 100 * r->pts[i].eval);
                text_at(cr, L + W * r->pts[i].it / xmax, T + H - H * fmin(r->pts[i].eval, 1) - 12, .5, s);
            }
        snprintf(s, sizeof s, "eval %s (points, 0-100%% of the height)", r->metric);
        text_at(cr, L + W / 2, T - 14, .5, s);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 15);
    const point *p = &r->pts[r->n - 1];
    snprintf(s, sizeof s, "%s: %d rank%s, iteration %.0f of %.0f, avg loss %.4g, %.1f images/s", base, r->ranks,
             r->ranks > 1 ? "s" : "", p->it, xmax, p->avg, r->img_s);
    text_at(cr, L + W / 2, 16, .5, s);
    cairo_destroy(cr);
    int ok = mn_report_png(c, sf, r->chart) == MN_OK;
    cairo_surface_destroy(sf);
    return ok;
}
#else
const char *mn_report_cairo(void)
{
    return NULL;
}

/* Never reached: open_report leaves the chart's path empty. */
static int draw(const mn_comm *c, mn_report *r, const char *base, double xmax)
{
    return 0;
}
#endif

void mn_report_iteration(mn_report **rp, const mn_comm *c, network *net, const mn_options *opt,
                         const char *backup, const char *base, float loss, double avg_loss, double img_s,
                         double eval)
{
    if (c->rank != 0) return;
    if (!*rp && !(*rp = open_report(c, net, opt, backup, base))) return;
    mn_report *r = *rp;
    size_t it = mn_base_iteration(net);
    double rate = mn_base_rate(net);
    if (r->csv) {
        fprintf(r->csv, "%zu,%g,%g,%g,%.2f,", it, loss, avg_loss, rate, img_s);
        if (isfinite(eval)) fprintf(r->csv, "%g", eval);
        fputc('\n', r->csv);
        fflush(r->csv);
    }
    if (!r->chart[0]) return;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 1024;
        point *p = realloc(r->pts, cap * sizeof *p);
        if (!p) return;
        r->pts = p;
        r->cap = cap;
    }
    r->pts[r->n++] = (point){(double)it, avg_loss, rate, eval};
    /* Smoothed like the loss, for the title. */
    r->img_s = r->img_s > 0 ? .9 * r->img_s + .1 * img_s : img_s;
    double now = mn_now();
    int max_batches = mn_net_get(net).max_batches;
    int last = it >= (size_t)max_batches;
    if (!last && !isfinite(eval) && now - r->last_draw < MN_CHART_SECONDS) return;
    r->last_draw = now;
    if (!draw(c, r, base, max_batches > 0 ? max_batches : (double)it)) {
        mn_error(c, "training goes on without the chart %s", r->chart);
        r->chart[0] = 0;
    }
}

void mn_report_free(mn_report *r)
{
    if (!r) return;
    if (r->csv) fclose(r->csv);
    free(r->pts);
    free(r);
}
