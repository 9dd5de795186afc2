/* The C tests' expectations: EXPECT counts a failure and says where, and on
 * which rank (rank stays 0 in a test without MPI); a test exits nonzero
 * when failures is not 0. Nothing of the plugin, so any test includes it. */
#ifndef MN_EXPECT_H
#define MN_EXPECT_H

#include <stdio.h>

static int failures, rank;
#define EXPECT(cond, ...) do { if (!(cond)) { ++failures; fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#endif
