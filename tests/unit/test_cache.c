/* The decoded-image cache under Darknet's loader threads: 8 threads load the
 * same images (a list's first 64, or all but its last) through
 * load_image_color, the hook installed, 5 times each; every image equals
 * stb's decode bit for bit, and the counts are exact: with room for all,
 * each image is kept once and every other load is a hit (or a decode another
 * thread beat); with room for half, half are kept and the rest decoded every
 * time; a path outside the shard and a 1-channel load go past the cache.
 * usage: test_cache <list of 5 or more images of one size> */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/input/mn_input.h"
#include "mn_expect.h"
#include "utils.h"

#define MAXIMG 64
#define THREADS 8
#define ROUNDS 5


static char *paths[MAXIMG + 1];
static image ref[MAXIMG];
static int nimg;

/* Each thread starts at another image so that threads meet on the same slot. */
static void *loader(void *arg)
{
    long t = (long)arg, bad = 0;
    for (int r = 0; r < ROUNDS; ++r)
        for (int j = 0; j < nimg; ++j) {
            int i = (j + (int)t * 7) % nimg;
            image im = load_image_color(paths[i], 0, 0);
            bad += im.w != ref[i].w || im.h != ref[i].h || im.c != 3 ||
                   memcmp(im.data, ref[i].data, sizeof(float) * (size_t)im.w * im.h * 3) != 0;
            free_image(im);
        }
    return (void *)bad;
}

static mn_cache_stats run(size_t budget, long *bad)
{
    mn_cache *k = mn_cache_create(paths, (size_t)nimg, budget, "");
    mn_cache_install(k);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; ++t) pthread_create(&th[t], NULL, loader, (void *)t);
    *bad = 0;
    for (int t = 0; t < THREADS; ++t) {
        void *b;
        pthread_join(th[t], &b);
        *bad += (long)b;
    }
    /* Outside the shard, and another channel count: stb decodes, nothing counted. */
    image out = load_image_color(paths[nimg], 0, 0), one = load_image(paths[0], 0, 0, 1);
    free_image(out);
    free_image(one);
    mn_cache_uninstall();
    mn_cache_stats st = mn_cache_get_stats(k);
    mn_cache_free(k);
    return st;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: test_cache <list>\n"); return 2; }
    FILE *f = fopen(argv[1], "r");
    char line[4096];
    int n = 0;
    while (f && n <= MAXIMG && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        paths[n++] = strdup(line);
    }
    if (f) fclose(f);
    if (n < 5) { fprintf(stderr, "test_cache: %s has fewer than 5 paths\n", argv[1]); return 2; }
    nimg = n - 1;
    for (int i = 0; i < nimg; ++i) {
        ref[i] = load_image_color(paths[i], 0, 0);   /* stb, no hook */
        if (ref[i].w != ref[0].w || ref[i].h != ref[0].h) { fprintf(stderr, "test_cache: %s differs in size\n", paths[i]); return 2; }
    }
    size_t one = (size_t)ref[0].w * ref[0].h * 3, loads = (size_t)THREADS * ROUNDS * nimg, half = (size_t)nimg / 2;

    long bad;
    mn_cache_stats st = run(64 << 20, &bad);
    EXPECT(bad == 0, "all room: %ld loads differ from stb's decode", bad);
    /* Threads that decode the same image at once keep one copy; the others count as over. */
    EXPECT(st.misses == (size_t)nimg && st.images == (size_t)nimg && st.bytes == nimg * one, "all room: kept %zu images, %zu bytes",
           st.images, st.bytes);
    EXPECT(st.hits + st.misses + st.over == loads, "all room: %zu + %zu + %zu loads, want %zu", st.hits, st.misses,
           st.over, loads);
    EXPECT(st.over < (size_t)THREADS * nimg, "all room: %zu decoded past the cache", st.over);
    printf("test_cache: room for all: %zu hits, %zu kept, %zu decoded at once by another thread, of %zu loads\n",
           st.hits, st.misses, st.over, loads);

    st = run(half * one, &bad);
    EXPECT(bad == 0, "room for %zu: %ld loads differ from stb's decode", half, bad);
    EXPECT(st.misses == half && st.images == half && st.bytes == half * one, "room for %zu: kept %zu images", half, st.images);
    EXPECT(st.hits + st.misses + st.over == loads && st.hits <= (size_t)THREADS * ROUNDS * half,
           "room for %zu: %zu + %zu + %zu loads", half, st.hits, st.misses, st.over);
    printf("test_cache: room for %zu of %d: %zu hits, %zu kept, %zu decoded past the budget\n", half, nimg, st.hits,
           st.misses, st.over);

    st = run(0, &bad);
    EXPECT(bad == 0 && st.hits == 0 && st.misses == 0 && st.over == loads, "no room: %zu hits, %zu kept, %zu over",
           st.hits, st.misses, st.over);
    for (int i = 0; i < nimg; ++i) free_image(ref[i]);
    for (int i = 0; i <= nimg; ++i) free(paths[i]);
    puts(failures ? "test_cache: FAILED" : "test_cache: ok");
    return failures != 0;
}
