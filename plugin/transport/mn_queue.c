/* Queues and marks (mn_queue.h): the host's, a thread per queue, and the
 * device's, CUDA streams and events. A device task runs at once on the
 * calling thread and issues its work onto the stream; a host queue runs its
 * tasks in order, each after a random pause, and a mark is a counter. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "transport/mn_queue.h"
#include "core/mn_fault.h"
#ifdef GPU
#include <cuda_runtime.h>
#include "transport/mn_nccl.h"
#endif

typedef enum { TASK_RUN, TASK_COMPLETE, TASK_WAIT } task_kind;
typedef struct task {
    task_kind kind;
    mn_task_fn fn;
    void *arg;
    mn_mark *mark;
    unsigned long gen;    /* COMPLETE: the record it completes; WAIT: the record it waits for */
    struct task *next;
} task;

struct mn_queue {
    int device;
    /* the host's */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *head, *tail;
    unsigned long issued, finished;
    int quit, max_delay_us;
    unsigned seed;
    /* the device's */
    const mn_comm *c;
    void *stream;
    int owns;             /* the stream is the queue's own (mn_queue_copy_stream) */
    int gpu;              /* the device current where it was made */
};

struct mn_mark {
    int device;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long recorded, completed;   /* a mark is recorded on one queue at a time: completes in order */
    const mn_comm *c;
    void *event;
};


/* The host queue's thread: its tasks in order, a random pause before each run. */
static void *host_main(void *arg)
{
    mn_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->quit) pthread_cond_wait(&q->cv, &q->mu);
        if (!q->head) break;
        task *t = q->head;
        q->head = t->next;
        if (!q->head) q->tail = NULL;
        pthread_mutex_unlock(&q->mu);
        if (t->kind == TASK_RUN) {
            if (q->max_delay_us > 0) usleep((useconds_t)(rand_r(&q->seed) % (q->max_delay_us + 1)));
            t->fn(t->arg, NULL);
        } else {
            mn_mark *m = t->mark;
            pthread_mutex_lock(&m->mu);
            if (t->kind == TASK_COMPLETE) {
                if (t->gen > m->completed) m->completed = t->gen;
                pthread_cond_broadcast(&m->cv);
            } else {
                while (m->completed < t->gen) pthread_cond_wait(&m->cv, &m->mu);
            }
            pthread_mutex_unlock(&m->mu);
        }
        free(t);
        pthread_mutex_lock(&q->mu);
        ++q->finished;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static void host_push(mn_queue *q, task_kind kind, mn_task_fn fn, void *arg, mn_mark *m, unsigned long gen)
{
    task *t = malloc(sizeof *t);
    if (!t) mn_fatal(MN_EXIT_RERUN, "out of memory for a queue's task");
    *t = (task){kind, fn, arg, m, gen, NULL};
    pthread_mutex_lock(&q->mu);
    if (q->tail) q->tail->next = t;
    else q->head = t;
    q->tail = t;
    ++q->issued;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

mn_queue *mn_queue_host(unsigned seed, int max_delay_us)
{
    mn_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->seed = seed;
    q->max_delay_us = seed ? max_delay_us : 0;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    if (pthread_create(&q->thread, NULL, host_main, q) != 0) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        free(q);
        return NULL;
    }
    return q;
}

#ifdef GPU
mn_queue *mn_queue_device(const mn_comm *c, void *stream)
{
    mn_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->device = 1;
    q->c = c;
    q->stream = stream;
    mn_cuda_must(c, cudaGetDevice(&q->gpu), "cudaGetDevice");
    return q;
}

mn_queue *mn_queue_copy_stream(const mn_comm *c)
{
    cudaStream_t st;
    /* Non-blocking: a plain stream would wait for pjreddie's legacy-stream work, and hold it up. */
    if (!mn_cuda_ok(c, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags")) return NULL;
    mn_queue *q = mn_queue_device(c, st);
    if (q) q->owns = 1;
    else mn_cuda_ok(c, cudaStreamDestroy(st), "cudaStreamDestroy");
    return q;
}
#endif

void mn_queue_sync(mn_queue *q)
{
#ifdef GPU
    if (q->device) {
        mn_cuda_must(q->c, cudaStreamSynchronize((cudaStream_t)q->stream), "cudaStreamSynchronize");
        return;
    }
#endif
    pthread_mutex_lock(&q->mu);
    while (q->finished < q->issued) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void mn_queue_free(mn_queue *q)
{
    if (!q) return;
    mn_queue_sync(q);
    if (!q->device) {
        pthread_mutex_lock(&q->mu);
        q->quit = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->thread, NULL);
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
    }
#ifdef GPU
    if (q->owns) mn_cuda_ok(q->c, cudaStreamDestroy((cudaStream_t)q->stream), "cudaStreamDestroy");
#endif
    free(q);
}

void mn_queue_run(mn_queue *q, mn_task_fn fn, void *arg)
{
    if (q->device) fn(arg, q->stream);
    else host_push(q, TASK_RUN, fn, arg, NULL, 0);
}

void mn_queue_wait(mn_queue *q, mn_mark *m)
{
#ifdef GPU
    if (q->device) {
        /* A thread's first CUDA call may be this wait (overlap's take). */
        mn_cuda_must(q->c, cudaSetDevice(q->gpu), "cudaSetDevice");
        mn_cuda_must(q->c, cudaStreamWaitEvent((cudaStream_t)q->stream, (cudaEvent_t)m->event, 0), "cudaStreamWaitEvent");
        return;
    }
#endif
    pthread_mutex_lock(&m->mu);
    unsigned long gen = m->recorded;
    pthread_mutex_unlock(&m->mu);
    if (gen) host_push(q, TASK_WAIT, NULL, NULL, m, gen);
}

mn_mark *mn_mark_new(mn_queue *q)
{
    mn_mark *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->device = q->device;
    m->c = q->c;
#ifdef GPU
    if (m->device) {
        cudaEvent_t e;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
            free(m);
            return NULL;
        }
        m->event = e;
        return m;
    }
#endif
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    return m;
}

void mn_mark_free(mn_mark *m)
{
    if (!m) return;
#ifdef GPU
    if (m->device) {
        mn_cuda_must(m->c, cudaEventDestroy((cudaEvent_t)m->event), "cudaEventDestroy");
        free(m);
        return;
    }
#endif
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

void mn_mark_record(mn_mark *m, mn_queue *q)
{
#ifdef GPU
    if (q->device) {
        mn_cuda_must(q->c, cudaEventRecord((cudaEvent_t)m->event, (cudaStream_t)q->stream), "cudaEventRecord");
        return;
    }
#endif
    pthread_mutex_lock(&m->mu);
    unsigned long gen = ++m->recorded;
    pthread_mutex_unlock(&m->mu);
    host_push(q, TASK_COMPLETE, NULL, NULL, m, gen);
}

void mn_mark_sync(mn_mark *m)
{
#ifdef GPU
    if (m->device) {
        mn_cuda_must(m->c, cudaEventSynchronize((cudaEvent_t)m->event), "cudaEventSynchronize");
        return;
    }
#endif
    pthread_mutex_lock(&m->mu);
    unsigned long gen = m->recorded;
    while (m->completed < gen) pthread_cond_wait(&m->cv, &m->mu);
    pthread_mutex_unlock(&m->mu);
}

int mn_mark_done(mn_mark *m)
{
#ifdef GPU
    if (m->device) {
        cudaError_t e = cudaEventQuery((cudaEvent_t)m->event);
        if (e == cudaErrorNotReady) return 0;
        mn_cuda_must(m->c, e, "cudaEventQuery");
        return 1;
    }
#endif
    pthread_mutex_lock(&m->mu);
    int done = m->completed >= m->recorded;
    pthread_mutex_unlock(&m->mu);
    return done;
}
