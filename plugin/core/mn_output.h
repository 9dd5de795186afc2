/* Rank-0-only output (mn_output.c). */
#ifndef MN_OUTPUT_H
#define MN_OUTPUT_H

#include <stdio.h>

/* Once, before printing: other ranks leave the terminal; log0 (-log) takes
 * rank 0's. 0, or -1 with why. */
int mn_output_rank0_only(int rank, const char *log0, char *why, size_t cap);
/* Errors: the terminal's stderr, every rank. */
FILE *mn_output_errors(void);
/* Their copy in the rank's log, or NULL. */
FILE *mn_output_error_copy(void);
/* Its fd, for a signal handler. */
int mn_output_error_fd(void);
/* Per iteration: bounds captured stderr, reports a failing log. */
void mn_output_trim(void);
/* Darknet's last stderr to the terminal; async-signal-safe. */
void mn_output_replay(void);

#endif
