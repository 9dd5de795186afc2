/* Ordered work on queues, and marks between queues (mn_queue.c): the shape
 * of CUDA streams and events, so that the GPU routes' ordering (which work
 * waits for which: overlap's buckets, double buffering's two buffers, the
 * rescue's copy) is written once and runs on either implementation:
 *
 *  - the device's (GPU build): a queue is a cudaStream_t, a mark a
 *    cudaEvent_t; a task runs at once on the calling thread and issues its
 *    work asynchronously onto the stream it is handed;
 *  - the host's: a queue is a thread that runs its tasks in order, each
 *    after a random pause of up to max_delay_us, and a mark a counter; a
 *    task does its work itself (stream NULL). tests/unit/test_queue.c runs the
 *    schedules on it, where a wait left out shows as a wrong result.
 *
 * As CUDA's: a mark completes when the work its queue held when it was
 * recorded has; a queue's wait holds the queue's later work until the mark,
 * as last recorded before the wait, completes (a mark never recorded: no
 * wait). One thread issues to a queue, and a mark is recorded on one queue
 * at a time. */
#ifndef MN_QUEUE_H
#define MN_QUEUE_H

#include "mn_core.h"

typedef struct mn_queue mn_queue;
typedef struct mn_mark mn_mark;
/* A task: its work, issued onto stream (the device's) or done (the host's, stream NULL). */
typedef void (*mn_task_fn)(void *arg, void *stream);

/* The host's: a thread; pauses drawn from seed (0: none). NULL if no thread. */
mn_queue *mn_queue_host(unsigned seed, int max_delay_us);
#ifdef GPU
/* The device's, on stream (a cudaStream_t the caller owns, of the device
 * current now, which its waits make current on the calling thread); a
 * failing CUDA call ends the job through mn_abort, naming it. */
mn_queue *mn_queue_device(const mn_comm *c, void *stream);
/* The device's, on a non-blocking stream of its own (the marks order it
 * against the others), destroyed by mn_queue_free. NULL where the stream
 * or memory could not be had (a CUDA failure said). */
mn_queue *mn_queue_copy_stream(const mn_comm *c);
#endif
/* Waits for the queue's work, then frees it. */
void mn_queue_free(mn_queue *q);
void mn_queue_run(mn_queue *q, mn_task_fn fn, void *arg);
/* The caller waits for everything issued to q so far. */
void mn_queue_sync(mn_queue *q);
/* Later work on q waits for m. */
void mn_queue_wait(mn_queue *q, mn_mark *m);

/* A mark for queues of q's kind. NULL when out of memory (or events). */
mn_mark *mn_mark_new(mn_queue *q);
void mn_mark_free(mn_mark *m);
/* m completes once the work issued to q so far has. */
void mn_mark_record(mn_mark *m, mn_queue *q);
/* The caller waits for m; mn_mark_done only asks. */
void mn_mark_sync(mn_mark *m);
int mn_mark_done(mn_mark *m);

#endif
