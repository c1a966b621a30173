/*
 * SIGINT and SIGTERM during a run, in two stages: the first asks the run
 * to end the ordinary way (signals_stopping() turns true), a second one
 * (whatever ubt waits for meanwhile) ends ubt at once.  Both run loops
 * (kernel.c, run.c) use it.
 */
#ifndef UBT_SIGNALS_H
#define UBT_SIGNALS_H

#include <stdbool.h>

/* Clear the request and catch SIGINT and SIGTERM (SA_RESTART). */
void signals_catch(void);

/* Has the run been asked to end? */
bool signals_stopping(void);

/* SIGINT and SIGTERM back to their default action. */
void signals_restore(void);

/* Ask the run to end, as a first signal would; async-signal-safe. */
void signals_stop(void);

#endif
