/* VOC mean average precision: pure maths over mn_box arrays, with no MPI,
 * files or network, so that `detector map`, evaluation during training and
 * tests/unit/test_map.c score the same boxes the same way (the rules are at
 * mn_voc_map's declaration). */
#include <stdlib.h>
#include "train/mn_training.h"

static float iou_corners(const mn_box *a, const mn_box *b)
{
    float w = (a->x1 < b->x1 ? a->x1 : b->x1) - (a->x0 > b->x0 ? a->x0 : b->x0);
    float h = (a->y1 < b->y1 ? a->y1 : b->y1) - (a->y0 > b->y0 ? a->y0 : b->y0);
    if (w <= 0 || h <= 0) return 0;
    float inter = w * h;
    float u = (a->x1 - a->x0) * (a->y1 - a->y0) + (b->x1 - b->x0) * (b->y1 - b->y0) - inter;
    return u > 0 ? inter / u : 0;
}

/* Sort keys: detections by class, then probability descending, then input
 * order; truth by image and class. */
typedef struct { const mn_box *b; size_t i; } keyed;

static int by_class_prob(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->b->cls != b->b->cls) return a->b->cls < b->b->cls ? -1 : 1;
    if (a->b->prob != b->b->prob) return a->b->prob > b->b->prob ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int by_image_class(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->b->img != b->b->img) return a->b->img < b->b->img ? -1 : 1;
    if (a->b->cls != b->b->cls) return a->b->cls < b->b->cls ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* First truth entry (in by_image_class order) of image img and class cls. */
static size_t first_truth(const keyed *t, size_t n, int img, int cls)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].b->img < img || (t[mid].b->img == img && t[mid].b->cls < cls)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* VOC 2010+ AP: the area under the monotone envelope of precision over
 * recall, for one class's detections in descending probability. */
static double average_precision(const unsigned char *tp, size_t n, size_t npos)
{
    double *prec = malloc((n + 2) * sizeof(double)), *rec = malloc((n + 2) * sizeof(double));
    if (!prec || !rec) { free(prec); free(rec); return -1; }
    size_t ntp = 0;
    rec[0] = 0;
    prec[0] = 0;
    for (size_t i = 0; i < n; ++i) {
        ntp += tp[i];
        rec[i + 1] = (double)ntp / (double)npos;
        prec[i + 1] = (double)ntp / (double)(i + 1);
    }
    rec[n + 1] = 1;
    prec[n + 1] = 0;
    for (size_t i = n + 1; i-- > 0;)
        if (prec[i + 1] > prec[i]) prec[i] = prec[i + 1];
    double ap = 0;
    for (size_t i = 0; i <= n; ++i)
        if (rec[i + 1] != rec[i]) ap += (rec[i + 1] - rec[i]) * prec[i + 1];
    free(prec);
    free(rec);
    return ap;
}

/* VOC's rule: in descending probability (ties in the order given), a
 * detection is true when the truth box of its class and image it overlaps
 * most, matched or not, overlaps it above iou_thresh and is not matched
 * yet; AP is the area under the precision envelope. */
double mn_voc_map(const mn_box *dets, size_t ndets, const mn_box *truth, size_t ntruth,
                  int classes, float iou_thresh, double *ap)
{
    keyed *d = malloc((ndets + 1) * sizeof *d), *t = malloc((ntruth + 1) * sizeof *t);
    unsigned char *used = calloc(ntruth + 1, 1), *tp = malloc(ndets + 1);
    size_t *npos = calloc((size_t)classes + 1, sizeof *npos);
    if (!d || !t || !used || !tp || !npos) {
        free(d); free(t); free(used); free(tp); free(npos);
        return -2;
    }
    for (size_t i = 0; i < ndets; ++i) d[i] = (keyed){dets + i, i};
    for (size_t i = 0; i < ntruth; ++i) {
        t[i] = (keyed){truth + i, i};
        if (truth[i].cls >= 0 && truth[i].cls < classes) ++npos[truth[i].cls];
    }
    qsort(d, ndets, sizeof *d, by_class_prob);
    qsort(t, ntruth, sizeof *t, by_image_class);
    double sum = 0;
    int counted = 0;
    size_t i = 0;
    for (int k = 0; k < classes; ++k) {
        while (i < ndets && d[i].b->cls < k) ++i;
        size_t first = i;
        for (; i < ndets && d[i].b->cls == k; ++i) {
            /* The truth box of this image and class it overlaps most, matched or not. */
            const mn_box *b = d[i].b;
            float best = -1;
            size_t at = 0;
            for (size_t j = first_truth(t, ntruth, b->img, k); j < ntruth && t[j].b->img == b->img && t[j].b->cls == k; ++j) {
                float o = iou_corners(b, t[j].b);
                if (o > best) { best = o; at = j; }
            }
            tp[i] = best > iou_thresh && !used[at];
            if (tp[i]) used[at] = 1;
        }
        ap[k] = npos[k] ? average_precision(tp + first, i - first, npos[k]) : -1;
        if (npos[k]) { sum += ap[k]; ++counted; }
    }
    free(d); free(t); free(used); free(tp); free(npos);
    return counted ? sum / counted : -1;
}
