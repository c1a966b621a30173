/*
 * C names in expressions that debug info gives a value: enumerators used
 * as identifiers (the kernel's BPF_MAP_TYPE_HASH is 1, an int64, as
 * bpftrace 0.17 types it; in a uprobe also the probed binary's own) and
 * offsetof(type, field.path). Both become
 * integer literals, so the later walks and codegen see constants.
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "sema_type_int.h"
#include "util.h"

static void become_int(struct ast_node *n, int64_t v, const char *text)
{
	n->kind = AST_INT;
	n->num.value = (uint64_t)v;
	n->num.is_negative = v < 0;
	n->num.text = text;
}

struct type *sema_enum_ident(struct sema_ctx *x, struct ast_node *n)
{
	const char *name = n->ident.name;
	int64_t v;

	if (sema_debuginfo_enum(x, name, &v))
		return NULL;
	become_int(n, v, name);
	return sema_int64(x);
}

bool sema_enum_sizeof(struct sema_ctx *x, struct ast_node *n)
{
	const struct type *t = n->size.of_type;
	int64_t v;

	/* sizeof(NAME): a type name, or an enumerator (an expression) */
	if (!t || t->kind != TY_NAMED || strchr(t->name, ' ') ||
	    sema_debuginfo_enum(x, t->name, &v))
		return false;
	n->size.of_type = sema_int64(x);
	return true;
}

static struct type_field *field_named(struct type *rec, const char *name)
{
	for (int i = 0; i < rec->nfields; i++)
		if (rec->fields[i].name && !strcmp(rec->fields[i].name, name))
			return &rec->fields[i];
	return NULL;
}

struct type *sema_offsetof(struct sema_ctx *x, struct ast_node *n,
			   struct type *t)
{
	const char *path = n->size.field, *dot;
	size_t off = 0;

	if (!n->size.expr)
		t = sema_t_resolve_named(x, n->size.of_type, &n->loc);
	if (!t)
		return NULL;
	do {
		struct type_field *f;
		const char *name;

		dot = strchr(path, '.');
		name = dot ? arena_strndup(x->a, path, dot - path) : path;
		if (t->kind != TY_RECORD) {
			sema_error(x, &n->loc,
				   "offsetof() can not be used on type '%s'",
				   sema_tstr(x, t));
			return NULL;
		}
		f = field_named(t, name);
		if (!f) {
			sema_error(x, &n->loc,
				   "Struct/union of type '%s' does not contain a field named '%s'",
				   t->name ? t->name : "struct", name);
			return NULL;
		}
		off += f->offset;
		t = f->type;
		path = dot + 1;
	} while (dot);
	/* int64 like any literal: the walks after this one see one */
	become_int(n, (int64_t)off, "offsetof");
	return sema_int64(x);
}
