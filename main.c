/* ./darknet_mn: Darknet's training and evaluation commands, run as one MPI
 * process per core or GPU. Also works without mpiexec, as one rank. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "darknet_mn.h"
#include "base/mn_base.h"
#include "core/mn_output.h"
#include "core/mn_launch.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: mpiexec -n N ./darknet_mn <command>\n"
            "  detector train <data> <cfg> [weights] [-clear] [-map] [-mAP_epochs N] [-nogpu]\n"
            "  classifier train <data> <cfg> [weights] [-clear] [-nogpu]\n"
            "  classifier valid <data> <cfg> <weights> [-nogpu]\n"
            "  detector valid <data> <cfg> <weights> [-out <prefix>] [-nogpu]\n"
            "  detector recall <data> <cfg> <weights> [-nogpu]\n"
            "  detector map <data> <cfg> <weights> [-nogpu]\n"
            "  detector test <data> <cfg> <weights> <image> [-out <prefix>] [-thresh T] [-nogpu]\n"
            "  classifier predict <data> <cfg> <weights> <image> [-nogpu]\n"
            "  partial <cfg> <weights> <out> <layers>\n"
            "  bench allreduce [cfg] [-iters K] [-max BYTES] [-nogpu]\n"
            "  bench replica <cfg> [-iters K] [-nogpu]\n"
            "  bench step <cfg> [-iters K] [-batch N] [-layers] [-nogpu]\n"
            "  info [cfg] [-nogpu]\n"
            "  version\n"
            "every command also takes -log FILE (rank 0's output into FILE) and -dont_show (nothing is shown)\n");
}

/* Each command: its positional arguments after its one or two words (need,
 * up to need + extra) and the flags it takes. */
typedef struct {
    const char *cmd, *sub;      /* sub NULL: a one-word command */
    int need, extra;
    const char *flags;
} command;
static const command commands[] = {
    {"detector", "train", 2, 1, "-clear -map -mAP_epochs -nogpu"},
    {"classifier", "train", 2, 1, "-clear -nogpu"},
    {"classifier", "valid", 3, 0, "-nogpu"},
    {"detector", "valid", 3, 0, "-out -nogpu"},
    {"detector", "recall", 3, 0, "-nogpu"},
    {"detector", "map", 3, 0, "-nogpu"},
    {"detector", "test", 4, 0, "-out -thresh -nogpu"},
    {"classifier", "predict", 4, 0, "-nogpu"},
    {"partial", NULL, 4, 0, "-nogpu"},
    {"bench", "allreduce", 0, 1, "-iters -max -nogpu"},
    {"bench", "replica", 1, 0, "-iters -nogpu"},
    {"bench", "step", 1, 0, "-iters -batch -layers -nogpu"},
    {"info", NULL, 0, 1, "-nogpu"},
};
/* Every command takes -log FILE (hank-ai's: rank 0's output into FILE) and
 * -dont_show (darknet-mn opens no window). */
static const char *const everywhere = "-log -dont_show";
/* Darknet's flags that cannot apply under MPI, and why; the value is skipped. */
static const struct { const char *flag, *why; } refused[] = {
    {"-mjpeg_port", "streams Darknet's chart window over HTTP, and darknet-mn opens no window: rank 0 keeps the "
                    "chart in <backup>/<cfg>_chart.png (chart=1 in [distributed]); -log FILE keeps its output"},
    {"-json_port", "streams detections of Darknet's video demo, which darknet-mn does not run: use the fork's own "
                   "darknet detector demo on the weights darknet-mn trained"},
    {"-http_post_host", "posts detections of Darknet's video demo, which darknet-mn does not run: use the fork's "
                        "own darknet detector demo on the weights darknet-mn trained"},
};
/* Flags followed by a value; Darknet's -gpus and -i are known so that their
 * value is not taken for a file. */
static const char *const valued[] = {"-out", "-thresh", "-iters", "-max", "-batch", "-gpus", "-i", "-log",
                                     "-mAP_epochs", "-mjpeg_port", "-json_port", "-http_post_host"};
#define MAX_POS 8

typedef struct {
    const command *cmd;
    const char *pos[MAX_POS];   /* positional arguments, the two words first */
    int npos;
    int clear, nogpu, map;
    const char *out, *gpus;     /* -out's value; -gpus's (or -i's) value */
    const char *thresh;         /* -thresh's value */
    const char *log;            /* -log's value */
    const char *map_epochs;     /* -mAP_epochs's value */
    char why[512];              /* non-empty: the command line is refused, and why */
} cmdline;

static int takes_value(const char *f)
{
    for (size_t i = 0; i < sizeof valued / sizeof *valued; ++i)
        if (!strcmp(valued[i], f)) return 1;
    return 0;
}

/* Whether the space-separated list holds word. */
static int listed(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* mpiexec -n <entries of -gpus> ./darknet_mn <the command without -gpus>. */
static void gpus_advice(cmdline *l, int argc, char **argv)
{
    int n = 1;
    for (const char *p = l->gpus; *p; ++p) n += *p == ',';
    size_t len = (size_t)snprintf(l->why, sizeof l->why,
                                  "-gpus is not used: darknet-mn runs one MPI rank per GPU; launch mpiexec -n %d ./darknet_mn", n);
    for (int i = 1; i < argc && len < sizeof l->why; ++i) {
        if (!strcmp(argv[i], "-gpus") || !strcmp(argv[i], "-i")) { ++i; continue; }
        len += (size_t)snprintf(l->why + len, sizeof l->why - len, " %s", argv[i]);
    }
    if (len < sizeof l->why)
        snprintf(l->why + len, sizeof l->why - len,
                 " (rank r of a node takes its r-th visible GPU; ranks beyond the GPUs share them)");
}

/* Reads argv without MPI (before MPI_Init); l->cmd stays NULL for usage. */
static void parse(int argc, char **argv, cmdline *l)
{
    memset(l, 0, sizeof *l);
    const char *unknown = NULL, *novalue = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (l->npos < MAX_POS) l->pos[l->npos] = a;
            ++l->npos;
        } else if (takes_value(a)) {
            if (i + 1 == argc) { novalue = a; break; }
            const char *v = argv[++i];
            if (!strcmp(a, "-out")) l->out = v;
            else if (!strcmp(a, "-thresh")) l->thresh = v;
            else if (!strcmp(a, "-gpus") || !strcmp(a, "-i")) l->gpus = v;
            else if (!strcmp(a, "-log")) l->log = v;
            else if (!strcmp(a, "-mAP_epochs")) l->map_epochs = v;
        } else if (!strcmp(a, "-clear")) l->clear = 1;
        else if (!strcmp(a, "-nogpu")) l->nogpu = 1;
        else if (!strcmp(a, "-map")) l->map = 1;
    }
    for (size_t k = 0; k < sizeof commands / sizeof *commands; ++k)
        if (l->npos >= 1 && !strcmp(commands[k].cmd, l->pos[0]) &&
            (!commands[k].sub || (l->npos >= 2 && !strcmp(commands[k].sub, l->pos[1]))))
            l->cmd = &commands[k];
    if (!l->cmd) return;
    const command *c = l->cmd;
    int words = c->sub ? 2 : 1;
    if (novalue) snprintf(l->why, sizeof l->why, "flag %s needs a value", novalue);
    else if (l->gpus) gpus_advice(l, argc, argv);
    else
        for (int i = 1; i < argc && !unknown && !l->why[0]; ++i) {
            if (argv[i][0] != '-' || !argv[i][1]) continue;
            for (size_t k = 0; k < sizeof refused / sizeof *refused; ++k)
                if (!strcmp(argv[i], refused[k].flag))
                    snprintf(l->why, sizeof l->why, "%s is not used: it %s", argv[i], refused[k].why);
            if (!l->why[0] && !listed(c->flags, argv[i]) && !listed(everywhere, argv[i])) unknown = argv[i];
            if (takes_value(argv[i])) ++i;
        }
    if (l->why[0]) return;
    char *end = NULL;
    long epochs = l->map_epochs ? strtol(l->map_epochs, &end, 10) : 4;
    if (unknown)
        snprintf(l->why, sizeof l->why, "unknown flag '%s' for '%s%s%s'; valid flags: %s %s", unknown, c->cmd,
                 c->sub ? " " : "", c->sub ? c->sub : "", c->flags, everywhere);
    else if (l->map_epochs && (end == l->map_epochs || *end || epochs < 1 || epochs > 1000000))
        snprintf(l->why, sizeof l->why, "-mAP_epochs '%s' is not a whole number of epochs from 1 to 1000000",
                 l->map_epochs);
    else if (l->map_epochs && !l->map)
        snprintf(l->why, sizeof l->why, "-mAP_epochs %s sets how often -map evaluates: add -map", l->map_epochs);
    else if (l->npos - words > c->need + c->extra)
        snprintf(l->why, sizeof l->why, "too many arguments for '%s%s%s' (%d given, at most %d)", c->cmd,
                 c->sub ? " " : "", c->sub ? c->sub : "", l->npos - words, c->need + c->extra);
    else if (l->npos - words < c->need) l->cmd = NULL;   /* too few: the usage says what is needed */
}

static const char *arg(const cmdline *l, int k) { return k < l->npos && k < MAX_POS ? l->pos[k] : NULL; }

/* Until every rank has joined no watchdog runs, and a rank lost at launch
 * would leave the others in MPI_Init for ever. The cfg's collective_timeout
 * (300 s without one; 0: no limit) bounds that wait too. */
static void on_start_timeout(int sig)
{
    (void)sig;
    static const char m[] = "darknet-mn: not every rank joined within collective_timeout: a rank or host was lost "
                            "at launch; exit status 75 (rerun)\n";
    ssize_t r = write(2, m, sizeof m - 1);
    (void)r;
    _exit(MN_EXIT_RERUN);
}

static void start_timeout(const char *cfgfile)
{
    char v[32];
    long t = cfgfile && mn_cfg_peek(cfgfile, "collective_timeout", v, sizeof v) ? strtol(v, NULL, 10) : 300;
    if (t <= 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_start_timeout;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)t);
}

int main(int argc, char **argv)
{
    cmdline l;
    parse(argc, argv, &l);
    const char *sub = arg(&l, 1), *a = arg(&l, 2), *b = arg(&l, 3), *w = arg(&l, 4);
    int version = arg(&l, 0) && !strcmp(arg(&l, 0), "version") && l.npos == 1;
    /* double_buffering=1 and overlap=1 average gradients on a thread of
     * their own, which needs MPI_THREAD_MULTIPLE; otherwise only the main
     * thread calls MPI. That thread shares the rank's core with the compute
     * while Open MPI's waits spin, so it yields when idle unless the user
     * chose otherwise. */
    int threads = l.cmd && !l.why[0] && l.cmd->sub && !strcmp(l.cmd->sub, "train") && mn_cfg_wants_threads(b);
    if (threads) setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    int provided;
    start_timeout(l.cmd && !l.why[0] ? b : NULL);
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
    int rank = 0, size = 0, speaks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char lost[512];
    if (mn_launch_mismatch(size, lost, sizeof lost, &speaks)) {
        if (speaks) fprintf(stderr, "darknet-mn: %s\n", lost);
        MPI_Finalize();
        return MN_EXIT_USAGE;
    }
    /* Only rank 0 prints; a rank that cannot redirect stops the job. */
    char why[512] = "";
    int quiet_failed = mn_output_rank0_only(rank, l.cmd && !l.why[0] ? l.log : NULL, why, sizeof why) != 0;
    int any_failed = 0;
    if (quiet_failed) fprintf(stderr, "darknet-mn: rank %d: %s\n", rank, why);
    MPI_Allreduce(&quiet_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_failed) {
        MPI_Finalize();
        return MN_EXIT_USAGE;
    }
    if (version) {
        if (rank == 0) printf("darknet-mn %s\n", MN_VERSION);
        MPI_Finalize();
        return 0;
    }
    /* Every rank parsed the same argv, so every rank leaves here alike. */
    if (!l.cmd || l.why[0]) {
        if (rank == 0) {
            if (l.why[0]) fprintf(stderr, "darknet-mn: %s\n", l.why);
            else usage();
        }
        MPI_Finalize();
        return MN_EXIT_USAGE;
    }
    const char *cmd = l.cmd->cmd;
    mn_status s = MN_ERR_USER;
    mn_comm *c = mn_comm_create(MPI_COMM_WORLD, &s);
    alarm(0);   /* every rank joined: the watchdog takes over */
    if (c) {
        mn_install_fault_handlers(c);
        mn_base_init();   /* hank-ai's fatal errors through mn_fatal, before any network */
        /* Before anything loads a network: Darknet allocates on the current device. */
        s = mn_gpu_place(c, l.nogpu);
        if (s != MN_OK) ;
        else if (!strcmp(cmd, "info")) s = mn_info(c, sub);
        else if (!strcmp(cmd, "partial")) s = mn_partial(c, sub, a, b, w);
        else if (!strcmp(sub, "test")) s = mn_detector_test(c, a, b, w, arg(&l, 5), l.out, l.thresh);
        else if (!strcmp(sub, "predict")) s = mn_classifier_predict(c, a, b, w, arg(&l, 5));
        else if (!strcmp(cmd, "bench") && !strcmp(sub, "replica")) s = mn_bench_replica(c, argc, argv);
        else if (!strcmp(cmd, "bench") && !strcmp(sub, "step")) s = mn_bench_step(c, argc, argv);
        else if (!strcmp(cmd, "bench")) s = mn_bench_allreduce(c, argc, argv);
        else if (!strcmp(cmd, "detector") && !strcmp(sub, "valid")) s = mn_detector_valid(c, a, b, w, l.out);
        else if (!strcmp(sub, "recall")) s = mn_detector_recall(c, a, b, w);
        else if (!strcmp(sub, "map")) s = mn_detector_map(c, a, b, w);
        else if (!strcmp(sub, "valid")) s = mn_classifier_valid(c, a, b, w);
        else s = mn_train(c, !strcmp(cmd, "detector") ? MN_TASK_DETECTOR : MN_TASK_CLASSIFIER, a, b, w, l.clear,
                          l.map ? atoi(l.map_epochs ? l.map_epochs : "4") : 0);
        mn_comm_free(c);
    }
    MPI_Finalize();
    return mn_exit_status(s);
}
