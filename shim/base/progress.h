/*
 * Progress of a long step on a terminal: "ubt: WHAT: N of M" rewritten in
 * place on stderr while the step runs (an attach of thousands of sites,
 * uprobe:libc:*, takes seconds), erased when it ends, so that what is
 * printed after reads as without it.  Only when stderr is a terminal and
 * the step has at least PROGRESS_MIN items: never in a pipe or a file.
 */
#ifndef UBT_PROGRESS_H
#define UBT_PROGRESS_H

#include <stdbool.h>

#define PROGRESS_MIN 100

struct progress {
	const char *what;
	int total;
	int shown;		/* the count last printed */
	bool on;
};

void progress_start(struct progress *p, const char *what, int total);
/* done of total finished: printed each time another 1% is done */
void progress_step(struct progress *p, int done);
/* erase the line (nothing when it was never printed) */
void progress_end(struct progress *p);

#endif
