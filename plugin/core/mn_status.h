/* What every caller of darknet-mn holds and gets back: the job handle,
 * status and exit codes, errors, agreement and the abort. Part of the
 * public API (darknet_mn.h); plain C and MPI. */
#ifndef MN_STATUS_H
#define MN_STATUS_H

#include <mpi.h>

#define MN_VERSION "0.1.0"

/* Status codes returned by every fallible mn_ function. */
typedef enum {
    MN_OK = 0,
    MN_ERR_USER,     /* bad input a user can fix: cfg, list, weights, image */
    MN_ERR_MPI,
    MN_ERR_NOMEM,
    MN_ERR_UNAVAILABLE, /* not built in (e.g. NCCL) or not implemented */
    MN_ERR_DIVERGED, /* the ranks no longer hold the same model */
    MN_ERR_REFUSED,  /* the backup folder is another live job's or experiment's */
    MN_ERR_STOPPED,  /* stopped to be rerun: a signal (state saved), or too few ranks */
    MN_ERR_USAGE,    /* the command would undo an earlier training's work */
    MN_ERR_STORAGE   /* the file system failed a write, after retries */
} mn_status;

/* The exit status of ./darknet_mn, the same on every rank, so that a batch
 * script can tell "rerun me" from "fix your input" (docs/user-guide.md,
 * "Exit statuses"): sysexits.h's codes, none a launcher's own. */
enum {
    MN_EXIT_OK = 0,
    MN_EXIT_USAGE = 64,   /* a wrong command line */
    MN_EXIT_USER = 65,    /* a wrong cfg, data, weights or image */
    MN_EXIT_FAULT = 70,   /* a crash, diverged ranks */
    MN_EXIT_REFUSED = 73, /* another job's backup folder */
    MN_EXIT_STORAGE = 74, /* a failed write: free space, then rerun */
    MN_EXIT_RERUN = 75    /* rerun: it resumes */
};
/* The exit status for a command's final status. */
int mn_exit_status(mn_status s);

/* The job handle (core/mn_core.h defines it). */
typedef struct mn_comm mn_comm;

/* Collective: every rank gets the worst status of all, so that all stop
 * together after work that may fail on some. */
mn_status mn_agree(mn_comm *c, mn_status mine);

/* A rank-prefixed error line on stderr, from whichever rank calls it. */
void mn_error(const mn_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A fatal error inside a collective (MPI, the device or memory failed):
 * names the rank and aborts every rank with MN_EXIT_RERUN. */
void mn_abort(const mn_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* SIGSEGV, SIGBUS, SIGFPE, SIGABRT: print the rank, host and cause, then
 * abort every rank with MN_EXIT_FAULT. */
void mn_install_fault_handlers(const mn_comm *c);

#endif
