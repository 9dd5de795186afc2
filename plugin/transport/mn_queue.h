/* Queues and marks as CUDA streams and events (mn_queue.c), on the device
 * or on host threads for tests/unit/test_queue.c. A wait uses the mark as last
 * recorded (never recorded: no wait). One thread issues to a queue; a mark
 * is recorded on one queue at a time. */
#ifndef MN_QUEUE_H
#define MN_QUEUE_H

#include "core/mn_core.h"

typedef struct mn_queue mn_queue;
typedef struct mn_mark mn_mark;
/* A task issues its work onto stream, or on a host queue (stream NULL) does it. */
typedef void (*mn_task_fn)(void *arg, void *stream);

/* A host queue; pauses up to max_delay_us drawn from seed (0: none). NULL if no thread. */
mn_queue *mn_queue_host(unsigned seed, int max_delay_us);
#ifdef GPU
/* On stream, a cudaStream_t the caller owns, of the current device (which
 * waits make current). A failing CUDA call ends the job through mn_abort. */
mn_queue *mn_queue_device(const mn_comm *c, void *stream);
/* On a non-blocking stream of its own, freed by mn_queue_free; NULL on failure. */
mn_queue *mn_queue_copy_stream(const mn_comm *c);
#endif
/* Waits for the queue's work, then frees it. */
void mn_queue_free(mn_queue *q);
void mn_queue_run(mn_queue *q, mn_task_fn fn, void *arg);
/* The caller waits for everything issued to q so far. */
void mn_queue_sync(mn_queue *q);
/* Later work on q waits for m. */
void mn_queue_wait(mn_queue *q, mn_mark *m);

/* A mark for queues of q's kind; NULL when out of memory or events. */
mn_mark *mn_mark_new(mn_queue *q);
void mn_mark_free(mn_mark *m);
/* m completes once the work issued to q so far has. */
void mn_mark_record(mn_mark *m, mn_queue *q);
/* The caller waits for m; mn_mark_done only asks. */
void mn_mark_sync(mn_mark *m);
int mn_mark_done(mn_mark *m);

#endif
