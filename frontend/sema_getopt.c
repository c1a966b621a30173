/*
 * Named parameters (bpftrace v0.25): getopt("name"[, default[, "help"]])
 * is known when the program is compiled, so each call becomes a literal
 * here, before resolution: the value of `--name=value` (or `--name` for a
 * boolean) among the program's parameters, else the default. The type is
 * the default's: bool (also without one), integer or string.
 *
 * The named parameters stay positional parameters too ($1, ...), unlike
 * bpftrace, which takes them out of the count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

/* The text after "--name" in the parameters ("" or "=value"), or NULL. */
static const char *named_param(struct compile *c, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < c->nparams; i++) {
		const char *p = c->params[i];

		if (strncmp(p, "--", 2) || strncmp(p + 2, name, n))
			continue;
		if (p[2 + n] == '\0' || p[2 + n] == '=')
			return p + 2 + n;
	}
	return NULL;
}

static void to_bool(struct ast_node *n, bool v)
{
	n->kind = AST_BOOL;
	n->num.value = v;
	n->num.is_negative = false;
}

/* Replace the call n with its value; 0 or -EINVAL. */
static int getopt_value(struct sema_ctx *x, struct ast_node *n)
{
	struct ast_node *name = n->call.args, *def = name ? name->next : NULL;
	const char *v;
	int64_t num;

	if (!name || name->kind != AST_STRING ||
	    (def && def->next && def->next->kind != AST_STRING) ||
	    (def && def->next && def->next->next)) {
		sema_error(x, &n->loc,
			   "getopt() expects a string literal name, a default value and a description");
		return -EINVAL;
	}
	if (def && def->kind != AST_BOOL && def->kind != AST_INT &&
	    def->kind != AST_STRING) {
		sema_error(x, &n->loc,
			   "getopt() default value must be a literal boolean, integer or string");
		return -EINVAL;
	}
	v = named_param(x->c, name->str.value);
	if (!def || def->kind == AST_BOOL) {
		if (!v) {
			to_bool(n, def && def->num.value);
		} else if (!*v || !strcmp(v, "=true") || !strcmp(v, "=1")) {
			to_bool(n, true);
		} else if (!strcmp(v, "=false") || !strcmp(v, "=0")) {
			to_bool(n, false);
		} else {
			sema_error(x, &n->loc,
				   "Invalid value for boolean named parameter --%s: %s",
				   name->str.value, v + 1);
			return -EINVAL;
		}
		return 0;
	}
	if (!v) {
		struct ast_node *next = n->next;
		struct ast_loc loc = n->loc;

		*n = *def;	/* the default, in the call's place */
		n->next = next;
		n->loc = loc;
		return 0;
	}
	if (*v != '=') {
		sema_error(x, &n->loc, "Named parameter --%s needs a value (--%s=VALUE)",
			   name->str.value, name->str.value);
		return -EINVAL;
	}
	v++;
	if (def->kind == AST_INT) {
		if (!sema_is_number(v, &num)) {
			sema_error(x, &n->loc,
				   "Named parameter --%s expects an integer, got %s",
				   name->str.value, v);
			return -EINVAL;
		}
		n->kind = AST_INT;
		n->num.value = (uint64_t)num;
		n->num.is_negative = num < 0;
		return 0;
	}
	n->kind = AST_STRING;
	n->str.value = v;
	n->str.len = strlen(v);
	return 0;
}

struct getopt_walk {
	struct sema_ctx *x;
	int err;
};

static int getopt_visit(struct ast_node *n, void *ctx)
{
	struct getopt_walk *w = ctx;

	if (n->kind == AST_CALL && !strcmp(n->call.name, "getopt")) {
		if (getopt_value(w->x, n))
			w->err = -EINVAL;
		return 0;
	}
	ast_visit_children(n, getopt_visit, ctx);
	return 0;
}

int sema_getopt(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .prog = c->sema,
		.final = true,
	};
	struct getopt_walk w = { .x = &x };

	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, getopt_visit, &w);
	return w.err;
}
