/*
 * Tracepoint format files -> the args record type, typed as bpftrace 0.17
 * types them (see tracepoint.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "arena.h"
#include "tracepoint.h"
#include "types.h"
#include "types_btf.h"
#include "util.h"

#define TP_DATA_LOC_NAME "__data_loc"

static bool tp_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *tp_tracefs(void)
{
	static const char *const roots[] = {
		"/sys/kernel/tracing",
		"/sys/kernel/debug/tracing",
	};
	static const char *found;
	char path[64];

	if (found)
		return found;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
			snprintf(path, sizeof(path), "%s/events", roots[i]);
			if (tp_is_dir(path))
				return found = roots[i];
		}
		/* neither has events: mount tracefs (or, on kernels that
		 * have no /sys/kernel/tracing, debugfs) and look again */
		if (pass == 0 &&
		    mount("nodev", roots[0], "tracefs", 0, NULL) != 0 &&
		    mount("nodev", "/sys/kernel/debug", "debugfs", 0, NULL) != 0)
			break;
	}
	errno = ENOENT;
	return NULL;
}

/* Read a whole (procfs/tracefs) file into the arena; NULL with errno. */
static char *tp_read_file(struct arena *a, const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf, *res;
	size_t len = 0, cap = 8192, got;

	if (!f)
		return NULL;
	buf = xmalloc(cap);
	while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (cap - len - 1 == 0) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
	}
	if (ferror(f)) {
		int err = errno ? errno : EIO;

		fclose(f);
		free(buf);
		errno = err;
		return NULL;
	}
	fclose(f);
	res = arena_strndup(a, buf, len);
	free(buf);
	return res;
}

static const char *tp_trim(struct arena *a, const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return arena_strndup(a, s, n);
}

/* "key:value;" in line: the value as a number; -1 when missing. */
static long tp_field_num(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	if (!p)
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

static int tp_parse_field(struct arena *a, const char *line,
			  struct tp_field *f)
{
	const char *decl = strstr(line, "field:");
	const char *semi, *name, *end, *br;
	long off, size, sign;
	size_t n;

	if (!decl)
		return -EINVAL;
	decl += strlen("field:");
	semi = strchr(decl, ';');
	if (!semi)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->decl = tp_trim(a, decl, semi - decl);
	/* the name is the last word; an array suffix stays with it */
	end = f->decl + strlen(f->decl);
	name = end;
	while (name > f->decl && name[-1] != ' ' && name[-1] != '\t')
		name--;
	if (name == f->decl)
		return -EINVAL;
	f->ctype = tp_trim(a, f->decl, name - f->decl);
	br = strchr(name, '[');
	f->array_len = -1;
	if (br) {
		f->name = arena_strndup(a, name, br - name);
		if (isdigit((unsigned char)br[1]))
			f->array_len = strtol(br + 1, NULL, 10);
	} else {
		f->name = arena_strdup(a, name);
	}
	/* "__data_loc char[] name": the brackets are on the type */
	n = strlen(f->ctype);
	if (n > 2 && !strcmp(f->ctype + n - 2, "[]"))
		f->ctype = tp_trim(a, f->ctype, n - 2);
	f->data_loc = !strncmp(f->ctype, "__data_loc", 10);
	f->common = !strncmp(f->name, "common_", 7);
	off = tp_field_num(semi, "offset:");
	size = tp_field_num(semi, "size:");
	sign = tp_field_num(semi, "signed:");
	if (off < 0 || size < 0)
		return -EINVAL;
	f->offset = off;
	f->size = size;
	f->is_signed = sign > 0;
	return 0;
}

int tp_format_parse(struct arena *a, const char *category, const char *event,
		    const char *text, struct tp_format *out)
{
	int cap = 16;
	const char *p = text;

	memset(out, 0, sizeof(*out));
	out->category = arena_strdup(a, category);
	out->event = arena_strdup(a, event);
	out->id = -1;
	out->fields = arena_alloc(a, cap * sizeof(*out->fields));
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = arena_strndup(a, p, len);
		const char *s = line;

		p += len + (nl ? 1 : 0);
		while (isspace((unsigned char)*s))
			s++;
		if (!strncmp(s, "ID:", 3)) {
			out->id = atoi(s + 3);
		} else if (!strncmp(s, "field:", 6)) {
			struct tp_field f;

			if (tp_parse_field(a, s, &f))
				continue;
			if (out->nfields == cap) {
				struct tp_field *nf;

				nf = arena_alloc(a, 2 * cap * sizeof(*nf));
				memcpy(nf, out->fields, cap * sizeof(*nf));
				out->fields = nf;
				cap *= 2;
			}
			out->fields[out->nfields++] = f;
		} else if (!strncmp(s, "print fmt:", 10)) {
			break;
		}
	}
	return 0;
}

int tp_format_read(struct arena *a, const char *category, const char *event,
		   struct tp_format *out)
{
	const char *root = tp_tracefs();
	char *path, *text;

	if (!root)
		return -ENOENT;
	if (strchr(category, '/') || strchr(event, '/') ||
	    !strcmp(category, "..") || !strcmp(event, ".."))
		return -ENOENT;
	path = arena_printf(a, "%s/events/%s/%s/format", root, category,
			    event);
	text = tp_read_file(a, path);
	if (!text)
		return errno == ENOTDIR ? -ENOENT : -errno;
	return tp_format_parse(a, category, event, text, out);
}

/* C type names -> size and signedness. */
struct tp_ctype {
	const char *name;
	unsigned char size;
	bool is_signed;
};

static const struct tp_ctype tp_ctypes[] = {
	{ "_Bool", 1, false },
	{ "__s16", 2, true },
	{ "__s32", 4, true },
	{ "__s64", 8, true },
	{ "__s8", 1, true },
	{ "__u16", 2, false },
	{ "__u32", 4, false },
	{ "__u64", 8, false },
	{ "__u8", 1, false },
	{ "bool", 1, false },
	{ "char", 1, true },
	{ "dev_t", 4, false },
	{ "gfp_t", 4, false },
	{ "gid_t", 4, false },
	{ "ino_t", 8, false },
	{ "int", 4, true },
	{ "int16_t", 2, true },
	{ "int32_t", 4, true },
	{ "int64_t", 8, true },
	{ "int8_t", 1, true },
	{ "key_serial_t", 4, true },
	{ "ktime_t", 8, true },
	{ "loff_t", 8, true },
	{ "long", 8, true },
	{ "long int", 8, true },
	{ "long long", 8, true },
	{ "long long int", 8, true },
	{ "long unsigned int", 8, false },
	{ "off_t", 8, true },
	{ "pid_t", 4, true },
	{ "qid_t", 4, false },
	{ "s16", 2, true },
	{ "s32", 4, true },
	{ "s64", 8, true },
	{ "s8", 1, true },
	{ "sector_t", 8, false },
	{ "short", 2, true },
	{ "short int", 2, true },
	{ "short unsigned int", 2, false },
	{ "signed", 4, true },
	{ "signed char", 1, true },
	{ "signed int", 4, true },
	{ "signed long", 8, true },
	{ "size_t", 8, false },
	{ "ssize_t", 8, true },
	{ "time64_t", 8, true },
	{ "u16", 2, false },
	{ "u32", 4, false },
	{ "u64", 8, false },
	{ "u8", 1, false },
	{ "uid_t", 4, false },
	{ "uint", 4, false },
	{ "uint16_t", 2, false },
	{ "uint32_t", 4, false },
	{ "uint64_t", 8, false },
	{ "uint8_t", 1, false },
	{ "umode_t", 2, false },
	{ "unsigned", 4, false },
	{ "unsigned char", 1, false },
	{ "unsigned int", 4, false },
	{ "unsigned long", 8, false },
	{ "unsigned long int", 8, false },
	{ "unsigned long long", 8, false },
	{ "unsigned long long int", 8, false },
	{ "unsigned short", 2, false },
	{ "unsigned short int", 2, false },
};

static int tp_ctype_cmp(const void *k, const void *e)
{
	return strcmp(k, ((const struct tp_ctype *)e)->name);
}

/* Kernel BTF, loaded on first need; NULL when unavailable. */
static struct btf *tp_btf(void)
{
	return types_btf_vmlinux();
}

static struct type *tp_named_record(struct arena *a, const char *name,
				    bool is_union)
{
	struct type *t = type_new(a, TY_RECORD, 0);

	t->name = arena_strdup(a, name);
	t->is_union = is_union;
	return t;
}

/*
 * The type of BTF type id, as far as args typing needs it; tdname is the
 * innermost typedef name seen on the way, which names an anonymous
 * struct as bpftrace does (sigset_t *, __kernel_fd_set *).
 */
static struct type *tp_btf_type(struct arena *a, const struct btf *btf,
				__u32 id, const char *tdname, int depth)
{
	const struct btf_type *bt;

	for (;;) {
		if (depth++ > 32)
			return NULL;
		if (id == 0)
			return type_new(a, TY_VOID, 0);
		bt = btf__type_by_id(btf, id);
		if (!bt)
			return NULL;
		switch (btf_kind(bt)) {
		case BTF_KIND_TYPEDEF:
			tdname = btf__name_by_offset(btf, bt->name_off);
			/* fall through */
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = bt->type;
			continue;
		default:
			break;
		}
		break;
	}
	switch (btf_kind(bt)) {
	case BTF_KIND_INT:
		return type_int(a, bt->size,
				(btf_int_encoding(bt) & BTF_INT_SIGNED) != 0);
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		/* with its enumerators (compat enum-names) */
		return types_btf_type(a, btf, id);
	case BTF_KIND_PTR: {
		struct type *elem = tp_btf_type(a, btf, bt->type, NULL, depth);

		/* pointers to functions and to what args typing does not
		 * model are void pointers, as bpftrace has them */
		return type_pointer(a, elem ? elem : type_new(a, TY_VOID, 0));
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: {
		const char *n = btf__name_by_offset(btf, bt->name_off);
		bool u = btf_kind(bt) == BTF_KIND_UNION;
		struct type *t;

		if (n && *n)
			n = arena_printf(a, "%s %s", u ? "union" : "struct", n);
		else if (tdname && *tdname)
			n = tdname;
		else
			n = u ? "union" : "struct";
		t = tp_named_record(a, n, u);
		t->size = bt->size;
		return t;
	}
	default:
		return NULL;
	}
}

static struct type *tp_btf_lookup(struct arena *a, const char *name)
{
	struct btf *btf = tp_btf();
	__s32 id;

	if (!btf)
		return NULL;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return NULL;
	return tp_btf_type(a, btf, id, NULL, 0);
}

/* Remove the words const/volatile and squeeze blanks. */
static char *tp_strip_qualifiers(struct arena *a, const char *s)
{
	char *out = arena_alloc(a, strlen(s) + 1), *o = out;

	while (*s) {
		const char *w;
		size_t n;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (*s == '*') {
			if (o != out && o[-1] != '*')
				*o++ = ' ';
			*o++ = *s++;
			continue;
		}
		w = s;
		while (*s && !isspace((unsigned char)*s) && *s != '*')
			s++;
		n = s - w;
		if ((n == 5 && !strncmp(w, "const", 5)) ||
		    (n == 8 && !strncmp(w, "volatile", 8)) ||
		    (n == 6 && !strncmp(w, "__user", 6)))
			continue;
		if (o != out)
			*o++ = ' ';
		memcpy(o, w, n);
		o += n;
	}
	*o = '\0';
	return out;
}

/*
 * The type of a C type name as written in a format file (no array part);
 * NULL when it cannot be resolved.
 */
static struct type *tp_ctype_type(struct arena *a, const char *ctype)
{
	char *s = tp_strip_qualifiers(a, ctype);
	size_t n = strlen(s);
	int ptrs = 0;
	struct type *t = NULL;
	const struct tp_ctype *c;

	while (n && (s[n - 1] == '*' || s[n - 1] == ' ')) {
		if (s[n - 1] == '*')
			ptrs++;
		s[--n] = '\0';
	}
	if (!strcmp(s, "void")) {
		t = type_new(a, TY_VOID, 0);
	} else if (!strncmp(s, "struct ", 7) || !strncmp(s, "union ", 6)) {
		t = tp_named_record(a, s, s[0] == 'u');
	} else if (!strncmp(s, "enum ", 5)) {
		struct btf *btf = tp_btf();
		__s32 id = -1;

		if (btf) {
			id = btf__find_by_name_kind(btf, s + 5, BTF_KIND_ENUM);
			if (id <= 0)
				id = btf__find_by_name_kind(btf, s + 5,
							    BTF_KIND_ENUM64);
		}
		t = id > 0 ? tp_btf_type(a, btf, id, NULL, 0) :
			     type_int(a, 4, false);
	} else if ((c = bsearch(s, tp_ctypes, ARRAY_SIZE(tp_ctypes),
				sizeof(tp_ctypes[0]), tp_ctype_cmp))) {
		t = type_int(a, c->size, c->is_signed);
	} else {
		t = tp_btf_lookup(a, s);
	}
	if (!t) {
		if (!ptrs)
			return NULL;
		t = type_new(a, TY_VOID, 0);
	}
	if (ptrs && t->kind == TY_RECORD && !t->nfields && t->name) {
		/* looked up when the program follows the pointer */
		struct type *named = type_new(a, TY_NAMED, 0);

		named->name = t->name;
		t = named;
	}
	while (ptrs--)
		t = type_pointer(a, t);
	return t;
}

/* bpftrace: syscall arguments of size 8 declared as 32-bit integers. */
static struct type *tp_adjust_int(struct arena *a, const char *ctype,
				  size_t size, struct type *t)
{
	static const char *const to_u64[] = {
		"unsigned int", "unsigned", "u32", "pid_t", "uid_t", "gid_t",
	};

	if (size != 8)
		return t;
	if (!strcmp(ctype, "int"))
		return type_int(a, 8, true);
	for (size_t i = 0; i < ARRAY_SIZE(to_u64); i++)
		if (!strcmp(ctype, to_u64[i]))
			return type_int(a, 8, false);
	return t;
}

static struct type *tp_field_type(struct arena *a, const struct tp_format *fmt,
				  const struct tp_field *f)
{
	struct type *t;
	bool user = !strcmp(fmt->category, "syscalls");

	if (f->data_loc) {
		t = type_int(a, 8, true);
		t->name = TP_DATA_LOC_NAME;
		return t;
	}
	t = tp_ctype_type(a, f->ctype);
	if (f->array_len >= 0 || strchr(f->decl, '[')) {
		size_t esize;

		if (!t || t->kind == TY_VOID)
			t = type_int(a, 1, false);
		esize = t->size ? t->size : 1;
		if (t->kind == TY_INT && t->size == 1 &&
		    !strcmp(tp_strip_qualifiers(a, f->ctype), "char"))
			return type_string(a, f->size);
		struct type *arr = type_new(a, TY_ARRAY, f->size);

		arr->elem = t;
		arr->nelems = f->size / esize;
		return arr;
	}
	if (!t)
		return type_int(a, f->size, f->is_signed);
	if (t->kind == TY_RECORD && !t->size)
		t->size = f->size;	/* a struct by value, not in BTF */
	if (t->kind == TY_INT)
		return tp_adjust_int(a, f->ctype, f->size, t);
	if (t->kind == TY_POINTER) {
		for (struct type *p = t; p && p->kind == TY_POINTER;
		     p = p->elem)
			p->addrspace = user ? AS_USER : AS_KERNEL;
	}
	return t;
}

struct type *tp_args_type(struct arena *a, const struct tp_format *f)
{
	struct type *t = type_new(a, TY_RECORD, 0);
	int n = 0;

	t->name = arena_printf(a, "struct _tracepoint_%s_%s", f->category,
			       f->event);
	t->is_ctx = true;
	t->fields = arena_alloc(a, (f->nfields + 1) * sizeof(*t->fields));
	for (int i = 0; i < f->nfields; i++) {
		const struct tp_field *tf = &f->fields[i];
		struct type_field *field;
		size_t end;

		if (tf->common)
			continue;
		field = &t->fields[n++];
		field->name = tf->name;
		field->type = tp_field_type(a, f, tf);
		field->offset = tf->offset;
		end = tf->offset + (tf->data_loc ? tf->size :
				    field->type->size ? field->type->size :
				    tf->size);
		if (end > t->size)
			t->size = end;
	}
	t->nfields = n;
	return t;
}

int tp_args(struct arena *a, const char *category, const char *event,
	    struct type **out)
{
	struct tp_format f;
	int err = tp_format_read(a, category, event, &f);

	if (err)
		return err;
	*out = tp_args_type(a, &f);
	return 0;
}

const struct tp_field *tp_field_sized(const struct tp_format *f,
				      const char *name, size_t size)
{
	for (int i = 0; i < f->nfields; i++)
		if (!strcmp(f->fields[i].name, name) &&
		    f->fields[i].size == size)
			return &f->fields[i];
	return NULL;
}

bool tp_field_is_data_loc(const struct type *record, int i)
{
	const struct type *t;

	if (!record || i < 0 || i >= record->nfields)
		return false;
	t = record->fields[i].type;
	return t && t->kind == TY_INT && t->name &&
	       !strcmp(t->name, TP_DATA_LOC_NAME);
}

static int tp_strcmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

int tp_list(struct arena *a, const char ***out, int *n)
{
	const char *root = tp_tracefs();
	char *path;
	DIR *top;
	struct dirent *de;
	const char **list = NULL;
	int cnt = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (!root)
		return -ENOENT;
	path = arena_printf(a, "%s/events", root);
	top = opendir(path);
	if (!top)
		return -errno;
	while ((de = readdir(top))) {
		char *cat_path;
		DIR *cat;
		struct dirent *ev;

		/* ftrace's own events take no BPF programs (bpftrace
		 * leaves them out too) */
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "ftrace"))
			continue;
		cat_path = arena_printf(a, "%s/%s", path, de->d_name);
		cat = opendir(cat_path);
		if (!cat)
			continue;
		while ((ev = readdir(cat))) {
			char fmt[4096];

			if (ev->d_name[0] == '.')
				continue;
			snprintf(fmt, sizeof(fmt), "%s/%s/format", cat_path,
				 ev->d_name);
			if (access(fmt, F_OK))
				continue;
			if (cnt == cap) {
				cap = cap ? 2 * cap : 1024;
				list = xrealloc(list, cap * sizeof(*list));
			}
			list[cnt++] = arena_printf(a, "%s:%s", de->d_name,
						   ev->d_name);
		}
		closedir(cat);
	}
	closedir(top);
	if (cnt)
		qsort(list, cnt, sizeof(*list), tp_strcmp);
	*out = arena_alloc(a, (cnt + 1) * sizeof(**out));
	if (cnt)
		memcpy(*out, list, cnt * sizeof(*list));
	free(list);
	*n = cnt;
	return 0;
}
