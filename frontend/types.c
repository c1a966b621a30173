#include <string.h>

#include "arena.h"
#include "types.h"
#include "util.h"

struct type *type_new(struct arena *a, enum type_kind kind, size_t size)
{
	struct type *t = arena_alloc(a, sizeof(*t));

	t->kind = kind;
	t->size = size;
	return t;
}

struct type *type_int(struct arena *a, size_t size, bool is_signed)
{
	struct type *t = type_new(a, TY_INT, size);

	t->is_signed = is_signed;
	return t;
}

struct type *type_string(struct arena *a, size_t size)
{
	return type_new(a, TY_STRING, size);
}

struct type *type_pointer(struct arena *a, struct type *elem)
{
	struct type *t = type_new(a, TY_POINTER, 8);

	t->elem = elem;
	return t;
}

bool type_is_integer(const struct type *t)
{
	return t && (t->kind == TY_INT || t->kind == TY_BOOL);
}

bool type_is_aggregation(const struct type *t)
{
	return t && t->kind >= TY_COUNT && t->kind <= TY_TSERIES;
}

const struct type_field *type_tuple_match(const struct type *d,
					  const struct type *src, int i)
{
	const char *name = d->fields[i].name;

	if (!name)
		return src->fields[i].name ? NULL : &src->fields[i];
	for (int j = 0; j < src->nfields; j++)
		if (src->fields[j].name && !strcmp(src->fields[j].name, name))
			return &src->fields[j];
	return NULL;
}

bool type_equal(const struct type *x, const struct type *y)
{
	if (x == y)
		return true;
	if (x && y && (x->kind == TY_NAMED) != (y->kind == TY_NAMED) &&
	    (x->kind == TY_RECORD || y->kind == TY_RECORD))
		/* a record and its name not yet looked up */
		return x->name && y->name && !strcmp(x->name, y->name);
	if (!x || !y || x->kind != y->kind)
		return false;
	switch (x->kind) {
	case TY_INT:
		return x->size == y->size && x->is_signed == y->is_signed;
	case TY_STRING:
	case TY_BUFFER:
		return x->size == y->size;
	case TY_POINTER:
		return type_equal(x->elem, y->elem);
	case TY_ARRAY:
		return x->nelems == y->nelems && type_equal(x->elem, y->elem);
	case TY_RECORD:
	case TY_ENUM:
	case TY_NAMED:
		return x->name && y->name && !strcmp(x->name, y->name);
	case TY_TUPLE:
		if (x->nfields != y->nfields)
			return false;
		for (int i = 0; i < x->nfields; i++) {
			const char *xn = x->fields[i].name;
			const char *yn = y->fields[i].name;

			/* a record's fields by name, in the same places */
			if (!xn != !yn || (xn && strcmp(xn, yn)))
				return false;
			if (!type_equal(x->fields[i].type, y->fields[i].type))
				return false;
		}
		return true;
	case TY_LHIST:
		return x->lhist_min == y->lhist_min &&
		       x->lhist_max == y->lhist_max &&
		       x->lhist_step == y->lhist_step;
	case TY_HIST:
		return x->hist_bits == y->hist_bits;
	case TY_TSERIES:
		return x->ts_interval == y->ts_interval &&
		       x->ts_num == y->ts_num && x->ts_agg == y->ts_agg &&
		       x->is_signed == y->is_signed;
	case TY_USTACK:
	case TY_KSTACK:
		/* limit and mode (stack.h) */
		return x->nelems == y->nelems && x->hist_bits == y->hist_bits;
	default:
		return true;
	}
}

static const char *const type_names[TY_KIND_COUNT] = {
	[TY_NONE] = "none",
	[TY_VOID] = "void",
	[TY_BOOL] = "bool",
	[TY_BUFFER] = "buffer",
	[TY_NAMED] = "named",
	[TY_USYM] = "usym",
	[TY_KSYM] = "ksym",
	[TY_USTACK] = "ustack",
	[TY_KSTACK] = "kstack",
	[TY_USERNAME] = "username",
	[TY_INET] = "inet",
	[TY_MAC] = "mac_address",
	[TY_TIMESTAMP] = "timestamp",
	[TY_CGROUP_PATH] = "cgroup_path",
	[TY_STRERROR] = "strerror",
	[TY_PROBE] = "probe",
	[TY_SYSCALL_NAME] = "syscall_name",
	[TY_SIGNAL_NAME] = "signal_name",
	[TY_COUNT] = "count_t",
	[TY_SUM] = "sum_t",
	[TY_AVG] = "avg_t",
	[TY_MIN] = "min_t",
	[TY_MAX] = "max_t",
	[TY_STATS] = "stats_t",
	[TY_HIST] = "hist_t",
	[TY_LHIST] = "lhist_t",
	[TY_TSERIES] = "tseries_t",
};

const char *type_tuple_str(struct arena *a, const char *const *parts, int n)
{
	size_t len = 3;
	char *s, *p;

	for (int i = 0; i < n; i++)
		len += strlen(parts[i]) + 1;
	s = p = arena_alloc(a, len);
	*p++ = '(';
	for (int i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		p = stpcpy(p, parts[i]);
	}
	*p++ = ')';
	*p = '\0';
	return s;
}

const char *type_str(struct arena *a, const struct type *t)
{
	if (!t)
		return "none";
	switch (t->kind) {
	case TY_INT:
		return arena_printf(a, "%sint%zu", t->is_signed ? "" : "u",
				    t->size * 8);
	case TY_STRING:
		return arena_printf(a, "string[%zu]", t->size);
	case TY_POINTER:
		return arena_printf(a, "%s *", type_str(a, t->elem));
	case TY_ARRAY:
		return arena_printf(a, "%s[%zu]", type_str(a, t->elem),
				    t->nelems);
	case TY_RECORD:
	case TY_ENUM:
	case TY_NAMED:
		return t->name ? t->name : "struct";
	case TY_TUPLE: {
		const char **parts = arena_alloc(a, (t->nfields + 1) *
							    sizeof(*parts));

		for (int i = 0; i < t->nfields; i++)
			parts[i] = type_str(a, t->fields[i].type);
		return type_tuple_str(a, parts, t->nfields);
	}
	default:
		BUG_ON(t->kind >= TY_KIND_COUNT || !type_names[t->kind]);
		return type_names[t->kind];
	}
}

const char *type_class(const struct type *t)
{
	if (!t)
		return "none";
	switch (t->kind) {
	case TY_INT:
	case TY_BOOL:
		return "integer";
	case TY_STRING:
		return "string";
	case TY_BUFFER:
		return "buffer";
	case TY_POINTER:
		return "pointer";
	case TY_ARRAY:
		return "array";
	case TY_RECORD:
		return "record";
	case TY_ENUM:
		return "integer";
	case TY_TUPLE:
		return "tuple";
	case TY_COUNT:
		return "count";
	case TY_SUM:
		return "sum";
	case TY_AVG:
		return "avg";
	case TY_MIN:
		return "min";
	case TY_MAX:
		return "max";
	case TY_STATS:
		return "stats";
	case TY_HIST:
		return "hist";
	case TY_LHIST:
		return "lhist";
	case TY_TSERIES:
		return "tseries";
	default:
		return type_str(NULL, t);
	}
}
