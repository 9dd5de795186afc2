/* A rank that trains as several ranks did. A checkpoint resumed on W times
 * fewer ranks keeps its global batch with W times the passes an update
 * (mn_train.c, keep_global_batch): pass p of an update holds the images of
 * rank q + (p mod W) x ranks of the job that wrote it, at that rank's pass
 * p / W, so the gradient is the same. Batch norm's running statistics are
 * not summed but moved by each pass (Darknet: 0.99 x old + 0.01 x the
 * pass's), so one set moved by all W passes is no rank's. Each of the W
 * ("ways") keeps its own set here: a pass starts from its way's and leaves
 * its result there. Way 0, which the network holds between updates, is then
 * exactly what that job's rank q held (rank 0 writes its own into weights
 * and checkpoints), and a mean over ranks of the ways' mean (bn_average) is
 * the mean over that job's ranks. */
#include <stdlib.h>
#include <string.h>
#include "mn_ways.h"

struct mn_ways {
    int ways;
    unsigned long pass;   /* training passes so far: the next one's way is pass % ways */
    int n;                /* the network's running-statistic arrays */
    float **live;
    size_t *lens, total;
    float *slots;         /* ways x total: way k's at k x total (way 0's is the network's between updates) */
    float *marked;        /* the slots at mn_ways_mark */
};

mn_ways *mn_ways_new(network *net, int ways)
{
    mn_ways *w = calloc(1, sizeof *w);
    int cap = 2 * mn_net_layers(net) + 1;
    if (!w || !(w->live = calloc((size_t)cap, sizeof *w->live)) || !(w->lens = calloc((size_t)cap, sizeof *w->lens))) {
        mn_ways_free(w);
        return NULL;
    }
    w->ways = ways;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v) && w->n < cap;) {
        if (!v.stat) continue;
        w->live[w->n] = v.data;
        w->lens[w->n++] = v.n;
        w->total += v.n;
    }
    w->slots = malloc(((size_t)ways * w->total + 1) * sizeof(float));
    w->marked = malloc(((size_t)ways * w->total + 1) * sizeof(float));
    if (!w->slots || !w->marked) {
        mn_ways_free(w);
        return NULL;
    }
    mn_ways_spread(w);
    return w;
}

/* The network's statistics to (out = 1) or from way k's slot. */
static void copy_way(mn_ways *w, int k, int out)
{
    float *slot = w->slots + (size_t)k * w->total;
    for (int i = 0; i < w->n; slot += w->lens[i], ++i)
        memcpy(out ? slot : w->live[i], out ? w->live[i] : slot, w->lens[i] * sizeof(float));
}

void mn_ways_pass(mn_ways *w)
{
    int k = (int)(w->pass++ % (unsigned long)w->ways);
    copy_way(w, k, 1);
    copy_way(w, (k + 1) % w->ways, 0);
}

void mn_ways_fold(mn_ways *w)
{
    size_t off = 0;
    for (int i = 0; i < w->n; off += w->lens[i], ++i)
        for (size_t j = 0; j < w->lens[i]; ++j) {
            float s = w->live[i][j];
            for (int k = 1; k < w->ways; ++k) s += w->slots[(size_t)k * w->total + off + j];
            w->live[i][j] = s / (float)w->ways;
        }
}

void mn_ways_spread(mn_ways *w)
{
    for (int k = 0; k < w->ways; ++k) copy_way(w, k, 1);
}

void mn_ways_mark(mn_ways *w) { memcpy(w->marked, w->slots, (size_t)w->ways * w->total * sizeof(float)); }
void mn_ways_rewind(mn_ways *w) { memcpy(w->slots, w->marked, (size_t)w->ways * w->total * sizeof(float)); }

void mn_ways_free(mn_ways *w)
{
    if (!w) return;
    free(w->live);
    free(w->lens);
    free(w->slots);
    free(w->marked);
    free(w);
}
