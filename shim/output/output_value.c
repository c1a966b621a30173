/*
 * One value as bpftrace prints it: integers, strings, buffers, tuples,
 * symbols and addresses resolved, in text and JSON; map keys.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* qsort_r, fwrite_unlocked */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <ftw.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "arena.h"
#include "format.h"
#include "output.h"
#include "types.h"
#include "util.h"
#include "compat.h"
#include "env.h"
#include "output_int.h"

/* ---- values ---- */

bool out_type_signed(const struct type *t)
{
	switch (t->kind) {
	case TY_INT:
	case TY_ENUM:
	case TY_SUM:
	case TY_MIN:
	case TY_MAX:
	case TY_AVG:
	case TY_STATS:
		return t->is_signed;
	default:
		return false;
	}
}

uint64_t out_load_int(const void *p, size_t size, bool is_signed)
{
	switch (size) {
	case 1: {
		uint8_t v;

		memcpy(&v, p, 1);
		return is_signed ? (uint64_t)(int64_t)(int8_t)v : v;
	}
	case 2: {
		uint16_t v;

		memcpy(&v, p, 2);
		return is_signed ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	case 4: {
		uint32_t v;

		memcpy(&v, p, 4);
		return is_signed ? (uint64_t)(int64_t)(int32_t)v : v;
	}
	case 8: {
		uint64_t v;

		memcpy(&v, p, 8);
		return v;
	}
	}
	BUG("integer of size %zu", size);
}

bool out_is_int_kind(const struct type *t)
{
	if (t->size != 1 && t->size != 2 && t->size != 4 && t->size != 8)
		return false;
	return t->kind == TY_INT || t->kind == TY_BOOL ||
	       t->kind == TY_POINTER || t->kind == TY_ENUM;
}

const char *out_enum_name(const struct type *t, uint64_t v)
{
	if (t->kind != TY_INT || !t->enumvals ||
	    !compat_has(COMPAT_ENUM_NAMES))
		return NULL;
	for (int i = 0; i < t->nenumvals; i++)
		if ((uint64_t)t->enumvals[i].value == v ||
		    (t->size < 8 && ((uint64_t)t->enumvals[i].value &
				     ((1ULL << (8 * t->size)) - 1)) == v))
			return t->enumvals[i].name;
	return NULL;
}

bool out_is_char_array(const struct type *t)
{
	/* bytes named uint8 (pton()) or int8 (a cast to int8[N]) are
	 * numbers */
	return t->kind == TY_ARRAY && t->elem && t->elem->kind == TY_INT &&
	       t->elem->size == 1 &&
	       !(t->elem->name && (!strcmp(t->elem->name, "uint8") ||
				   !strcmp(t->elem->name, "int8")));
}

static size_t str_len(const char *s, size_t size)
{
	const char *z = memchr(s, '\0', size);

	return z ? (size_t)(z - s) : size;
}

static const char *kind_name(const struct type *t)
{
	static char buf[64];
	struct arena a;
	const char *s;

	arena_init(&a);
	s = type_str(&a, t);
	snprintf(buf, sizeof(buf), "%s", s);
	arena_release(&a);
	return buf;
}

int out_not_supported(const struct type *t)
{
	static bool said[TY_KIND_COUNT];

	/* once per kind: this can be reached for every event */
	if (t->kind < TY_KIND_COUNT && !said[t->kind]) {
		said[t->kind] = true;
		fprintf(stderr,
			"ubt: printing a value of type %s is not supported\n",
			kind_name(t));
	}
	return -ENOTSUP;
}

void out_json_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

void sb_json_string(struct sb *b, const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		BUG("open_memstream: out of memory");
	out_json_string(f, s, len);
	fclose(f);
	sb_add(b, buf, n);
	free(buf);
}

/*
 * Text of a value that prints through its context: username and
 * strerror here, the others through the producer's o->resolve. A
 * malloc'd string, or NULL when nobody can print it.
 */
/* cgroup_path(): the directory whose inode is the cgroup id. */
static uint64_t cg_want;
static char *cg_found;

static int out_cgroup_visit(const char *path, const struct stat *st,
			    int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag != FTW_D || st->st_ino != cg_want)
		return 0;
	cg_found = xstrdup(path);
	return 1;
}

/* The path of cgroup id under the hierarchy mounted at root, or "". */
static char *out_cgroup_in(const char *root, uint64_t id)
{
	size_t n = strlen(root);
	char *rel;

	cg_want = id;
	cg_found = NULL;
	nftw(root, out_cgroup_visit, 16, FTW_PHYS | FTW_MOUNT);
	if (!cg_found)
		return xstrdup("");
	rel = xstrdup(cg_found[n] ? cg_found + n : "/");
	free(cg_found);
	cg_found = NULL;
	return rel;
}

struct out_cgroot {
	char *name, *dir;
};

static int out_cgroot_cmp(const void *a, const void *b)
{
	const struct out_cgroot *x = a, *y = b;

	if (!strcmp(x->name, "unified") || !strcmp(y->name, "unified"))
		return strcmp(x->name, "unified") ? 1 :
		       strcmp(y->name, "unified") ? -1 : 0;
	return strcmp(x->name, y->name);
}

/*
 * "name:path,..." over the cgroup mounts of /proc/mounts whose name (the
 * mount point's last part for cgroup v1, "unified" for v2) matches the
 * filter, "unified" first, then by name: bpftrace 0.17's text.
 */
static char *out_cgroup_path(uint64_t id, const char *filter)
{
	struct out_cgroot *roots = NULL;
	struct sb b = { 0 };
	char line[4096];
	int n = 0;
	FILE *f = fopen("/proc/mounts", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char dev[256], dir[2048], type[64];
		const char *name;

		if (sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3)
			continue;
		if (!strcmp(type, "cgroup2"))
			name = "unified";
		else if (!strcmp(type, "cgroup"))
			name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
		else
			continue;
		if (filter && *filter && fnmatch(filter, name, 0))
			continue;
		roots = xrealloc(roots, (n + 1) * sizeof(*roots));
		roots[n].name = xstrdup(name);
		roots[n].dir = xstrdup(dir);
		n++;
	}
	if (f)
		fclose(f);
	qsort(roots, n, sizeof(*roots), out_cgroot_cmp);
	for (int i = 0; i < n; i++) {
		char *p = out_cgroup_in(roots[i].dir, id);

		sb_printf(&b, "%s%s:%s", i ? "," : "", roots[i].name, p);
		free(p);
		free(roots[i].name);
		free(roots[i].dir);
	}
	free(roots);
	return b.s ? b.s : xstrdup("");
}

/*
 * strftime(fmt, ns): ns nanoseconds of CLOCK_BOOTTIME (as nsecs) as the
 * local time, through the offset of CLOCK_REALTIME from it taken once;
 * "%f" is the microseconds. bpftrace 0.17's "(?)" when it fails.
 */
static char *out_strftime(const char *fmt, uint64_t ns)
{
	static struct timespec base;
	static bool have_base;
	struct sb f = { 0 };
	char text[4096], us[8];
	uint64_t total;
	struct tm tm;
	time_t sec;

	if (!have_base) {
		struct timespec rt, bt;

		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_BOOTTIME, &bt);
		base.tv_sec = rt.tv_sec - bt.tv_sec;
		base.tv_nsec = rt.tv_nsec - bt.tv_nsec;
		if (base.tv_nsec < 0) {
			base.tv_nsec += 1000000000;
			base.tv_sec--;
		}
		have_base = true;
	}
	total = (uint64_t)base.tv_nsec + ns;
	sec = base.tv_sec + (time_t)(total / 1000000000);
	snprintf(us, sizeof(us), "%06llu",
		 (unsigned long long)(total % 1000000000 / 1000));
	for (const char *p = fmt; *p; p++) {
		if (p[0] == '%' && p[1] == 'f') {
			sb_adds(&f, us);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			sb_adds(&f, "%%");
			p++;
		} else {
			sb_addc(&f, *p);
		}
	}
	if (!localtime_r(&sec, &tm) ||
	    !strftime(text, sizeof(text), f.s ? f.s : "", &tm)) {
		sb_release(&f);
		return xstrdup("(?)");
	}
	sb_release(&f);
	return xstrdup(text);
}

char *out_resolve(const struct out *o, const struct type *t,
		     const void *p)
{
	char buf[4096];
	int64_t v = 0;

	if (t->size && t->size <= 8 && !(t->size & (t->size - 1)))
		v = (int64_t)out_load_int(p, t->size, true);
	if (o && o->resolve) {
		int err = o->resolve(o->resolve_ctx, t, p, buf, sizeof(buf));

		if (!err) {
			buf[sizeof(buf) - 1] = '\0';
			return xstrdup(buf);
		}
		if (err != -ENOTSUP)
			return NULL;
	}
	if (t->kind == TY_USERNAME) {
		struct passwd pw, *res = NULL;

		if (!getpwuid_r((uid_t)v, &pw, buf, sizeof(buf), &res) && res)
			return xstrdup(res->pw_name);
		snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t)(uint32_t)v);
		return xstrdup(buf);
	}
	if (t->kind == TY_STRERROR)
		return xstrdup(strerror((int)v));
	if (t->kind == TY_SYSCALL_NAME) {
		const char *s = v >= 0 ? out_syscall_name((unsigned long)v) :
					 NULL;

		return xstrdup(s ? s : "Unknown syscall");	/* bpftrace's */
	}
	if (t->kind == TY_SIGNAL_NAME)	/* bpftrace v0.26's table: glibc's */
		return xstrdup(v >= 0 && v <= 64 ? strsignal((int)v) : "N/A");
	if (t->kind == TY_INET && t->size >= 24) {
		uint64_t af;

		memcpy(&af, p, 8);
		if ((af == AF_INET || af == AF_INET6) &&
		    inet_ntop((int)af, (const char *)p + 8, buf, sizeof(buf)))
			return xstrdup(buf);
		return NULL;
	}
	if (t->kind == TY_CGROUP_PATH && t->size >= 8)
		return out_cgroup_path((uint64_t)v, t->name);
	if (t->kind == TY_TIMESTAMP && t->name)
		return out_strftime(t->name, (uint64_t)v);
	if (t->kind == TY_MAC && t->size >= 6) {
		const unsigned char *m = p;

		snprintf(buf, sizeof(buf), "%02X:%02X:%02X:%02X:%02X:%02X",
			 m[0], m[1], m[2], m[3], m[4], m[5]);
		return xstrdup(buf);
	}
	if ((t->kind == TY_USYM || t->kind == TY_KSYM) && t->size >= 8) {
		uint64_t addr;

		/* what bpftrace prints for an address it cannot resolve */
		memcpy(&addr, p, 8);
		snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
		return xstrdup(buf);
	}
	return NULL;
}

/* A buffer as %r prints it (mode 0), or %rx ('x') or %rh ('h'). */
void out_buf_escape(struct sb *b, const unsigned char *p, size_t n,
		       char mode)
{
	for (size_t i = 0; i < n; i++) {
		if (mode == 'h')
			sb_printf(b, "%s%02x", i ? " " : "", p[i]);
		else if (mode == 'x' || p[i] < 0x20 || p[i] >= 0x7f)
			sb_printf(b, "\\x%02x", p[i]);
		else
			sb_addc(b, p[i]);
	}
}

/* An array as bpftrace prints it: [1,2,3] everywhere. */
static int sb_array(const struct out *o, struct sb *b, const struct type *t,
		    const void *p, enum val_style vs)
{
	const struct type *e = t->elem;

	if (!e || !e->size || e->size * t->nelems != t->size)
		return out_not_supported(t);
	sb_addc(b, '[');
	for (size_t i = 0; i < t->nelems; i++) {
		int err;

		if (i)
			sb_addc(b, ',');
		err = sb_value(o, b, e, (const char *)p + i * e->size, vs);
		if (err)
			return err;
	}
	sb_addc(b, ']');
	return 0;
}

/* A bit field's value from the bytes that hold it. */
static uint64_t out_bitfield(const struct type_field *f, const void *p)
{
	size_t n = (f->bitfield_shift + f->bitfield_bits + 7) / 8;
	int bits = f->bitfield_bits;
	uint64_t v = 0;

	memcpy(&v, p, n > 8 ? 8 : n);
	if (out_type_signed(f->type))
		return (uint64_t)((int64_t)(v << (64 - bits - f->bitfield_shift)) >>
				  (64 - bits));
	v >>= f->bitfield_shift;
	return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

/*
 * A struct or union: { .a = 1, .b = { .c = 2 } } in text, {.a=1,.b=2} in
 * map keys (0.17; compat record-key: as in text), { "a": 1, "b": 2 } in
 * JSON values.
 */
static int sb_record(const struct out *o, struct sb *b, const struct type *t,
		     const void *p, enum val_style vs)
{
	/* the newest bpftrace spaces a record in a text key as a value */
	bool key = vs == VS_JSON_KEY ||
		   (vs == VS_TEXT_KEY && !compat_has(COMPAT_RECORD_KEY));
	/* compat json-records: {"a": 1}, a float member null */
	bool tight = vs == VS_JSON && compat_has(COMPAT_JSON_RECORDS);
	bool first = true;

	sb_adds(b, key || tight ? "{" : "{ ");
	for (int i = 0; i < t->nfields; i++) {
		const struct type_field *f = &t->fields[i];
		const char *q = (const char *)p + f->offset;
		int err;

		if (f->offset + (f->bitfield_bits ? 0 : f->type->size) >
		    t->size)
			return out_not_supported(t);
		/* floating point (a named type the model does not have):
		 * left out, as bpftrace 0.17 leaves it out */
		if (f->type->kind == TY_NAMED && !tight)
			continue;
		if (!first)
			sb_adds(b, key ? "," : ", ");
		first = false;
		if (f->type->kind == TY_NAMED) {
			sb_json_string(b, f->name ? f->name : "",
				       f->name ? strlen(f->name) : 0);
			sb_adds(b, ": null");
			continue;
		}
		if (vs == VS_JSON) {
			sb_json_string(b, f->name ? f->name : "",
				       f->name ? strlen(f->name) : 0);
			sb_adds(b, ": ");
		} else {
			sb_printf(b, key ? ".%s=" : ".%s = ",
				  f->name ? f->name : "");
		}
		if (f->bitfield_bits) {
			uint64_t v = out_bitfield(f, q);

			if (out_type_signed(f->type))
				sb_printf(b, "%" PRId64, (int64_t)v);
			else
				sb_printf(b, "%" PRIu64, v);
			continue;
		}
		err = sb_value(o, b, f->type, q, vs);
		if (err)
			return err;
	}
	sb_adds(b, key || tight ? "}" : " }");
	return 0;
}

/*
 * A record (a tuple with field names, bpftrace v0.25): text
 * { .a = 1, .b = str }, JSON {"a": 1, "b": "str"} (objects spaced).
 */
static int sb_named_tuple(const struct out *o, struct sb *b,
			  const struct type *t, const void *p,
			  enum val_style vs)
{
	bool text = vs == VS_TEXT || vs == VS_TEXT_KEY;

	sb_adds(b, text ? "{ " : "{");
	for (int i = 0; i < t->nfields; i++) {
		const struct type_field *f = &t->fields[i];
		int err;

		if (i)
			sb_adds(b, ", ");
		if (text) {
			sb_printf(b, ".%s = ", f->name ? f->name : "");
		} else {
			sb_json_string(b, f->name ? f->name : "",
				       f->name ? strlen(f->name) : 0);
			sb_adds(b, ": ");
		}
		err = sb_value(o, b, f->type, (const char *)p + f->offset, vs);
		if (err)
			return err;
	}
	sb_adds(b, text ? " }" : "}");
	return 0;
}

/* Text of a value: a JSON string as a JSON value, as it is otherwise. */
static void val_text(struct sb *b, enum val_style vs, const char *s,
		     size_t n)
{
	if (vs == VS_JSON)
		sb_json_string(b, s, n);
	else
		sb_add(b, s, n);
}

/* Append a value of type t at p. */
int sb_value(const struct out *o, struct sb *b, const struct type *t,
		    const void *p, enum val_style vs)
{
	if (t->kind == TY_POINTER && t->size == 8 &&
	    (vs == VS_TEXT_KEY || vs == VS_JSON_KEY ||
	     (vs == VS_TEXT && compat_has(COMPAT_POINTER_HEX)))) {
		/* pointers in map keys print in hex, as bpftrace's do */
		sb_printf(b, "0x%" PRIx64, out_load_int(p, 8, false));
		return 0;
	}
	if (t->kind == TY_BOOL && compat_has(COMPAT_BOOL)) {
		sb_adds(b, out_load_int(p, t->size, false) ? "true" : "false");
		return 0;
	}
	if (out_is_int_kind(t)) {
		uint64_t v = out_load_int(p, t->size, out_type_signed(t));
		const char *en = vs == VS_TEXT || vs == VS_TEXT_KEY ?
					 out_enum_name(t, v) : NULL;

		if (en)
			sb_adds(b, en);
		else if (out_type_signed(t))
			sb_printf(b, "%" PRId64, (int64_t)v);
		else
			sb_printf(b, "%" PRIu64, v);
		return 0;
	}
	switch (t->kind) {
	case TY_ARRAY:
		if (!out_is_char_array(t))
			return sb_array(o, b, t, p, vs);
		/* char[N] prints as a string */
		/* fall through */
	case TY_STRING: {
		size_t n = str_len(p, t->size);
		const char *tr = env_get()->str_trailer;

		if (t->kind == TY_STRING && tr && n == t->size) {
			/* no NUL: cut short (compat str-trailer) */
			char *s = xmalloc(n + strlen(tr) + 1);

			memcpy(s, p, n);
			strcpy(s + n, tr);
			val_text(b, vs, s, strlen(s));
			free(s);
			return 0;
		}
		val_text(b, vs, p, n);
		return 0;
	}
	case TY_USERNAME:
	case TY_STRERROR:
	case TY_SYSCALL_NAME:
	case TY_SIGNAL_NAME:
	case TY_USYM:
	case TY_KSYM:
	case TY_PROBE:
	case TY_TIMESTAMP:
	case TY_INET:
	case TY_MAC:
	case TY_CGROUP_PATH:
	case TY_USTACK:
	case TY_KSTACK: {
		char *s = out_resolve(o, t, p);

		if (!s)
			return out_not_supported(t);
		val_text(b, vs, s, strlen(s));
		free(s);
		return 0;
	}
	case TY_BUFFER: {
		struct sb e = { 0 };
		uint32_t len;

		if (t->size < 1)
			return out_not_supported(t);
		len = *(const unsigned char *)p;
		if (len > t->size - 1)
			len = t->size - 1;
		out_buf_escape(&e, (const unsigned char *)p + 1, len, 0);
		if (vs == VS_JSON)
			sb_json_string(b, e.s ? e.s : "", e.len);
		else
			sb_add(b, e.s ? e.s : "", e.len);
		sb_release(&e);
		return 0;
	}
	case TY_RECORD:
		return sb_record(o, b, t, p, vs);
	case TY_TUPLE:
		if (t->nfields && t->fields[0].name && vs != VS_JSON_KEY)
			return sb_named_tuple(o, b, t, p, vs);
	{
		/* (1, str) in text, also inside a text key */
		bool text = vs == VS_TEXT || vs == VS_TEXT_KEY;

		sb_adds(b, text ? "(" : vs == VS_JSON ? "[" : "");
		for (int i = 0; i < t->nfields; i++) {
			int err;

			if (i)
				sb_adds(b, text ? ", " : ",");
			err = sb_value(o, b, t->fields[i].type,
				       (const char *)p + t->fields[i].offset,
				       vs);
			if (err)
				return err;
		}
		sb_adds(b, text ? ")" : vs == VS_JSON ? "]" : "");
		return 0;
	}
	default:
		return out_not_supported(t);
	}
}

/* A map key: "1, a" in text, "1,a" in JSON keys. */
int sb_key(const struct out *o, struct sb *b, const struct out_map *m,
		  const void *key, bool json)
{
	const struct type *t = m->key_type;

	if (m->nkeys > 1 && t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++) {
			int err;

			if (i)
				sb_adds(b, json ? "," : ", ");
			err = sb_value(o, b, t->fields[i].type,
				       (const char *)key + t->fields[i].offset,
				       json ? VS_JSON_KEY : VS_TEXT_KEY);
			if (err)
				return err;
		}
		return 0;
	}
	return sb_value(o, b, t, key, json ? VS_JSON_KEY : VS_TEXT_KEY);
}

char *out_key_string(const struct out *o, const struct type *t,
		     const void *p)
{
	struct sb b = { 0 };
	int err = sb_value(o, &b, t, p, VS_TEXT_KEY);

	if (err) {
		sb_release(&b);
		errno = -err;
		return NULL;
	}
	return b.s ? b.s : xstrdup("");
}
