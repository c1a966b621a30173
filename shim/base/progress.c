/* Progress of a long step on a terminal (progress.h). */
#include <stdio.h>
#include <unistd.h>

#include "progress.h"

void progress_start(struct progress *p, const char *what, int total)
{
	*p = (struct progress){ .what = what, .total = total, .shown = -1,
				.on = total >= PROGRESS_MIN &&
				      isatty(STDERR_FILENO) };
}

void progress_step(struct progress *p, int done)
{
	if (!p->on || (done < p->total && p->shown >= 0 &&
		       done - p->shown < p->total / 100))
		return;
	fprintf(stderr, "\rubt: %s: %d of %d", p->what, done, p->total);
	fflush(stderr);
	p->shown = done;
}

void progress_end(struct progress *p)
{
	if (p->on && p->shown >= 0) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->on = false;
}
