/* Rank-0-only output (mn_output.c). */
#ifndef MN_OUTPUT_H
#define MN_OUTPUT_H

#include <stdio.h>

/* Called once, before anything prints: on every rank but 0, what Darknet
 * prints goes nowhere (stdout to /dev/null, stderr to a private buffer whose
 * tail a fatal signal replays), or, with MN_RANK_LOG=<dir> in the rank's
 * environment, both to <dir>/rank-<N>.log; with log0 (-log FILE), rank 0's
 * stdout and stderr go to that file. darknet-mn's own errors still reach
 * the terminal through mn_output_errors(). 0, or -1 with why set. */
int mn_output_rank0_only(int rank, const char *log0, char *why, size_t cap);
/* Where darknet-mn's errors go: the terminal's stderr on every rank. */
FILE *mn_output_errors(void);
/* Where a copy of them goes: the rank's log file where it has one, else NULL. */
FILE *mn_output_error_copy(void);
/* The same as a file descriptor, for a signal handler. */
int mn_output_error_fd(void);
/* The captured stderr kept small, and a log file that refuses writes
 * (-log on a full disk) said on the terminal: called once an iteration. */
void mn_output_trim(void);
/* The last lines Darknet printed to the captured stderr (its error() text
 * before an abort), written to the terminal. Async-signal-safe. */
void mn_output_replay(void);

#endif
