/*
 * One value as bpftrace prints it: integers, strings, buffers, tuples,
 * symbols and addresses resolved, in text and JSON; map keys.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* qsort_r, fwrite_unlocked */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "arena.h"
#include "format.h"
#include "output.h"
#include "types.h"
#include "util.h"
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

bool out_is_char_array(const struct type *t)
{
	return t->kind == TY_ARRAY && t->elem && t->elem->kind == TY_INT &&
	       t->elem->size == 1;
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
	if (t->kind == TY_INET && t->size >= 24) {
		uint64_t af;

		memcpy(&af, p, 8);
		if ((af == AF_INET || af == AF_INET6) &&
		    inet_ntop((int)af, (const char *)p + 8, buf, sizeof(buf)))
			return xstrdup(buf);
		return NULL;
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
 * map keys, { "a": 1, "b": 2 } in JSON values.
 */
static int sb_record(const struct out *o, struct sb *b, const struct type *t,
		     const void *p, enum val_style vs)
{
	bool key = vs == VS_TEXT_KEY || vs == VS_JSON_KEY;

	sb_adds(b, key ? "{" : "{ ");
	for (int i = 0; i < t->nfields; i++) {
		const struct type_field *f = &t->fields[i];
		const char *q = (const char *)p + f->offset;
		int err;

		if (f->offset + (f->bitfield_bits ? 0 : f->type->size) >
		    t->size)
			return out_not_supported(t);
		if (i)
			sb_adds(b, key ? "," : ", ");
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
	sb_adds(b, key ? "}" : " }");
	return 0;
}

/* Append a value of type t at p. */
int sb_value(const struct out *o, struct sb *b, const struct type *t,
		    const void *p, enum val_style vs)
{
	if (t->kind == TY_POINTER && t->size == 8 &&
	    (vs == VS_TEXT_KEY || vs == VS_JSON_KEY)) {
		/* pointers in map keys print in hex, as bpftrace's do */
		sb_printf(b, "0x%" PRIx64, out_load_int(p, 8, false));
		return 0;
	}
	if (out_is_int_kind(t)) {
		uint64_t v = out_load_int(p, t->size, out_type_signed(t));

		if (out_type_signed(t))
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

		if (vs == VS_JSON)
			sb_json_string(b, p, n);
		else
			sb_add(b, p, n);
		return 0;
	}
	case TY_USERNAME:
	case TY_STRERROR:
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
		if (vs == VS_JSON)
			sb_json_string(b, s, strlen(s));
		else
			sb_adds(b, s);
		free(s);
		return 0;
	}
	case TY_BUFFER: {
		struct sb e = { 0 };
		uint32_t len;

		if (t->size < 4)
			return out_not_supported(t);
		memcpy(&len, p, 4);
		if (len > t->size - 4)
			len = t->size - 4;
		out_buf_escape(&e, (const unsigned char *)p + 4, len, 0);
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
		sb_adds(b, vs == VS_TEXT ? "(" : vs == VS_JSON ? "[" : "");
		for (int i = 0; i < t->nfields; i++) {
			int err;

			if (i)
				sb_adds(b, vs == VS_TEXT ? ", " : ",");
			err = sb_value(o, b, t->fields[i].type,
				       (const char *)p + t->fields[i].offset,
				       vs);
			if (err)
				return err;
		}
		sb_adds(b, vs == VS_TEXT ? ")" : vs == VS_JSON ? "]" : "");
		return 0;
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
