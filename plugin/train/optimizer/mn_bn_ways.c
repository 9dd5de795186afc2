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
#include "train/optimizer/mn_bn_ways.h"

struct mn_bn_ways {
    int ways;
    unsigned long pass;   /* training passes so far: the next one's way is pass % ways */
    const mn_bn_arrays *s; /* the network's running-statistic arrays (host), s->total floats */
    float *slots;         /* ways x total: way k's at k x total (way 0's is the network's between updates) */
    float *marked;        /* the slots at mn_bn_ways_mark */
};

mn_status mn_bn_arrays_list(network *net, mn_bn_arrays *s)
{
    memset(s, 0, sizeof *s);
    int cap = 2 * mn_net_layers(net) + 1;   /* a layer holds a mean and a variance */
    s->host = calloc((size_t)cap, sizeof *s->host);
    s->dev = calloc((size_t)cap, sizeof *s->dev);
    s->lens = calloc((size_t)cap, sizeof *s->lens);
    if (!s->host || !s->dev || !s->lens) return MN_ERR_NOMEM;
    mn_views it = mn_net_views(net);
    for (mn_view v; mn_views_next(&it, &v) && s->n < cap;) {
        if (!v.stat) continue;
        s->host[s->n] = v.data;
        s->dev[s->n] = v.data_gpu;
        s->lens[s->n++] = v.n;
        s->total += v.n;
    }
    return MN_OK;
}

void mn_bn_arrays_free(mn_bn_arrays *s)
{
    free(s->host);
    free(s->dev);
    free(s->lens);
    memset(s, 0, sizeof *s);
}

void mn_bn_arrays_copy(const mn_bn_arrays *s, float *saved, int restore)
{
    for (int i = 0; i < s->n; saved += s->lens[i++]) {
#ifdef GPU
        if (mn_base_gpu() >= 0) {
            if (restore) mn_base_push(s->dev[i], saved, s->lens[i]);
            else mn_base_pull(s->dev[i], saved, s->lens[i]);
            continue;
        }
#endif
        if (restore) memcpy(s->host[i], saved, s->lens[i] * sizeof(float));
        else memcpy(saved, s->host[i], s->lens[i] * sizeof(float));
    }
}

/* CPU runs only: the ways change hands after each pass's forward, which the
 * base's forward hook reports on the CPU alone. */
mn_bn_ways *mn_bn_ways_new(const mn_bn_arrays *s, int ways)
{
    mn_bn_ways *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->ways = ways;
    w->s = s;
    w->slots = malloc(((size_t)ways * w->s->total + 1) * sizeof(float));
    w->marked = malloc(((size_t)ways * w->s->total + 1) * sizeof(float));
    if (!w->slots || !w->marked) {
        mn_bn_ways_free(w);
        return NULL;
    }
    mn_bn_ways_spread(w);
    return w;
}

/* The network's statistics to (out = 1) or from way k's slot. */
static void copy_way(mn_bn_ways *w, int k, int out)
{
    const mn_bn_arrays *s = w->s;
    float *slot = w->slots + (size_t)k * w->s->total;
    for (int i = 0; i < s->n; slot += s->lens[i], ++i)
        memcpy(out ? slot : s->host[i], out ? s->host[i] : slot, s->lens[i] * sizeof(float));
}

void mn_bn_ways_pass(mn_bn_ways *w)
{
    int k = (int)(w->pass++ % (unsigned long)w->ways);
    copy_way(w, k, 1);
    copy_way(w, (k + 1) % w->ways, 0);
}

void mn_bn_ways_fold(mn_bn_ways *w)
{
    const mn_bn_arrays *s = w->s;
    size_t off = 0;
    for (int i = 0; i < s->n; off += s->lens[i], ++i)
        for (size_t j = 0; j < s->lens[i]; ++j) {
            float sum = s->host[i][j];
            for (int k = 1; k < w->ways; ++k) sum += w->slots[(size_t)k * w->s->total + off + j];
            s->host[i][j] = sum / (float)w->ways;
        }
}

void mn_bn_ways_spread(mn_bn_ways *w)
{
    for (int k = 0; k < w->ways; ++k) copy_way(w, k, 1);
}

void mn_bn_ways_mark(mn_bn_ways *w) { memcpy(w->marked, w->slots, (size_t)w->ways * w->s->total * sizeof(float)); }
void mn_bn_ways_rewind(mn_bn_ways *w) { memcpy(w->slots, w->marked, (size_t)w->ways * w->s->total * sizeof(float)); }

void mn_bn_ways_free(mn_bn_ways *w)
{
    if (!w) return;
    free(w->slots);
    free(w->marked);
    free(w);
}
