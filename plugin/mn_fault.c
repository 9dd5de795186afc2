/* Fatal signals on any rank end the whole job at once. Without this a rank
 * that crashes (SIGSEGV in a layer, Darknet's error() -> assert -> SIGABRT)
 * can leave the others blocked in the next allreduce until mpiexec notices. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "mn_internal.h"

/* A signal handler can only reach static storage: the rank/host prefix is
 * formatted once here, the one piece of process-wide state the plugin keeps. */
static char fault_prefix[160];

static void put(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void on_fatal(int sig)
{
    const char *name = sig == SIGSEGV ? "SIGSEGV (invalid memory access)"
                     : sig == SIGBUS ? "SIGBUS (bus error)"
                     : sig == SIGFPE ? "SIGFPE (arithmetic exception)"
                     : sig == SIGABRT ? "SIGABRT (abort: an assertion or Darknet's error())"
                     : sig == SIGTERM ? "SIGTERM" : "a fatal signal";
    put(fault_prefix);
    put(name);
    put("; aborting all ranks\n");
    signal(sig, SIG_DFL);
    /* MPI_Abort is not async-signal-safe, but the process is lost anyway and
     * it is the one call that takes the other ranks down promptly. */
    MPI_Abort(MPI_COMM_WORLD, 128 + sig);
    _exit(128 + sig);
}

void mn_install_fault_handlers(const mn_comm *c)
{
    snprintf(fault_prefix, sizeof fault_prefix, "darknet-mn: rank %d (%s): fatal: ", c->rank, c->host);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}
