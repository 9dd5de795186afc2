/* The abort path (mn_fault.c). */
#ifndef MN_FAULT_H
#define MN_FAULT_H

/* Ends the job from any thread, in any state of the heap: MPI_Abort where
 * this thread may call MPI (the main thread, or any under
 * MPI_THREAD_MULTIPLE), else _exit, which mpiexec also turns into the end
 * of every rank. A deadline (SIGALRM) _exits the process if MPI_Abort does
 * not return. Async-signal-safe but for MPI_Abort. */
void mn_die(int code) __attribute__((noreturn));
/* A fatal error on this rank outside any collective (the base's own, once
 * it printed its message, or memory the plugin could not get): "darknet-mn:
 * rank R (host): fatal: what; aborting all ranks" on the error stream, then
 * mn_die(code): the exit table's row for the cause (MN_EXIT_USER for a cfg
 * or a file, MN_EXIT_RERUN for memory or the device, MN_EXIT_FAULT for an
 * internal limit). */
void mn_fatal(int code, const char *what) __attribute__((noreturn));
/* SIGTERM, SIGUSR1 and SIGINT set a flag that training reads at each
 * iteration's end (mn_stop_signal: the first signal, 0 for none); a second
 * SIGTERM or SIGINT takes its default action. */
void mn_install_stop_handlers(void);
int mn_stop_signal(void);
/* The stop signals, in one order: the handlers' and training's count of
 * the ranks each reached (mn_train.c's loss allreduce). */
#define MN_STOP_SIGNALS 3
extern const int mn_stop_signals[MN_STOP_SIGNALS];
const char *mn_signal_name(int sig);
/* Seconds mn_die gives MPI_Abort before _exit. */
#define MN_ABORT_DEADLINE 10
/* What a rank left writes when the job is lost (training's rescue,
 * mn_checkpoint.c): fn(arg) runs once, on a thread of its own when a
 * SIGTERM arrives (the launcher's, before its SIGKILL, when another rank
 * died) and in mn_die(MN_EXIT_RERUN) (the watchdog) before the abort,
 * within MN_RESCUE_DEADLINE seconds. fn NULL unregisters it, waiting for
 * a write in progress. */
void mn_rescue_register(void (*fn)(void *), void *arg);
#define MN_RESCUE_DEADLINE 60

#endif
