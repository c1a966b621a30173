/*
 * Kernel types from BTF (types_btf.h): conversion of BTF types to the
 * type model, lookups by name, enumerator values.
 */
#include <errno.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "arena.h"
#include "kfeat.h"
#include "types.h"
#include "types_btf.h"
#include "util.h"

/* Records nest by value at most this deep (a guard against bad BTF). */
#define BTF_MAX_DEPTH 32

struct btf *types_btf_vmlinux(void)
{
	return kfeat_vmlinux_btf();
}

/* id with typedefs and qualifiers looked through. */
static uint32_t btf_peel(const struct btf *btf, uint32_t id)
{
	for (int i = 0; i < 64; i++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (!t)
			return 0;
		switch (btf_kind(t)) {
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = t->type;
			break;
		default:
			return id;
		}
	}
	return 0;
}

/* Is id `char` (qualifiers looked through, typedefs not: u8 is not)? */
static bool btf_is_char(const struct btf *btf, uint32_t id)
{
	const struct btf_type *t;

	for (;;) {
		t = btf__type_by_id(btf, id);
		if (!t)
			return false;
		if (btf_kind(t) != BTF_KIND_CONST &&
		    btf_kind(t) != BTF_KIND_VOLATILE)
			break;
		id = t->type;
	}
	return btf_is_int(t) && t->size == 1 &&
	       !strcmp(btf__name_by_offset(btf, t->name_off), "char");
}

static struct type *btf_conv(struct arena *a, const struct btf *btf,
			     uint32_t id, int depth);

static const char *btf_record_name(struct arena *a, const struct btf *btf,
				   const struct btf_type *t)
{
	const char *name = btf__name_by_offset(btf, t->name_off);

	if (!name || !*name)
		return NULL;
	return arena_printf(a, "%s %s",
			    btf_kind(t) == BTF_KIND_UNION ? "union" : "struct",
			    name);
}

/*
 * A member of a type the model has no kind for (floating point): a
 * TY_NAMED of its size, so that the record keeps its layout and sema
 * refuses the field itself.
 */
static struct type *btf_opaque(struct arena *a, const struct btf *btf,
			       uint32_t id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const char *name = t ? btf__name_by_offset(btf, t->name_off) : NULL;
	long size = btf__resolve_size(btf, id);
	struct type *r = type_new(a, TY_NAMED, size > 0 ? size : 0);

	r->name = arena_strdup(a, name && *name ? name : "unsupported type");
	return r;
}

/*
 * Add the members of record t to rec->fields from index *n, at base
 * bits; an anonymous struct or union member adds its own members.
 */
static int btf_add_members(struct arena *a, const struct btf *btf,
		       const struct btf_type *t, struct type *rec, int *n,
		       int *cap, size_t base_bits, int depth)
{
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);
		size_t bits = base_bits + btf_member_bit_offset(t, i);
		int bsize = btf_member_bitfield_size(t, i);
		const struct btf_type *mt;
		struct type_field *f;
		uint32_t mid = btf_peel(btf, m->type);

		mt = btf__type_by_id(btf, mid);
		if ((!name || !*name) && mt && btf_is_composite(mt)) {
			if (btf_add_members(a, btf, mt, rec, n, cap, bits,
					depth + 1))
				return -EINVAL;
			continue;
		}
		if (*n == *cap) {
			struct type_field *nf;

			*cap = *cap ? 2 * *cap : 16;
			nf = arena_alloc(a, *cap * sizeof(*nf));
			if (*n)
				memcpy(nf, rec->fields, *n * sizeof(*nf));
			rec->fields = nf;
		}
		f = &rec->fields[(*n)++];
		memset(f, 0, sizeof(*f));
		f->name = name ? name : "";
		f->type = btf_conv(a, btf, m->type, depth + 1);
		if (!f->type && depth < BTF_MAX_DEPTH)
			f->type = btf_opaque(a, btf, mid);
		if (!f->type)
			return -EINVAL;
		f->offset = bits / 8;
		if (bsize) {
			f->bitfield_bits = bsize;
			f->bitfield_shift = bits % 8;
		} else if (bits % 8) {
			return -EINVAL;	/* not at a byte boundary */
		}
	}
	return 0;
}

static struct type *btf_record(struct arena *a, const struct btf *btf,
			       const struct btf_type *t, int depth)
{
	struct type *rec = type_new(a, TY_RECORD, t->size);
	int n = 0, cap = 0;

	rec->is_union = btf_kind(t) == BTF_KIND_UNION;
	rec->name = btf_record_name(a, btf, t);
	if (btf_add_members(a, btf, t, rec, &n, &cap, 0, depth))
		return NULL;
	rec->nfields = n;
	return rec;
}

/* What a pointer points to: named records stay names (types_btf.h). */
static struct type *btf_pointee(struct arena *a, const struct btf *btf,
				uint32_t id, int depth)
{
	const struct btf_type *t;
	struct type *e;

	id = btf_peel(btf, id);
	t = id ? btf__type_by_id(btf, id) : NULL;
	if (!t || btf_kind(t) == BTF_KIND_FUNC_PROTO)
		return type_new(a, TY_VOID, 0);
	if ((btf_is_composite(t) || btf_is_fwd(t)) &&
	    btf__name_by_offset(btf, t->name_off)[0]) {
		e = type_new(a, TY_NAMED, 0);
		e->name = arena_printf(a, "%s %s",
				       (btf_is_fwd(t) ? btf_kflag(t) :
					btf_kind(t) == BTF_KIND_UNION) ?
					       "union" : "struct",
				       btf__name_by_offset(btf, t->name_off));
		return e;
	}
	e = btf_conv(a, btf, id, depth + 1);
	return e ? e : type_new(a, TY_VOID, 0);
}

/* The enumerators of enum t, for printing its values by name (compat
 * enum-names): NULL for an anonymous enum unless anon, as the newest
 * bpftrace has them (names point into the BTF, which lives as long as
 * ubt). */
static const struct type_enumval *btf_enum_table(struct arena *a,
						 const struct btf *btf,
						 const struct btf_type *t,
						 bool anon, int *n)
{
	struct type_enumval *v;

	*n = 0;
	if ((!anon && !btf__name_by_offset(btf, t->name_off)[0]) ||
	    !btf_vlen(t))
		return NULL;
	v = arena_alloc(a, btf_vlen(t) * sizeof(*v));
	for (int i = 0; i < btf_vlen(t); i++) {
		if (btf_is_enum(t)) {
			const struct btf_enum *e = btf_enum(t) + i;

			v[i].name = btf__name_by_offset(btf, e->name_off);
			v[i].value = btf_kflag(t) ? (int64_t)e->val :
						    (int64_t)(uint32_t)e->val;
		} else {
			const struct btf_enum64 *e = btf_enum64(t) + i;

			v[i].name = btf__name_by_offset(btf, e->name_off);
			v[i].value = (int64_t)btf_enum64_value(e);
		}
	}
	*n = btf_vlen(t);
	return v;
}

static struct type *btf_conv(struct arena *a, const struct btf *btf,
			     uint32_t id, int depth)
{
	const struct btf_type *t;
	struct type *r;

	if (depth > BTF_MAX_DEPTH)
		return NULL;
	id = btf_peel(btf, id);
	if (!id)
		return type_new(a, TY_VOID, 0);
	t = btf__type_by_id(btf, id);
	if (!t)
		return NULL;
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
		if (t->size == 1 || t->size == 2 || t->size == 4 ||
		    t->size == 8)
			return type_int(a, t->size,
					btf_int_encoding(t) & BTF_INT_SIGNED);
		/* __int128: two 64-bit halves */
		r = type_new(a, TY_ARRAY, t->size);
		r->elem = type_int(a, 8, false);
		r->nelems = t->size / 8;
		return r;
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		r = type_int(a, t->size ? t->size : 4, false);
		r->enumvals = btf_enum_table(a, btf, t, false,
					     &r->nenumvals);
		return r;
	case BTF_KIND_PTR:
		r = type_pointer(a, btf_pointee(a, btf, t->type, depth));
		r->addrspace = AS_KERNEL;
		return r;
	case BTF_KIND_ARRAY: {
		const struct btf_array *arr = btf_array(t);
		struct type *e;

		if (btf_is_char(btf, arr->type))
			return type_string(a, arr->nelems);
		e = btf_conv(a, btf, arr->type, depth + 1);
		if (!e)
			return NULL;
		r = type_new(a, TY_ARRAY, e->size * arr->nelems);
		r->elem = e;
		r->nelems = arr->nelems;
		return r;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return btf_record(a, btf, t, depth);
	case BTF_KIND_FWD: {
		/* a declaration only: its definition by name */
		int32_t def = btf__find_by_name_kind(
			btf, btf__name_by_offset(btf, t->name_off),
			btf_kflag(t) ? BTF_KIND_UNION : BTF_KIND_STRUCT);

		if (def <= 0)
			return NULL;
		return btf_conv(a, btf, def, depth + 1);
	}
	case BTF_KIND_FUNC_PROTO:
	case BTF_KIND_FUNC:
		return type_new(a, TY_VOID, 0);
	default:
		return NULL;	/* floats, variables, sections */
	}
}

struct type *types_btf_type(struct arena *a, const struct btf *btf,
			    uint32_t id)
{
	return btf_conv(a, btf, id, 0);
}

uint32_t types_btf_id(const struct btf *btf, const char *name)
{
	int32_t id;

	if (!strncmp(name, "struct ", 7))
		id = btf__find_by_name_kind(btf, name + 7, BTF_KIND_STRUCT);
	else if (!strncmp(name, "union ", 6))
		id = btf__find_by_name_kind(btf, name + 6, BTF_KIND_UNION);
	else if (!strncmp(name, "enum ", 5)) {
		id = btf__find_by_name_kind(btf, name + 5, BTF_KIND_ENUM);
		if (id <= 0)
			id = btf__find_by_name_kind(btf, name + 5,
						    BTF_KIND_ENUM64);
	} else {
		id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	}
	return id > 0 ? (uint32_t)id : 0;
}

struct type *types_btf_lookup(struct arena *a, const char *name)
{
	const struct btf *btf = types_btf_vmlinux();
	int32_t id;
	struct type *t;

	if (!btf) {
		errno = ENODATA;
		return NULL;
	}
	id = (int32_t)types_btf_id(btf, name);
	if (id <= 0) {
		errno = ENOENT;
		return NULL;
	}
	t = btf_conv(a, btf, id, 0);
	if (!t)
		errno = ENOENT;
	return t;
}

/* Is enumerator i of enum t named name? Its value in *value. */
static bool btf_enumerator(const struct btf *btf, const struct btf_type *t,
			   int i, const char *name, int64_t *value)
{
	if (btf_is_enum(t)) {
		const struct btf_enum *e = btf_enum(t) + i;

		if (strcmp(btf__name_by_offset(btf, e->name_off), name))
			return false;
		/* kflag: a signed enum */
		*value = btf_kflag(t) ? (int64_t)e->val :
					(int64_t)(uint32_t)e->val;
		return true;
	} else {
		const struct btf_enum64 *e = btf_enum64(t) + i;

		if (strcmp(btf__name_by_offset(btf, e->name_off), name))
			return false;
		*value = (int64_t)btf_enum64_value(e);
		return true;
	}
}

int types_btf_enum_value(const char *name, int64_t *value)
{
	return types_btf_enum_lookup(NULL, name, value, NULL);
}

int types_btf_enum_lookup(struct arena *a, const char *name, int64_t *value,
			  struct type **type)
{
	const struct btf *btf = types_btf_vmlinux();
	uint32_t n;

	if (!btf)
		return -ENOENT;
	n = btf__type_cnt(btf);
	for (uint32_t id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (!btf_is_enum(t) && !btf_is_enum64(t))
			continue;
		for (int i = 0; i < btf_vlen(t); i++) {
			struct type *r;

			if (!btf_enumerator(btf, t, i, name, value))
				continue;
			if (!type)
				return 0;
			/* as a value: 64 bits, printed by name (the newest
			 * bpftrace pulls the enum in as a C definition,
			 * anonymous ones too) */
			r = type_int(a, 8, false);
			r->enumvals = btf_enum_table(a, btf, t, true,
						     &r->nenumvals);
			*type = r;
			return 0;
		}
	}
	return -ENOENT;
}
