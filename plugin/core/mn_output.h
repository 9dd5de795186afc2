/* Rank-0-only output (mn_output.c). */
#ifndef MN_OUTPUT_H
#define MN_OUTPUT_H

#include <stdio.h>

/* Called once, before anything prints: other ranks' stdout goes to
 * /dev/null and their stderr to a buffer a crash replays, or both to
 * <dir>/rank-<N>.log with MN_RANK_LOG=<dir>; log0 (-log) takes rank 0's.
 * 0, or -1 with why set. */
int mn_output_rank0_only(int rank, const char *log0, char *why, size_t cap);
/* Where darknet-mn's errors go: the terminal's stderr on every rank. */
FILE *mn_output_errors(void);
/* Their copy in the rank's log file, or NULL. */
FILE *mn_output_error_copy(void);
/* mn_output_errors as a descriptor, for a signal handler. */
int mn_output_error_fd(void);
/* Once an iteration: bounds the captured stderr and reports a log file
 * that refuses writes. */
void mn_output_trim(void);
/* Writes Darknet's last captured stderr lines to the terminal.
 * Async-signal-safe. */
void mn_output_replay(void);

#endif
