/* overlap=1: the gradient arena is cut into buckets from its end, where the
 * last layers' arrays lie, to its start; backward finishes the layers in
 * that order, so bucket k is final as soon as backward has passed the layer
 * owning its first float. Each bucket then goes to a thread with its own
 * communicator (as double buffering's), which averages the buckets one after
 * another, in index order on every rank, while the main thread goes on with
 * backward. The update waits for the last bucket: nothing is stale.
 *
 * Bit for bit the blocking path: a bucket is a run of whole units, and a unit
 * is exactly one collective of the blocking path: a piece of the fused arena
 * (c->piece_floats floats, twice that in float16, counted from the arena's
 * start, as mn_mean_by_pieces cuts it), or one array for algorithms with a
 * mean_grad of their own (naive). Each element is therefore summed by the
 * same call with the same count and neighbours as without overlap.
 *
 * A GPU run (mn_overlap_gpu) hands the buckets over in the same order. On
 * the staged route the caller copies each bucket down into the arena as it
 * is handed over, and the thread waits for that copy before averaging it:
 * the host's allreduce sees the same floats as without overlap. On the
 * device route the buckets are whole arrays, each averaged where it is:
 * bucket k is marked complete on Darknet's stream as it is handed over,
 * and the thread's stream waits for that mark alone (mn_overlap_order),
 * not for all Darknet queued by the time the thread reaches the bucket (the
 * later layers' backward), which would hold each bucket's allreduce behind
 * them. */
#include <math.h>
#include <pthread.h>
#include <limits.h>
#include <stdlib.h>
#include "train/optimizer/mn_optimizer.h"
#include "coll/mn_coll.h"
#include "train/optimizer/mn_overlap.h"
#include "train/optimizer/mn_gpu_order.h"
#include "transport/mn_gpu.h"
#include "transport/mn_queue.h"
#include "transport/mn_shm.h"

typedef struct {
    int a0, a1;          /* per-array units: arrays [a0, a1) */
    size_t off, len;     /* floats [off, off+len) of the arena */
    int ready;           /* final once backward has finished this layer */
    double tq, t0, t1;   /* handed over, its allreduce's start and end */
} bucket;

struct mn_overlap {
    mn_comm *comm;       /* the thread's */
    float **arrays;      /* the optimizer's */
    const size_t *lens;
    float *base;         /* the arena's first float */
    int per_array;
    mn_overlap_gpu gpu;  /* zero in a CPU run */
    bucket *b;
    int nb;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int issued, done, quit, started;   /* buckets handed over / averaged this step */
    mn_queue *base_q, *comm_q;         /* the device route: Darknet's stream and the thread's */
    mn_overlap_order order;            /* their marks, where base_q is set */
};

static void average(mn_overlap *ov, bucket *k)
{
    mn_status s;
    if (ov->gpu.ready) ov->gpu.ready(ov->gpu.arg, (int)(k - ov->b));
    if (ov->base_q) mn_overlap_order_take(&ov->order, (int)(k - ov->b));
    if (ov->gpu.dev) {
        s = mn_comm_mean_grad_device(ov->comm, ov->gpu.dev + k->a0, ov->lens + k->a0, k->a1 - k->a0);
    } else if (ov->per_array) {
        s = mn_comm_mean_grad(ov->comm, ov->arrays + k->a0, ov->lens + k->a0, k->a1 - k->a0);
    } else {
        float *p = ov->base + k->off;
        s = mn_comm_mean_grad(ov->comm, &p, &k->len, 1);
    }
    if (s != MN_OK) mn_abort(ov->comm, "gradient allreduce failed (overlap)");
}

static void *run(void *arg)
{
    mn_overlap *ov = arg;
    pthread_mutex_lock(&ov->mu);
    for (;;) {
        while (ov->done == ov->issued && !ov->quit) pthread_cond_wait(&ov->cv, &ov->mu);
        if (ov->quit) break;
        bucket *k = &ov->b[ov->done];
        pthread_mutex_unlock(&ov->mu);
        k->t0 = mn_now();
        average(ov, k);
        k->t1 = mn_now();
        pthread_mutex_lock(&ov->mu);
        ++ov->done;
        pthread_cond_broadcast(&ov->cv);
    }
    pthread_mutex_unlock(&ov->mu);
    return NULL;
}

/* The buckets, from the arena's end down: units are added to a bucket until
 * it holds want floats. Returns the count, or -1 out of memory. */
static int cut(mn_overlap *ov, const mn_comm *c, const size_t *lens, const int *layer, int n, size_t want)
{
    size_t total = 0, unit = c->piece_floats > INT_MAX ? INT_MAX : c->piece_floats;
    for (int i = 0; i < n; ++i) total += lens[i];
    if (unit == 0) unit = 1;
    if (mn_comm_half(c)) unit = unit > INT_MAX / 2 ? INT_MAX : 2 * unit;
    size_t units = ov->per_array ? (size_t)n : (total + unit - 1) / unit;
    ov->b = calloc(units + 1, sizeof *ov->b);
    if (!ov->b) return -1;
    int nb = 0;
    size_t u = units, end = total;   /* the buckets so far cover floats [end, total) */
    while (u > 0) {
        bucket *k = &ov->b[nb++];
        size_t hi = u, floats = 0;
        do {
            --u;
            floats += ov->per_array ? lens[u] : (u + 1 == units ? total - u * unit : unit);
        } while (u > 0 && floats < want);
        k->off = end -= floats;
        k->len = floats;
        if (ov->per_array) {
            k->a0 = (int)u;
            k->a1 = (int)hi;
            k->ready = layer[u];
        } else {
            int a = 0;   /* the array holding the bucket's first float */
            for (size_t at = 0; a < n && at + lens[a] <= k->off; at += lens[a], ++a) {}
            k->ready = layer[a < n ? a : n - 1];
        }
    }
    return nb;
}

#ifdef GPU
/* The device route's queues and marks; the thread's communicator then
 * leaves the wait for Darknet's work to them (c->device_ordered). */
static mn_status device_order(mn_overlap *ov)
{
    ov->base_q = mn_queue_device(ov->comm, mn_base_stream());
    ov->comm_q = mn_queue_device(ov->comm, mn_comm_device_stream(ov->comm));
    if (!ov->base_q || !ov->comm_q) return MN_ERR_NOMEM;
    MN_CHECK(mn_overlap_order_init(&ov->order, ov->base_q, ov->comm_q, ov->nb));
    ov->comm->device_ordered = 1;
    return MN_OK;
}
#endif

mn_status mn_overlap_start(mn_comm *c, float **arrays, const size_t *lens, const int *layer, int n, double bucket_mb,
                           const mn_overlap_gpu *gpu, mn_overlap **out)
{
    *out = NULL;
    mn_status st;
    mn_comm *tc = mn_comm_for_thread(c, "overlap=1", &st);
    if (st != MN_OK) return st;
    mn_overlap *ov = calloc(1, sizeof *ov);
    if (ov) {
        ov->comm = tc;
        ov->arrays = arrays;
        ov->lens = lens;
        ov->base = arrays[0];
        if (gpu) ov->gpu = *gpu;
        ov->per_array = mn_comm_by_array(c) || ov->gpu.dev;
        ov->nb = n > 0 ? cut(ov, c, lens, layer, n, (size_t)(bucket_mb * 1048576.0 / sizeof(float))) : 0;
#ifdef GPU
        if (ov->nb > 0 && ov->gpu.dev && mn_comm_device_stream(ov->comm) && device_order(ov) != MN_OK) ov->nb = -1;
#endif
    } else {
        mn_comm_free(tc);
    }
    st = mn_agree(c, ov && ov->nb >= 0 ? MN_OK : MN_ERR_NOMEM);
    if (st == MN_OK) {
        /* The buckets are reduced in place in c's arena, whose node-shared
         * window the thread's shared-memory allreduce must read. */
        mn_comm_arena_borrow(ov->comm, c);
        pthread_mutex_init(&ov->mu, NULL);
        pthread_cond_init(&ov->cv, NULL);
        ov->started = pthread_create(&ov->thread, NULL, run, ov) == 0;
        if (!ov->started) { mn_error(c, "could not start the overlap thread"); st = MN_ERR_NOMEM; }
    }
    st = mn_agree(c, st);
    if (st != MN_OK) {
        mn_overlap_stop(ov);
        return st;
    }
    *out = ov;
    return MN_OK;
}

static int issue(mn_overlap *ov, int upto, int poison)
{
    pthread_mutex_lock(&ov->mu);
    int from = ov->issued;
    pthread_mutex_unlock(&ov->mu);
    if (upto <= from) return 0;
    /* A NaN in the first float makes the whole mean NaN-checked as bad on
     * every rank; it lies in the last bucket. */
    if (poison && upto == ov->nb && !ov->gpu.handed) ov->base[0] = NAN;
    double now = mn_now();
    for (int k = from; k < upto; ++k) {
        ov->b[k].tq = now;
        if (ov->gpu.handed) ov->gpu.handed(ov->gpu.arg, k, ov->b[k].off, ov->b[k].len, poison && k == ov->nb - 1);
        if (ov->base_q) mn_overlap_order_handed(&ov->order, k);
    }
    pthread_mutex_lock(&ov->mu);
    ov->issued = upto;
    pthread_cond_broadcast(&ov->cv);
    pthread_mutex_unlock(&ov->mu);
    return upto - from;
}

int mn_overlap_ready(mn_overlap *ov, int layer, int poison)
{
    int upto = 0;
    while (upto < ov->nb && ov->b[upto].ready >= layer) ++upto;
    return issue(ov, upto, poison);
}

void mn_overlap_finish(mn_overlap *ov, int poison)
{
    (void)issue(ov, ov->nb, poison);
    pthread_mutex_lock(&ov->mu);
    while (ov->done < ov->nb) pthread_cond_wait(&ov->cv, &ov->mu);
    ov->issued = ov->done = 0;
    pthread_mutex_unlock(&ov->mu);
}

int mn_overlap_buckets(const mn_overlap *ov)
{
    return ov->nb;
}

void mn_overlap_bucket(const mn_overlap *ov, int k, size_t *floats, double *tq, double *t0, double *t1)
{
    const bucket *b = &ov->b[k];
    *floats = b->len;
    *tq = b->tq;
    *t0 = b->t0;
    *t1 = b->t1;
}

void mn_overlap_stop(mn_overlap *ov)
{
    if (!ov) return;
    if (ov->started) {
        pthread_mutex_lock(&ov->mu);
        while (ov->done < ov->issued) pthread_cond_wait(&ov->cv, &ov->mu);
        ov->quit = 1;
        pthread_cond_broadcast(&ov->cv);
        pthread_mutex_unlock(&ov->mu);
        pthread_join(ov->thread, NULL);
        pthread_mutex_destroy(&ov->mu);
        pthread_cond_destroy(&ov->cv);
    }
    mn_overlap_order_free(&ov->order);   /* all zero where the route has none */
    mn_queue_free(ov->base_q);
    mn_queue_free(ov->comm_q);
    mn_comm_free(ov->comm);
    free(ov->b);
    free(ov);
}
