/*
 * tseries(value, interval_ns, num_intervals[, agg]) (bpftrace v0.26): a
 * time series of an integer. Each map key holds num_intervals buckets of
 * interval_ns nanoseconds; a bucket keeps the last value of its interval,
 * or their avg, max, min or sum. The map's value type is TY_TSERIES with
 * ts_interval, ts_num and ts_agg set, is_signed as the value argument.
 * Lowered by codegen/cg_tseries.c, printed by shim/output/output_tseries.c.
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "tseries.h"
#include "util.h"

#define TSERIES_MAX_INTERVALS 1000000

/* In bpftrace's message order (a sorted set). */
static const char *const agg_names[] = {
	[TSERIES_AVG] = "avg", [TSERIES_MAX] = "max",
	[TSERIES_MIN] = "min", [TSERIES_SUM] = "sum",
};

const char *tseries_agg_name(int agg)
{
	if (agg <= TSERIES_NONE || agg >= TSERIES_NAGG)
		return "none";
	return agg_names[agg];
}

/* A literal that is >= 0: its value; -1 for anything else. */
static int64_t ts_literal(struct sema_ctx *x, struct ast_node *a)
{
	int64_t v;

	if (a->kind == AST_UNOP || !sema_int_literal(x, a, &v) || v < 0)
		return -1;
	return v;
}

/* The unstable-feature warning, once (config unstable_tseries). */
static int ts_unstable(struct sema_ctx *x, struct ast_node *call)
{
	switch (x->prog->unstable_tseries) {
	case TSERIES_UNSTABLE_ERROR:
		sema_error(x, &call->loc,
			   "tseries feature is not enabled by default. To enable this unstable feature, set the config flag to enable. unstable_tseries=enable");
		return -EINVAL;
	case TSERIES_UNSTABLE_WARN:
		if (!x->prog->tseries_warned &&
		    sema_warning(x, NULL,
				 "Script is using an unstable feature: tseries. To prevent this warning you must explicitly enable it in the config e.g. unstable_tseries=enable"))
			x->prog->tseries_warned = true;
		return 0;
	default:
		return 0;
	}
}

static struct type *ty_tseries(struct sema_ctx *x, struct ast_node *call,
			       struct sema_map *m)
{
	struct ast_node *v = call->call.args, *iv = v->next, *num = iv->next;
	struct ast_node *agg = num->next;
	int64_t interval, n;
	struct type *t;
	int a = TSERIES_NONE;

	(void)m;
	if (ts_unstable(x, call))
		return NULL;
	interval = ts_literal(x, iv);
	if (interval < 0) {
		sema_error(x, &call->loc,
			   "tseries: invalid interval_ns value (must be non-negative literal)");
		return NULL;
	}
	n = ts_literal(x, num);
	if (n < 0) {
		sema_error(x, &call->loc,
			   "tseries: invalid num_intervals value (must be non-negative literal)");
		return NULL;
	}
	if (interval == 0) {
		sema_error(x, &call->loc,
			   "tseries() interval_ns must be >= 1 (0 provided)");
		return NULL;
	}
	if (n == 0) {
		sema_error(x, &call->loc,
			   "tseries() num_intervals must be >= 1 (0 provided)");
		return NULL;
	}
	if (n > TSERIES_MAX_INTERVALS) {
		sema_error(x, &call->loc,
			   "tseries() num_intervals must be < %d (%lld provided)",
			   TSERIES_MAX_INTERVALS, (long long)n);
		return NULL;
	}
	if (agg && agg->kind != AST_STRING) {
		sema_error(x, &call->loc,
			   "tseries() expects a string literal (%s provided)",
			   type_class(agg->type));
		return NULL;
	}
	if (agg) {
		for (a = TSERIES_NONE + 1; a < TSERIES_NAGG; a++)
			if (!strcmp(agg->str.value, agg_names[a]))
				break;
		if (a == TSERIES_NAGG) {
			sema_error(x, &call->loc,
				   "tseries() expects one of the following aggregation functions: avg, max, min, sum (\"%s\" provided)",
				   agg->str.value);
			return NULL;
		}
	}
	if (v->type->kind != TY_INT && v->type->kind != TY_BOOL &&
	    v->type->kind != TY_ENUM) {
		sema_error(x, &call->loc,
			   "tseries() only supports integer arguments (%s provided)",
			   type_class(v->type));
		return NULL;
	}
	t = type_new(x->a, TY_TSERIES, 8);
	t->is_signed = v->type->kind == TY_INT && v->type->is_signed;
	t->ts_interval = interval;
	t->ts_num = n;
	t->ts_agg = a;
	return t;
}

const struct sema_func_ops sema_funcs_tseries[] = {
	{ .name = "tseries", .id = FN_TSERIES, .min_args = 3, .max_args = 4,
	  .flags = FN_F_AGG, .type = ty_tseries },
	{ 0 },
};
