/*
 * mn_fashion_det: a detection set made from Fashion-MNIST items. Each image
 * is a canvas of 96..160 px a side with a dark textured background and a few
 * clutter strokes, holding 1..4 items pasted at random positions and scales
 * (tinted, overlapping at most IOU_MAX), and its YOLO label file in the
 * layouts of both Darknets (pjreddie's swaps images/ for labels/, AlexeyAB's
 * looks beside the image):
 *
 *   <out>/images/{train,valid}/NNNNNN.jpg   (JPEG: Darknet maps .jpg, not
 *   <out>/images/{train,valid}/NNNNNN.txt    .png, to its label file)
 *   <out>/labels/{train,valid}/NNNNNN.txt
 *   <out>/{train,valid}.list
 *
 *   mn_fashion_det <idx-dir> <out-dir> [--train N] [--valid M] [--seed S] [--net W]
 *
 * The same arguments give the same bytes. Train images use the IDX training
 * items, valid images the test items. Last it prints YOLO anchors for a W x W
 * network (k-means over the training boxes with 1 - IoU as the distance).
 */
#define _POSIX_C_SOURCE 200809L
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "stb_image_write.h"

#define SIDE 28
#define MAX_ITEMS 4
#define IOU_MAX 0.3f
#define ANCHORS 6

typedef struct { float w, h; } wh;

static void die(const char *what, const char *path)
{
    fprintf(stderr, "mn_fashion_det: error: %s: %s\n", path, what);
    exit(1);
}

/* splitmix64: the same stream on every platform, unlike rand(). */
static unsigned long long next_u64(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float uni(unsigned long long *s) { return (float)(next_u64(s) >> 40) / 16777216.0f; }
static int irange(unsigned long long *s, int lo, int hi) { return lo + (int)(next_u64(s) % (unsigned)(hi - lo + 1)); }

/* A whole gzip'd IDX file (images: magic 0x803, 28x28; labels: 0x801). */
static unsigned char *read_idx(const char *dir, const char *base, int images, long *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.gz", dir, base);
    gzFile f = gzopen(path, "rb");
    if (!f) die(strerror(errno), path);
    unsigned char h[16];
    int hb = images ? 16 : 8;
    if (gzread(f, h, hb) != hb) die("truncated header", path);
    unsigned magic = (unsigned)h[2] << 8 | h[3];
    long n = (long)h[4] << 24 | h[5] << 16 | h[6] << 8 | h[7];
    if (magic != (images ? 0x803u : 0x801u) || (images && (h[11] != SIDE || h[15] != SIDE)))
        die("not a Fashion-MNIST IDX file", path);
    size_t bytes = (size_t)n * (images ? SIDE * SIDE : 1);
    unsigned char *d = malloc(bytes);
    if (!d || gzread(f, d, (unsigned)bytes) != (int)bytes) die("truncated data", path);
    gzclose(f);
    *count = n;
    return d;
}

static void mkdirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *q = p + 1; *q; ++q)
        if (*q == '/') { *q = 0; mkdir(p, 0777); *q = '/'; }
    if (mkdir(p, 0777) && errno != EEXIST) die(strerror(errno), p);
}

static float iou(float ax, float ay, float aw, float ah, float bx, float by, float bw, float bh)
{
    float ix = fminf(ax + aw, bx + bw) - fmaxf(ax, bx), iy = fminf(ay + ah, by + bh) - fmaxf(ay, by);
    if (ix <= 0 || iy <= 0) return 0;
    return ix * iy / (aw * ah + bw * bh - ix * iy);
}

/* One canvas: background, clutter, items; appends its boxes (in net pixels) to all. */
static void make_image(unsigned long long *rng, const unsigned char *pix, const unsigned char *lab, long nitems,
                       const char *img_path, const char *lab_path, const char *side_path, int net, wh *all, size_t *nall)
{
    int W = irange(rng, 96, 160), H = irange(rng, 96, 160);
    unsigned char *im = malloc((size_t)W * H * 3);
    float c0[3], c1[3];
    for (int k = 0; k < 3; ++k) { c0[k] = 10 + 50 * uni(rng); c1[k] = 10 + 50 * uni(rng); }
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
            for (int k = 0; k < 3; ++k) {
                float t = (float)(x + y) / (W + H);
                float v = c0[k] * (1 - t) + c1[k] * t + 16 * (uni(rng) - .5f);
                im[(y * W + x) * 3 + k] = (unsigned char)fmaxf(0, fminf(255, v));
            }
    /* Clutter: thin grey strokes that are not items. */
    for (int s = irange(rng, 0, 4); s > 0; --s) {
        float x = uni(rng) * W, y = uni(rng) * H, a = uni(rng) * 6.2832f, g = 60 + 60 * uni(rng);
        for (int len = irange(rng, 10, 50); len > 0; --len, x += cosf(a), y += sinf(a))
            if (x >= 0 && y >= 0 && x < W && y < H)
                for (int k = 0; k < 3; ++k) im[((int)y * W + (int)x) * 3 + k] = (unsigned char)g;
    }
    FILE *lf = fopen(lab_path, "w"), *sf = fopen(side_path, "w");
    if (!lf) die(strerror(errno), lab_path);
    if (!sf) die(strerror(errno), side_path);
    float bx[MAX_ITEMS], by[MAX_ITEMS], bw[MAX_ITEMS], bh[MAX_ITEMS];
    int n = 0;
    for (int want = irange(rng, 1, MAX_ITEMS), tries = 0; n < want && tries < 30; ++tries) {
        long item = (long)(next_u64(rng) % (unsigned long long)nitems);
        const unsigned char *src = pix + item * SIDE * SIDE;
        int S = irange(rng, 28, 64), ox = irange(rng, 0, W - S), oy = irange(rng, 0, H - S);
        /* The box is the item's own extent (pixels > 32), not its 28x28 frame. */
        int x0 = SIDE, y0 = SIDE, x1 = -1, y1 = -1;
        for (int y = 0; y < SIDE; ++y)
            for (int x = 0; x < SIDE; ++x)
                if (src[y * SIDE + x] > 32) {
                    if (x < x0) x0 = x;
                    if (x > x1) x1 = x;
                    if (y < y0) y0 = y;
                    if (y > y1) y1 = y;
                }
        if (x1 < 0) continue;
        float f = (float)S / SIDE, X = ox + x0 * f, Y = oy + y0 * f, BW = (x1 + 1 - x0) * f, BH = (y1 + 1 - y0) * f;
        int clash = 0;
        for (int j = 0; j < n; ++j) clash |= iou(X, Y, BW, BH, bx[j], by[j], bw[j], bh[j]) > IOU_MAX;
        if (clash) continue;
        float tint[3];
        for (int k = 0; k < 3; ++k) tint[k] = .55f + .45f * uni(rng);
        for (int y = 0; y < S; ++y)
            for (int x = 0; x < S; ++x) {
                /* Bilinear sample of the 28x28 item. */
                float sx = (x + .5f) / f - .5f, sy = (y + .5f) / f - .5f;
                int ix = (int)floorf(sx), iy = (int)floorf(sy);
                float fx = sx - ix, fy = sy - iy, v = 0;
                for (int dy = 0; dy < 2; ++dy)
                    for (int dx = 0; dx < 2; ++dx) {
                        int qx = ix + dx, qy = iy + dy;
                        if (qx < 0 || qy < 0 || qx >= SIDE || qy >= SIDE) continue;
                        v += src[qy * SIDE + qx] * (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
                    }
                float a = v / 255;
                unsigned char *p = im + ((oy + y) * W + ox + x) * 3;
                for (int k = 0; k < 3; ++k) p[k] = (unsigned char)(p[k] * (1 - a) + 255 * tint[k] * a + .5f);
            }
        bx[n] = X; by[n] = Y; bw[n] = BW; bh[n] = BH; ++n;
        char row[96];
        snprintf(row, sizeof row, "%d %.6f %.6f %.6f %.6f\n", lab[item], (X + BW / 2) / W, (Y + BH / 2) / H, BW / W, BH / H);
        fputs(row, lf);
        fputs(row, sf);
        if (all) { all[*nall].w = BW / W * net; all[*nall].h = BH / H * net; ++*nall; }
    }
    if (fclose(lf)) die(strerror(errno), lab_path);
    if (fclose(sf)) die(strerror(errno), side_path);
    if (!stbi_write_jpg(img_path, W, H, 3, im, 92)) die("cannot write", img_path);
    free(im);
}

/* One split: images, labels, then the list (renamed into place last). */
static void make_split(const char *out, const char *name, long count, unsigned long long seed,
                       const unsigned char *pix, const unsigned char *lab, long nitems, int net, wh *all, size_t *nall)
{
    char dir[4096], path[4200], lpath[4200], spath[4200], list[4200], tmp[4300];
    snprintf(dir, sizeof dir, "%s/images/%s", out, name);
    mkdirs(dir);
    snprintf(dir, sizeof dir, "%s/labels/%s", out, name);
    mkdirs(dir);
    snprintf(list, sizeof list, "%s/%s.list", out, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", list);
    FILE *f = fopen(tmp, "w");
    if (!f) die(strerror(errno), tmp);
    unsigned long long rng = seed;
    for (long i = 0; i < count; ++i) {
        snprintf(path, sizeof path, "%s/images/%s/%06ld.jpg", out, name, i);
        snprintf(lpath, sizeof lpath, "%s/labels/%s/%06ld.txt", out, name, i);
        snprintf(spath, sizeof spath, "%s/images/%s/%06ld.txt", out, name, i);
        make_image(&rng, pix, lab, nitems, path, lpath, spath, net, all, nall);
        fprintf(f, "%s\n", path);
    }
    if (fclose(f) || rename(tmp, list)) die(strerror(errno), list);
}

static float centred_iou(wh a, wh b)
{
    float i = fminf(a.w, b.w) * fminf(a.h, b.h);
    return i / (a.w * a.h + b.w * b.h - i);
}
static int by_area(const void *a, const void *b)
{
    float x = ((const wh *)a)->w * ((const wh *)a)->h, y = ((const wh *)b)->w * ((const wh *)b)->h;
    return (x > y) - (x < y);
}

/* k-means with 1 - IoU: the anchors Darknet's yolo layers want. */
static void print_anchors(wh *b, size_t n, int net)
{
    if (n < ANCHORS) return;
    wh c[ANCHORS];
    qsort(b, n, sizeof *b, by_area);
    for (int k = 0; k < ANCHORS; ++k) c[k] = b[(2 * k + 1) * n / (2 * ANCHORS)];
    double mean = 0;
    for (int round = 0; round < 100; ++round) {
        double sw[ANCHORS] = {0}, sh[ANCHORS] = {0};
        long cnt[ANCHORS] = {0};
        mean = 0;
        for (size_t i = 0; i < n; ++i) {
            int best = 0;
            for (int k = 1; k < ANCHORS; ++k)
                if (centred_iou(b[i], c[k]) > centred_iou(b[i], c[best])) best = k;
            sw[best] += b[i].w; sh[best] += b[i].h; ++cnt[best];
            mean += centred_iou(b[i], c[best]);
        }
        for (int k = 0; k < ANCHORS; ++k)
            if (cnt[k]) { c[k].w = (float)(sw[k] / cnt[k]); c[k].h = (float)(sh[k] / cnt[k]); }
    }
    qsort(c, ANCHORS, sizeof *c, by_area);
    printf("mn_fashion_det: k-means anchors for %dx%d (mean IoU %.3f over %zu boxes): anchors = ", net, net,
           mean / n, n);
    for (int k = 0; k < ANCHORS; ++k) printf("%s%d,%d", k ? ", " : "", (int)lroundf(c[k].w), (int)lroundf(c[k].h));
    printf("\n");
}

static long arg_long(const char *v, const char *opt)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 0) die("must be a non-negative integer", opt);
    return x;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: %s <idx-dir> <out-dir> [--train N] [--valid M] [--seed S] [--net W]\n", argv[0]);
        return 2;
    }
    long ntrain = 2000, nvalid = 200, seed = 1, net = 128;
    for (int i = 3; i < argc; i += 2) {
        long v = arg_long(argv[i + 1], argv[i]);
        if (!strcmp(argv[i], "--train")) ntrain = v;
        else if (!strcmp(argv[i], "--valid")) nvalid = v;
        else if (!strcmp(argv[i], "--seed")) seed = v;
        else if (!strcmp(argv[i], "--net") && v > 0) net = v;
        else die("unknown option or bad value", argv[i]);
    }
    long ntr, nte, n;
    unsigned char *trp = read_idx(argv[1], "train-images-idx3-ubyte", 1, &ntr);
    unsigned char *trl = read_idx(argv[1], "train-labels-idx1-ubyte", 0, &n);
    if (n != ntr) die("image and label counts differ", argv[1]);
    unsigned char *tep = read_idx(argv[1], "t10k-images-idx3-ubyte", 1, &nte);
    unsigned char *tel = read_idx(argv[1], "t10k-labels-idx1-ubyte", 0, &n);
    if (n != nte) die("image and label counts differ", argv[1]);
    wh *boxes = malloc(sizeof *boxes * (size_t)(ntrain * MAX_ITEMS + 1));
    size_t nb = 0;
    make_split(argv[2], "train", ntrain, (unsigned long long)seed * 2, trp, trl, ntr, (int)net, boxes, &nb);
    make_split(argv[2], "valid", nvalid, (unsigned long long)seed * 2 + 1, tep, tel, nte, (int)net, NULL, NULL);
    printf("mn_fashion_det: wrote %ld train and %ld valid images with %zu train boxes under %s\n", ntrain, nvalid, nb,
           argv[2]);
    print_anchors(boxes, nb, (int)net);
    free(boxes); free(trp); free(trl); free(tep); free(tel);
    return 0;
}
