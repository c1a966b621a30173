/*
 * Output and map-control functions: printf, print, time, exit, clear,
 * zero, delete, has_key, len, system, cat.
 */
#include <errno.h>
#include <string.h>

#include "format.h"
#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

static struct type *ty_void(struct sema_ctx *x)
{
	return type_new(x->a, TY_VOID, 0);
}

/* A whole map as an argument (print(@m), clear(@m), ...): no key check. */
static struct sema_map *whole_map(struct sema_ctx *x, struct ast_node *call,
				  struct ast_node *arg, bool keys_ok)
{
	struct sema_map *m = sema_map_of(arg);

	if (!m) {
		sema_error(x, &call->loc, "%s() expects a map to be provided",
			   call->call.name);
		return NULL;
	}
	if (arg->map.nkeys && !keys_ok) {
		sema_error(x, &call->loc,
			   "The map passed to %s() should not be indexed by a key",
			   call->call.name);
		return NULL;
	}
	arg->type = m->value;
	if (!m->value) {
		struct ast_loc loc = sema_call_arg_loc(call);

		sema_error(x, &loc, "Undefined map: %s", m->name);
		x->unresolved++;
		return NULL;
	}
	sema_node(x, call)->map = m;
	return m;
}

/* The format argument: a string literal. */
static const char *fmt_arg(struct sema_ctx *x, struct ast_node *call,
			   struct ast_node *arg, size_t *len)
{
	const char *s;

	if (!sema_str_literal(x, arg, &s)) {
		sema_error(x, &call->loc, "%s() expects a string literal (%s provided)",
			   call->call.name, type_class(arg->type));
		return NULL;
	}
	*len = arg->kind == AST_STRING ? arg->str.len : strlen(s);
	return s;
}

/* printf/system/cat: the format and its arguments. */
static struct type *ty_format(struct sema_ctx *x, struct ast_node *call,
			      enum sema_func f)
{
	struct fmt_string fs;
	struct type **el;
	struct sema_fmt *sf;
	const char *text, *msg;
	size_t len;
	int n = call->call.nargs - 1, i = 0;

	text = fmt_arg(x, call, call->call.args, &len);
	if (!text)
		return NULL;
	if (fmt_parse(x->a, text, len, &fs)) {
		sema_error(x, &call->loc, "%s: invalid format string",
			   call->call.name);
		return NULL;
	}
	el = arena_alloc(x->a, sizeof(*el) * (n ? n : 1));
	for (struct ast_node *a = call->call.args->next; a; a = a->next)
		el[i++] = a->type;
	msg = fmt_check_args(x->a, call->call.name, &fs, el, n);
	if (msg) {
		sema_error(x, &call->loc, "%s", msg);
		return NULL;
	}
	sf = sema_fmt_get(x, call, f, text);
	sf->args = sema_tuple(x, el, n);
	sf->nargs = n;
	return ty_void(x);
}

static struct type *ty_printf(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	(void)m;
	return ty_format(x, call, FN_PRINTF);
}

static struct type *ty_system(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	(void)m;
	return ty_format(x, call, FN_SYSTEM);
}

static struct type *ty_cat(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	(void)m;
	return ty_format(x, call, FN_CAT);
}

static struct type *ty_time(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	const char *text = "%H:%M:%S\n";
	struct sema_fmt *sf;
	size_t len;

	(void)m;
	if (call->call.args) {
		text = fmt_arg(x, call, call->call.args, &len);
		if (!text)
			return NULL;
	}
	sf = sema_fmt_get(x, call, FN_TIME, text);
	sf->args = sema_tuple(x, NULL, 0);
	return ty_void(x);
}

static bool is_printable(const struct type *t)
{
	return t->kind != TY_VOID && t->kind != TY_NONE &&
	       !(t->kind == TY_RECORD && t->is_ctx) &&
	       !(t->kind == TY_POINTER && t->is_ctx);
}

static struct type *ty_print(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	struct sema_node *sn = sema_node(x, call);
	int64_t v;

	(void)m;
	/* print(@x[k]) alone: the value (v0.26; 0.17 refused it) */
	if (a->kind == AST_MAP && !(a->map.nkeys && !a->next)) {
		int i = 0;

		if (!whole_map(x, call, a, false))
			return NULL;
		for (struct ast_node *o = a->next; o; o = o->next, i++) {
			if (!sema_int_literal(x, o, &v)) {
				sema_error(x, &call->loc,
					   "print() expects a integer literal (%s provided)",
					   type_class(o->type));
				return NULL;
			}
			if (v < 0) {
				sema_error(x, &call->loc,
					   "print(): %s must be non-negative (%lld provided)",
					   i ? "div" : "top", (long long)v);
				return NULL;
			}
			sn->iargs[i] = v;
		}
		return ty_void(x);
	}
	/* a map argument is the hook's to type; the others are typed
	 * (once: a second walk would repeat their warnings) */
	if (!sema_t_agg_value(x, a, a->kind == AST_MAP ?
					    sema_type_expr(x, a) : a->type))
		return NULL;
	if (call->call.nargs > 1) {
		sema_error(x, &call->loc,
			   "Non-map print() only takes 1 argument, %d found",
			   call->call.nargs);
		return NULL;
	}
	if (!is_printable(a->type)) {
		sema_error(x, &call->loc,
			   "%s%s type passed to print() is not printable",
			   a->type->is_ctx ? "(ctx) " : "", sema_tstr(x, a->type));
		return NULL;
	}
	sn->map = NULL;
	return ty_void(x);
}

static struct type *ty_exit(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	struct ast_node *a = call->call.args;

	(void)m;
	if (a && a->type->kind != TY_INT && a->type->kind != TY_BOOL) {
		sema_error(x, &call->loc,
			   "exit() only supports integer arguments (%s provided)",
			   type_class(a->type));
		return NULL;
	}
	return ty_void(x);
}

static struct type *ty_clear(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	(void)m;
	if (!whole_map(x, call, call->call.args, false))
		return NULL;
	return ty_void(x);
}

static struct type *delete_key(struct sema_ctx *x, struct ast_node *call,
			       struct ast_node *a);

static struct type *ty_delete(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	struct ast_node *a = call->call.args;

	(void)m;
	const struct ast_loc *saved = x->use_loc;
	struct type *t;

	if (a->kind != AST_MAP) {
		sema_error(x, &call->loc, "delete() expects a map to be provided");
		return NULL;
	}
	/* bpftrace 0.17 locates errors about the map at the call */
	x->use_loc_buf = sema_call_arg_loc(call);
	x->use_loc = &x->use_loc_buf;
	t = delete_key(x, call, a);
	x->use_loc = saved;
	if (!t)
		return NULL;
	sema_node(x, call)->map = sema_map_of(a);
	/* whether the key was there (bpftrace v0.22 on; 0.17: no value) */
	return type_new(x->a, TY_BOOL, 1);
}

static struct type *delete_key(struct sema_ctx *x, struct ast_node *call,
			       struct ast_node *a)
{
	if (a->next) {
		/* delete(@m, key): the key written apart */
		struct ast_node fake = *a;

		if (a->map.nkeys) {
			sema_error(x, &call->loc,
				   "The map passed to delete() should not be indexed by a key");
			return NULL;
		}
		fake.map.nkeys = 1;
		fake.next = NULL;
		fake.map.keys = arena_alloc(x->a, sizeof(*fake.map.keys));
		*fake.map.keys = *a->next;
		fake.map.keys->next = NULL;
		if (!sema_type_expr(x, &fake))
			return NULL;
		a->type = fake.type;
		return a->type;
	}
	return sema_type_expr(x, a);
}

/* a map known to have no keys (v0.26 refuses len() and has_key() of one) */
static bool keyless(struct ast_node *a)
{
	struct sema_map *sm = a->kind == AST_MAP ? sema_map_of(a) : NULL;

	return sm && sm->key_set && !sm->nkeys;
}

static struct type *ty_has_key(struct sema_ctx *x, struct ast_node *call,
			       struct sema_map *m)
{
	struct ast_node *a = call->call.args;
	struct ast_node fake;

	(void)m;
	if (a->kind != AST_MAP || a->map.nkeys) {
		sema_error(x, &call->loc, "has_key() expects a map to be provided");
		return NULL;
	}
	if (keyless(a)) {
		sema_error(x, &call->loc,
			   "call to has_key() expects a map with explicit keys (non-scalar map)");
		return NULL;
	}
	fake = *a;
	fake.next = NULL;
	fake.map.keys = arena_alloc(x->a, sizeof(*fake.map.keys));
	*fake.map.keys = *a->next;
	fake.map.keys->next = NULL;
	fake.map.nkeys = 1;
	if (!sema_type_expr(x, &fake))
		return NULL;
	a->type = fake.type;
	sema_node(x, call)->map = sema_map_of(a);
	return type_new(x->a, TY_BOOL, 1);
}

/* errorf(), warnf(): a printf() that prints as a located message */
static struct type *ty_errorf(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	(void)m;
	return ty_format(x, call, FN_ERRORF);
}

static struct type *ty_warnf(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	(void)m;
	return ty_format(x, call, FN_WARNF);
}

static struct type *ty_len(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	(void)m;
	if (call->call.args->kind != AST_MAP) {
		struct type *t = call->call.args->type;	/* typed already */

		if (t && (t->kind == TY_USTACK || t->kind == TY_KSTACK)) {
			/* v0.26 counts a stack's frames */
			sema_error(x, &call->loc,
				   "len() of a stack is not supported yet");
			return NULL;
		}
	}
	if (!whole_map(x, call, call->call.args, false))
		return NULL;
	if (keyless(call->call.args)) {
		sema_error(x, &call->loc,
			   "call to len() expects a map with explicit keys (non-scalar map)");
		return NULL;
	}
	return sema_int64(x);
}

const struct sema_func_ops sema_funcs_print[] = {
	{ .name = "printf", .id = FN_PRINTF, .min_args = 1, .max_args = 128,
	  .flags = FN_F_VOID | FN_F_FMT, .type = ty_printf },
	{ .name = "print", .id = FN_PRINT, .min_args = 1, .max_args = 3,
	  .flags = FN_F_VOID | FN_F_MAP_ARG, .type = ty_print },
	{ .name = "time", .id = FN_TIME, .min_args = 0, .max_args = 1,
	  .flags = FN_F_VOID | FN_F_FMT, .type = ty_time },
	{ .name = "exit", .id = FN_EXIT, .min_args = 0, .max_args = 1,
	  .flags = FN_F_VOID, .type = ty_exit },
	{ .name = "clear", .id = FN_CLEAR, .min_args = 1, .max_args = 1,
	  .flags = FN_F_VOID | FN_F_MAP_ARG, .type = ty_clear },
	{ .name = "zero", .id = FN_ZERO, .min_args = 1, .max_args = 1,
	  .flags = FN_F_VOID | FN_F_MAP_ARG, .type = ty_clear },
	{ .name = "delete", .id = FN_DELETE, .min_args = 1, .max_args = 2,
	  .flags = FN_F_MAP_ARG, .type = ty_delete },
	{ .name = "has_key", .id = FN_HAS_KEY, .min_args = 2, .max_args = 2,
	  .flags = FN_F_MAP_ARG, .type = ty_has_key },
	{ .name = "len", .id = FN_LEN, .min_args = 1, .max_args = 1,
	  .flags = FN_F_MAP_ARG, .type = ty_len },
	{ .name = "system", .id = FN_SYSTEM, .min_args = 1, .max_args = 128,
	  .flags = FN_F_VOID | FN_F_UNSAFE | FN_F_FMT, .type = ty_system },
	{ .name = "cat", .id = FN_CAT, .min_args = 1, .max_args = 128,
	  .flags = FN_F_VOID | FN_F_FMT, .type = ty_cat },
	{ .name = "errorf", .id = FN_ERRORF, .min_args = 1, .max_args = 128,
	  .flags = FN_F_VOID | FN_F_FMT, .type = ty_errorf },
	{ .name = "warnf", .id = FN_WARNF, .min_args = 1, .max_args = 128,
	  .flags = FN_F_VOID | FN_F_FMT, .type = ty_warnf },
	{ 0 },
};
