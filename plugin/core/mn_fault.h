/* The abort path, the stop signals and the rescue (mn_fault.c). */
#ifndef MN_FAULT_H
#define MN_FAULT_H

/* Ends the job from any thread: MPI_Abort where this thread may call MPI,
 * else _exit, which the launcher turns into the end of every rank.
 * Async-signal-safe but for MPI_Abort. */
void mn_die(int code) __attribute__((noreturn));
/* A fatal error outside any collective: one line naming the rank and what,
 * then mn_die(code), code being the exit status for the cause. */
void mn_fatal(int code, const char *what) __attribute__((noreturn));
/* SIGTERM, SIGUSR1 and SIGINT set a flag that training reads at each
 * iteration's end (mn_stop_signal: the first one, 0 for none); a second
 * SIGTERM or SIGINT takes its default action. */
void mn_install_stop_handlers(void);
int mn_stop_signal(void);
/* The stop signals in one order, for counting the ranks each reached. */
#define MN_STOP_SIGNALS 3
extern const int mn_stop_signals[MN_STOP_SIGNALS];
const char *mn_signal_name(int sig);
/* Seconds mn_die gives MPI_Abort before _exit. */
#define MN_ABORT_DEADLINE 10
/* The rescue (the checkpoint's): fn(arg) runs once when the job is being
 * lost, on its own thread at a SIGTERM or in mn_die(MN_EXIT_RERUN), within
 * MN_RESCUE_DEADLINE seconds. NULL unregisters it, waiting for a write in
 * progress. */
void mn_rescue_register(void (*fn)(void *), void *arg);
#define MN_RESCUE_DEADLINE 60

#endif
