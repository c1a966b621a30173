/*
 * SIGINT and SIGTERM during a run, in two stages: the first asks the run
 * to end the ordinary way (signals_stopping() turns true), a second one
 * (whatever ubt waits for meanwhile) ends ubt at once.  SIGUSR1 asks
 * for the maps to be printed, and the run goes on (as bpftrace).  Both
 * run loops (kernel.c, run.c) use it.
 */
#ifndef UBT_SIGNALS_H
#define UBT_SIGNALS_H

#include <stdbool.h>

/* Clear the requests and catch SIGINT, SIGTERM and SIGUSR1
 * (SA_RESTART). */
void signals_catch(void);

/* Has the run been asked to end? */
bool signals_stopping(void);

/* SIGINT and SIGTERM back to their default action, SIGUSR1 ignored. */
void signals_restore(void);

/* Ask the run to end, as a first signal would; async-signal-safe. */
void signals_stop(void);

/* Did a SIGUSR1 come since the last call?  (The request is taken.) */
bool signals_take_usr1(void);

#endif
