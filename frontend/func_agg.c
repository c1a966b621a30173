/*
 * Aggregation functions: count, sum, avg, min, max, stats, hist, lhist.
 * Each must be assigned directly to a map (FN_F_AGG); the call's type is
 * the map's value type (TY_COUNT ... TY_LHIST).
 */
#include <errno.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

#define HIST_MAX_BITS 5
#define LHIST_MAX_BUCKETS 1000

/* The value argument of sum() & co: an integer. */
static struct type *int_arg(struct sema_ctx *x, struct ast_node *call,
			    struct ast_node *arg)
{
	struct type *t = arg->type;

	if (t->kind != TY_INT && t->kind != TY_BOOL && t->kind != TY_ENUM &&
	    t->kind != TY_POINTER) {
		sema_error(x, &call->loc,
			   "%s() only supports integer arguments (%s provided)",
			   call->call.name, type_class(t));
		return NULL;
	}
	return t;
}

static int literal_arg(struct sema_ctx *x, struct ast_node *call,
		       struct ast_node *arg, int64_t *v)
{
	if (!sema_int_literal(x, arg, v)) {
		sema_error(x, &call->loc,
			   "%s() expects a integer literal (%s provided)",
			   call->call.name, type_class(arg->type));
		return -EINVAL;
	}
	return 0;
}

static struct type *ty_count(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	(void)call;
	(void)m;
	return type_new(x->a, TY_COUNT, 8);
}

static struct type *ty_value_agg(struct sema_ctx *x, struct ast_node *call,
				 enum type_kind kind)
{
	struct type *v = int_arg(x, call, call->call.args);
	struct type *t;

	if (!v)
		return NULL;
	t = type_new(x->a, kind, 8);
	t->is_signed = v->kind == TY_INT ? v->is_signed : false;
	return t;
}

static struct type *ty_sum(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	(void)m;
	return ty_value_agg(x, call, TY_SUM);
}

static struct type *ty_avg(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	(void)m;
	return ty_value_agg(x, call, TY_AVG);
}

static struct type *ty_min(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	(void)m;
	return ty_value_agg(x, call, TY_MIN);
}

static struct type *ty_max(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	(void)m;
	return ty_value_agg(x, call, TY_MAX);
}

static struct type *ty_stats(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	(void)m;
	return ty_value_agg(x, call, TY_STATS);
}

static struct type *ty_hist(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	struct ast_node *bits = call->call.args->next;
	struct type *t;
	int64_t b = 0;

	(void)m;
	if (!int_arg(x, call, call->call.args))
		return NULL;
	if (bits) {
		if (literal_arg(x, call, bits, &b))
			return NULL;
		if (b < 0 || b > HIST_MAX_BITS) {
			sema_error(x, &call->loc,
				   "hist: bits %lld must be 0..%d",
				   (long long)b, HIST_MAX_BITS);
			return NULL;
		}
	}
	t = type_new(x->a, TY_HIST, 8);
	t->hist_bits = (int)b;
	sema_node(x, call)->iargs[0] = b;
	return t;
}

static struct type *ty_lhist(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	int64_t min, max, step;
	struct type *t;
	int err = 0;

	(void)m;
	if (!int_arg(x, call, a))
		return NULL;
	if (literal_arg(x, call, a->next, &min) ||
	    literal_arg(x, call, a->next->next, &max) ||
	    literal_arg(x, call, a->next->next->next, &step))
		return NULL;
	if (step < 1) {
		sema_error(x, &call->loc, "lhist() step must be >= 1 (%lld provided)",
			   (long long)step);
		return NULL;
	}
	if (min < 0) {
		sema_error(x, &call->loc,
			   "lhist() min must be non-negative (provided min %lld)",
			   (long long)min);
		err = -EINVAL;
	}
	if (min > max) {
		sema_error(x, &call->loc,
			   "lhist() min must be less than max (provided min %lld and max %lld)",
			   (long long)min, (long long)max);
		err = -EINVAL;
	}
	if (max - min < step) {
		sema_error(x, &call->loc,
			   "lhist() step is too large for the given range (provided step %lld for range %lld)",
			   (long long)step, (long long)(max - min));
		err = -EINVAL;
	} else if ((max - min) / step > LHIST_MAX_BUCKETS) {
		sema_error(x, &call->loc,
			   "lhist() too many buckets, must be <= %d (would need %lld)",
			   LHIST_MAX_BUCKETS, (long long)((max - min) / step));
		err = -EINVAL;
	}
	if (err)
		return NULL;
	t = type_new(x->a, TY_LHIST, 8);
	t->lhist_min = min;
	t->lhist_max = max;
	t->lhist_step = step;
	sema_node(x, call)->iargs[0] = min;
	sema_node(x, call)->iargs[1] = max;
	sema_node(x, call)->iargs[2] = step;
	return t;
}

const struct sema_func_ops sema_funcs_agg[] = {
	{ .name = "count", .id = FN_COUNT, .min_args = 0, .max_args = 0,
	  .flags = FN_F_AGG, .type = ty_count },
	{ .name = "sum", .id = FN_SUM, .min_args = 1, .max_args = 1,
	  .flags = FN_F_AGG, .type = ty_sum },
	{ .name = "avg", .id = FN_AVG, .min_args = 1, .max_args = 1,
	  .flags = FN_F_AGG, .type = ty_avg },
	{ .name = "min", .id = FN_MIN, .min_args = 1, .max_args = 1,
	  .flags = FN_F_AGG, .type = ty_min },
	{ .name = "max", .id = FN_MAX, .min_args = 1, .max_args = 1,
	  .flags = FN_F_AGG, .type = ty_max },
	{ .name = "stats", .id = FN_STATS, .min_args = 1, .max_args = 1,
	  .flags = FN_F_AGG, .type = ty_stats },
	{ .name = "hist", .id = FN_HIST, .min_args = 1, .max_args = 2,
	  .flags = FN_F_AGG, .type = ty_hist },
	{ .name = "lhist", .id = FN_LHIST, .min_args = 4, .max_args = 4,
	  .flags = FN_F_AGG, .type = ty_lhist },
	{ 0 },
};
