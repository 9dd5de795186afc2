/* The guard over communicator setup: a fake algorithm whose setup never
 * returns on rank 1 while the other ranks wait for it in a collective of
 * the setup itself, as NCCL's creation waits for every peer (no agreement
 * after the setup is reached, so only the setup's own guard can end it).
 * With the watchdog open
 * (argv[1] "guard", as mn_train has it before mn_comm_select), the job must
 * end within the timeout, every rank, naming the setup; tests/run.sh times
 * it. "none": no watchdog, the job hangs (the control, killed by timeout). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "coll/mn_coll.h"
#include "base/mn_base.h"
#include "train/input/mn_input.h"
#include "train/optimizer/mn_optimizer.h"
#include "train/checkpoint/mn_checkpoint.h"
#include "train/eval/mn_eval.h"
#include "core/mn_watchdog.h"

static mn_status stall_setup(mn_comm *c)
{
    if (c->rank == 1)
        for (;;) pause();
    MPI_Barrier(c->world);
    return MN_OK;
}

static const mn_comm_ops stall_ops = {.name = "stall", .setup = stall_setup};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    if (!c) { fprintf(stderr, "test_guard: FAIL communicator: %d\n", st); return 1; }
    if (argc > 1 && !strcmp(argv[1], "guard") && mn_agree(c, mn_watchdog_open(c, 2)) != MN_OK) {
        fprintf(stderr, "test_guard: FAIL watchdog\n");
        return 1;
    }
    if (mn_comm_rank(c) == 0) printf("test_guard: setting up a communicator that stalls on rank 1\n");
    fflush(stdout);
    mn_comm_select_ops(c, &stall_ops);
    fprintf(stderr, "test_guard: FAIL rank %d: the setup returned\n", mn_comm_rank(c));
    MPI_Finalize();
    return 1;
}
