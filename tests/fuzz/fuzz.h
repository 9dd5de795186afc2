/* Shared by the libFuzzer targets. They run with -close_fd_mask=2 (the
 * plugin's messages about bad input would flood the log), so CHECK writes to
 * a copy of stderr taken in LLVMFuzzerInitialize, before libFuzzer closes it. */
#ifndef MN_FUZZ_H
#define MN_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"

static FILE *fuzz_err;
#define CHECK(cond) do { if (!(cond)) { fprintf(fuzz_err ? fuzz_err : stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    fflush(fuzz_err); abort(); } } while (0)

static inline void fuzz_keep_stderr(void)
{
    int fd = dup(2);
    fuzz_err = fd >= 0 ? fdopen(fd, "w") : NULL;
}

/* The targets that need MPI run on one rank (mpiexec -n 1): MPI_Init and a
 * communicator over it, once, from LLVMFuzzerInitialize. */
static mn_comm *fuzz_comm;
static inline void fuzz_mpi_init(int *argc, char ***argv)
{
    fuzz_keep_stderr();
    MPI_Init(argc, argv);
    mn_status s;
    fuzz_comm = mn_comm_create(MPI_COMM_WORLD, &s);
    CHECK(s == MN_OK && mn_comm_size(fuzz_comm) == 1);
}
static inline void fuzz_mpi_finish(void)
{
    mn_comm_free(fuzz_comm);
    MPI_Finalize();
}

/* A per-process temporary file name, in memory (/dev/shm) when possible. */
static inline void fuzz_tmp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s.%d", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", name, (int)getpid());
}

#endif
