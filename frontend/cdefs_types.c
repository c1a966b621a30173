/*
 * The script's C types converted to the type model (cdefs.h): records
 * with their fields (anonymous members lifted, bit fields), arrays
 * (char arrays as strings), pointers, enums as unsigned integers;
 * typedefs resolved. A record is converted once (memoised by its
 * declaration cursor).
 */
#include "compat.h"
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cdefs.h"
#include "cdefs_int.h"
#include "compile.h"
#include "types.h"
#include "util.h"

#ifdef UBT_LIBCLANG_PATH

static struct type *conv(struct cdefs *d, CXType t);

struct fields {
	struct cdefs *d;
	struct type_field *f;
	int n, cap;
	size_t base;	/* bytes: the offset of a flattened anonymous member */
};

static void field_add(struct fields *fs, const struct type_field *f)
{
	GROW(fs->f, fs->n, fs->cap);
	fs->f[fs->n++] = *f;
}

static enum CXVisitorResult visit_field(CXCursor cur, CXClientData data)
{
	struct fields *fs = data;
	struct cdefs *d = fs->d;
	const struct cdefs_clang *cx = d->cx;
	long long bits = cx->clang_Cursor_getOffsetOfField(cur);
	const char *name = cdefs_cx_str(d, cx->clang_getCursorSpelling(cur));
	CXType ft = cx->clang_getCanonicalType(cx->clang_getCursorType(cur));
	struct type_field f = { .name = name };

	if (bits < 0)
		return CXVisit_Continue;
	f.offset = fs->base + (size_t)bits / 8;
	if (ft.kind == CXType_Record &&
	    cx->clang_Cursor_isAnonymousRecordDecl(
		    cx->clang_getTypeDeclaration(ft))) {
		/* an anonymous struct or union: its members are the
		 * record's own, as in C */
		struct fields in = { .d = d, .base = f.offset };

		cx->clang_Type_visitFields(ft, visit_field, &in);
		for (int i = 0; i < in.n; i++)
			field_add(fs, &in.f[i]);
		free(in.f);
		return CXVisit_Continue;
	}
	f.type = conv(d, ft);
	if (!f.type && compat_has(COMPAT_JSON_RECORDS) &&
	    (ft.kind == CXType_Float || ft.kind == CXType_Double)) {
		/* a float member, kept as DWARF's are: a TY_NAMED of its
		 * size, null in JSON (compat json-records) */
		long long sz = cx->clang_Type_getSizeOf(ft);

		f.type = type_new(&d->c->arena, TY_NAMED,
				  sz > 0 ? (size_t)sz : 0);
		f.type->name = ft.kind == CXType_Float ? "float" : "double";
	}
	if (!f.type)
		return CXVisit_Continue;	/* floating point, ... */
	if (cx->clang_Cursor_isBitField(cur)) {
		f.bitfield_bits = cx->clang_getFieldDeclBitWidth(cur);
		f.bitfield_shift = (int)(bits % 8);
		/* whether a plain int bit field is signed is the
		 * implementation's choice (C11 6.7.2): bpftrace reads them
		 * all unsigned, and so does ubt */
		if (f.type->kind == TY_INT && f.type->is_signed)
			f.type = type_int(&d->c->arena, f.type->size, false);
	}
	field_add(fs, &f);
	return CXVisit_Continue;
}

static struct type *record(struct cdefs *d, CXType t)
{
	const struct cdefs_clang *cx = d->cx;
	CXCursor decl = cx->clang_getTypeDeclaration(t);
	long long size = cx->clang_Type_getSizeOf(t);
	struct fields fs = { .d = d };
	struct type *r;
	const char *name;

	for (int i = 0; i < d->nrecs; i++)
		if (cx->clang_equalCursors(d->recs[i].decl, decl))
			return d->recs[i].type;
	r = type_new(&d->c->arena, TY_RECORD, size > 0 ? (size_t)size : 0);
	r->is_union = cx->clang_getCursorKind(decl) == CXCursor_UnionDecl;
	name = cdefs_cx_str(d, cx->clang_getCursorSpelling(decl));
	if (name[0] && !strchr(name, '(') && !strchr(name, ' '))
		r->name = arena_printf(&d->c->arena, "%s %s",
				       r->is_union ? "union" : "struct", name);
	GROW(d->recs, d->nrecs, d->caprecs);
	d->recs[d->nrecs++] = (struct cdefs_rec){ .decl = decl, .type = r };
	if (size < 0)
		return r;	/* declared, not defined */
	cx->clang_Type_visitFields(t, visit_field, &fs);
	r->nfields = fs.n;
	if (fs.n) {
		r->fields = arena_alloc(&d->c->arena, fs.n * sizeof(*fs.f));
		memcpy(r->fields, fs.f, fs.n * sizeof(*fs.f));
	}
	free(fs.f);
	return r;
}

static struct type *conv(struct cdefs *d, CXType t)
{
	const struct cdefs_clang *cx = d->cx;
	struct arena *a = &d->c->arena;
	long long size;
	struct type *r = NULL;
	CXType e;

	t = cx->clang_getCanonicalType(t);
	/* a pointer to itself through a record is memoised there; this
	 * bounds pointers to pointers to ... */
	if (d->depth > 64)
		return NULL;
	d->depth++;
	size = cx->clang_Type_getSizeOf(t);
	switch (t.kind) {
	case CXType_Void:
		r = type_new(a, TY_VOID, 0);
		break;
	case CXType_Bool:
	case CXType_Char_U:
	case CXType_UChar:
	case CXType_UShort:
	case CXType_UInt:
	case CXType_ULong:
	case CXType_ULongLong:
		r = type_int(a, (size_t)size, false);
		break;
	case CXType_Char_S:
	case CXType_SChar:
	case CXType_Short:
	case CXType_Int:
	case CXType_Long:
	case CXType_LongLong:
		r = type_int(a, (size_t)size, true);
		break;
	case CXType_Pointer:
		r = conv(d, cx->clang_getPointeeType(t));
		/* a function pointer: an address */
		r = type_pointer(a, r ? r : type_new(a, TY_VOID, 0));
		break;
	case CXType_ConstantArray:
	case CXType_IncompleteArray: {
		struct type *et;

		e = cx->clang_getCanonicalType(cx->clang_getArrayElementType(t));
		if (t.kind == CXType_ConstantArray &&
		    (e.kind == CXType_Char_S || e.kind == CXType_Char_U)) {
			/* char name[N]: a string, as in bpftrace */
			r = type_string(a, (size_t)cx->clang_getArraySize(t));
			break;
		}
		et = conv(d, e);
		if (!et)
			break;
		r = type_new(a, TY_ARRAY, size > 0 ? (size_t)size : 0);
		r->elem = et;
		r->nelems = t.kind == CXType_ConstantArray ?
				    (size_t)cx->clang_getArraySize(t) : 0;
		break;
	}
	case CXType_Record:
		r = record(d, t);
		break;
	case CXType_Enum:
		/* an unsigned integer of the enum's size, as bpftrace has it */
		r = type_int(a, (size_t)size, false);
		r->enumvals = cdefs_enum_table(d, cx->clang_getTypeDeclaration(t),
					       &r->nenumvals);
		break;
	default:
		break;	/* floating point, vectors, functions, __int128 */
	}
	d->depth--;
	return r;
}

struct type *cdefs_type(struct compile *c, const char *name)
{
	struct cdefs *d = c->cdefs;
	const struct cdefs_clang *cx;
	struct cdefs_name *n;
	struct type *t;

	if (!d || !(n = cdefs_name_find(d, name)))
		return NULL;
	if (n->type)
		return n->type;
	cx = d->cx;
	if (cx->clang_getCursorKind(n->cur) == CXCursor_TypedefDecl) {
		t = conv(d, cx->clang_getTypedefDeclUnderlyingType(n->cur));
		/* typedef struct { ... } name: the record takes the name */
		if (t && t->kind == TY_RECORD && !t->name)
			t->name = name;
	} else {
		t = conv(d, cx->clang_getCursorType(n->cur));
	}
	if (t && t->kind == TY_RECORD && !t->size && !t->nfields)
		return NULL;	/* only declared */
	n->type = t;
	return t;
}

#else /* !UBT_LIBCLANG_PATH */

struct type *cdefs_type(struct compile *c, const char *name)
{
	return NULL;
}

#endif
