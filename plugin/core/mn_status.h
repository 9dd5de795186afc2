/* Statuses, exit codes and errors: public API (darknet_mn.h). */
#ifndef MN_STATUS_H
#define MN_STATUS_H

#include <mpi.h>

#define MN_VERSION "0.1.0"

/* Every fallible mn_ function's result. */
typedef enum {
    MN_OK = 0,
    MN_ERR_USER,     /* bad input a user can fix */
    MN_ERR_MPI,
    MN_ERR_NOMEM,
    MN_ERR_UNAVAILABLE, /* not built in or not implemented */
    MN_ERR_DIVERGED, /* the ranks' models differ */
    MN_ERR_REFUSED,  /* backup folder of another job or experiment */
    MN_ERR_STOPPED,  /* stopped to be rerun: a signal, or too few ranks */
    MN_ERR_USAGE,    /* the command would undo earlier training */
    MN_ERR_STORAGE   /* a write failed, after retries */
} mn_status;

/* ./darknet_mn's exit status, alike on every rank (docs/user-guide.md,
 * "Exit statuses"). */
enum {
    MN_EXIT_OK = 0,
    MN_EXIT_USAGE = 64,   /* wrong command line */
    MN_EXIT_USER = 65,    /* wrong cfg, data, weights or image */
    MN_EXIT_FAULT = 70,   /* crash, diverged ranks */
    MN_EXIT_REFUSED = 73, /* another job's folder */
    MN_EXIT_STORAGE = 74, /* failed write: free space, rerun */
    MN_EXIT_RERUN = 75    /* rerun: it resumes */
};
int mn_exit_status(mn_status s);

/* Opaque job handle (core/mn_core.h). */
typedef struct mn_comm mn_comm;

/* Collective: every rank gets the worst status of all. */
mn_status mn_agree(mn_comm *c, mn_status mine);

/* A rank-prefixed error line on stderr, from any rank. */
void mn_error(const mn_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fatal error inside a collective: names the rank, aborts every rank
 * with MN_EXIT_RERUN. */
void mn_abort(const mn_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* A crash signal prints rank, host and cause; every rank exits MN_EXIT_FAULT. */
void mn_install_fault_handlers(const mn_comm *c);

#endif
