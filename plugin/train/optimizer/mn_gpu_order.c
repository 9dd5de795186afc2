/* The GPU orders (mn_gpu_order.h): each wait, and why it is there. */
#include <stdlib.h>
#include <unistd.h>
#include "train/optimizer/mn_gpu_order.h"
#include "transport/mn_queue.h"

static int has(unsigned skip, unsigned wait) { return !(skip & wait); }

/* overlap=1. A bucket is the gradient of some layers, which backward
 * finishes on the base queue: the communication queue must not read it
 * before (ready[k]), a host thread must not average what it copied down
 * before the copy is done (sent[k]), and the update must not read the means
 * before the communication queue wrote them (reduced). Each bucket has its
 * own marks, so that a later bucket's record does not move an earlier one's
 * wait. */
mn_status mn_overlap_order_init(mn_overlap_order *o, mn_queue *base, mn_queue *comm, int buckets)
{
    *o = (mn_overlap_order){base, comm, calloc((size_t)buckets + 1, sizeof *o->ready),
                            calloc((size_t)buckets + 1, sizeof *o->sent), mn_mark_new(comm), buckets, 0};
    int ok = o->ready && o->sent && o->reduced;
    for (int k = 0; ok && k < buckets; ++k)
        ok = (o->ready[k] = mn_mark_new(base)) != NULL && (o->sent[k] = mn_mark_new(comm)) != NULL;
    if (ok) return MN_OK;
    mn_overlap_order_free(o);
    return MN_ERR_NOMEM;
}

void mn_overlap_order_handed(mn_overlap_order *o, int k)
{
    mn_mark_record(o->ready[k], o->base);
}

/* comm waits for the mark handed recorded, not for what base got since
 * (the later layers' backward). */
void mn_overlap_order_take(mn_overlap_order *o, int k)
{
    if (has(o->skip, MN_ORDER_BUCKET_READY)) mn_queue_wait(o->comm, o->ready[k]);
}

void mn_overlap_order_bucket(mn_overlap_order *o, int k, mn_task_fn task, void *arg)
{
    mn_overlap_order_handed(o, k);
    mn_overlap_order_take(o, k);
    mn_queue_run(o->comm, task, arg);
    mn_mark_record(o->sent[k], o->comm);
}

void mn_overlap_order_sent(mn_overlap_order *o, int k)
{
    if (has(o->skip, MN_ORDER_BUCKET_SENT)) mn_mark_sync(o->sent[k]);
}

void mn_overlap_order_join(mn_overlap_order *o)
{
    mn_mark_record(o->reduced, o->comm);
    if (has(o->skip, MN_ORDER_BUCKETS_REDUCED)) mn_queue_wait(o->base, o->reduced);
}

void mn_overlap_order_free(mn_overlap_order *o)
{
    for (int k = 0; k < o->buckets; ++k) {
        if (o->ready) mn_mark_free(o->ready[k]);
        if (o->sent) mn_mark_free(o->sent[k]);
    }
    free(o->ready);
    free(o->sent);
    mn_mark_free(o->reduced);
    *o = (mn_overlap_order){0};
}

/* double_buffering=1. Step t's copy into buffer b is on base, after the
 * step's backward, so it needs no mark; the reduction on comm waits for
 * that copy (filled[b]); the update of step t+1 waits for step t's
 * reduction (reduced[b]). The copy of step t+2 into b then follows that
 * wait on base. */
mn_status mn_dbuf_order_init(mn_dbuf_order *o, mn_queue *base, mn_queue *comm)
{
    *o = (mn_dbuf_order){base, comm, {mn_mark_new(base), mn_mark_new(base)}, {mn_mark_new(comm), mn_mark_new(comm)}, 0, 0};
    if (o->filled[0] && o->filled[1] && o->reduced[0] && o->reduced[1]) return MN_OK;
    mn_dbuf_order_free(o);
    return MN_ERR_NOMEM;
}

int mn_dbuf_order_send(mn_dbuf_order *o, mn_task_fn copy, mn_task_fn reduce, void *const args[2])
{
    int b = (int)(o->steps++ % 2);
    mn_queue_run(o->base, copy, args[b]);
    mn_mark_record(o->filled[b], o->base);
    if (has(o->skip, MN_ORDER_BUFFER_FILLED)) mn_queue_wait(o->comm, o->filled[b]);
    mn_queue_run(o->comm, reduce, args[b]);
    mn_mark_record(o->reduced[b], o->comm);
    return b;
}

int mn_dbuf_order_take(mn_dbuf_order *o)
{
    if (o->steps < 2) return -1;
    int b = (int)((o->steps - 2) % 2);
    if (has(o->skip, MN_ORDER_MEAN_REDUCED)) mn_queue_wait(o->base, o->reduced[b]);
    return b;
}

void mn_dbuf_order_resume(mn_dbuf_order *o)
{
    o->steps = 1;   /* as if buffer 0 had been sent: the next send fills 1, the next take takes 0 */
}

void mn_dbuf_order_free(mn_dbuf_order *o)
{
    for (int b = 0; b < 2; ++b) {
        mn_mark_free(o->filled[b]);
        mn_mark_free(o->reduced[b]);
    }
    *o = (mn_dbuf_order){0};
}

/* rescue=1. The copy reads what the update writes: it waits for the update
 * (updated), and the next writer waits for the copy (copied: on base for
 * the next step, on the host for a write outside a step, drained), so a
 * slot is never of half an update. A slot is written again two copies later, after
 * base waited for the copy in between, which the copy queue ran after it. */
mn_status mn_rescue_order_init(mn_rescue_order *o, mn_queue *base, mn_queue *copy)
{
    *o = (mn_rescue_order){base, copy, mn_mark_new(base), {mn_mark_new(copy), mn_mark_new(copy)}, 0, 0};
    if (o->updated && o->copied[0] && o->copied[1]) return MN_OK;
    mn_rescue_order_free(o);
    return MN_ERR_NOMEM;
}

void mn_rescue_order_before_update(mn_rescue_order *o)
{
    if (o->copies && has(o->skip, MN_ORDER_COPY_READ)) mn_queue_wait(o->base, o->copied[(o->copies - 1) % 2]);
}

void mn_rescue_order_drain(mn_rescue_order *o)
{
    if (o->copies && has(o->skip, MN_ORDER_COPY_DRAINED)) mn_mark_sync(o->copied[(o->copies - 1) % 2]);
}

int mn_rescue_order_after_update(mn_rescue_order *o, mn_task_fn copy, void *const args[2])
{
    int b = (int)(o->copies++ % 2);
    mn_mark_record(o->updated, o->base);
    if (has(o->skip, MN_ORDER_UPDATE_DONE)) mn_queue_wait(o->copy, o->updated);
    mn_queue_run(o->copy, copy, args[b]);
    mn_mark_record(o->copied[b], o->copy);
    return b;
}

/* Host memory only: a copy stuck behind a hung collective costs one step,
 * not the rescue. */
int mn_rescue_order_read(mn_rescue_order *o, long wait_us)
{
    if (!o->copies) return -1;
    int last = (int)((o->copies - 1) % 2);
    if (wait_us < 0) mn_mark_sync(o->copied[last]);
    for (long waited = 0; !mn_mark_done(o->copied[last]); waited += 1000) {
        if (waited >= wait_us) return o->copies > 1 && mn_mark_done(o->copied[!last]) ? !last : -1;
        usleep(1000);
    }
    return last;
}

void mn_rescue_order_free(mn_rescue_order *o)
{
    mn_mark_free(o->updated);
    mn_mark_free(o->copied[0]);
    mn_mark_free(o->copied[1]);
    *o = (mn_rescue_order){0};
}
