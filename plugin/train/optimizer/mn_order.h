/* Who waits for what on a GPU (mn_order.c): the ordering of overlap=1,
 * double_buffering=1 and the rescue's copy, on queues and marks
 * (mn_queue.h), so that one text serves the device (streams and events)
 * and the host model tests/unit/test_queue.c runs with random delays. Each
 * order's waits are named bits: `skip` leaves some out, for those tests
 * alone (each left out must show there as a wrong result); 0 elsewhere. */
#ifndef MN_ORDER_H
#define MN_ORDER_H

#include "mn_transport.h"

/* overlap=1: as backward completes a bucket of the gradient on `base`, the
 * communication queue takes it (reduces it, or on the staged route copies it
 * down for the host to average once the copy is done: sent), and the
 * update on base waits for them all (joined). */
enum { MN_ORDER_BUCKET_READY = 1, MN_ORDER_BUCKETS_REDUCED = 2, MN_ORDER_BUCKET_SENT = 4 };
typedef struct {
    mn_queue *base, *comm;
    mn_mark **ready;      /* a bucket's gradient complete on base */
    mn_mark **sent;       /* its task on comm done */
    mn_mark *reduced;     /* the last bucket reduced on comm */
    int buckets;
    unsigned skip;
} mn_overlap_order;
mn_status mn_overlap_order_init(mn_overlap_order *o, mn_queue *base, mn_queue *comm, int buckets);
/* Bucket k is complete once the work issued to base so far is: comm runs
 * task(arg) after that (handed, take, the task, its sent mark). */
void mn_overlap_order_bucket(mn_overlap_order *o, int k, mn_task_fn task, void *arg);
/* The two halves where another thread issues comm's work (the device
 * route's averaging thread): handed, as backward hands bucket k over, marks
 * it complete once base's work so far is; take, when that thread reaches
 * the bucket, makes comm's later work wait for that mark, not for what base
 * got since (the later layers' backward). */
void mn_overlap_order_handed(mn_overlap_order *o, int k);
void mn_overlap_order_take(mn_overlap_order *o, int k);
/* The caller (the staged route's averaging thread) waits for bucket k's task. */
void mn_overlap_order_sent(mn_overlap_order *o, int k);
/* Base's later work waits for every bucket's reduction. */
void mn_overlap_order_join(mn_overlap_order *o);
void mn_overlap_order_free(mn_overlap_order *o);

/* double_buffering=1: step t's gradient, complete on base, is copied into
 * buffer t % 2 on base and reduced there on comm while step t+1 computes;
 * the update of step t+1 takes step t's mean. A buffer is written again two
 * steps later, after base waited for its reduction, so no more waits. */
enum { MN_ORDER_BUFFER_FILLED = 1, MN_ORDER_MEAN_REDUCED = 2 };
typedef struct {
    mn_queue *base, *comm;
    mn_mark *filled[2], *reduced[2];
    unsigned long steps;  /* gradients sent so far */
    unsigned skip;
} mn_dbuf_order;
mn_status mn_dbuf_order_init(mn_dbuf_order *o, mn_queue *base, mn_queue *comm);
/* This step's gradient: copy(args[b]) on base, then reduce(args[b]) on
 * comm; returns b. */
int mn_dbuf_order_send(mn_dbuf_order *o, mn_task_fn copy, mn_task_fn reduce, void *const args[2]);
/* Base's later work (the update) waits for the previous step's mean;
 * returns its buffer, or -1 at the first step (no mean yet). */
int mn_dbuf_order_take(mn_dbuf_order *o);
/* A mean put into buffer 0 from outside (a checkpoint's, the queues idle):
 * the next take returns it. */
void mn_dbuf_order_resume(mn_dbuf_order *o);
void mn_dbuf_order_free(mn_dbuf_order *o);

/* rescue=1: after each update on base, a copy queue copies the state the
 * update left into one of two host slots, in turn; the work on base that
 * changes that state next (the next step's forward pass writes the running
 * statistics) waits for the copy. A lost job's rescue thread reads host
 * memory only: the newest slot whose copy is complete, so a copy stuck
 * behind a hung collective costs one step, not the rescue. The caller keeps
 * new copies from being issued while a slot is read. */
enum { MN_ORDER_UPDATE_DONE = 1, MN_ORDER_COPY_READ = 2, MN_ORDER_COPY_DRAINED = 4 };
typedef struct {
    mn_queue *base, *copy;
    mn_mark *updated, *copied[2];
    unsigned long copies;   /* issued so far; the last went to slot (copies - 1) % 2 */
    unsigned skip;
} mn_rescue_order;
mn_status mn_rescue_order_init(mn_rescue_order *o, mn_queue *base, mn_queue *copy);
/* Before base's next work that writes the state: it waits for the last copy. */
void mn_rescue_order_before_update(mn_rescue_order *o);
/* The caller waits for every copy issued: a write of the state outside a
 * step (statistics averaged or broadcast for a save or an evaluation, the
 * momentum aligned, statistics restored after a non-finite step), which
 * goes past the queues, then cannot change what a copy reads. */
void mn_rescue_order_drain(mn_rescue_order *o);
/* After the update: copy(args[slot]) on the copy queue once the update is
 * done; returns the slot. */
int mn_rescue_order_after_update(mn_rescue_order *o, mn_task_fn copy, void *const args[2]);
/* The rescue thread: the slot of the newest complete copy, waiting up to
 * wait_us for the last one issued (< 0: as long as it takes) before taking
 * the one before; -1 when neither is complete. */
int mn_rescue_order_read(mn_rescue_order *o, long wait_us);
void mn_rescue_order_free(mn_rescue_order *o);

#endif
