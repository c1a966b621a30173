/*
 * The value of an object-like #define whose body is an integer constant
 * expression: literals (with u/l suffixes, character constants), names of
 * other such macros and enum constants, parentheses, unary - + ~ ! and the
 * binary operators of C. Anything else (strings, casts, function calls)
 * is not a constant ubt uses.
 */
#include <stdlib.h>
#include <string.h>

#include "cdefs_int.h"

struct ev {
	const char *const *t;
	int n, i;
	cdefs_lookup_fn lookup;
	void *ctx;
	int depth;
	bool bad;
};

static const char *peek(struct ev *e)
{
	return e->i < e->n ? e->t[e->i] : "";
}

static bool number(const char *s, int64_t *v)
{
	char *end;

	if (s[0] == '\'') {
		if (s[1] && s[1] != '\\' && s[2] == '\'' && !s[3]) {
			*v = (unsigned char)s[1];
			return true;
		}
		return false;
	}
	if (s[0] < '0' || s[0] > '9')
		return false;
	*v = (int64_t)strtoull(s, &end, 0);
	return end[strspn(end, "uUlL")] == '\0';
}

static int64_t expr(struct ev *e, int minprec);

static int64_t primary(struct ev *e)
{
	const char *s = peek(e);
	int64_t v = 0;

	if (++e->depth > 64) {
		e->bad = true;
		return 0;
	}
	e->i++;
	if (!strcmp(s, "(")) {
		v = expr(e, 1);
		if (strcmp(peek(e), ")"))
			e->bad = true;
		e->i++;
	} else if (!strcmp(s, "-")) {
		v = -primary(e);
	} else if (!strcmp(s, "+")) {
		v = primary(e);
	} else if (!strcmp(s, "~")) {
		v = ~primary(e);
	} else if (!strcmp(s, "!")) {
		v = !primary(e);
	} else if (!number(s, &v) && !e->lookup(e->ctx, s, &v)) {
		e->bad = true;
	}
	e->depth--;
	return v;
}

static int prec(const char *op)
{
	static const struct {
		const char *op;
		int prec;
	} ops[] = {
		{ "*", 10 }, { "/", 10 }, { "%", 10 }, { "+", 9 }, { "-", 9 },
		{ "<<", 8 }, { ">>", 8 }, { "<", 7 }, { "<=", 7 }, { ">", 7 },
		{ ">=", 7 }, { "==", 6 }, { "!=", 6 }, { "&", 5 }, { "^", 4 },
		{ "|", 3 }, { "&&", 2 }, { "||", 1 },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].op, op))
			return ops[i].prec;
	return 0;
}

static int64_t apply(struct ev *e, const char *op, int64_t a, int64_t b)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;

	switch (op[0]) {
	case '*':
		return (int64_t)(ua * ub);
	case '/':
	case '%':
		if (!b || (a == INT64_MIN && b == -1)) {
			e->bad = true;
			return 0;
		}
		return op[0] == '/' ? a / b : a % b;
	case '+':
		return (int64_t)(ua + ub);
	case '-':
		return (int64_t)(ua - ub);
	case '<':
		if (op[1] == '<')
			return (int64_t)(ua << (ub & 63));
		return op[1] == '=' ? a <= b : a < b;
	case '>':
		if (op[1] == '>')
			return a >> (ub & 63);
		return op[1] == '=' ? a >= b : a > b;
	case '=':
		return a == b;
	case '!':
		return a != b;
	case '&':
		return op[1] == '&' ? a && b : a & b;
	case '^':
		return a ^ b;
	case '|':
		return op[1] == '|' ? a || b : a | b;
	}
	e->bad = true;
	return 0;
}

static int64_t expr(struct ev *e, int minprec)
{
	int64_t v = primary(e);

	while (!e->bad) {
		const char *op = peek(e);
		int p = prec(op);

		if (!p || p < minprec)
			break;
		e->i++;
		v = apply(e, op, v, expr(e, p + 1));
	}
	return v;
}

bool cdefs_eval(const char *const *toks, int ntoks, cdefs_lookup_fn lookup,
		void *ctx, int64_t *v)
{
	struct ev e = { .t = toks, .n = ntoks, .lookup = lookup, .ctx = ctx };

	if (!ntoks)
		return false;
	*v = expr(&e, 1);
	return !e.bad && e.i == ntoks;
}
