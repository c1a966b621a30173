/*
 * SIGINT and SIGTERM, in two stages: the first asks the run to end the
 * ordinary way (signals_stopping() turns true), a second one (whatever
 * ubt waits for meanwhile) ends ubt at once.  Caught from the start
 * (signals_early()): one that comes before anything is attached (during
 * the compile: the frontend, the expansion, code generation) ends ubt at
 * once, as the default action would (and as bpftrace).  SIGUSR1 asks for the maps to be printed, and the
 * run goes on (as bpftrace).  SIGPIPE from the program's output (its
 * reader gone: `ubt ... | head`) ends the run the ordinary way, and ubt
 * then dies of it, as bpftrace does.  SIGHUP keeps its default action
 * (ubt ends as bpftrace does, the traced processes restored by the
 * guard), except with --metrics, where it asks for every map to be
 * cleared and the run goes on (signals_clear_on_hup()).  Both run loops
 * (kernel.c, run.c) use it.
 */
#ifndef UBT_SIGNALS_H
#define UBT_SIGNALS_H

#include <stdbool.h>
#include <sys/types.h>

/* Catch SIGINT, SIGTERM and SIGPIPE before anything is attached (even
 * where they were ignored, as in a shell's background job). */
void signals_early(void);

/* A SIGINT/SIGTERM caught while nothing was attached (the handler ends
 * ubt itself then; this is for one left pending): end ubt by it (no
 * return).  Else nothing. */
void signals_check(void);

/* signals_check(), then catch SIGINT, SIGTERM, SIGPIPE and SIGUSR1
 * (SA_RESTART) for a run; requests that came already are kept. */
void signals_catch(void);

/* Has the run been asked to end (a signal, or the output's reader
 * gone)? */
bool signals_stopping(void);

/* SIGINT and SIGTERM back to their default action (ignored in the
 * worker), SIGUSR1 ignored. */
void signals_restore(void);

/* Ask the run to end, as a first signal would; async-signal-safe. */
void signals_stop(void);

/* Did a SIGUSR1 come since the last call?  (The request is taken.) */
bool signals_take_usr1(void);

/* From the next signals_early()/signals_catch() on, SIGHUP is caught
 * (SA_RESTART) and asks for the maps to be cleared, not for an end. */
void signals_clear_on_hup(void);

/* Did a SIGHUP come since the last call (signals_clear_on_hup())? */
bool signals_take_hup(void);

/* The file descriptor the program's output goes to (SIGPIPE). */
void signals_set_output(int fd);

/* Did the run end because the output's reader went away? */
bool signals_pipe_broken(void);

/* The worker: requests that process `from` (the guard) relays through
 * sigqueue() carry its count of them (shim/user/guard.c). */
void signals_set_relay(pid_t from);

/* End ubt as signal sig would (no return); the worker exits 128 + sig,
 * which its guard turns into the same death. */
void signals_end_by(int sig);

#endif
