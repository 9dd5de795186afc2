/* What every caller of darknet-mn holds and gets back, at the bottom of the
 * layers (docs/design.md): the job handle, status codes and the exit status
 * they become, one-line errors, agreement and the one abort. Part of the
 * public API (darknet_mn.h); plain C and MPI, nothing of Darknet. */
#ifndef MN_STATUS_H
#define MN_STATUS_H

#include <mpi.h>

#define MN_VERSION "0.1.0"

/* Status codes returned by every fallible mn_ function. */
typedef enum {
    MN_OK = 0,
    MN_ERR_USER,     /* bad input a user can fix: cfg, list, weights, image */
    MN_ERR_MPI,      /* an MPI call failed */
    MN_ERR_NOMEM,
    MN_ERR_UNAVAILABLE, /* feature not built in (e.g. NCCL) or not implemented */
    MN_ERR_DIVERGED, /* the ranks no longer hold the same model (train/optimizer/mn_replica.c) */
    MN_ERR_REFUSED,  /* the backup folder belongs to another live job or another experiment */
    MN_ERR_STOPPED,  /* stopped so as to be rerun: a signal asked (the state was saved), or
                        too few ranks to keep the training's global batch (global_batch=strict) */
    MN_ERR_USAGE,    /* the command as given would undo work: start over where an earlier
                        training's files are, or past checkpoints none of which loads */
    MN_ERR_STORAGE   /* the file system failed a write (full, quota, read-only, I/O error),
                        retried within a bound: not the user's input, not fixed by a rerun at once */
} mn_status;

/* The exit status of ./darknet_mn, the same on every rank, so that a batch
 * script can tell "rerun me" from "fix your input" (docs/user-guide.md,
 * "Exit statuses"): sysexits.h's codes, so that none is a launcher's own
 * (mpiexec and srun exit 1 when they fail to start a step, 128 + a signal
 * for a rank killed from outside): a rerun suits those. */
enum {
    MN_EXIT_OK = 0,
    MN_EXIT_USAGE = 64,   /* the command line is wrong (sysexits' EX_USAGE) */
    MN_EXIT_USER = 65,    /* the cfg, data, weights or an image is wrong: a rerun fails alike (EX_DATAERR) */
    MN_EXIT_FAULT = 70,   /* an internal fault: a crash, the ranks diverged (EX_SOFTWARE) */
    MN_EXIT_REFUSED = 73, /* the backup folder is another live job's or another experiment's (EX_CANTCREAT) */
    MN_EXIT_STORAGE = 74, /* a write failed for the file system's reason: free space, then rerun (EX_IOERR) */
    MN_EXIT_RERUN = 75    /* stopped by a signal after a checkpoint, a rank or host lost, a collective
                             timed out, MPI, the device or memory failed: rerun, it resumes (EX_TEMPFAIL) */
};
/* The exit status for a command's final status. */
int mn_exit_status(mn_status s);

/* The job: the process's place among the ranks and the communicator's
 * state (core/mn_core.h defines it; callers hold a pointer). */
typedef struct mn_comm mn_comm;

/* Every rank learns the worst status of all ranks (collective). Use after work
 * that may fail on some ranks only, so that all of them stop together. */
mn_status mn_agree(mn_comm *c, mn_status mine);

/* Rank-prefixed message on stderr; printed by whichever rank calls it. */
void mn_error(const mn_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fatal error inside a collective section (MPI, the device or memory failed):
 * names the rank, aborts every rank with MN_EXIT_RERUN. */
void mn_abort(const mn_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* SIGSEGV, SIGBUS, SIGFPE, SIGABRT on this rank: print the rank, host and
 * cause, then abort every rank (MPI_Abort, MN_EXIT_FAULT). */
void mn_install_fault_handlers(const mn_comm *c);

#endif
