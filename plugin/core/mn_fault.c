/* Fatal signals on any rank end the whole job at once: otherwise a crashed
 * rank (a SIGSEGV in a layer, Darknet's error() through assert) leaves the
 * others blocked in the next allreduce. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/mn_core.h"
#include "core/mn_fault.h"
#include "core/mn_output.h"

/* A signal handler can reach only static storage: the one process-wide
 * state of the plugin, set once. */
static char fault_prefix[160];
static pthread_t main_thread;
static int thread_level = MPI_THREAD_SINGLE, installed;
static volatile sig_atomic_t exit_code = MN_EXIT_FAULT;
static volatile sig_atomic_t stop_signal;
/* The rescue, its thread, which a SIGTERM wakes, and its state: 0 idle,
 * 1 writing, 2 done. */
static void (*rescue_fn)(void *);
static void *rescue_arg;
static sem_t rescue_wake;
static pthread_t rescue_thread;
static volatile int rescue_state, rescue_quit;

static void on_deadline(int sig)
{
    (void)sig;
    _exit(exit_code);
}

/* The rescue, once: the first caller writes, a later one waits for it. */
static void run_rescue(void)
{
    if (!rescue_fn) return;
    if (__sync_bool_compare_and_swap(&rescue_state, 0, 1)) {
        rescue_fn(rescue_arg);
        __sync_synchronize();
        rescue_state = 2;
    }
    while (rescue_state == 1) usleep(10000);
}

static void *rescue_main(void *arg)
{
    (void)arg;
    while (sem_wait(&rescue_wake) == 0 || errno == EINTR)
        if (rescue_quit) break;
        else if (stop_signal == SIGTERM) run_rescue();
    return NULL;
}

void mn_rescue_register(void (*fn)(void *), void *arg)
{
    if (fn && !rescue_fn && sem_init(&rescue_wake, 0, 0) == 0) {
        rescue_fn = fn;
        rescue_arg = arg;
        rescue_state = rescue_quit = 0;
        if (pthread_create(&rescue_thread, NULL, rescue_main, NULL) != 0) rescue_fn = NULL;
    } else if (!fn && rescue_fn) {
        rescue_quit = 1;
        sem_post(&rescue_wake);
        pthread_join(rescue_thread, NULL);
        while (rescue_state == 1) usleep(10000);
        rescue_fn = NULL;
        sem_destroy(&rescue_wake);
    }
}

/* MPI_Abort where this thread may call MPI, else _exit, which the launcher
 * turns into the end of every rank. */
void mn_die(int code)
{
    exit_code = code;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_deadline;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    /* A job ended for a rerun writes its last completed update first. */
    if (code == MN_EXIT_RERUN && rescue_fn) {
        alarm(MN_RESCUE_DEADLINE);
        run_rescue();
    }
    alarm(MN_ABORT_DEADLINE);
    /* MPI_Abort interrupting MPI on this thread can block for ever: the
     * alarm ends that. */
    if (!installed || thread_level == MPI_THREAD_MULTIPLE || pthread_equal(pthread_self(), main_thread))
        MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}

static void append(char *buf, size_t *n, size_t cap, const char *s)
{
    while (*s && *n + 1 < cap) buf[(*n)++] = *s++;
}

/* One write, so that another thread's output cannot split the line. A
 * second fatal signal (Darknet's loader threads often fail together) waits
 * for the first to end the job, then exits: MPI_Abort itself crashed. */
static void on_fatal(int sig)
{
    static volatile int busy;
    if (__sync_lock_test_and_set(&busy, 1)) {
        sleep(MN_ABORT_DEADLINE);
        _exit(128 + sig);
    }
    const char *name = sig == SIGSEGV ? "SIGSEGV (invalid memory access)"
                     : sig == SIGBUS ? "SIGBUS (bus error)"
                     : sig == SIGFPE ? "SIGFPE (arithmetic exception)"
                     : sig == SIGABRT ? "SIGABRT (abort: an assertion or Darknet's error())"
                     : sig == SIGTERM ? "SIGTERM" : "a fatal signal";
    char msg[512];
    size_t n = 0;
    append(msg, &n, sizeof msg, fault_prefix);
    append(msg, &n, sizeof msg, name);
    append(msg, &n, sizeof msg, "; aborting all ranks\n");
    mn_output_replay();   /* a rank > 0: what Darknet said last (its error()) */
    ssize_t r = write(mn_output_error_fd(), msg, n);
    (void)r;
    mn_die(MN_EXIT_FAULT);
}

void mn_fatal(int code, const char *what)
{
    char msg[1024];
    size_t n = 0;
    append(msg, &n, sizeof msg, fault_prefix[0] ? fault_prefix : "darknet-mn: fatal: ");
    append(msg, &n, sizeof msg, what);
    while (n > 0 && msg[n - 1] == '\n') --n;
    append(msg, &n, sizeof msg, "; aborting all ranks\n");
    mn_output_replay();
    ssize_t r = write(mn_output_error_fd(), msg, n);
    (void)r;
    mn_die(code);
}

void mn_install_fault_handlers(const mn_comm *c)
{
    snprintf(fault_prefix, sizeof fault_prefix, "darknet-mn: rank %d (%s): fatal: ", c->rank, c->host);
    main_thread = pthread_self();
    MPI_Query_thread(&thread_level);
    installed = 1;
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_NODEFER;   /* a crash inside the handler re-enters it and exits */
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Slurm's time limit or preemption, mpiexec's forwarded SIGUSR1, a user's
 * SIGINT. */
static void on_stop(int sig)
{
    if (stop_signal && sig != SIGUSR1) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
    /* mpiexec's and srun's SIGTERM before their SIGKILL when a rank is lost:
     * the rescue thread writes while the main thread may be stuck. */
    if (sig == SIGTERM && rescue_fn) sem_post(&rescue_wake);
}

const int mn_stop_signals[MN_STOP_SIGNALS] = {SIGTERM, SIGUSR1, SIGINT};

void mn_install_stop_handlers(void)
{
    for (int i = 0; i < MN_STOP_SIGNALS; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(mn_stop_signals[i], &sa, NULL);
    }
}

int mn_stop_signal(void)
{
    return stop_signal;
}

const char *mn_signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGUSR1 ? "SIGUSR1" : sig == SIGINT ? "SIGINT" : "a signal";
}
