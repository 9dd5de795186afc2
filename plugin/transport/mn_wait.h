/* The wait every NCCL call and device wait goes through (mn_wait.c): a
 * poll with a deadline, built in every build (no CUDA, no MPI), so that
 * tests/unit/test_gpu_logic.c runs it without a GPU. */
#ifndef MN_WAIT_H
#define MN_WAIT_H

/* The state of something awaited. */
typedef enum { MN_POLL_DONE, MN_POLL_PENDING, MN_POLL_ERROR, MN_POLL_TIMEOUT } mn_poll;

/* What mn_wait polls; a test stubs them. */
typedef struct {
    mn_poll (*poll)(void *arg);            /* DONE, PENDING or ERROR */
    void (*abort)(void *arg);              /* on ERROR or TIMEOUT */
    double (*now)(void *arg);              /* seconds */
    void (*pause)(void *arg, double waited);   /* between two polls */
    void *arg;
} mn_waiter;

/* Polls until DONE, ERROR or timeout seconds (0: none); aborts once on
 * ERROR or TIMEOUT. Returns DONE, ERROR or TIMEOUT. */
mn_poll mn_wait(const mn_waiter *w, double timeout);

#endif
