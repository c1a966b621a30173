/*
 * --metrics on the kernel side (shim/metrics/): the maps handed to the
 * endpoint as the exit printout reads them (kernel_for_each_map(), through
 * the run's source when user-mode probes share them), the kernel's own
 * numbers, and the endpoint served from the kernel-only loop.
 */
#include <stdlib.h>
#include "kernel.h"
#include "metrics.h"
#include "util.h"
#include "kernel_int.h"

static int kernel_metrics_maps(void *ctx, metrics_each_fn each, void *ectx)
{
	return kernel_for_each_map(ctx, each, ectx);
}

uint64_t kernel_events_lost(const struct kernel *k)
{
	return k->lost;
}

static void kernel_metrics_self(void *ctx, struct metrics_self *s)
{
	struct kernel *k = ctx;

	s->events_lost = k->lost;
	s->updates_dropped = xcalloc(k->obj->nmaps + 1, 8);
	for (int i = 0; i < k->obj->nmaps; i++)
		s->updates_dropped[i] = kernel_map_full(k, i);
}

void kernel_metrics_serve(struct kernel *k, struct metrics *m)
{
	metrics_set_maps(m, k ? kernel_metrics_maps : NULL, k);
	metrics_set_self(m, k ? kernel_metrics_self : NULL, k);
}
