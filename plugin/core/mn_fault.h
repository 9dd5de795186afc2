/* Abort, stop signals, rescue (mn_fault.c). */
#ifndef MN_FAULT_H
#define MN_FAULT_H

/* Ends the job from any thread; async-signal-safe but for MPI_Abort. */
void mn_die(int code) __attribute__((noreturn));
/* Outside any collective: prints rank and what, then mn_die. */
void mn_fatal(int code, const char *what) __attribute__((noreturn));
/* SIGTERM, SIGUSR1, SIGINT: mn_stop_signal gives the first (0: none); a
 * second SIGTERM or SIGINT takes its default action. */
void mn_install_stop_handlers(void);
int mn_stop_signal(void);
/* For counting the ranks each stop signal reached. */
#define MN_STOP_SIGNALS 3
extern const int mn_stop_signals[MN_STOP_SIGNALS];
const char *mn_signal_name(int sig);
/* Seconds mn_die gives MPI_Abort before _exit. */
#define MN_ABORT_DEADLINE 10
/* fn(arg) runs once, on its own thread, at a SIGTERM or mn_die(MN_EXIT_RERUN),
 * within MN_RESCUE_DEADLINE s. NULL unregisters, waiting for a write. */
void mn_rescue_register(void (*fn)(void *), void *arg);
#define MN_RESCUE_DEADLINE 60

#endif
