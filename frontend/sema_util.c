/*
 * Helpers every semantic pass and every builtin or function family
 * shares: diagnostics, type constructors, literal checks, providers.
 * A leaf: calls nothing else of sema.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"


static const struct {
	const char *name;
	enum sema_provider p;
} providers[] = {
	{ "BEGIN", PROV_BEGIN },
	{ "END", PROV_END },
	{ "uprobe", PROV_UPROBE },
	{ "u", PROV_UPROBE },
	{ "uretprobe", PROV_URETPROBE },
	{ "ur", PROV_URETPROBE },
	{ "usdt", PROV_USDT },
	{ "U", PROV_USDT },
	{ "tracepoint", PROV_TRACEPOINT },
	{ "t", PROV_TRACEPOINT },
	{ "interval", PROV_INTERVAL },
	{ "i", PROV_INTERVAL },
	{ "profile", PROV_PROFILE },
	{ "p", PROV_PROFILE },
	{ "software", PROV_SOFTWARE },
	{ "s", PROV_SOFTWARE },
	{ "hardware", PROV_HARDWARE },
	{ "h", PROV_HARDWARE },
	{ "watchpoint", PROV_WATCHPOINT },
	{ "w", PROV_WATCHPOINT },
	{ "asyncwatchpoint", PROV_ASYNCWATCHPOINT },
	{ "aw", PROV_ASYNCWATCHPOINT },
	{ "iter", PROV_ITER },
	{ "it", PROV_ITER },
	{ "kprobe", PROV_KPROBE },
	{ "k", PROV_KPROBE },
	{ "kretprobe", PROV_KRETPROBE },
	{ "kr", PROV_KRETPROBE },
	{ "kfunc", PROV_KFUNC },
	{ "f", PROV_KFUNC },
	{ "fentry", PROV_KFUNC },
	{ "kretfunc", PROV_KRETFUNC },
	{ "fr", PROV_KRETFUNC },
	{ "fexit", PROV_KRETFUNC },
	{ "rawtracepoint", PROV_RAWTRACEPOINT },
	{ "rt", PROV_RAWTRACEPOINT },
};

enum sema_provider sema_provider_lookup(const char *name)
{
	if (!name)
		return PROV_NONE;
	for (size_t i = 0; i < ARRAY_SIZE(providers); i++)
		if (!strcmp(providers[i].name, name))
			return providers[i].p;
	return PROV_NONE;
}

bool sema_provider_regs(enum sema_provider p)
{
	switch (p) {
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_UPROBE:
	case PROV_URETPROBE:
	case PROV_USDT:
	case PROV_PROFILE:
	case PROV_INTERVAL:
	case PROV_SOFTWARE:
	case PROV_HARDWARE:
	case PROV_WATCHPOINT:
	case PROV_ASYNCWATCHPOINT:
		return true;
	default:
		return false;
	}
}

const char *sema_provider_name(enum sema_provider p)
{
	/* the first spelling in the table is the canonical one */
	for (size_t i = 0; i < ARRAY_SIZE(providers); i++)
		if (providers[i].p == p)
			return providers[i].name;
	return "none";
}

struct sema_map *sema_map_find(const struct compile *c, const char *name)
{
	const struct sema_program *p = c->sema;

	if (!p)
		return NULL;
	for (int i = 0; i < p->nmaps; i++)
		if (!strcmp(p->maps[i]->name, name))
			return p->maps[i];
	return NULL;
}

/* Helpers shared by the passes. */

struct sema_node *sema_node(struct sema_ctx *x, struct ast_node *n)
{
	if (!n->sema)
		n->sema = arena_alloc(x->a, sizeof(*n->sema));
	return n->sema;
}

struct diag *sema_error(struct sema_ctx *x, const struct ast_loc *loc,
			const char *fmt, ...)
{
	struct diag *g;
	va_list ap;
	char *msg;

	if (!x->final)
		return NULL;
	va_start(ap, fmt);
	msg = arena_vprintf(x->a, fmt, ap);
	va_end(ap);
	g = diag_error(x->d, loc, "%s", msg);
	return g;
}

struct diag *sema_warning(struct sema_ctx *x, const struct ast_loc *loc,
			  const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (!x->final)
		return NULL;
	va_start(ap, fmt);
	msg = arena_vprintf(x->a, fmt, ap);
	va_end(ap);
	return diag_warning(x->d, loc, "%s", msg);
}

void sema_hint(struct sema_ctx *x, struct diag *g, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (!g)
		return;
	va_start(ap, fmt);
	msg = arena_vprintf(x->a, fmt, ap);
	va_end(ap);
	diag_hint(x->d, g, "%s", msg);
}

/* bpftrace 0.17's spelling of a type in messages. */
const char *sema_tstr(struct sema_ctx *x, const struct type *t)
{
	if (!t)
		return "none";
	switch (t->kind) {
	case TY_INT:
		return arena_printf(x->a, "%sint%zu",
				    t->is_signed ? "" : "unsigned ", t->size * 8);
	case TY_VOID:
	case TY_NONE:
		return "none";
	case TY_BUFFER:
		return arena_printf(x->a, "buffer[%zu]", t->size);
	case TY_POINTER:
		return arena_printf(x->a, "%s *", sema_tstr(x, t->elem));
	case TY_ARRAY:
		return arena_printf(x->a, "%s[%zu]", sema_tstr(x, t->elem),
				    t->nelems);
	case TY_TUPLE: {
		const char **parts = arena_alloc(x->a, (t->nfields + 1) *
							       sizeof(*parts));

		for (int i = 0; i < t->nfields; i++)
			parts[i] = sema_tstr(x, t->fields[i].type);
		return type_tuple_str(x->a, parts, t->nfields);
	}
	default:
		return type_is_aggregation(t) ? type_class(t) :
						type_str(x->a, t);
	}
}

struct type *sema_uint64(struct sema_ctx *x)
{
	return type_int(x->a, 8, false);
}

struct type *sema_int64(struct sema_ctx *x)
{
	return type_int(x->a, 8, true);
}

size_t sema_type_align(const struct type *t)
{
	size_t a = 1;

	switch (t->kind) {
	case TY_INT:
	case TY_BOOL:
	case TY_ENUM:
	case TY_POINTER:
		return t->size ? t->size : 1;
	case TY_STRING:
	case TY_BUFFER:
		return 1;
	case TY_ARRAY:
		return t->elem ? sema_type_align(t->elem) : 1;
	case TY_TUPLE:
	case TY_RECORD:
		for (int i = 0; i < t->nfields; i++) {
			size_t fa = sema_type_align(t->fields[i].type);

			if (fa > a)
				a = fa;
		}
		return a;
	default:
		return 8;
	}
}

struct type *sema_tuple(struct sema_ctx *x, struct type **elems, int n)
{
	struct type *t = type_new(x->a, TY_TUPLE, 0);
	size_t off = 0, align = 1;

	t->fields = arena_alloc(x->a, sizeof(*t->fields) * (n ? n : 1));
	t->nfields = n;
	for (int i = 0; i < n; i++) {
		size_t a = sema_type_align(elems[i]);

		if (a > align)
			align = a;
		off = (off + a - 1) / a * a;
		t->fields[i].type = elems[i];
		t->fields[i].offset = off;
		off += elems[i]->size;
	}
	t->size = (off + align - 1) / align * align;
	return t;
}

bool sema_is_number(const char *s, int64_t *v)
{
	char *end;
	long long n;

	if (!s || !*s)
		return false;
	errno = 0;
	n = strtoll(s, &end, 0);
	if (errno || *end)
		return false;
	if (v)
		*v = n;
	return true;
}

bool sema_is_uint64(const char *s)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	(void)strtoull(s, &end, 0);
	return !errno && !*end;
}

const char *sema_param(struct sema_ctx *x, int n)
{
	if (n < 1 || n > x->c->nparams)
		return NULL;
	return x->c->params[n - 1];
}

bool sema_int_literal(struct sema_ctx *x, const struct ast_node *n,
		      int64_t *v)
{
	int64_t dummy;

	if (!v)
		v = &dummy;
	switch (n->kind) {
	case AST_INT:
		/* the parser stores -N as the two's complement value */
		*v = (int64_t)n->num.value;
		return true;
	case AST_POSITIONAL:
		if (n->pos.num == -1) {
			*v = x->c->nparams;
			return true;
		}
		if (!sema_param(x, n->pos.num)) {
			*v = 0;
			return true;
		}
		return sema_is_number(sema_param(x, n->pos.num), v);
	case AST_UNOP:
		if (n->op.op == OP_NEG &&
		    sema_int_literal(x, n->op.left, v)) {
			*v = -*v;
			return true;
		}
		return false;
	default:
		return false;
	}
}

bool sema_str_literal(struct sema_ctx *x, const struct ast_node *n,
		      const char **s)
{
	switch (n->kind) {
	case AST_STRING:
		if (s)
			*s = n->str.value;
		return true;
	case AST_POSITIONAL:
		if (n->pos.num < 1)
			return false;
		if (s)
			*s = sema_param(x, n->pos.num) ?: "";
		return true;
	case AST_CALL:
		/* str($N) is the parameter's text, a literal (bpftrace's) */
		if (strcmp(n->call.name, "str") || n->call.nargs != 1 ||
		    n->call.args->kind != AST_POSITIONAL)
			return false;
		return sema_str_literal(x, n->call.args, s);
	default:
		return false;
	}
}

static const char *const count_words[] = {
	"no arguments", "one argument",
};

int sema_check_nargs(struct sema_ctx *x, struct ast_node *call, int min,
		     int max)
{
	int n = call->call.nargs;
	const char *name = call->call.name;

	if (min == max && n != min) {
		if (min < 2)
			sema_error(x, &call->loc, "%s() requires %s (%d provided)",
				   name, count_words[min], n);
		else
			sema_error(x, &call->loc,
				   "%s() requires %d arguments (%d provided)",
				   name, min, n);
		return -EINVAL;
	}
	if (n < min) {
		/* hist(x[, k]): bpftrace 0.17's words (its hist() had one) */
		if (min == 1 && max == 2 && !strcmp(name, "hist"))
			sema_error(x, &call->loc,
				   "%s() requires one argument (%d provided)",
				   name, n);
		else if (min == 1)
			sema_error(x, &call->loc,
				   "%s() requires at least one argument (%d provided)",
				   name, n);
		else
			sema_error(x, &call->loc,
				   "%s() requires at least %d arguments (%d provided)",
				   name, min, n);
		return -EINVAL;
	}
	if (max >= 0 && n > max) {
		if (max == 1)
			sema_error(x, &call->loc,
				   "%s() takes up to one argument (%d provided)",
				   name, n);
		else
			sema_error(x, &call->loc,
				   "%s() takes up to %d arguments (%d provided)",
				   name, max, n);
		return -EINVAL;
	}
	return 0;
}

long sema_src_offset(const struct compile *c, int line, int col)
{
	size_t len;
	const char *p = diag_source_line(&c->diag, line, &len);

	if (!p || col < 1)
		return -1;
	return (long)(p - c->source) + col - 1;
}

struct ast_loc sema_call_arg_loc(const struct ast_node *call)
{
	struct ast_loc loc = call->loc;
	const struct ast_node *a = call->call.args;

	if (a && a->loc.last_line) {
		loc.last_line = a->loc.last_line;
		loc.last_column = a->loc.last_column;
	}
	return loc;
}

struct sema_map *sema_map_of(struct ast_node *n)
{
	if (!n || n->kind != AST_MAP || !n->sema)
		return NULL;
	return n->sema->map;
}

struct sema_fmt *sema_fmt_get(struct sema_ctx *x, struct ast_node *call,
			      enum sema_func f, const char *fmt)
{
	struct sema_node *sn = sema_node(x, call);
	struct sema_program *p = x->prog;
	struct sema_fmt *sf = sn->fmt;

	if (!sf) {
		sf = arena_alloc(x->a, sizeof(*sf));
		sf->id = p->nfmts;
		sf->func = f;
		sf->call = call;
		struct sema_fmt **v = arena_alloc(x->a,
						  sizeof(*v) * (p->nfmts + 1));

		if (p->nfmts)
			memcpy(v, p->fmts, sizeof(*v) * p->nfmts);
		v[p->nfmts++] = sf;
		p->fmts = v;
		sn->fmt = sf;
	}
	sf->fmt = fmt;
	return sf;
}
