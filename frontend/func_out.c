/*
 * Output functions besides printf's family (func_print.c): join, which
 * prints an argv-style array of strings on one line; debugf, printf to
 * the kernel's trace pipe (bpf_trace_printk).
 */
#include <errno.h>
#include <string.h>

#include "format.h"
#include "sema.h"
#include "sema_int.h"
#include "util.h"

/* join(char **argv[, "sep"]): a statement; the separator in iargs. */
static struct type *ty_join(struct sema_ctx *x, struct ast_node *call,
			    struct sema_map *m)
{
	struct ast_node *a = call->call.args, *sep = a->next;
	const struct type *t = a->type;

	(void)m;
	if (t->kind != TY_INT && t->kind != TY_POINTER) {
		sema_error(x, &call->loc,
			   "join() only supports int or pointer arguments (%s provided)",
			   type_class(t));
		return NULL;
	}
	if (sep && (sep->kind != AST_STRING || !sema_str_literal(x, sep, NULL))) {
		sema_error(x, &call->loc,
			   "join() expects a string literal (%s provided)",
			   type_class(sep->type));
		return NULL;
	}
	return type_new(x->a, TY_VOID, 0);
}

/*
 * debugf("fmt", args...): checked as printf's; at most 12 arguments (the
 * kernel's bpf_trace_vprintk). With bpftrace 0.17's warning.
 */
static struct type *ty_debugf(struct sema_ctx *x, struct ast_node *call,
			      struct sema_map *m)
{
	struct ast_node *f = call->call.args;
	int n = call->call.nargs - 1, i = 0;
	struct fmt_string fs;
	struct type **el;
	const char *msg;

	(void)m;
	if (f->kind != AST_STRING) {
		sema_error(x, &call->loc,
			   "debugf() expects a string literal (%s provided)",
			   type_class(f->type));
		return NULL;
	}
	if (n > 12) {
		sema_error(x, &call->loc,
			   "debugf() takes at most 12 arguments after the format (%d provided)",
			   n);
		return NULL;
	}
	if (x->final)
		sema_warning(x, &call->loc,
			     "The debugf() builtin is not recommended for production use. For more information see bpf_trace_printk in bpf-helpers(7).");
	if (fmt_parse(x->a, f->str.value, f->str.len, &fs)) {
		sema_error(x, &call->loc, "debugf: invalid format string");
		return NULL;
	}
	el = arena_alloc(x->a, sizeof(*el) * (n ? n : 1));
	for (struct ast_node *a = f->next; a; a = a->next)
		el[i++] = a->type;
	msg = fmt_check_args(x->a, "debugf", &fs, el, n);
	if (msg) {
		sema_error(x, &call->loc, "%s", msg);
		return NULL;
	}
	return type_new(x->a, TY_VOID, 0);
}

const struct sema_func_ops sema_funcs_out[] = {
	{ .name = "join", .id = FN_JOIN, .min_args = 1, .max_args = 2,
	  .flags = FN_F_VOID, .type = ty_join },
	{ .name = "debugf", .id = FN_DEBUGF, .min_args = 1, .max_args = -1,
	  .flags = FN_F_VOID, .type = ty_debugf },
	{ 0 },
};
