/*
 * Program types from DWARF (types_dwarf.h): conversion of type DIEs to
 * the type model; an index of each file's named types (its compile
 * units' top-level structs, unions, enums and typedefs), built on the
 * first lookup and kept with the open file for the process's life.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "probes.h"
#include "types.h"
#include "types_dwarf.h"
#include "util.h"

/* Records nest by value at most this deep (a guard against bad DWARF). */
#define DW_MAX_DEPTH 32

struct dw_named {
	char *name;		/* "struct foo", "enum bar", "foo_t"; an
				 * enumerator: "=NAME" */
	Dwarf_Off off;
	Dwarf *dw;		/* the file's, or a split unit's (.dwo) */
};

struct dw_file {
	struct dw_file *next;
	char *path;
	int fd;
	Dwarf *dw;		/* NULL: no DWARF */
	struct dw_named *names;	/* sorted by name; NULL until indexed */
	size_t nnames;
	bool indexed;
};

static struct dw_file *dw_files;

static struct dw_file *dw_file_get(const char *path)
{
	struct dw_file *f;
	struct arena a;

	for (f = dw_files; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	/* a stripped file's DWARF is in its separate debug file */
	arena_init(&a);
	f->fd = open(probes_elf_dwarf_file(&a, path), O_RDONLY | O_CLOEXEC);
	arena_release(&a);
	if (f->fd >= 0) {
		f->dw = dwarf_begin(f->fd, DWARF_C_READ);
		if (!f->dw) {
			close(f->fd);
			f->fd = -1;
		}
	}
	f->next = dw_files;
	dw_files = f;
	return f;
}

Dwarf *types_dwarf_open(const char *path)
{
	struct dw_file *f = dw_file_get(path);

	return f ? f->dw : NULL;
}

static const char *dw_tag_prefix(int tag)
{
	switch (tag) {
	case DW_TAG_structure_type:
	case DW_TAG_class_type:	/* C++: a struct to the language */
		return "struct ";
	case DW_TAG_union_type:
		return "union ";
	case DW_TAG_enumeration_type:
		return "enum ";
	case DW_TAG_typedef:
		return "";
	default:
		return NULL;
	}
}

static int dw_named_cmp(const void *x, const void *y)
{
	const struct dw_named *a = x, *b = y;
	int r = strcmp(a->name, b->name);

	if (r)
		return r;
	return a->off < b->off ? -1 : a->off > b->off;
}

static int dw_add(struct dw_file *f, size_t *cap, const char *pfx,
		  const char *name, Dwarf_Die *die)
{
	struct dw_named *e;

	if (f->nnames == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		e = realloc(f->names, *cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		f->names = e;
	}
	e = &f->names[f->nnames];
	if (asprintf(&e->name, "%s%s", pfx, name) < 0)
		return -ENOMEM;
	e->off = dwarf_dieoffset(die);
	e->dw = dwarf_cu_getdwarf(die->cu);
	f->nnames++;
	return 0;
}

/* The enumerators of enum die, as "=NAME" at their own DIEs. */
static int dw_add_enumerators(struct dw_file *f, size_t *cap, Dwarf_Die *die)
{
	Dwarf_Die c;

	if (dwarf_child(die, &c) != 0)
		return 0;
	do {
		const char *name = dwarf_diename(&c);

		if (dwarf_tag(&c) == DW_TAG_enumerator && name &&
		    dw_add(f, cap, "=", name, &c))
			return -ENOMEM;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static int dw_index(struct dw_file *f)
{
	Dwarf_CU *unit = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t ut;
	size_t cap = 0;

	f->indexed = true;
	/* a skeleton unit's types are in its split unit (.dwo) */
	while (!dwarf_get_units(f->dw, unit, &unit, NULL, &ut, &cudie,
				&subdie)) {
		Dwarf_Die *cu = ut == DW_UT_skeleton ? &subdie : &cudie, d;

		if (dwarf_child(cu, &d) != 0)
			continue;
		do {
			const char *pfx = dw_tag_prefix(dwarf_tag(&d));
			const char *name = dwarf_diename(&d);

			if (!pfx || dwarf_hasattr(&d, DW_AT_declaration))
				continue;
			if (dwarf_tag(&d) == DW_TAG_enumeration_type &&
			    dw_add_enumerators(f, &cap, &d))
				return -ENOMEM;
			if (name && dw_add(f, &cap, pfx, name, &d))
				return -ENOMEM;
		} while (dwarf_siblingof(&d, &d) == 0);
	}
	qsort(f->names, f->nnames, sizeof(*f->names), dw_named_cmp);
	return 0;
}

/* The first definition named name, or false. */
static bool dw_find(struct dw_file *f, const char *name, Dwarf_Die *out)
{
	size_t lo = 0, hi;

	if (!f->indexed && dw_index(f))
		return false;
	hi = f->nnames;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(f->names[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == f->nnames || strcmp(f->names[lo].name, name))
		return false;
	return dwarf_offdie(f->names[lo].dw, f->names[lo].off, out) != NULL;
}

static bool dw_attr_die(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;

	return dwarf_attr_integrate(die, DW_AT_type, &attr) &&
	       dwarf_formref_die(&attr, out);
}

static bool dw_udata(Dwarf_Die *die, int name, Dwarf_Word *v)
{
	Dwarf_Attribute attr;

	return dwarf_attr_integrate(die, name, &attr) &&
	       dwarf_formudata(&attr, v) == 0;
}

/* Qualifiers (not typedefs) looked through: is it `char`? */
static bool dw_is_char(Dwarf_Die *t)
{
	Dwarf_Die d = *t;
	const char *name;

	while (dwarf_tag(&d) == DW_TAG_const_type ||
	       dwarf_tag(&d) == DW_TAG_volatile_type)
		if (!dw_attr_die(&d, &d))
			return false;
	name = dwarf_diename(&d);
	return dwarf_tag(&d) == DW_TAG_base_type && name &&
	       !strcmp(name, "char");
}

static struct type *dw_conv(struct arena *a, Dwarf_Die *t, int depth);

static struct type *dw_base(struct arena *a, Dwarf_Die *t)
{
	Dwarf_Word enc = 0;
	int size = dwarf_bytesize(t);

	if (size != 1 && size != 2 && size != 4 && size != 8)
		return NULL;
	dw_udata(t, DW_AT_encoding, &enc);
	switch (enc) {
	case DW_ATE_signed:
	case DW_ATE_signed_char:
		return type_int(a, size, true);
	case DW_ATE_unsigned:
	case DW_ATE_unsigned_char:
	case DW_ATE_boolean:
		return type_int(a, size, false);
	default:
		return NULL;	/* floating point and the rest */
	}
}

static struct type *dw_pointer(struct arena *a, Dwarf_Die *ptr, int depth)
{
	Dwarf_Die t;
	struct type *e = NULL;
	const char *name;
	int tag;

	if (dw_attr_die(ptr, &t) && dwarf_peel_type(&t, &t) == 0) {
		tag = dwarf_tag(&t);
		name = dwarf_diename(&t);
		if ((tag == DW_TAG_structure_type ||
		     tag == DW_TAG_class_type || tag == DW_TAG_union_type) &&
		    name) {
			e = type_new(a, TY_NAMED, 0);
			e->name = arena_printf(a, "%s%s", dw_tag_prefix(tag),
					       name);
		} else if (tag != DW_TAG_subroutine_type) {
			e = dw_conv(a, &t, depth + 1);
		}
	}
	if (!e)
		e = type_new(a, TY_VOID, 0);
	e = type_pointer(a, e);
	e->addrspace = AS_USER;
	return e;
}

static struct type *dw_array(struct arena *a, Dwarf_Die *arr, int depth)
{
	Dwarf_Die elem, sub;
	size_t dims[8], ndims = 0;
	struct type *e;

	if (!dw_attr_die(arr, &elem) || dwarf_child(arr, &sub) != 0)
		return NULL;
	do {
		Dwarf_Word v;

		if (dwarf_tag(&sub) != DW_TAG_subrange_type)
			continue;
		if (ndims == ARRAY_SIZE(dims))
			return NULL;
		if (dw_udata(&sub, DW_AT_count, &v))
			dims[ndims++] = v;
		else if (dw_udata(&sub, DW_AT_upper_bound, &v))
			dims[ndims++] = v + 1;
		else
			dims[ndims++] = 0;	/* flexible */
	} while (dwarf_siblingof(&sub, &sub) == 0);
	if (!ndims)
		return NULL;
	if (dw_is_char(&elem)) {
		e = type_string(a, dims[--ndims]);
	} else {
		e = dw_conv(a, &elem, depth + 1);
		if (!e)
			return NULL;
	}
	/* int x[2][3]: an array of 2 arrays of 3 */
	while (ndims--) {
		struct type *r = type_new(a, TY_ARRAY, e->size * dims[ndims]);

		r->elem = e;
		r->nelems = dims[ndims];
		e = r;
	}
	return e;
}

/*
 * A member of a type the model has no kind for (floating point, 128-bit
 * integers): a TY_NAMED of its size, so that the record keeps its
 * layout and sema refuses the field itself.
 */
static struct type *dw_opaque(struct arena *a, Dwarf_Die *member)
{
	Dwarf_Die t;
	Dwarf_Word size = 0;
	const char *name = NULL;
	struct type *r;

	if (dw_attr_die(member, &t)) {
		name = dwarf_diename(&t);
		if (dwarf_aggregate_size(&t, &size) != 0)
			size = 0;
	}
	r = type_new(a, TY_NAMED, size);
	r->name = arena_strdup(a, name ? name : "unsupported type");
	return r;
}

static bool dw_has_field(const struct type *rec, const char *name)
{
	for (int i = 0; i < rec->nfields; i++)
		if (!strcmp(rec->fields[i].name, name))
			return true;
	return false;
}

/*
 * Add the members of record die to rec->fields (see btf_add_members);
 * with inherited, those of a base class, where rec has no member of the
 * same name yet (C++: the derived class's member hides the base's).
 */
static int dw_members(struct arena *a, Dwarf_Die *die, struct type *rec,
		      int *cap, size_t base_bits, int depth, bool inherited)
{
	Dwarf_Die m;

	if (dwarf_child(die, &m) != 0)
		return 0;
	do {
		const char *name = dwarf_diename(&m);
		Dwarf_Word loc = 0, bsize = 0, boff, bytes;
		Dwarf_Die mt;
		struct type_field *f;
		size_t bits;

		if (dwarf_tag(&m) != DW_TAG_member ||
		    dwarf_hasattr(&m, DW_AT_external) ||
		    dwarf_hasattr(&m, DW_AT_artificial))
			continue;	/* C++: static members, _vptr.X */
		if (inherited && name && dw_has_field(rec, name))
			continue;
		if (dwarf_hasattr(&m, DW_AT_data_member_location) &&
		    !dw_udata(&m, DW_AT_data_member_location, &loc))
			return -EINVAL;	/* a location expression */
		bits = base_bits + loc * 8;
		if (dw_udata(&m, DW_AT_bit_size, &bsize)) {
			if (dw_udata(&m, DW_AT_data_bit_offset, &boff)) {
				bits = base_bits + boff;
			} else if (dw_udata(&m, DW_AT_bit_offset, &boff)) {
				/* DWARF 2-3: from the storage unit's top */
				if (!dw_udata(&m, DW_AT_byte_size, &bytes) &&
				    (!dw_attr_die(&m, &mt) ||
				     dwarf_peel_type(&mt, &mt) != 0 ||
				     dwarf_bytesize(&mt) <= 0))
					return -EINVAL;
				if (!dwarf_hasattr(&m, DW_AT_byte_size))
					bytes = dwarf_bytesize(&mt);
				bits += bytes * 8 - boff - bsize;
			}
		}
		if (!dw_attr_die(&m, &mt) || dwarf_peel_type(&mt, &mt) != 0)
			return -EINVAL;
		if (!name && (dwarf_tag(&mt) == DW_TAG_structure_type ||
			      dwarf_tag(&mt) == DW_TAG_class_type ||
			      dwarf_tag(&mt) == DW_TAG_union_type)) {
			if (dw_members(a, &mt, rec, cap, bits, depth + 1,
				       inherited))
				return -EINVAL;
			continue;
		}
		if (rec->nfields == *cap) {
			struct type_field *nf;

			*cap = *cap ? 2 * *cap : 16;
			nf = arena_alloc(a, *cap * sizeof(*nf));
			if (rec->nfields)
				memcpy(nf, rec->fields,
				       rec->nfields * sizeof(*nf));
			rec->fields = nf;
		}
		f = &rec->fields[rec->nfields];
		memset(f, 0, sizeof(*f));
		f->name = arena_strdup(a, name ? name : "");
		f->type = types_dwarf_type_of(a, &m);
		if (!f->type)
			f->type = dw_opaque(a, &m);
		f->offset = bits / 8;
		if (bsize) {
			f->bitfield_bits = bsize;
			f->bitfield_shift = bits % 8;
		} else if (bits % 8) {
			return -EINVAL;
		}
		rec->nfields++;
	} while (dwarf_siblingof(&m, &m) == 0);
	return 0;
}

/* Fields by offset, those at the same offset (bitfields) kept in order. */
static void dw_sort_fields(struct type *rec)
{
	for (int i = 1; i < rec->nfields; i++) {
		struct type_field f = rec->fields[i];
		int j = i;

		for (; j > 0 && rec->fields[j - 1].offset > f.offset; j--)
			rec->fields[j] = rec->fields[j - 1];
		rec->fields[j] = f;
	}
}

/*
 * C++ base classes (DW_TAG_inheritance), breadth first as bpftrace takes
 * them: the members of each base become the record's where it has none
 * of that name, at the base's offset; then the fields are ordered by
 * offset, for print(). A virtual base has no fixed offset (the object's
 * vtable tells it): its members stay out.
 */
static int dw_bases(struct arena *a, Dwarf_Die *die, struct type *rec,
		    int *cap, int depth)
{
	struct {
		Dwarf_Die die;
		size_t bits;
	} q[DW_MAX_DEPTH];
	int head = 0, tail = 0;
	bool any = false;

	q[tail].die = *die;
	q[tail++].bits = 0;
	while (head < tail) {
		Dwarf_Die cur = q[head].die, c, bt;
		size_t bits = q[head++].bits;

		if (dwarf_child(&cur, &c) != 0)
			continue;
		do {
			Dwarf_Word loc = 0;

			if (dwarf_tag(&c) != DW_TAG_inheritance ||
			    dwarf_hasattr(&c, DW_AT_virtuality) ||
			    (dwarf_hasattr(&c, DW_AT_data_member_location) &&
			     !dw_udata(&c, DW_AT_data_member_location, &loc)) ||
			    !dw_attr_die(&c, &bt) ||
			    dwarf_peel_type(&bt, &bt) != 0 ||
			    dwarf_hasattr(&bt, DW_AT_declaration))
				continue;
			if (dw_members(a, &bt, rec, cap, bits + loc * 8,
				       depth + 1, true))
				return -EINVAL;
			any = true;
			if (tail < DW_MAX_DEPTH) {
				q[tail].die = bt;
				q[tail++].bits = bits + loc * 8;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	if (any)
		dw_sort_fields(rec);
	return 0;
}

static struct type *dw_record(struct arena *a, Dwarf_Die *die, int depth)
{
	int tag = dwarf_tag(die), size = dwarf_bytesize(die), cap = 0;
	const char *name = dwarf_diename(die);
	struct type *rec;

	if (size < 0)
		size = 0;
	rec = type_new(a, TY_RECORD, size);
	rec->is_union = tag == DW_TAG_union_type;
	if (name)
		rec->name = arena_printf(a, "%s%s", dw_tag_prefix(tag), name);
	if (dw_members(a, die, rec, &cap, 0, depth, false) ||
	    dw_bases(a, die, rec, &cap, depth))
		return NULL;
	return rec;
}

static struct type *dw_conv(struct arena *a, Dwarf_Die *die, int depth)
{
	Dwarf_Die t;
	int size;

	if (depth > DW_MAX_DEPTH || dwarf_peel_type(die, &t) != 0)
		return NULL;
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		return dw_base(a, &t);
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		return dw_pointer(a, &t, depth);
	case DW_TAG_enumeration_type:
		size = dwarf_bytesize(&t);
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return NULL;
		return type_int(a, size, false);
	case DW_TAG_array_type:
		return dw_array(a, &t, depth);
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		if (dwarf_hasattr(&t, DW_AT_declaration))
			return NULL;	/* the caller looks it up by name */
		return dw_record(a, &t, depth);
	default:
		return NULL;
	}
}

struct type *types_dwarf_type_of(struct arena *a, Dwarf_Die *die)
{
	Dwarf_Die t;

	if (!dw_attr_die(die, &t))
		return type_new(a, TY_VOID, 0);
	return dw_conv(a, &t, 0);
}

struct type *types_dwarf_lookup(struct arena *a, const char *path,
				const char *name)
{
	struct dw_file *f = dw_file_get(path);
	struct type *t;
	Dwarf_Die die;

	if (!f || !f->dw) {
		errno = ENODATA;
		return NULL;
	}
	if (!dw_find(f, name, &die)) {
		errno = ENOENT;
		return NULL;
	}
	t = dw_conv(a, &die, 0);
	if (!t)
		errno = ENOENT;
	return t;
}

int types_dwarf_enum_value(const char *path, const char *name,
			   int64_t *value)
{
	struct dw_file *f = dw_file_get(path);
	Dwarf_Attribute attr;
	Dwarf_Sword sv;
	Dwarf_Die die;
	char *key;
	bool found;

	if (!f || !f->dw)
		return -ENOENT;
	if (asprintf(&key, "=%s", name) < 0)
		return -ENOMEM;
	found = dw_find(f, key, &die);
	free(key);
	if (!found || !dwarf_attr(&die, DW_AT_const_value, &attr) ||
	    dwarf_formsdata(&attr, &sv) != 0)
		return -ENOENT;
	*value = sv;
	return 0;
}
