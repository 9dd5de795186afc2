/* The GPU orders (mn_gpu_order.h) on the host model of streams and events
 * (mn_queue.h): queues are threads that pause a random time before each
 * task, so that whatever is not ordered by a wait races. Each order runs
 * many steps and must give exactly the result of doing the same work one
 * step after another; each of its waits left out (the order's skip bits)
 * must give a wrong result within the runs, so no wait is decoration and
 * the test would see one missing. No MPI, no CUDA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "train/optimizer/mn_gpu_order.h"
#include "mn_expect.h"

#define L 256       /* floats a bucket or buffer */
#define STEPS 24
#define DELAY 300   /* us: the most a queue pauses before a task */

/* What a rank computes at step s for element i of part k, and the mean with
 * a peer whose gradient is twice it: 1.5 times it, exactly. */
static float grad(int s, int k, int i) { return (float)(s * 1000 + k * 300 + i); }

/* Writes element by element, pausing, so that a read racing it sees a mix. */
static void slow_fill(float *p, float v0, int n)
{
    for (int i = 0; i < n; ++i) {
        p[i] = v0 + (float)i;
        if (i % 64 == 63) usleep(20);
    }
}

/* -- overlap: K buckets a step, backward from the last ------------------ */
#define K 4
typedef struct {
    float bucket[K][L], mean[K][L];
    int step, wrong;
} ov_state;
typedef struct { ov_state *st; int k; } ov_arg;

static void ov_backward(void *a, void *stream)
{
    (void)stream;
    ov_arg *x = a;
    slow_fill(x->st->bucket[x->k], grad(x->st->step, x->k, 0), L);
}
static void ov_reduce(void *a, void *stream)
{
    (void)stream;
    ov_arg *x = a;
    for (int i = 0; i < L; ++i) {   /* the network: slower than a layer's backward */
        x->st->mean[x->k][i] = x->st->bucket[x->k][i] * 1.5f;
        if (i % 64 == 63) usleep(300);
    }
}
static void ov_update(void *a, void *stream)
{
    (void)stream;
    ov_state *st = a;
    for (int k = 0; k < K; ++k)
        for (int i = 0; i < L; ++i)
            if (st->mean[k][i] != grad(st->step, k, i) * 1.5f) { ++st->wrong; return; }
}
static void ov_next(void *a, void *stream) { (void)stream; ++((ov_state *)a)->step; }

/* The count of steps whose update saw a wrong mean. */
static int run_overlap(unsigned seed, unsigned skip)
{
    mn_queue *base = mn_queue_host(seed, DELAY), *comm = mn_queue_host(seed * 7 + 1, DELAY);
    ov_state *st = calloc(1, sizeof *st);
    ov_arg args[K];
    mn_overlap_order o;
    if (!base || !comm || !st || mn_overlap_order_init(&o, base, comm, K) != MN_OK) { EXPECT(0, "overlap setup"); exit(1); }
    o.skip = skip;
    for (int k = 0; k < K; ++k) args[k] = (ov_arg){st, k};
    for (int s = 0; s < STEPS; ++s) {
        for (int k = K - 1; k >= 0; --k) {
            mn_queue_run(base, ov_backward, &args[k]);
            mn_overlap_order_bucket(&o, k, ov_reduce, &args[k]);
        }
        mn_overlap_order_join(&o);
        mn_queue_run(base, ov_update, st);
        mn_queue_run(base, ov_next, st);
    }
    mn_queue_sync(base);
    mn_queue_sync(comm);
    int wrong = st->wrong;
    mn_overlap_order_free(&o);
    mn_queue_free(base);
    mn_queue_free(comm);
    free(st);
    return wrong;
}

/* -- overlap on the staged route: each bucket copied down on the copy
 * queue once backward has made it, averaged by the host once the copy is
 * done; the mean goes back up on base after the host has every bucket. */
typedef struct { ov_state *st; float (*host)[L]; int k; } sg_arg;

static void sg_copy_down(void *a, void *stream)
{
    (void)stream;
    sg_arg *x = a;
    for (int i = 0; i < L; ++i) {
        x->host[x->k][i] = x->st->bucket[x->k][i];
        if (i % 64 == 63) usleep(300);
    }
}

/* The count of buckets the host averaged from a copy not of this step. */
static int run_staged(unsigned seed, unsigned skip)
{
    mn_queue *base = mn_queue_host(seed, DELAY), *copy = mn_queue_host(seed * 7 + 1, DELAY);
    ov_state *st = calloc(1, sizeof *st);
    float (*host)[L] = calloc(K, sizeof *host);
    sg_arg args[K];
    ov_arg bargs[K];
    mn_overlap_order o;
    if (!base || !copy || !st || !host || mn_overlap_order_init(&o, base, copy, K) != MN_OK) {
        EXPECT(0, "staged setup");
        exit(1);
    }
    o.skip = skip;
    int wrong = 0;
    for (int k = 0; k < K; ++k) {
        args[k] = (sg_arg){st, host, k};
        bargs[k] = (ov_arg){st, k};
    }
    for (int s = 0; s < STEPS; ++s) {
        for (int k = K - 1; k >= 0; --k) {
            mn_queue_run(base, ov_backward, &bargs[k]);
            mn_overlap_order_bucket(&o, k, sg_copy_down, &args[k]);
        }
        for (int k = K - 1; k >= 0; --k) {   /* the averaging thread, bucket by bucket */
            mn_overlap_order_sent(&o, k);
            for (int i = 0; i < L; ++i)
                if (host[k][i] != grad(s, k, i)) { ++wrong; break; }
        }
        mn_queue_run(base, ov_next, st);   /* the mean goes up on base, in order: no mark */
    }
    mn_queue_sync(base);
    mn_queue_sync(copy);
    mn_overlap_order_free(&o);
    mn_queue_free(base);
    mn_queue_free(copy);
    free(host);
    free(st);
    return wrong;
}

/* -- overlap on the device route: the averaging thread takes bucket 0
 * after base got later work (here one that waits for bucket 0's mean, as
 * nothing real does, so that a take waiting for it never ends): the take
 * waits for the handover's mark alone. late_mark records the mark at the
 * take instead (the thread recording "Darknet's work so far" when it
 * reaches the bucket): base's later work then holds the mean up. */
typedef struct { ov_state *st; volatile int reduced, held_up; } dv_state;

static void dv_reduce(void *a, void *stream)
{
    dv_state *d = a;
    ov_arg x = {d->st, 0};
    ov_reduce(&x, stream);
    d->reduced = 1;
}
static void dv_later(void *a, void *stream)   /* gives up after 5 s */
{
    (void)stream;
    dv_state *d = a;
    for (int i = 0; i < 5000 && !d->reduced; ++i) usleep(1000);
    d->held_up = !d->reduced;
}

/* 1 when the mean was wrong or held up behind base's later work. */
static int run_device(unsigned seed, int late_mark)
{
    mn_queue *base = mn_queue_host(seed, DELAY), *comm = mn_queue_host(seed * 7 + 1, DELAY);
    dv_state d = {calloc(1, sizeof *d.st), 0, 0};
    ov_arg x = {d.st, 0};
    mn_overlap_order o;
    if (!base || !comm || !d.st || mn_overlap_order_init(&o, base, comm, 1) != MN_OK) { EXPECT(0, "device setup"); exit(1); }
    mn_queue_run(base, ov_backward, &x);
    if (!late_mark) mn_overlap_order_handed(&o, 0);
    mn_queue_run(base, dv_later, &d);
    if (late_mark) mn_overlap_order_handed(&o, 0);
    mn_overlap_order_take(&o, 0);
    mn_queue_run(comm, dv_reduce, &d);
    mn_queue_sync(base);
    mn_queue_sync(comm);
    int bad = d.held_up;
    for (int i = 0; i < L; ++i) bad |= d.st->mean[0][i] != grad(0, 0, i) * 1.5f;
    mn_overlap_order_free(&o);
    mn_queue_free(base);
    mn_queue_free(comm);
    free(d.st);
    return bad;
}

/* -- double buffering: step t's mean applied at step t+1 ----------------- */
typedef struct {
    float arena[L], buf[2][L];
    int step, wrong, applied;
} db_state;
typedef struct { db_state *st; int b; } db_arg;

static void db_backward(void *a, void *stream) { (void)stream; db_state *st = a; slow_fill(st->arena, grad(st->step, 0, 0), L); }
static void db_copy(void *a, void *stream)
{
    (void)stream;
    db_arg *x = a;
    for (int i = 0; i < L; ++i) {
        x->st->buf[x->b][i] = x->st->arena[i];
        if (i % 64 == 63) usleep(20);
    }
}
static void db_reduce(void *a, void *stream)
{
    (void)stream;
    db_arg *x = a;
    for (int i = 0; i < L; ++i) {   /* the network: slower than a step's compute */
        x->st->buf[x->b][i] *= 1.5f;
        if (i % 64 == 63) usleep(1000);
    }
}
typedef struct { db_state *st; int b; } db_take;
static void db_update(void *a, void *stream)
{
    (void)stream;
    db_take *x = a;
    db_state *st = x->st;
    ++st->applied;
    for (int i = 0; i < L; ++i)
        if (st->buf[x->b][i] != grad(st->step - 1, 0, i) * 1.5f) { ++st->wrong; return; }
}
static void db_next(void *a, void *stream) { (void)stream; ++((db_state *)a)->step; }

/* resume: a checkpoint's mean (step -1's) put into buffer 0 first, as
 * mn_dbuf_gpu_set does: the first step applies it. */
static int run_dbuf(unsigned seed, unsigned skip, int resume, int *applied)
{
    mn_queue *base = mn_queue_host(seed, DELAY), *comm = mn_queue_host(seed * 7 + 1, DELAY);
    db_state *st = calloc(1, sizeof *st);
    db_arg args[2];
    db_take takes[STEPS];
    mn_dbuf_order o;
    if (!base || !comm || !st || mn_dbuf_order_init(&o, base, comm) != MN_OK) { EXPECT(0, "dbuf setup"); exit(1); }
    o.skip = skip;
    void *const pargs[2] = {&args[0], &args[1]};
    for (int b = 0; b < 2; ++b) args[b] = (db_arg){st, b};
    if (resume) {
        for (int i = 0; i < L; ++i) st->buf[0][i] = grad(-1, 0, i) * 1.5f;
        mn_dbuf_order_resume(&o);
    }
    for (int s = 0; s < STEPS; ++s) {
        mn_queue_run(base, db_backward, st);
        mn_dbuf_order_send(&o, db_copy, db_reduce, pargs);
        int b = mn_dbuf_order_take(&o);
        takes[s] = (db_take){st, b};
        if (b >= 0) mn_queue_run(base, db_update, &takes[s]);
        mn_queue_run(base, db_next, st);
    }
    mn_queue_sync(base);
    mn_queue_sync(comm);
    int wrong = st->wrong;
    *applied = st->applied;
    mn_dbuf_order_free(&o);
    mn_queue_free(base);
    mn_queue_free(comm);
    free(st);
    return wrong;
}

/* -- rescue: a slot read is always one whole update, the newest copied --- */
typedef struct {
    float state[L], host[2][L];
    int step;
} rs_state;
typedef struct { rs_state *st; int b; } rs_arg;

static void rs_update(void *a, void *stream) { (void)stream; rs_state *st = a; ++st->step; slow_fill(st->state, grad(st->step, 0, 0), L); }
static void rs_copy(void *a, void *stream)
{
    (void)stream;
    rs_arg *x = a;
    for (int i = 0; i < L; ++i) {
        x->st->host[x->b][i] = x->st->state[i];
        if (i % 64 == 63) usleep(20);
    }
}

/* Holds a queue until *open is set. */
static void rs_gate(void *a, void *stream)
{
    (void)stream;
    volatile int *open = a;
    while (!*open) usleep(100);
}

/* Whether slot b holds update `want` whole. */
static int rs_holds(const rs_state *st, int b, int want)
{
    int whole = st->host[b][0] == grad(want, 0, 0);
    for (int i = 1; i < L; ++i) whole &= st->host[b][i] == st->host[b][0] + (float)i;
    return whole;
}

/* The count of reads that found a slot not one whole update, or not the
 * newest copied: read as a rescue thread may at any time, here once the next
 * update is issued (which the copy must not see), first without waiting
 * (the last copy, or the one before if the last is not done), then waiting.
 * Every third step the host also writes the state outside the queues after
 * the copy was issued (statistics pushed for a save), which the copy must
 * not see either. */
static int run_rescue(unsigned seed, unsigned skip)
{
    mn_queue *base = mn_queue_host(seed, DELAY), *copy = mn_queue_host(seed * 7 + 1, DELAY);
    rs_state *st = calloc(1, sizeof *st);
    mn_rescue_order o;
    if (!base || !copy || !st || mn_rescue_order_init(&o, base, copy) != MN_OK) { EXPECT(0, "rescue setup"); exit(1); }
    o.skip = skip;
    rs_arg args[2] = {{st, 0}, {st, 1}};
    void *const slots[2] = {&args[0], &args[1]};
    int bad = 0, copied_step[2] = {0, 0};
    volatile int open = 1;
    /* Without the drain, the copy is held until the host's write, made
     * once the update is done, is done too: the race the drain closes is
     * then lost every time, however the machine schedules the threads. */
    const int hold = (skip & MN_ORDER_COPY_DRAINED) != 0;
    EXPECT(mn_rescue_order_read(&o, 0) == -1, "rescue: a slot read before any copy");
    for (int s = 1; s <= STEPS; ++s) {
        mn_rescue_order_before_update(&o);
        mn_queue_run(base, rs_update, st);
        if (s >= 2) {
            int b = mn_rescue_order_read(&o, 0);
            if (b >= 0 && (copied_step[b] < s - 2 || !rs_holds(st, b, copied_step[b]))) ++bad;
            b = mn_rescue_order_read(&o, -1);
            if (b < 0 || copied_step[b] != s - 1 || !rs_holds(st, b, s - 1)) ++bad;
        }
        if (s % 3 == 0 && hold) {
            open = 0;
            mn_queue_run(copy, rs_gate, (void *)&open);
        }
        int b = mn_rescue_order_after_update(&o, rs_copy, slots);
        copied_step[b] = s;
        if (s % 3 == 0) {
            if (hold) mn_queue_sync(base);   /* the write after the update, as the drain would order it */
            mn_rescue_order_drain(&o);
            slow_fill(st->state, grad(s, 1, 0), L);
            open = 1;
        }
    }
    mn_queue_sync(base);
    mn_queue_sync(copy);
    mn_rescue_order_free(&o);
    mn_queue_free(base);
    mn_queue_free(copy);
    free(st);
    return bad;
}

/* Each order: SEEDS runs with every wait right (whatever the timing), then
 * up to TRIES with each wait left out, which must go wrong in one (almost
 * always the first; a loaded machine's descheduling only adds races). */
#define SEEDS 4
#define TRIES 16
int main(void)
{
    int wrong = 0, applied = 0, a;
    for (unsigned s = 1; s <= SEEDS; ++s) wrong += run_overlap(s, 0);
    EXPECT(wrong == 0, "overlap: %d of %d steps' updates saw a wrong mean", wrong, SEEDS * STEPS);
    const unsigned ov_waits[] = {MN_ORDER_BUCKET_READY, MN_ORDER_BUCKETS_REDUCED};
    for (int w = 0; w < 2; ++w) {
        int seen = 0;
        for (unsigned s = 1; s <= TRIES && !seen; ++s) seen = run_overlap(s, ov_waits[w]);
        EXPECT(seen > 0, "overlap without wait %u: every update still right (the test cannot see it)", ov_waits[w]);
    }
    wrong = 0;
    for (unsigned s = 1; s <= SEEDS; ++s) wrong += run_staged(s, 0);
    EXPECT(wrong == 0, "staged overlap: %d of %d buckets averaged from a wrong copy", wrong, SEEDS * STEPS * K);
    const unsigned sg_waits[] = {MN_ORDER_BUCKET_READY, MN_ORDER_BUCKET_SENT};
    for (int w = 0; w < 2; ++w) {
        int seen = 0;
        for (unsigned s = 1; s <= TRIES && !seen; ++s) seen = run_staged(s, sg_waits[w]);
        EXPECT(seen > 0, "staged overlap without wait %u: every bucket still right", sg_waits[w]);
    }
    wrong = 0;
    for (unsigned s = 1; s <= SEEDS; ++s) wrong += run_device(s, 0);
    EXPECT(wrong == 0, "device overlap: %d of %d buckets taken late waited for later work or saw a wrong gradient",
           wrong, SEEDS);
    EXPECT(run_device(1, 1), "device overlap with the mark recorded at the take: not held up (the test cannot see it)");
    wrong = 0;
    for (unsigned s = 1; s <= SEEDS; ++s) { wrong += run_dbuf(s, 0, 0, &a); applied += a; }
    EXPECT(wrong == 0 && applied == SEEDS * (STEPS - 1), "double buffering: %d wrong means of %d applied (want %d)",
           wrong, applied, SEEDS * (STEPS - 1));
    wrong = applied = 0;
    for (unsigned s = 1; s <= SEEDS; ++s) { wrong += run_dbuf(s, 0, 1, &a); applied += a; }
    EXPECT(wrong == 0 && applied == SEEDS * STEPS, "double buffering resumed with a mean in buffer 0: %d wrong means of "
           "%d applied (want %d)", wrong, applied, SEEDS * STEPS);
    const unsigned db_waits[] = {MN_ORDER_BUFFER_FILLED, MN_ORDER_MEAN_REDUCED};
    for (int w = 0; w < 2; ++w) {
        int seen = 0;
        for (unsigned s = 1; s <= TRIES && !seen; ++s) seen = run_dbuf(s, db_waits[w], 0, &a);
        EXPECT(seen > 0, "double buffering without wait %u: every mean still right", db_waits[w]);
    }
    wrong = 0;
    for (unsigned s = 1; s <= SEEDS; ++s) wrong += run_rescue(s, 0);
    EXPECT(wrong == 0, "rescue: %d of %d reads found a host copy not of the last update", wrong, SEEDS * (STEPS - 1));
    const unsigned rs_waits[] = {MN_ORDER_UPDATE_DONE, MN_ORDER_COPY_READ, MN_ORDER_COPY_DRAINED};
    for (int w = 0; w < 3; ++w) {
        int seen = 0;
        for (unsigned s = 1; s <= TRIES && !seen; ++s) seen = run_rescue(s, rs_waits[w]);
        EXPECT(seen > 0, "rescue without wait %u: every read still right", rs_waits[w]);
    }
    if (failures) { fprintf(stderr, "test_queue: %d FAILED\n", failures); return 1; }
    printf("test_queue: overlap (%d buckets; reduced on the queue, copied down for the host, or taken late by the "
           "device route's thread), double buffering and "
           "the rescue copy (double buffering resumed too), %d steps x %d seeds on host queues with random pauses: right with every wait, wrong without "
           "each of their 9 waits: OK\n", K, STEPS, SEEDS);
    return 0;
}
