/* The decoded-image cache (cache_mb= in [distributed]).
 *
 * A rank decodes each image of its shard once and keeps the 8-bit samples
 * stb returns; Darknet's loader threads then augment from a float copy made
 * exactly as load_image_stb makes it, so a run trains on the same numbers
 * with the cache as without. The table of the shard's paths is built before
 * any thread reads it and never changes shape; a slot's pixels, once set,
 * stay until mn_cache_free, so only the filling of a slot and the counters
 * need the lock. No eviction: a loader samples its shard uniformly, so any
 * policy would hit as often as keeping the first images that fit. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/mn_core.h"
#include "train/input/mn_input.h"
#include "base/mn_base_util.h"
#include "base/mn_base.h"
#include "core/mn_fault.h"
#include "core/mn_output.h"

typedef struct {
    const char *path;        /* the caller's string; NULL: empty slot */
    uint64_t hash;
    unsigned char *pix;      /* stb's h x w x 3 samples, or NULL */
    int w, h;
} slot;

struct mn_cache {
    pthread_mutex_t lock;
    slot *slots;
    size_t mask;             /* slots - 1, a power of two */
    size_t budget;
    mn_cache_stats st;
    char who[96];            /* "rank 1 (host): ", for the message of an image stb cannot decode */
};

static uint64_t path_hash(const char *s)
{
    return mn_fnv1a(MN_FNV_SEED, s, strlen(s));
}

/* The slot of path, or NULL when path is not in the shard. */
static slot *find(mn_cache *k, const char *path, uint64_t h)
{
    for (size_t i = h & k->mask;; i = (i + 1) & k->mask) {
        slot *s = &k->slots[i];
        if (!s->path) return NULL;
        if (s->hash == h && !strcmp(s->path, path)) return s;
    }
}

mn_cache *mn_cache_create(char **paths, size_t n, size_t budget_bytes, const char *who)
{
    mn_cache *k = calloc(1, sizeof *k);
    if (k) snprintf(k->who, sizeof k->who, "%s", who);
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;   /* at most half full: probes stay short */
    if (k) k->slots = calloc(cap, sizeof *k->slots);
    if (!k || !k->slots) { free(k); return NULL; }
    pthread_mutex_init(&k->lock, NULL);
    k->mask = cap - 1;
    k->budget = budget_bytes;
    for (size_t j = 0; j < n; ++j) {
        uint64_t h = path_hash(paths[j]);
        if (find(k, paths[j], h)) continue;   /* a path listed twice */
        size_t i = h & k->mask;
        while (k->slots[i].path) i = (i + 1) & k->mask;
        k->slots[i].path = paths[j];
        k->slots[i].hash = h;
    }
    return k;
}

void mn_cache_free(mn_cache *k)
{
    if (!k) return;
    for (size_t i = 0; i <= k->mask; ++i) free(k->slots[i].pix);
    free(k->slots);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

/* Darknet's image from stb's samples, as load_image_stb converts them. */
static mn_image to_image(const unsigned char *data, int w, int h, int c)
{
    mn_image im = mn_base_make_image(w, h, c);
    for (int k = 0; k < c; ++k)
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i)
                im.data[i + w * j + w * h * k] = (float)data[k + c * i + c * w * j] / 255.;
    return im;
}

/* An image that stb cannot decode ends the job here, with the file and the
 * reason, on the rank that read it (Darknet would print stb's reason and
 * abort, or on AlexeyAB's base train on a blank 10x10 image). */
static void undecodable(const mn_cache *k, const char *filename, const char *reason)
{
    FILE *fp = fopen(filename, "rb");
    unsigned char head[4] = {0};
    size_t n = fp ? fread(head, 1, sizeof head, fp) : 0;
    if (fp) fclose(fp);
    const char *what = !fp ? "cannot be opened"
                     : n == 0 ? "is empty"
                     : (head[0] == 0xFF && head[1] == 0xD8) || (head[0] == 0x89 && head[1] == 'P') ? "is truncated or corrupt"
                     : "is not a JPEG/PNG/BMP/TGA image";
    fprintf(mn_output_errors(), "darknet-mn: %simage %s %s%s%s%s\n", k->who, filename, what,
            reason ? " (stb: " : "", reason ? reason : "", reason ? ")" : "");
    mn_die(MN_EXIT_USER);
}

static int hook(void *ctx, char *filename, int channels, mn_image *out)
{
    mn_cache *k = ctx;
    uint64_t h = path_hash(filename);
    slot *s = channels == 3 ? find(k, filename, h) : NULL;
    int w, hh, c;
    if (!s) {   /* not kept: decoded as load_image_stb does, for the message on failure */
        const char *why;
        unsigned char *data = mn_base_decode(filename, channels, &w, &hh, &c, &why);
        if (!data) undecodable(k, filename, why);
        *out = to_image(data, w, hh, channels ? channels : c);
        free(data);
        return 1;
    }
    pthread_mutex_lock(&k->lock);
    unsigned char *pix = s->pix;
    if (pix) ++k->st.hits;
    pthread_mutex_unlock(&k->lock);
    if (pix) {
        *out = to_image(pix, s->w, s->h, 3);
        return 1;
    }
    const char *why;
    unsigned char *data = mn_base_decode(filename, 3, &w, &hh, &c, &why);
    if (!data) undecodable(k, filename, why);
    *out = to_image(data, w, hh, 3);
    size_t bytes = (size_t)w * hh * 3;
    pthread_mutex_lock(&k->lock);
    if (!s->pix && k->st.bytes + bytes <= k->budget) {
        s->pix = data;
        s->w = w;
        s->h = hh;
        k->st.bytes += bytes;
        ++k->st.images;
        ++k->st.misses;
        data = NULL;
    } else {
        ++k->st.over;   /* the budget is full, or another thread kept it first */
    }
    pthread_mutex_unlock(&k->lock);
    free(data);
    return 1;
}

void mn_cache_install(mn_cache *k)
{
    mn_base_set_image_hook(hook, k);
}

void mn_cache_uninstall(void)
{
    mn_base_set_image_hook(NULL, NULL);
}

mn_cache_stats mn_cache_get_stats(mn_cache *k)
{
    mn_cache_stats st;
    pthread_mutex_lock(&k->lock);
    st = k->st;
    pthread_mutex_unlock(&k->lock);
    return st;
}
