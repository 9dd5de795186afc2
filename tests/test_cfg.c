/* The cfg check must not refuse a cfg Darknet itself takes: every cfg given
 * (run.sh passes every cfg of Darknet's source package and ours) passes mn_cfg_read. */
#include <stdio.h>
#include "mn_coll.h"
#include "mn_base.h"
#include "mn_input.h"
#include "mn_optimizer.h"
#include "mn_checkpoint.h"
#include "mn_eval.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    mn_status st;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &st);
    int refused = 0;
    for (int i = 1; c && i < argc; ++i)
        if (mn_cfg_read(c, argv[i], NULL) != MN_OK) {
            if (mn_comm_rank(c) == 0) printf("test_cfg: FAIL %s refused\n", argv[i]);
            ++refused;
        }
    if (c && mn_comm_rank(c) == 0) printf("test_cfg: %d of %d cfgs accepted\n", argc - 1 - refused, argc - 1);
    mn_comm_free(c);
    MPI_Finalize();
    return !c || refused || argc < 2;
}
