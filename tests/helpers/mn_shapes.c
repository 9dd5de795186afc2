/* A tiny synthetic detection data set: JPEG images of red, green and blue
 * rectangles on a gray, slightly noisy background, with Darknet labels
 * (class x y w h, relative, centered). Layout:
 *   <out>/images/NNNN.jpg, <out>/labels/NNNN.txt, <out>/<name>.list, <out>/names.txt
 * usage: mn_shapes <out> <name> <count> <seed> [width height] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "darknet.h"

#ifdef MN_BASE_ALEXEYAB
/* The fork defines it in image.c but declares it in no header. */
void save_image_options(image im, const char *name, IMTYPE f, int quality);
#endif

static unsigned next(unsigned *s) { *s = *s * 1103515245u + 12345u; return (*s >> 16) & 0x7fff; }
static int uniform(unsigned *s, int lo, int hi) { return lo + (int)(next(s) % (unsigned)(hi - lo + 1)); }

int main(int argc, char **argv)
{
    if (argc < 5) { fprintf(stderr, "usage: mn_shapes <out> <name> <count> <seed> [jpg|png [width height]]\n"); return 2; }
    const char *out = argv[1], *name = argv[2], *format = argc > 5 ? argv[5] : "jpg";
    int count = atoi(argv[3]), w = argc > 7 ? atoi(argv[6]) : 80, h = argc > 7 ? atoi(argv[7]) : 64;
    int png = !strcmp(format, "png");
    unsigned s = (unsigned)atoi(argv[4]) * 2654435761u + 1u;
    char path[4096];
    mkdir(out, 0777);
    snprintf(path, sizeof path, "%s/images", out);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/labels", out);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/names.txt", out);
    FILE *names = fopen(path, "w");
    fprintf(names, "red\ngreen\nblue\n");
    fclose(names);
    snprintf(path, sizeof path, "%s/%s.list", out, name);
    FILE *list = fopen(path, "w");
    if (!list) { perror(path); return 1; }
    for (int n = 0; n < count; ++n) {
        image im = make_image(w, h, 3);
        for (int i = 0; i < w * h * 3; ++i) im.data[i] = .45f + (float)(next(&s) % 100) / 1000.f;
        char base[4096];
        snprintf(base, sizeof base, "%s/labels/%s%04d.txt", out, name, n);
        FILE *lab = fopen(base, "w");
        if (!lab) { perror(base); return 1; }
        int boxes = uniform(&s, 1, 3);
        for (int b = 0; b < boxes; ++b) {
            int cls = uniform(&s, 0, 2);
            int bw = uniform(&s, 12, w / 2), bh = uniform(&s, 12, h / 2);
            int x0 = uniform(&s, 0, w - bw), y0 = uniform(&s, 0, h - bh);
            for (int y = y0; y < y0 + bh; ++y)
                for (int x = x0; x < x0 + bw; ++x)
                    for (int k = 0; k < 3; ++k) im.data[k * w * h + y * w + x] = k == cls ? .9f : .1f;
            fprintf(lab, "%d %f %f %f %f\n", cls, (x0 + bw / 2.) / w, (y0 + bh / 2.) / h, (double)bw / w, (double)bh / h);
        }
        fclose(lab);
        snprintf(base, sizeof base, "%s/images/%s%04d", out, name, n);
        save_image_options(im, base, png ? PNG : JPG, 80);   /* appends the extension */
        free_image(im);
        fprintf(list, "%s.%s\n", base, png ? "png" : "jpg");
    }
    fclose(list);
    return 0;
}
