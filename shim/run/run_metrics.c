/*
 * --metrics in the combined run (shim/metrics/): the endpoint reads the
 * maps through the kernel side, whose source is run_map_source() (both
 * sides merged as print() and the exit printout merge them), and the
 * run's own numbers: where each probe runs, events lost on both sides,
 * updates the maps of either side refused, the processes taken.  The
 * loop (run.c) serves it between its reads: a scrape never runs beside
 * a map hook or a clear().
 */
#include "metrics.h"
#include "run_int.h"

static void run_metrics_self(void *ctx, struct metrics_self *s)
{
	struct run *r = ctx;
	struct run_user_cursor keep = run_user_keep(r);

	s->events_lost = kernel_events_lost(r->k) + r->lost;
	s->updates_dropped = xcalloc(r->kobj->nmaps + 1, 8);
	for (int i = 0; i < r->kobj->nmaps; i++) {
		s->updates_dropped[i] = kernel_map_full(r->k, i);
		run_for_each_user(r, j)
			s->updates_dropped[i] += run_user_map_full(r, i) +
						 run_user_map_lockdrop(r, i);
	}
	run_user_back(r, keep);
	s->have_taken = true;
	s->processes_taken = r->nfleet;
}

void run_metrics_start(struct run *r)
{
	int n = r->c->sema->nprobes;
	const char **where;

	if (!r->o->metrics)
		return;
	where = xcalloc(n + 1, sizeof(*where));
	for (int i = 0; i < n; i++)
		where[i] = r->d[i].where == RUN_KERNEL ? "kernel" :
			   r->d[i].where == RUN_BOTH || r->sysw ? "both" :
								  "user";
	metrics_plan(r->o->metrics, r->c, where);
	free(where);
	kernel_metrics_serve(r->k, r->o->metrics);
	metrics_set_self(r->o->metrics, run_metrics_self, r);
}

void run_metrics_stop(struct run *r)
{
	if (r->o->metrics)
		kernel_metrics_serve(NULL, r->o->metrics);
}
