/*
 * Named parameters (bpftrace v0.25): getopt("name"[, default[, "help"]])
 * is known when the program is compiled, so each call becomes a literal
 * here, before resolution: the value of `--name=value` (or `--name` for a
 * boolean) among the program's named parameters, else the default. The
 * type is the default's: bool (also without one), integer (unsigned for
 * a default >= 0, as v0.26 types it) or string.  Values are read as
 * v0.26 reads them: integers in any base (0x, 0b, 0, `_` separators),
 * booleans as 1/true/on/yes and 0/false/off/no in any case.
 *
 * Which arguments are named (compat named-params): in 0.17 every
 * argument is positional and getopt() looks among them all; in the
 * newest, the `--NAME[=VALUE]` ones (only possible after `--`) are named
 * parameters, not positional ones, and one that no getopt() reads is an
 * error (`--help` lists them instead).
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compat.h"
#include "sema.h"
#include "sema_int.h"
#include "util.h"

void compile_named_params(struct compile *c)
{
	int np = 0, nn = 0;
	const char **pos, **named;

	if (c->named)
		return;
	named = arena_alloc(&c->arena, (c->nparams + 1) * sizeof(*named));
	if (!compat_has(COMPAT_NAMED_PARAMS)) {
		for (int i = 0; i < c->nparams; i++)
			named[i] = c->params[i];
		c->named = named;
		c->nnamed = c->nparams;
		return;
	}
	pos = arena_alloc(&c->arena, (c->nparams + 1) * sizeof(*pos));
	for (int i = 0; i < c->nparams; i++) {
		const char *p = c->params[i];

		if (!strncmp(p, "--", 2) && p[2])
			named[nn++] = p;
		else
			pos[np++] = p;
	}
	c->params = pos;
	c->nparams = np;
	c->named = named;
	c->nnamed = nn;
}

/* The text after "--name" in the parameters ("" or "=value"), or NULL. */
static const char *named_param(struct compile *c, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < c->nnamed; i++) {
		const char *p = c->named[i];

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

/* v0.26's truthy and falsy words: 1, 0 or -1 for neither. */
static int bool_word(const char *v)
{
	static const char *const yes[] = { "1", "true", "on", "yes" };
	static const char *const no[] = { "0", "false", "off", "no" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

/*
 * An integer as v0.26 reads a named parameter's: `_` dropped, 0x, 0b and
 * 0 (octal) prefixes, a '-' (an unsigned one wraps).  NULL, or why not
 * ("invalid integer", "value is out of range").
 */
static const char *parse_int(struct sema_ctx *x, const char *v, bool sign,
			     uint64_t *out)
{
	char *t = arena_strdup(x->a, v), *w = t, *end;
	int base = 0;
	bool neg = false;

	for (const char *r = v; *r; r++)
		if (*r != '_')
			*w++ = *r;
	*w = '\0';
	if (*t == '-') {	/* unsigned: wraps, as strtoull() */
		neg = true;
		t++;
	}
	if (!isalnum((unsigned char)*t))
		return "invalid integer";
	if (t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
		base = 2;
		t += 2;
	}
	errno = 0;
	*out = strtoull(t, &end, base);
	if (*end || end == t)
		return "invalid integer";
	if (errno == ERANGE ||
	    (sign && *out > (neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX)) ||
	    (!sign && neg && *out > (uint64_t)INT64_MAX + 1))
		return "value is out of range";
	if (neg)
		*out = -*out;
	return NULL;
}

/* The names getopt() reads, in the order first read, and their help. */
struct getopt_walk {
	struct sema_ctx *x;
	const char **names, **helps;
	int n, cap;
	int err;
};

static void note_name(struct getopt_walk *w, const char *name,
		      const char *help)
{
	for (int i = 0; i < w->n; i++)
		if (!strcmp(w->names[i], name))
			return;
	if (w->n == w->cap) {
		int cap = w->cap ? 2 * w->cap : 8;
		const char **nn = arena_alloc(w->x->a, cap * sizeof(*nn));
		const char **nh = arena_alloc(w->x->a, cap * sizeof(*nh));

		if (w->n) {
			memcpy(nn, w->names, w->n * sizeof(*nn));
			memcpy(nh, w->helps, w->n * sizeof(*nh));
		}
		w->names = nn;
		w->helps = nh;
		w->cap = cap;
	}
	w->names[w->n] = name;
	w->helps[w->n++] = help;
}

static int bad_value(struct sema_ctx *x, const char *name, const char *v,
		     const char *why)
{
	diag_error(x->d, NULL,
		   "program command line option --%s %s (value: %s)", name,
		   why, v);
	return -EINVAL;
}

/* Replace the call n with its value; 0 or -EINVAL. */
static int getopt_value(struct getopt_walk *w, struct ast_node *n)
{
	struct sema_ctx *x = w->x;
	struct ast_node *name = n->call.args, *def = name ? name->next : NULL;
	struct ast_node *help = def ? def->next : NULL;
	const char *v, *why;
	uint64_t num;
	bool sign;

	if (!name || (help && help->next)) {
		sema_error(x, &n->loc,
			   "The 'getopt' function can take a maximum of three arguments and a minimum of one argument.");
		return -EINVAL;
	}
	if (name->kind != AST_STRING) {
		sema_error(x, &name->loc,
			   "First argument to 'getopt' must be a string literal.");
		return -EINVAL;
	}
	if (help && help->kind != AST_STRING) {
		sema_error(x, &help->loc,
			   "Function 'getopt' requires the third parameter to be a string literal.");
		return -EINVAL;
	}
	if (def && def->kind != AST_BOOL && def->kind != AST_INT &&
	    def->kind != AST_STRING) {
		sema_error(x, &def->loc,
			   "Second argument to 'getopt' must be a string literal, integer literal, or a boolean literal.");
		return -EINVAL;
	}
	note_name(w, name->str.value, help ? help->str.value : "");
	v = named_param(x->c, name->str.value);
	if (!def || def->kind == AST_BOOL) {
		int b = v && *v ? bool_word(v + 1) : 1;

		if (!v) {
			to_bool(n, def && def->num.value);
		} else if (b < 0) {
			return bad_value(x, name->str.value, v + 1,
					 "expects a boolean (e.g. 'true')");
		} else {
			to_bool(n, b);
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
	if (*v != '=')
		return bad_value(x, name->str.value, "true",
				 def->kind == AST_INT ? "expects an integer" :
							"expects a string");
	v++;
	if (def->kind == AST_INT) {
		sign = def->num.is_negative;
		why = parse_int(x, v, sign, &num);
		if (why)
			return bad_value(x, name->str.value, v, why);
		n->kind = AST_INT;
		n->num.value = num;
		n->num.is_negative = sign && (int64_t)num < 0;
		n->num.text = NULL;
		return 0;
	}
	n->kind = AST_STRING;
	n->str.value = v;
	n->str.len = strlen(v);
	return 0;
}

/*
 * The newest (compat positional-strings): $N of a non-numeric argument
 * is that string, as v0.26 folds it; str($N) and str($N + k) keep it.
 */
static void positional_string(struct getopt_walk *w, struct ast_node *n)
{
	const char *s;

	if (!compat_has(COMPAT_POSITIONAL_STR) || n->pos.num < 1)
		return;
	s = sema_param(w->x, n->pos.num);
	if (!s || !*s || sema_is_number(s, NULL) || sema_is_uint64(s))
		return;
	n->kind = AST_STRING;
	n->str.value = s;
	n->str.len = strlen(s);
}

static int getopt_visit(struct ast_node *n, void *ctx)
{
	struct getopt_walk *w = ctx;

	if (n->kind == AST_CALL && !strcmp(n->call.name, "getopt")) {
		if (getopt_value(w, n))
			w->err = -EINVAL;
		return 0;
	}
	if (n->kind == AST_POSITIONAL) {
		positional_string(w, n);
		return 0;
	}
	if (n->kind == AST_CALL && !strcmp(n->call.name, "str") &&
	    n->call.args) {
		struct ast_node *a = n->call.args;

		/* str($N), str($N + k): the parameter's text (sema) */
		if (a->kind == AST_POSITIONAL ||
		    (a->kind == AST_BINOP &&
		     a->op.left->kind == AST_POSITIONAL))
			for (a = a->next; a; a = a->next)
				getopt_visit(a, ctx);
		else
			ast_visit_children(n, getopt_visit, ctx);
		return 0;
	}
	ast_visit_children(n, getopt_visit, ctx);
	return 0;
}

/*
 * The newest: a named parameter that no getopt() reads is an error, and
 * --help lists the program's options, both in v0.26's words (its list is
 * in its hash map's order; here the last read first, as it comes out for
 * a few names).
 */
static int check_unread(struct getopt_walk *w)
{
	struct compile *c = w->x->c;
	const char *err = NULL, *hint;
	bool help = false;
	struct diag *g;

	if (!compat_has(COMPAT_NAMED_PARAMS))
		return 0;
	for (int i = 0; i < c->nnamed; i++) {
		const char *p = c->named[i] + 2, *eq = strchr(p, '=');
		char *name = arena_strdup(w->x->a, p);
		int j;

		if (eq)
			name[eq - p] = '\0';
		for (j = 0; j < w->n && strcmp(w->names[j], name); j++)
			;
		if (j < w->n)
			continue;
		if (!strcmp(name, "help")) {
			help = true;
			continue;
		}
		err = err ? arena_printf(w->x->a, "%s, --%s", err, name) :
			    arena_printf(w->x->a, "--%s", name);
	}
	if (!err && !help)
		return 0;
	if (!w->n) {
		hint = "no custom program options defined.";
	} else {
		hint = help ? "expected program options:\n" :
			      "expected program options: ";
		for (int j = w->n - 1; j >= 0; j--)
			hint = arena_printf(w->x->a, "%s--%s%s%s%s", hint,
					    w->names[j],
					    help && *w->helps[j] ? ": " : "",
					    help ? w->helps[j] : "",
					    !j ? "" : help ? "\n" : ": ");
	}
	if (err) {
		g = diag_error(w->x->d, NULL,
			       "unexpected program command line options: %s",
			       err);
		diag_hint(w->x->d, g, "%s", hint);
	} else {
		diag_clang(w->x->d, DIAG_ERROR, "hint", NULL, "HINT: %s", hint);
	}
	return -EINVAL;
}

int sema_getopt(struct compile *c)
{
	struct sema_ctx x = {
		.c = c, .a = &c->arena, .d = &c->diag, .prog = c->sema,
		.final = true,
	};
	struct getopt_walk w = { .x = &x };

	compile_named_params(c);
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, getopt_visit, &w);
	return w.err ?: check_unread(&w);
}
