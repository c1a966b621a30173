/*
 * The enumerators of the script's C enums (cdefs.h): the table an enum's
 * integer type carries so that its values print by name (compat
 * enum-names), and the type of an enumerator used as a value.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cdefs.h"
#include "cdefs_int.h"
#include "compile.h"
#include "types.h"
#include "util.h"

#ifdef UBT_LIBCLANG_PATH

struct enum_walk {
	struct cdefs *d;
	struct type_enumval *v;
	int n, cap;
};

static enum CXChildVisitResult enum_visit(CXCursor cur, CXCursor parent,
					  CXClientData data)
{
	struct enum_walk *w = data;
	const struct cdefs_clang *cx = w->d->cx;

	(void)parent;
	if (cx->clang_getCursorKind(cur) != CXCursor_EnumConstantDecl)
		return CXChildVisit_Continue;
	GROW(w->v, w->n, w->cap);
	w->v[w->n++] = (struct type_enumval){
		.name = cdefs_cx_str(w->d, cx->clang_getCursorSpelling(cur)),
		.value = cx->clang_getEnumConstantDeclValue(cur),
	};
	return CXChildVisit_Continue;
}

const struct type_enumval *cdefs_enum_table(struct cdefs *d, CXCursor decl,
					    int *n)
{
	struct enum_walk w = { .d = d };
	struct type_enumval *t;

	*n = 0;
	if (d->cx->clang_getCursorKind(decl) != CXCursor_EnumDecl)
		return NULL;
	d->cx->clang_visitChildren(decl, enum_visit, &w);
	if (!w.n) {
		free(w.v);
		return NULL;
	}
	t = arena_alloc(&d->c->arena, w.n * sizeof(*t));
	memcpy(t, w.v, w.n * sizeof(*t));
	free(w.v);
	*n = w.n;
	return t;
}

struct type *cdefs_const_type(struct compile *c, const char *name)
{
	struct cdefs *d = c->cdefs;
	struct type *t;

	if (!d)
		return NULL;
	for (int i = d->nconsts - 1; i >= 0; i--) {
		struct cdefs_const *k = &d->consts[i];

		if (strcmp(k->name, name))
			continue;
		if (!k->in_enum)
			return NULL;
		t = type_int(&c->arena, 8, false);
		t->enumvals = cdefs_enum_table(d, k->enum_decl, &t->nenumvals);
		return t->enumvals ? t : NULL;
	}
	return NULL;
}

#else /* !UBT_LIBCLANG_PATH */

struct type *cdefs_const_type(struct compile *c, const char *name)
{
	return NULL;
}

#endif
