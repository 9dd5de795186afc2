/* The wire format of gathered detections: how each rank's detections (and,
 * for mAP, the truth boxes) travel to rank 0.
 *
 * Each image becomes one record (native 32-bit ints and floats):
 *   path length, path bytes, image w, h,
 *   truth count, {class, x, y, w, h} relative,
 *   row count, {class, prob, x, y, w, h} in pixels: one row per detection and
 *   class with a non-zero probability, in stock's printing order.
 * Ranks ship records rather than finished boxes because rank 0 both writes
 * the VOC files with stock's expressions, which need the image's size and
 * path, and turns the same records into mn_box arrays for mAP: both see
 * the same numbers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "train/eval/mn_detwire.h"

static void put(mn_bytes *b, const void *src, size_t n)
{
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) { b->failed = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_i(mn_bytes *b, int32_t v) { put(b, &v, sizeof v); }

void mn_put_record(mn_bytes *b, const char *path, int w, int h, const mn_truth *truth, int ntruth,
                   const detection *dets, int ndets, int classes)
{
    int32_t len = (int32_t)strlen(path), rows = 0;
    put_i(b, len);
    put(b, path, (size_t)len);
    put_i(b, w);
    put_i(b, h);
    put_i(b, ntruth);
    for (int i = 0; i < ntruth; ++i) {
        float t[4] = {truth[i].x, truth[i].y, truth[i].w, truth[i].h};
        put_i(b, truth[i].id);
        put(b, t, sizeof t);
    }
    for (int i = 0; i < ndets; ++i)
        for (int j = 0; j < classes; ++j) rows += dets[i].prob[j] != 0;
    put_i(b, rows);
    for (int i = 0; i < ndets; ++i) {
        for (int j = 0; j < classes; ++j) {
            if (dets[i].prob[j] == 0) continue;
            float v[5] = {dets[i].prob[j], dets[i].bbox.x, dets[i].bbox.y, dets[i].bbox.w, dets[i].bbox.h};
            put_i(b, j);
            put(b, v, sizeof v);
        }
    }
}

mn_status mn_gather_bytes(mn_comm *c, const mn_bytes *mine, mn_bytes *all)
{
    memset(all, 0, sizeof *all);
    long long n = (long long)mine->n;
    long long *sizes = calloc((size_t)c->size, sizeof *sizes);
    int *counts = calloc((size_t)c->size, sizeof(int)), *displ = calloc((size_t)c->size, sizeof(int));
    mn_status s = mn_agree(c, sizes && counts && displ ? MN_OK : MN_ERR_NOMEM);
    if (s == MN_OK && MPI_Gather(&n, 1, MPI_LONG_LONG, sizes, 1, MPI_LONG_LONG, 0, c->world) != MPI_SUCCESS) {
        mn_error(c, "MPI_Gather of detection sizes failed");
        s = MN_ERR_MPI;
    }
    if (s == MN_OK && c->rank == 0) {
        long long total = 0;
        for (int r = 0; r < c->size; ++r) {
            displ[r] = (int)total;
            counts[r] = (int)sizes[r];
            total += sizes[r];
        }
        if (total > 2147483647LL) {
            mn_error(c, "the detections of all ranks take %lld bytes, more than one gather can carry; "
                     "raise the threshold or split the valid list", total);
            s = MN_ERR_USER;
        } else if (!(all->p = malloc((size_t)total + 1))) {
            s = MN_ERR_NOMEM;
        }
        all->n = all->cap = (size_t)total;
    }
    s = mn_agree(c, s);
    if (s == MN_OK && MPI_Gatherv(mine->p, (int)mine->n, MPI_BYTE, all->p, counts, displ, MPI_BYTE, 0,
                                  c->world) != MPI_SUCCESS) {
        mn_error(c, "MPI_Gatherv of detections failed");
        s = MN_ERR_MPI;
    }
    free(sizes);
    free(counts);
    free(displ);
    return s;
}

static int32_t get_i(const unsigned char **p)
{
    int32_t v;
    memcpy(&v, *p, sizeof v);
    *p += sizeof v;
    return v;
}

int mn_next_record(const unsigned char **p, const unsigned char *end, mn_record *r)
{
    if (*p >= end) return 0;
    int32_t len = get_i(p);
    size_t k = (size_t)len < sizeof r->path - 1 ? (size_t)len : sizeof r->path - 1;
    memcpy(r->path, *p, k);
    r->path[k] = 0;
    *p += len;
    r->w = get_i(p);
    r->h = get_i(p);
    r->ntruth = get_i(p);
    r->truth = *p;
    *p += (size_t)r->ntruth * 5 * 4;
    r->rows = get_i(p);
    r->row = *p;
    *p += (size_t)r->rows * 6 * 4;
    return 1;
}

int mn_get_row(const mn_record *r, int i, float *prob, float *x0, float *y0, float *x1, float *y1)
{
    const unsigned char *q = r->row + (size_t)i * 24;
    int32_t cls = get_i(&q);
    float v[5];
    memcpy(v, q, sizeof v);
    float xmin = v[1] - v[3] / 2. + 1, xmax = v[1] + v[3] / 2. + 1;
    float ymin = v[2] - v[4] / 2. + 1, ymax = v[2] + v[4] / 2. + 1;
    if (xmin < 1) xmin = 1;
    if (ymin < 1) ymin = 1;
    if (xmax > r->w) xmax = r->w;
    if (ymax > r->h) ymax = r->h;
    *prob = v[0];
    *x0 = xmin; *y0 = ymin; *x1 = xmax; *y1 = ymax;
    return cls;
}

/* Truth box i in the same 1-based pixel corners (the inverse of VOC's
 * conversion to Darknet labels). */
static int get_truth(const mn_record *r, int i, float *x0, float *y0, float *x1, float *y1)
{
    const unsigned char *q = r->truth + (size_t)i * 20;
    int32_t cls = get_i(&q);
    float v[4];
    memcpy(v, q, sizeof v);
    *x0 = (v[0] - v[2] / 2) * r->w + 1;
    *x1 = (v[0] + v[2] / 2) * r->w + 1;
    *y0 = (v[1] - v[3] / 2) * r->h + 1;
    *y1 = (v[1] + v[3] / 2) * r->h + 1;
    return cls;
}

mn_status mn_records_to_boxes(const mn_bytes *all, mn_box **dets, size_t *nd, mn_box **truth, size_t *nt,
                              size_t *images)
{
    const unsigned char *p = all->p, *end = all->p + all->n;
    mn_record r;
    size_t rows = 0, boxes = 0;
    *images = 0;
    while (mn_next_record(&p, end, &r)) { rows += (size_t)r.rows; boxes += (size_t)r.ntruth; ++*images; }
    *dets = malloc((rows + 1) * sizeof **dets);
    *truth = malloc((boxes + 1) * sizeof **truth);
    if (!*dets || !*truth) { free(*dets); free(*truth); return MN_ERR_NOMEM; }
    p = all->p;
    *nd = *nt = 0;
    for (int img = 0; mn_next_record(&p, end, &r); ++img) {
        for (int i = 0; i < r.rows; ++i) {
            mn_box *b = &(*dets)[(*nd)++];
            b->img = img;
            b->cls = mn_get_row(&r, i, &b->prob, &b->x0, &b->y0, &b->x1, &b->y1);
        }
        for (int i = 0; i < r.ntruth; ++i) {
            mn_box *b = &(*truth)[(*nt)++];
            b->img = img;
            b->prob = 1;
            b->cls = get_truth(&r, i, &b->x0, &b->y0, &b->x1, &b->y1);
        }
    }
    return MN_OK;
}
