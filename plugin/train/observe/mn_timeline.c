/* Where every rank's time goes. Each rank keeps the phases of its current
 * window of MN_TL_EVERY iterations in memory; at the window's end one
 * gather brings them to rank 0, which prints the split and appends the
 * events to the file: memory stays bounded however long the run. Times
 * move onto rank 0's clock by an offset it measured at the start, so that
 * rows of different hosts line up.
 *
 * The split, per rank and step: the update's wait at the gradient sync is
 * "waiting for the slowest rank" until the last rank arrived, and
 * "communication not hidden" after; compute is the rest of the step less
 * the wait for data. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/observe/mn_observe.h"
#include "coll/mn_coll.h"
#include "core/mn_watchdog.h"

typedef struct {
    double t0, t1, bytes;
    int32_t kind, row, layer, layer_hi;
    int64_t it;
} ev;

typedef struct {
    double t0, t1, arrive, wait, data;
    int64_t it;
} step;

struct mn_timeline {
    mn_comm *c;
    ev *ev;
    size_t nev, cap, first;     /* first: the current step's first event */
    step st[MN_TL_EVERY];
    int nst;
    step cur;
    FILE *f;                    /* rank 0, with a file: the trace being written */
    char path[4096], tmp[4200];
    int wrote;                  /* events written so far (for the separating commas) */
    double *offset;             /* rank 0: each rank's clock minus rank 0's */
    double origin;              /* rank 0's clock at the start: ts 0 of the trace */
    ev *keep;                   /* rank 0: the last window with steps, for the picture */
    size_t nkeep;
    int *keep_rank;
};

static const char *const names[MN_TL_KINDS] = {
    "data", "forward", "backward", "wait for allreduce", "update", "loss allreduce", "evaluation", "save",
    "allreduce bucket", "bucket queued", "waiting for the slowest rank",
};

static void push(mn_timeline *t, const ev *e)
{
    if (t->nev == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        ev *p = realloc(t->ev, cap * sizeof *p);
        if (!p) return;   /* a lost event, never a lost step */
        t->ev = p;
        t->cap = cap;
    }
    t->ev[t->nev++] = *e;
}

void mn_timeline_add(mn_timeline *t, int row, mn_tl_kind kind, double t0, double t1, size_t bytes, int layer,
                     int layer_hi)
{
    if (!t) return;
    if (kind == MN_TL_DATA) t->cur.data += t1 - t0;
    if (!t->path[0]) return;
    ev e = {t0, t1, (double)bytes, kind, row, layer, layer_hi, -1};
    push(t, &e);
}

void mn_timeline_sync(mn_timeline *t, double arrive, double wait)
{
    if (!t) return;
    t->cur.arrive = arrive;
    t->cur.wait += wait;
}

/* Rank 0: rank r's clock offset, from the round trip of shortest time. */
static mn_status measure_offsets(mn_timeline *t)
{
    mn_comm *c = t->c;
    for (int r = 1; r < c->size; ++r) {
        double best = 1e30, off = 0;
        for (int k = 0; k < 8; ++k) {
            double t1 = mn_now(), tr = 0;
            if (c->rank == 0) {
                MN_MPI(c, MPI_Send(&t1, 1, MPI_DOUBLE, r, 71, c->world));
                MN_MPI(c, MPI_Recv(&tr, 1, MPI_DOUBLE, r, 72, c->world, MPI_STATUS_IGNORE));
                double t2 = mn_now();
                if (t2 - t1 < best) { best = t2 - t1; off = tr - (t1 + t2) / 2; }
            } else if (c->rank == r) {
                MN_MPI(c, MPI_Recv(&tr, 1, MPI_DOUBLE, 0, 71, c->world, MPI_STATUS_IGNORE));
                tr = mn_now();
                MN_MPI(c, MPI_Send(&tr, 1, MPI_DOUBLE, 0, 72, c->world));
            }
        }
        if (c->rank == 0) t->offset[r] = off;
    }
    return MN_OK;
}

/* Rank 0: the trace's first lines, a named row per rank and thread. */
static void write_header(mn_timeline *t, const char *hosts)
{
    fprintf(t->f, "[\n");
    for (int r = 0; r < t->c->size; ++r) {
        fprintf(t->f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d (%s)\"}},\n",
                r ? ",\n" : "", r, r, hosts + 64 * r);
        fprintf(t->f, "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}},\n", r, r);
        fprintf(t->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"main\"}},\n", r);
        fprintf(t->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":\"communication\"}}", r);
    }
    t->wrote = 1;
}

mn_status mn_timeline_open(mn_comm *c, const char *path, mn_timeline **out)
{
    *out = NULL;
    mn_timeline *t = calloc(1, sizeof *t);
    mn_status s = t ? MN_OK : MN_ERR_NOMEM;
    char *hosts = NULL;
    if (t) {
        t->c = c;
        const char *env = getenv("MN_TIMELINE");
        if (path && *path) snprintf(t->path, sizeof t->path, "%s", path);
        else if (c->rank == 0 && env) snprintf(t->path, sizeof t->path, "%s", env);
        /* other hosts may not have rank 0's environment */
        if (!path || !*path) MPI_Bcast(t->path, sizeof t->path, MPI_CHAR, 0, c->world);
        t->offset = calloc((size_t)c->size, sizeof *t->offset);
        hosts = calloc((size_t)c->size, 64);
        if (!t->offset || !hosts) s = MN_ERR_NOMEM;
    }
    if (s == MN_OK && c->rank == 0 && t->path[0]) {
        if (!mn_tmp_path(c, t->tmp, sizeof t->tmp, t->path) || !(t->f = fopen(t->tmp, "w"))) {
            mn_error(c, "timeline: cannot write %s: %s", t->path, strerror(errno));
            s = MN_ERR_USER;
        }
    }
    if ((s = mn_agree(c, s)) == MN_OK) {
        mn_guard(c, "timeline setup");
        s = measure_offsets(t);
        if (s == MN_OK && MPI_Gather(c->host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, c->world) != MPI_SUCCESS) s = MN_ERR_MPI;
        mn_unguard(c);
        s = mn_agree(c, s);
    }
    if (s == MN_OK && t->f) write_header(t, hosts);
    free(hosts);
    if (s != MN_OK) {
        if (t && t->f) { fclose(t->f); remove(t->tmp); }
        if (t) { free(t->offset); free(t); }
        return s;
    }
    t->origin = mn_now();
    if (c->rank == 0 && t->f) printf("darknet-mn: writing the timeline of every rank to %s\n", t->path);
    *out = t;
    return MN_OK;
}

static mn_status flush_window(mn_timeline *t);

mn_status mn_timeline_step(mn_timeline *t, size_t it, double t0, double t1)
{
    if (!t) return MN_OK;
    for (size_t j = t->first; j < t->nev; ++j) t->ev[j].it = (int64_t)it;
    t->first = t->nev;
    t->cur.it = (int64_t)it;
    t->cur.t0 = t0;
    t->cur.t1 = t1;
    t->st[t->nst++] = t->cur;
    memset(&t->cur, 0, sizeof t->cur);
    return t->nst == MN_TL_EVERY ? flush_window(t) : MN_OK;
}

static void write_event(mn_timeline *t, const ev *e, int rank)
{
    double ts = (e->t0 - t->offset[rank] - t->origin) * 1e6, dur = (e->t1 - e->t0) * 1e6;
    fprintf(t->f, "%s{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.1f,\"dur\":%.1f,\"args\":{\"iteration\":%lld",
            t->wrote ? ",\n" : "", names[e->kind], rank, e->row, ts, dur < 0 ? 0 : dur, (long long)e->it);
    if (e->kind == MN_TL_BACKWARD) fprintf(t->f, ",\"layers\":\"%d-%d\"", e->layer, e->layer_hi);
    if (e->bytes > 0) fprintf(t->f, ",\"bytes\":%.0f", e->bytes);
    fprintf(t->f, "}}");
    t->wrote = 1;
}

/* Rank 0: per step of the window, each rank's share; prints the means and
 * adds each rank's wait for the slowest rank to the events. */
static void split(mn_timeline *t, const step *st, const int *nst, ev **evs, size_t *nev, int **evrank)
{
    mn_comm *c = t->c;
    int n = nst[0];
    for (int r = 1; r < c->size; ++r) if (nst[r] < n) n = nst[r];
    if (n == 0) return;
    double sum[4] = {0};   /* compute, data, not hidden, slowest */
    size_t room = 0;       /* for each rank's wait for the slowest rank, one event per step at most */
    if (t->f && *evs) {
        size_t want = *nev + (size_t)n * (size_t)c->size;
        ev *p = realloc(*evs, want * sizeof *p);
        if (p) *evs = p;
        int *q = p ? realloc(*evrank, want * sizeof *q) : NULL;
        if (q) *evrank = q;
        if (p && q) room = want - *nev;
    }
    for (int k = 0; k < n; ++k) {
        double last = -1e30;
        for (int r = 0; r < c->size; ++r) {
            const step *s = &st[r * MN_TL_EVERY + k];
            if (s->arrive - t->offset[r] > last) last = s->arrive - t->offset[r];
        }
        for (int r = 0; r < c->size; ++r) {
            const step *s = &st[r * MN_TL_EVERY + k];
            double slow = last - (s->arrive - t->offset[r]);
            if (slow < 0) slow = 0;
            if (slow > s->wait) slow = s->wait;
            sum[0] += s->t1 - s->t0 - s->wait - s->data;
            sum[1] += s->data;
            sum[2] += s->wait - slow;
            sum[3] += slow;
            if (slow > 0 && room > 0) {
                ev e = {s->arrive, s->arrive + slow, 0, MN_TL_SLOWEST, 0, 0, 0, s->it};
                (*evs)[*nev] = e;
                (*evrank)[(*nev)++] = r;
                --room;
            }
        }
    }
    double m = 1e3 / (n * (double)c->size);
    printf("darknet-mn: iterations %lld-%lld, per step (mean of %d rank%s): %.1f ms = compute %.1f + data %.1f + "
           "communication not hidden %.1f + waiting for the slowest rank %.1f\n",
           (long long)st[0].it, (long long)st[n - 1].it, c->size, c->size > 1 ? "s" : "",
           (sum[0] + sum[1] + sum[2] + sum[3]) * m, sum[0] * m, sum[1] * m, sum[2] * m, sum[3] * m);
    fflush(stdout);
}

/* Collective: the window to rank 0, which prints and writes it. */
static mn_status flush_window(mn_timeline *t)
{
    mn_comm *c = t->c;
    int mine[2] = {(int)t->nev, t->nst}, *counts = NULL, *bytes = NULL, *at = NULL, *nst = NULL;
    step *st = NULL;
    ev *all = NULL;
    int *rank_of = NULL;
    size_t total = 0;
    mn_status s = MN_OK;
    if (c->rank == 0) {
        counts = calloc(2 * (size_t)c->size, sizeof *counts);
        bytes = calloc((size_t)c->size, sizeof *bytes);
        at = calloc((size_t)c->size, sizeof *at);
        nst = calloc((size_t)c->size, sizeof *nst);
        st = calloc((size_t)c->size * MN_TL_EVERY, sizeof *st);
        if (!counts || !bytes || !at || !nst || !st) s = MN_ERR_NOMEM;
    }
    mn_guard(c, "timeline gather");
    s = mn_agree(c, s);
    if (s == MN_OK && MPI_Gather(mine, 2, MPI_INT, counts, 2, MPI_INT, 0, c->world) != MPI_SUCCESS) s = MN_ERR_MPI;
    if (s == MN_OK && MPI_Gather(t->st, (int)(MN_TL_EVERY * sizeof(step)), MPI_BYTE, st,
                                 (int)(MN_TL_EVERY * sizeof(step)), MPI_BYTE, 0, c->world) != MPI_SUCCESS) s = MN_ERR_MPI;
    if (s == MN_OK && c->rank == 0) {
        for (int r = 0; r < c->size; ++r) {
            nst[r] = counts[2 * r + 1];
            bytes[r] = counts[2 * r] * (int)sizeof(ev);
            at[r] = (int)(total * sizeof(ev));
            total += (size_t)counts[2 * r];
        }
        all = malloc((total + 1) * sizeof *all);
        rank_of = malloc((total + 1) * sizeof *rank_of);
        if (!all || !rank_of) s = MN_ERR_NOMEM;
    }
    s = mn_agree(c, s);
    if (s == MN_OK && t->path[0] &&
        MPI_Gatherv(t->ev, (int)(t->nev * sizeof(ev)), MPI_BYTE, all, bytes, at, MPI_BYTE, 0, c->world) != MPI_SUCCESS)
        s = MN_ERR_MPI;
    mn_unguard(c);
    if (s == MN_OK && c->rank == 0) {
        for (int r = 0, j = 0; r < c->size; ++r)
            for (int k = 0; k < counts[2 * r]; ++k) rank_of[j++] = r;
        split(t, st, nst, &all, &total, &rank_of);
        for (size_t j = 0; t->f && j < total; ++j) write_event(t, &all[j], rank_of[j]);
        if (t->f && t->nst > 0) {   /* this window is the newest with steps: keep it for the picture */
            free(t->keep);
            free(t->keep_rank);
            t->keep = all;
            t->keep_rank = rank_of;
            t->nkeep = total;
            all = NULL;
            rank_of = NULL;
        }
    }
    free(all);
    free(rank_of);
    free(counts);
    free(bytes);
    free(at);
    free(nst);
    free(st);
    t->nev = t->first = 0;
    t->nst = 0;
    return s;
}

/* The picture, where the build has cairo. */
#ifdef MN_CAIRO
#include <cairo.h>

/* The last two steps of the kept window, a row per rank and thread; 1 when
 * png was written. */
static int draw(mn_timeline *t, const char *png)
{
    int64_t last = -1;
    for (size_t j = 0; j < t->nkeep; ++j) if (t->keep[j].it > last) last = t->keep[j].it;
    double lo = 1e30, hi = -1e30;
    for (size_t j = 0; j < t->nkeep; ++j) {
        const ev *e = &t->keep[j];
        if (e->it < last - 1) continue;
        double off = t->offset[t->keep_rank[j]];
        if (e->t0 - off < lo) lo = e->t0 - off;
        if (e->t1 - off > hi) hi = e->t1 - off;
    }
    if (hi <= lo) return 0;
    static const double rgb[MN_TL_KINDS][3] = {
        {.6, .6, .6}, {.25, .5, .85}, {.1, .3, .6}, {.85, .25, .2}, {.2, .65, .3},
        {.95, .6, .1}, {.6, .35, .7}, {.45, .3, .2}, {.9, .45, .6}, {.97, .82, .88}, {.95, .85, .2},
    };
    const int W = 1200, L = 190, R = 20, TOP = 40, ROW = 22, ranks = t->c->size;
    int H = TOP + 2 * ROW * ranks + 90;
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(sf);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);
    char s[128];
    snprintf(s, sizeof s, "iterations %lld-%lld on %d ranks: %.1f ms", (long long)(last - 1), (long long)last, ranks,
             (hi - lo) * 1e3);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, L, 20);
    cairo_show_text(cr, s);
    double sx = (W - L - R) / (hi - lo);
    for (int r = 0; r < ranks; ++r)
        for (int row = 0; row < 2; ++row) {
            double y = TOP + (2 * r + row) * ROW;
            snprintf(s, sizeof s, "rank %d %s", r, row ? "communication" : "main");
            cairo_set_source_rgb(cr, 0, 0, 0);
            cairo_move_to(cr, 8, y + 15);
            cairo_show_text(cr, s);
            cairo_set_source_rgb(cr, .93, .93, .93);
            cairo_rectangle(cr, L, y + 2, W - L - R, ROW - 4);
            cairo_fill(cr);
        }
    for (size_t j = 0; j < t->nkeep; ++j) {
        const ev *e = &t->keep[j];
        if (e->it < last - 1) continue;
        double off = t->offset[t->keep_rank[j]], x0 = L + (e->t0 - off - lo) * sx, x1 = L + (e->t1 - off - lo) * sx;
        /* the wait for the slowest rank: the lower half of its row; a queued
         * bucket: a strip on top, over the bucket before it */
        double y = TOP + (2 * t->keep_rank[j] + e->row) * ROW, h = ROW - 4;
        if (e->kind == MN_TL_SLOWEST) y += ROW / 2, h = ROW / 2 - 2;
        else if (e->kind == MN_TL_QUEUED) y += 2, h = 4;
        else y += 2;
        cairo_set_source_rgb(cr, rgb[e->kind][0], rgb[e->kind][1], rgb[e->kind][2]);
        cairo_rectangle(cr, x0, y, x1 - x0 < 1 ? 1 : x1 - x0, h);
        cairo_fill(cr);
    }
    double ly = TOP + 2 * ROW * ranks + 20, lx = L;
    for (int k = 0; k < MN_TL_KINDS; ++k) {
        cairo_text_extents_t te;
        cairo_text_extents(cr, names[k], &te);
        if (lx + 18 + te.x_advance > W - R) { lx = L; ly += 20; }
        cairo_set_source_rgb(cr, rgb[k][0], rgb[k][1], rgb[k][2]);
        cairo_rectangle(cr, lx, ly - 10, 12, 12);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, lx + 16, ly);
        cairo_show_text(cr, names[k]);
        lx += 16 + te.x_advance + 18;
    }
    cairo_surface_flush(sf);
    cairo_destroy(cr);
    mn_status ok = mn_report_png(t->c, sf, png);
    if (ok != MN_OK) mn_error(t->c, "timeline: no picture %s", png);
    cairo_surface_destroy(sf);
    return ok == MN_OK;
}
#else
static int draw(mn_timeline *t, const char *png)
{
    printf("darknet-mn: no picture of the timeline: " MN_NO_CAIRO "; the trace is %s\n", t->path);
    return 0;
}
#endif

int mn_timeline_file(const mn_timeline *t)
{
    return t && t->path[0];
}

mn_status mn_timeline_close(mn_timeline *t, int ok)
{
    if (!t) return MN_OK;
    mn_status s = ok ? flush_window(t) : MN_OK;
    if (t->f && !ok) {
        fclose(t->f);
        t->f = NULL;
        remove(t->tmp);
    }
    if (t->f) {
        fprintf(t->f, "\n]\n");
        int ok = fclose(t->f) == 0;
        t->f = NULL;
        if (ok && mn_commit_file(t->c, t->tmp, t->path) == MN_OK) {
            char png[4200];
            snprintf(png, sizeof png, "%s.png", t->path);
            int drawn = draw(t, png);
            printf("darknet-mn: wrote the timeline %s (open it in chrome://tracing or ui.perfetto.dev)%s%s\n",
                   t->path, drawn ? " and " : "", drawn ? png : "");
        } else {
            mn_error(t->c, "timeline: cannot write %s", t->path);
            remove(t->tmp);
        }
    }
    free(t->ev);
    free(t->offset);
    free(t->keep);
    free(t->keep_rank);
    free(t);
    return s;
}
