/* ./darknet_mn: Darknet's training and evaluation commands, run as one MPI
 * process per core or GPU. Also works without mpiexec, as one rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "darknet_mn.h"
#include "mn_predict.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: mpiexec -n N ./darknet_mn <command>\n"
            "  detector train <data> <cfg> [weights] [-clear]\n"
            "  classifier train <data> <cfg> [weights] [-clear]\n"
            "  classifier valid <data> <cfg> <weights>\n"
            "  detector valid <data> <cfg> <weights> [-out <prefix>]\n"
            "  detector recall <data> <cfg> <weights>\n"
            "  detector map <data> <cfg> <weights>\n"
            "  detector test <data> <cfg> <weights> <image> [-out <prefix>]\n"
            "  classifier predict <data> <cfg> <weights> <image>\n"
            "  partial <cfg> <weights> <out> <layers>\n"
            "  bench allreduce <cfg> [-iters K]\n"
            "  bench replica <cfg> [-iters K]\n"
            "  version\n");
}

static int has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 0; i < argc; ++i)
        if (!strcmp(argv[i], flag)) return 1;
    return 0;
}

/* The value after a flag, or NULL. */
static const char *flag_value(int argc, char **argv, const char *flag)
{
    for (int i = 0; i + 1 < argc; ++i)
        if (!strcmp(argv[i], flag)) return argv[i + 1];
    return NULL;
}

/* Positional argument k (flags and their values skipped), or NULL. */
static const char *positional(int argc, char **argv, int k)
{
    for (int i = 1; i < argc; ++i) {
        if (argv[i][0] == '-') { if (!strcmp(argv[i], "-iters") || !strcmp(argv[i], "-out")) ++i; continue; }
        if (k-- == 0) return argv[i];
    }
    return NULL;
}

int main(int argc, char **argv)
{
    /* double_buffering=1 averages gradients on a thread of its own (and
     * checks the level it got); otherwise only the main thread calls MPI
     * (the watchdog thread aborts only), and the cheaper level serves. */
    const char *cmd = positional(argc, argv, 0), *sub = positional(argc, argv, 1);
    const char *a = positional(argc, argv, 2), *b = positional(argc, argv, 3), *w = positional(argc, argv, 4);
    int threads = sub && !strcmp(sub, "train") && mn_cfg_wants_threads(b);
    int provided;
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mn_status s = MN_ERR_USER;
    if (cmd && !strcmp(cmd, "version")) {
        if (rank == 0) printf("darknet-mn %s\n", MN_VERSION);
        MPI_Finalize();
        return 0;
    }
    int known = cmd && sub && ((!strcmp(cmd, "detector") && !strcmp(sub, "train") && a && b) ||
                               (!strcmp(cmd, "classifier") && !strcmp(sub, "train") && a && b) ||
                               (!strcmp(cmd, "classifier") && !strcmp(sub, "valid") && a && b && w) ||
                               (!strcmp(cmd, "detector") && (!strcmp(sub, "valid") || !strcmp(sub, "recall") ||
                                                             !strcmp(sub, "map")) && a && b && w) ||
                               (!strcmp(cmd, "partial") && a && b && w) ||
                               (((!strcmp(cmd, "detector") && !strcmp(sub, "test")) ||
                                 (!strcmp(cmd, "classifier") && !strcmp(sub, "predict"))) && w && positional(argc, argv, 5)) ||
                               (!strcmp(cmd, "bench") && (!strcmp(sub, "allreduce") || !strcmp(sub, "replica"))));
    if (!known) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &s);
    if (c) {
        mn_install_fault_handlers(c);
#ifdef GPU
        /* One GPU per rank on each node, as pure_nccl assumes; -nogpu runs on CPU. */
        gpu_index = has_flag(argc, argv, "-nogpu") ? -1 : mn_comm_intra_rank(c);
        if (gpu_index >= 0) cuda_set_device(gpu_index);
#else
        gpu_index = -1;
#endif
        int clear = has_flag(argc, argv, "-clear");
        if (!strcmp(cmd, "partial")) s = mn_partial(c, sub, a, b, w);
        else if (!strcmp(sub, "test")) s = mn_detector_test(c, a, b, w, positional(argc, argv, 5), flag_value(argc, argv, "-out"));
        else if (!strcmp(sub, "predict")) s = mn_classifier_predict(c, a, b, w, positional(argc, argv, 5));
        else if (!strcmp(cmd, "bench") && !strcmp(sub, "replica")) s = mn_bench_replica(c, argc, argv);
        else if (!strcmp(cmd, "bench")) s = mn_bench_allreduce(c, argc, argv);
        else if (!strcmp(cmd, "detector") && !strcmp(sub, "valid")) s = mn_detector_valid(c, a, b, w, flag_value(argc, argv, "-out"));
        else if (!strcmp(sub, "recall")) s = mn_detector_recall(c, a, b, w);
        else if (!strcmp(sub, "map")) s = mn_detector_map(c, a, b, w);
        else if (!strcmp(sub, "valid")) s = mn_classifier_valid(c, a, b, w);
        else s = mn_train(c, !strcmp(cmd, "detector") ? MN_TASK_DETECTOR : MN_TASK_CLASSIFIER, a, b, w, clear);
        mn_comm_free(c);
    }
    MPI_Finalize();
    return s == MN_OK ? 0 : 1;
}
