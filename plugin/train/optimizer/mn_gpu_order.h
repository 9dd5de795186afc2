/* Who waits for what on a GPU (mn_gpu_order.c), on mn_queue.h's queues and
 * marks. `skip`: the named waits to leave out, for tests/unit/test_queue.c
 * alone; 0 elsewhere. */
#ifndef MN_GPU_ORDER_H
#define MN_GPU_ORDER_H

#include "transport/mn_transport.h"
#include "transport/mn_queue.h"

/* overlap=1: buckets completed on base, reduced (or copied down) on comm. */
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
/* comm runs task(arg) once base's work so far is done (handed and take). */
void mn_overlap_order_bucket(mn_overlap_order *o, int k, mn_task_fn task, void *arg);
/* Where another thread issues comm's work: handed on base's thread as
 * bucket k is handed over; take on that thread, before its work on k. */
void mn_overlap_order_handed(mn_overlap_order *o, int k);
void mn_overlap_order_take(mn_overlap_order *o, int k);
/* The caller waits for bucket k's task. */
void mn_overlap_order_sent(mn_overlap_order *o, int k);
/* Base's later work waits for every bucket's reduction. */
void mn_overlap_order_join(mn_overlap_order *o);
void mn_overlap_order_free(mn_overlap_order *o);

/* double_buffering=1: step t's gradient copied into buffer t % 2 on base
 * and reduced on comm; step t+1's update takes it. */
enum { MN_ORDER_BUFFER_FILLED = 1, MN_ORDER_MEAN_REDUCED = 2 };
typedef struct {
    mn_queue *base, *comm;
    mn_mark *filled[2], *reduced[2];
    unsigned long steps;  /* gradients sent so far */
    unsigned skip;
} mn_dbuf_order;
mn_status mn_dbuf_order_init(mn_dbuf_order *o, mn_queue *base, mn_queue *comm);
/* copy(args[b]) on base, then reduce(args[b]) on comm; returns b. */
int mn_dbuf_order_send(mn_dbuf_order *o, mn_task_fn copy, mn_task_fn reduce, void *const args[2]);
/* Base's later work waits for the previous mean; returns its buffer, or
 * -1 where there is none. */
int mn_dbuf_order_take(mn_dbuf_order *o);
/* A mean put into buffer 0 with the queues idle: the next take returns it. */
void mn_dbuf_order_resume(mn_dbuf_order *o);
void mn_dbuf_order_free(mn_dbuf_order *o);

/* rescue=1: after each update on base, the copy queue copies the state into
 * two host slots in turn. The caller issues no copy while a slot is read. */
enum { MN_ORDER_UPDATE_DONE = 1, MN_ORDER_COPY_READ = 2, MN_ORDER_COPY_DRAINED = 4 };
typedef struct {
    mn_queue *base, *copy;
    mn_mark *updated, *copied[2];
    unsigned long copies;   /* issued so far; the last went to slot (copies - 1) % 2 */
    unsigned skip;
} mn_rescue_order;
mn_status mn_rescue_order_init(mn_rescue_order *o, mn_queue *base, mn_queue *copy);
/* Base's next work that writes the state waits for the last copy. */
void mn_rescue_order_before_update(mn_rescue_order *o);
/* The caller waits for every copy: call before writing the state outside
 * a step. */
void mn_rescue_order_drain(mn_rescue_order *o);
/* After the update: copy(args[slot]) once it is done; returns the slot. */
int mn_rescue_order_after_update(mn_rescue_order *o, mn_task_fn copy, void *const args[2]);
/* The rescue thread: the newest complete slot, waiting up to wait_us for
 * the last (< 0: no limit); -1 where none is. */
int mn_rescue_order_read(mn_rescue_order *o, long wait_us);
void mn_rescue_order_free(mn_rescue_order *o);

#endif
