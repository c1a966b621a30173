/*
 * Output exactly as bpftrace 0.17 prints it. The rules below were read off
 * bpftrace 0.17's observable output (tests/unit-output.c holds the exact
 * texts):
 *
 * - printf: the text before each conversion is C printf text ("%%" is
 *   "%"; a lone '%' right before the conversion makes it literal), and
 *   so is the text after the last conversion (bpftrace 0.17 prints that
 *   verbatim, "%%" as two percent signs: a bug ubt does not copy).
 * - maps: count, sum, min, max and integer maps sorted by value, avg and
 *   stats by average, hist and lhist by total count, others by key;
 *   integer keys compare as u64, strings bytewise, tuples element-wise.
 *   avg and stats maps end with an empty line, each hist/lhist entry ends
 *   with one; an empty map prints an empty line (two for avg and stats),
 *   an empty keyless count() map prints as 0.
 * - hist/lhist: the rows from the first to the last non-zero bucket;
 *   "%-16s%8llu |bar|" with a 52-wide bar scaled to the largest count;
 *   bounds divisible by 1024 printed with K, M, G, T, P, E.
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

#define OUT_BAR_WIDTH 52

/* A growable string. */
struct sb {
	char *s;
	size_t len, cap;
};

static void sb_grow(struct sb *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	while (b->len + n + 1 > b->cap)
		b->cap = b->cap ? b->cap * 2 : 128;
	b->s = xrealloc(b->s, b->cap);
}

static void sb_add(struct sb *b, const char *s, size_t n)
{
	sb_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_addc(struct sb *b, char c)
{
	sb_add(b, &c, 1);
}

static void sb_adds(struct sb *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_vprintf(struct sb *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	sb_grow(b, 64);
	va_copy(aq, ap);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, aq);
	va_end(aq);
	if (n < 0) {
		b->s[b->len] = '\0';
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		sb_grow(b, n);
		vsnprintf(b->s + b->len, n + 1, fmt, ap);
	}
	b->len += n;
}

static void __attribute__((format(printf, 2, 3)))
sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

static void sb_release(struct sb *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

void out_init(struct out *o, FILE *f, enum out_format format)
{
	*o = (struct out){ .f = f, .format = format };
}

/* ---- values ---- */

static bool type_signed(const struct type *t)
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

static uint64_t load_int(const void *p, size_t size, bool is_signed)
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

static bool is_int_kind(const struct type *t)
{
	if (t->size != 1 && t->size != 2 && t->size != 4 && t->size != 8)
		return false;
	return t->kind == TY_INT || t->kind == TY_BOOL ||
	       t->kind == TY_POINTER || t->kind == TY_ENUM;
}

static bool is_char_array(const struct type *t)
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

static int not_supported(const struct type *t)
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

static void sb_json_string(struct sb *b, const char *s, size_t len)
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
static char *resolve(const struct out *o, const struct type *t,
		     const void *p)
{
	char buf[4096];
	int64_t v = 0;

	if (t->size && t->size <= 8 && !(t->size & (t->size - 1)))
		v = (int64_t)load_int(p, t->size, true);
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
static void buf_escape(struct sb *b, const unsigned char *p, size_t n,
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

enum val_style {
	VS_TEXT,	/* 1, str, (1, str) */
	VS_JSON,	/* 1, "str", [1,"str"] */
	VS_JSON_KEY,	/* in a JSON key: 1, str, elements joined by ',' */
};

/* Append a value of type t at p. */
static int sb_value(const struct out *o, struct sb *b, const struct type *t,
		    const void *p, enum val_style vs)
{
	if (is_int_kind(t)) {
		uint64_t v = load_int(p, t->size, type_signed(t));

		if (type_signed(t))
			sb_printf(b, "%" PRId64, (int64_t)v);
		else
			sb_printf(b, "%" PRIu64, v);
		return 0;
	}
	switch (t->kind) {
	case TY_ARRAY:
		if (!is_char_array(t))
			return not_supported(t);
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
		char *s = resolve(o, t, p);

		if (!s)
			return not_supported(t);
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
			return not_supported(t);
		memcpy(&len, p, 4);
		if (len > t->size - 4)
			len = t->size - 4;
		buf_escape(&e, (const unsigned char *)p + 4, len, 0);
		if (vs == VS_JSON)
			sb_json_string(b, e.s ? e.s : "", e.len);
		else
			sb_add(b, e.s ? e.s : "", e.len);
		sb_release(&e);
		return 0;
	}
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
		return not_supported(t);
	}
}

/* A map key: "1, a" in text, "1,a" in JSON keys. */
static int sb_key(const struct out *o, struct sb *b, const struct out_map *m,
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
				       json ? VS_JSON_KEY : VS_TEXT);
			if (err)
				return err;
		}
		return 0;
	}
	return sb_value(o, b, t, key, json ? VS_JSON_KEY : VS_TEXT);
}

/* ---- printf ---- */

/*
 * The literal text before a conversion, as C printf prints it. Returns
 * true when a lone '%' at its end swallows the conversion's '%' (the
 * conversion is then literal text and its argument is not printed).
 */
static bool sb_prefix(struct sb *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			sb_addc(b, s[i]);
			continue;
		}
		if (i + 1 == n)
			return true;
		if (s[i + 1] == '%') {
			sb_addc(b, '%');
			i++;
			continue;
		}
		sb_addc(b, '%');
	}
	return false;
}

/* The C conversion for cv with the given length and specifier. */
static void conv_spec(char *out, size_t size, const struct fmt_conv *cv,
		      const char *length, char conv)
{
	char w[16] = "", pr[16] = "";

	if (cv->width >= 0)
		snprintf(w, sizeof(w), "%s%d", cv->zero_pad ? "0" : "",
			 cv->width);
	if (cv->precision >= 0)
		snprintf(pr, sizeof(pr), ".%d", cv->precision);
	snprintf(out, size, "%%%s%s%s%s%c", cv->left ? "-" : "", w, pr, length,
		 conv);
}

/*
 * %d, %u, %x with no flag, width or precision, and no length or a 64-bit
 * one (l, ll, j, z, t): the digits written here, as printf would write
 * them (the printf events of a hot probe are mostly these). False for
 * anything else.
 */
static bool sb_int_fast(struct sb *b, const struct fmt_conv *cv, uint64_t v)
{
	char d[24], *e = d + sizeof(d), *q = e;
	bool neg = false;
	const char *l = cv->length;

	if (cv->left || cv->width >= 0 || cv->precision >= 0 ||
	    (cv->conv != 'd' && cv->conv != 'u' && cv->conv != 'x'))
		return false;
	if (!l[0]) {
		/* an int or unsigned int argument, as sb_conv() passes it */
		v = cv->conv == 'd' ? (uint64_t)(int64_t)(int32_t)(uint32_t)v :
				      (uint32_t)v;
	} else if (strcmp(l, "l") && strcmp(l, "ll") && strcmp(l, "j") &&
		   strcmp(l, "z") && strcmp(l, "t")) {
		return false;
	}
	if (cv->conv == 'x') {
		do {
			*--q = "0123456789abcdef"[v & 15];
			v >>= 4;
		} while (v);
	} else {
		if (cv->conv == 'd' && (int64_t)v < 0) {
			neg = true;
			v = -v;
		}
		do {
			*--q = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		if (neg)
			*--q = '-';
	}
	sb_add(b, q, (size_t)(e - q));
	return true;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int sb_conv(const struct out *o, struct sb *b,
		   const struct fmt_conv *cv, const struct type *t,
		   const void *p)
{
	char spec[64];

	switch (cv->arg) {
	case FMT_ARG_INT: {
		uint64_t v;

		if (!is_int_kind(t))
			return not_supported(t);
		v = load_int(p, t->size, type_signed(t));
		if (sb_int_fast(b, cv, v))
			return 0;
		conv_spec(spec, sizeof(spec), cv, cv->length, cv->conv);
		if (cv->conv == 'p')
			sb_printf(b, spec, (void *)(uintptr_t)v);
		else if (cv->conv == 'c' || !cv->length[0] ||
			 cv->length[0] == 'h')
			sb_printf(b, spec, (int)(uint32_t)v);
		else
			sb_printf(b, spec, (long long)v);
		return 0;
	}
	case FMT_ARG_STRING: {
		char *s;

		if (t->kind == TY_STRING || is_char_array(t)) {
			s = xmalloc(t->size + 1);
			memcpy(s, p, t->size);
			s[t->size] = '\0';
		} else {
			s = resolve(o, t, p);
			if (!s)
				return not_supported(t);
		}
		conv_spec(spec, sizeof(spec), cv, "", 's');
		sb_printf(b, spec, s);
		free(s);
		return 0;
	}
	case FMT_ARG_BUFFER: {
		struct sb e = { 0 };
		uint32_t len;

		if (t->kind != TY_BUFFER || t->size < 4)
			return not_supported(t);
		if (cv->left || cv->width >= 0 || cv->precision >= 0) {
			/* bpftrace 0.17 prints "%5r" as it is written */
			sb_add(b, cv->spec, cv->spec_len);
			return 0;
		}
		memcpy(&len, p, 4);
		if (len > t->size - 4)
			len = t->size - 4;
		buf_escape(&e, (const unsigned char *)p + 4, len,
			   cv->buf_mode);
		conv_spec(spec, sizeof(spec), cv, "", 's');
		sb_printf(b, spec, e.s ? e.s : "");
		sb_release(&e);
		return 0;
	}
	}
	BUG("bad conversion");
}
#pragma GCC diagnostic pop

static int format_into(const struct out *o, struct sb *b,
		       const struct fmt_string *f, const struct type *args,
		       const void *data, size_t size)
{
	int nargs = args ? args->nfields : 0;

	if (nargs < f->nconvs)
		BUG("printf with %d arguments for %d conversions", nargs,
		    f->nconvs);
	for (int i = 0; i < f->nconvs; i++) {
		const struct fmt_conv *cv = &f->convs[i];
		const struct type_field *fl = &args->fields[i];
		int err;

		if (fl->offset + fl->type->size > size)
			return -EINVAL;
		if (sb_prefix(b, cv->prefix, cv->prefix_len)) {
			/* "%" + "%d": literal "%d", argument unused */
			sb_add(b, cv->spec, cv->spec_len);
			continue;
		}
		err = sb_conv(o, b, cv, fl->type,
			      (const char *)data + fl->offset);
		if (err)
			return err;
	}
	/*
	 * bpftrace 0.17 prints the text after the last conversion verbatim,
	 * so "%d%%" gives "50%%"; print it as C printf does: "50%".
	 */
	if (sb_prefix(b, f->tail, f->tail_len))
		sb_addc(b, '%');
	return 0;
}

char *out_sprintf(const struct out *o, const struct fmt_string *f,
		  const struct type *args, const void *data, size_t size)
{
	struct sb b = { 0 };
	int err = format_into(o, &b, f, args, data, size);

	if (err) {
		sb_release(&b);
		errno = -err;
		return NULL;
	}
	if (!b.s)
		return xstrdup("");
	return b.s;
}

static void fwrite_or_json(struct out *o, const struct sb *b)
{
	if (o->format == OUT_JSON) {
		fputs("{\"type\": \"printf\", \"data\": ", o->f);
		out_json_string(o->f, b->s ? b->s : "", b->len);
		fputs("}\n", o->f);
	} else if (b->len) {
		/* ubt prints from one thread: no stream lock per event */
		fwrite_unlocked(b->s, 1, b->len, o->f);
	}
}

char *out_format(const struct fmt_string *f, const struct type *args,
		 const void *data, size_t size)
{
	return out_sprintf(NULL, f, args, data, size);
}

int out_printf(struct out *o, const struct fmt_string *f,
	       const struct type *args, const void *data, size_t size)
{
	/* reused: a stream of events allocates once */
	static _Thread_local struct sb b;
	int err;

	b.len = 0;
	err = format_into(o, &b, f, args, data, size);
	if (!err)
		fwrite_or_json(o, &b);
	if (b.cap > 65536)
		sb_release(&b);	/* keep no huge buffer after a long line */
	return err;
}

void out_attached(struct out *o, int nprobes)
{
	if (o->format == OUT_JSON)
		fprintf(o->f,
			"{\"type\": \"attached_probes\", \"data\": {\"probes\": %d}}\n",
			nprobes);
	else
		fprintf(o->f, "Attaching %d probe%s...\n", nprobes,
			nprobes == 1 ? "" : "s");
}

void out_lost_events(struct out *o, uint64_t n)
{
	if (o->format == OUT_JSON)
		fprintf(o->f,
			"{\"type\": \"lost_events\", \"data\": {\"events\": %" PRIu64 "}}\n",
			n);
	else
		fprintf(o->f, "Lost %" PRIu64 " events\n", n);
}

void out_map_full(FILE *f, const char *name, uint64_t max_entries,
		  uint64_t dropped)
{
	fprintf(f,
		"WARNING: Map full; can't update element. Try increasing "
		"max_map_keys config or manually setting the max entries in "
		"a map declaration e.g. `let @a = hash(5000)`\n"
		"Additional Info - map: %s, max entries: %" PRIu64
		", updates dropped: %" PRIu64 "\n",
		name, max_entries, dropped);
}

int out_time(struct out *o, const char *fmt, const struct tm *tm)
{
	char buf[512];
	struct tm now;
	size_t n;

	if (!tm) {
		time_t t = time(NULL);

		if (!localtime_r(&t, &now))
			return -errno;
		tm = &now;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = strftime(buf, sizeof(buf), fmt, tm);
#pragma GCC diagnostic pop
	if (!n && fmt[0])
		return -ENOSPC;
	if (o->format == OUT_JSON) {
		fputs("{\"type\": \"time\", \"data\": ", o->f);
		out_json_string(o->f, buf, n);
		fputs("}\n", o->f);
	} else {
		fwrite(buf, 1, n, o->f);
	}
	return 0;
}

int out_print_value(struct out *o, const struct type *t, const void *data)
{
	struct sb b = { 0 };
	int err = sb_value(o, &b, t, data,
			   o->format == OUT_JSON ? VS_JSON : VS_TEXT);

	if (!err) {
		if (o->format == OUT_JSON)
			fprintf(o->f, "{\"type\": \"value\", \"data\": %s}\n",
				b.s ? b.s : "");
		else
			fprintf(o->f, "%s\n", b.s ? b.s : "");
	}
	sb_release(&b);
	return err;
}

/* ---- histograms ---- */

uint64_t out_hist_index(int64_t v, int bits)
{
	uint64_t k = bits, l;

	if (v < 0)
		return 0;
	if (v == 0)
		return 1;
	l = 63 - __builtin_clzll((uint64_t)v);
	if (l < k)
		return 1 + (uint64_t)v;
	return 1 + (1ull << k) + (l - k) * (1ull << k) +
	       (((uint64_t)v >> (l - k)) - (1ull << k));
}

uint64_t out_lhist_index(int64_t v, int64_t min, int64_t max, int64_t step)
{
	if (v < min)
		return 0;
	if (v >= max)
		return 1 + (uint64_t)((max - min) / step);
	return 1 + (uint64_t)((v - min) / step);
}

size_t out_nbuckets(const struct type *t)
{
	if (!t)
		return 0;
	if (t->kind == TY_HIST)
		return ((size_t)1 << t->hist_bits) * (64 - t->hist_bits) + 1;
	if (t->kind == TY_LHIST && t->lhist_step > 0)
		return (size_t)((t->lhist_max - t->lhist_min) /
				t->lhist_step) + 2;
	return 0;
}

/* A bucket bound: 1024-multiples with a suffix, like bpftrace. */
static void sb_bound_u(struct sb *b, uint64_t u)
{
	static const char suffix[] = "KMGTPE";
	int s = 0;

	while (u && s < 6 && u % 1024 == 0) {
		u /= 1024;
		s++;
	}
	if (s)
		sb_printf(b, "%" PRIu64 "%c", u, suffix[s - 1]);
	else
		sb_printf(b, "%" PRIu64, u);
}

static void sb_bound(struct sb *b, int64_t v)
{
	if (v < 0)
		sb_printf(b, "%" PRId64, v);
	else
		sb_bound_u(b, (uint64_t)v);
}

/* Bucket i as [lo, hi]: has_lo/has_hi false for the open ends. */
struct bucket {
	bool has_lo, has_hi;
	int64_t lo, hi;		/* inclusive */
	uint64_t hi_excl;	/* exclusive high bound (hist labels) */
};

static void hist_bucket(const struct type *t, size_t i, struct bucket *bk)
{
	memset(bk, 0, sizeof(*bk));
	if (t->kind == TY_LHIST) {
		size_t nb = out_nbuckets(t) - 2;

		if (i == 0) {
			bk->has_hi = true;
			bk->hi = t->lhist_min - 1;
		} else if (i == nb + 1) {
			bk->has_lo = true;
			bk->lo = t->lhist_max;
		} else {
			bk->has_lo = bk->has_hi = true;
			bk->lo = t->lhist_min +
				 (int64_t)(i - 1) * t->lhist_step;
			bk->hi = bk->lo + t->lhist_step - 1;
		}
		bk->hi_excl = (uint64_t)bk->hi + 1;
		return;
	}
	if (i == 0) {
		bk->has_hi = true;
		bk->hi = -1;
		bk->hi_excl = 0;
		return;
	}
	bk->has_lo = bk->has_hi = true;
	if (i == 1) {
		bk->lo = bk->hi = 0;
		bk->hi_excl = 1;
		return;
	}
	{
		uint64_t k = t->hist_bits, n = 1ull << k, j = i - 1;
		uint64_t lo, width;

		if (j < n) {	/* one value per bucket */
			lo = j;
			width = 1;
		} else {
			uint64_t l = (j - n) / n + k, sub = (j - n) % n;

			width = 1ull << (l - k);
			lo = (1ull << l) + sub * width;
		}
		bk->lo = (int64_t)lo;
		bk->hi_excl = lo + width;
		bk->hi = (int64_t)(bk->hi_excl - 1);
	}
}

static void sb_bucket_label(struct sb *b, const struct type *t, size_t i)
{
	struct bucket bk;

	hist_bucket(t, i, &bk);
	if (!bk.has_lo) {
		sb_adds(b, "(..., ");
		if (t->kind == TY_LHIST)
			sb_bound(b, t->lhist_min);
		else
			sb_adds(b, "0");
		sb_adds(b, ")");
	} else if (!bk.has_hi) {
		sb_adds(b, "[");
		sb_bound(b, bk.lo);
		sb_adds(b, ", ...)");
	} else if (t->kind == TY_HIST && bk.hi == bk.lo) {
		sb_adds(b, "[");
		sb_bound(b, bk.lo);
		sb_adds(b, "]");
	} else {
		sb_adds(b, "[");
		sb_bound(b, bk.lo);
		sb_adds(b, ", ");
		if (t->kind == TY_LHIST)
			sb_bound(b, bk.hi + 1);
		else
			sb_bound_u(b, bk.hi_excl);
		sb_adds(b, ")");
	}
}

static bool bucket_range(const uint64_t *c, size_t n, size_t *first,
			 size_t *last)
{
	size_t i;

	for (i = 0; i < n && !c[i]; i++)
		;
	if (i == n)
		return false;
	*first = i;
	for (i = n; i > *first && !c[i - 1]; i--)
		;
	*last = i - 1;
	return true;
}

static void sb_hist_text(struct sb *b, const struct type *t,
			 const uint64_t *c, uint64_t div)
{
	size_t n = out_nbuckets(t), first, last;
	uint64_t max = 0;

	if (!bucket_range(c, n, &first, &last))
		return;
	for (size_t i = first; i <= last; i++)
		if (c[i] > max)
			max = c[i];
	for (size_t i = first; i <= last; i++) {
		struct sb label = { 0 };
		uint64_t bar = max ? c[i] * OUT_BAR_WIDTH / max : 0;
		size_t j;

		sb_bucket_label(&label, t, i);
		sb_printf(b, "%-16s%8" PRIu64 " |", label.s, c[i] / div);
		for (j = 0; j < OUT_BAR_WIDTH; j++)
			sb_addc(b, j < bar ? '@' : ' ');
		sb_adds(b, "|\n");
		sb_release(&label);
	}
}

static void sb_hist_json(struct sb *b, const struct type *t,
			 const uint64_t *c, uint64_t div)
{
	size_t n = out_nbuckets(t), first, last;

	sb_addc(b, '[');
	if (bucket_range(c, n, &first, &last)) {
		for (size_t i = first; i <= last; i++) {
			struct bucket bk;

			hist_bucket(t, i, &bk);
			if (i > first)
				sb_adds(b, ", ");
			sb_addc(b, '{');
			if (bk.has_lo)
				sb_printf(b, "\"min\": %" PRId64 ", ", bk.lo);
			if (bk.has_hi)
				sb_printf(b, "\"max\": %" PRId64 ", ", bk.hi);
			sb_printf(b, "\"count\": %" PRIu64 "}", c[i] / div);
		}
	}
	sb_addc(b, ']');
}

/* ---- maps ---- */

enum map_class {
	MC_VALUE,	/* count, sum, min, max, integers: sorted by value */
	MC_AVG,		/* avg: sorted by average */
	MC_STATS,	/* stats: sorted by average */
	MC_HIST,	/* hist, lhist: sorted by total */
	MC_KEY,		/* everything else: sorted by key */
};

static enum map_class map_class(const struct type *t)
{
	switch (t->kind) {
	case TY_COUNT:
	case TY_SUM:
	case TY_MIN:
	case TY_MAX:
	case TY_INT:
	case TY_BOOL:
	case TY_POINTER:
	case TY_ENUM:
		return MC_VALUE;
	case TY_AVG:
		return MC_AVG;
	case TY_STATS:
		return MC_STATS;
	case TY_HIST:
	case TY_LHIST:
		return MC_HIST;
	default:
		return MC_KEY;
	}
}

/* The number a value-sorted entry sorts and prints by (bits of s64 or
 * u64 as the type is signed). */
static uint64_t entry_number(const struct type *t, const void *v)
{
	switch (t->kind) {
	case TY_COUNT:
	case TY_SUM:
		return load_int(v, 8, false);
	case TY_MIN:
	case TY_MAX: {
		struct out_minmax mm;

		memcpy(&mm, v, sizeof(mm));
		return (uint64_t)mm.value;
	}
	case TY_AVG:
	case TY_STATS: {
		struct out_avg a;

		memcpy(&a, v, sizeof(a));
		if (!a.count)
			return 0;
		if (t->is_signed)
			return (uint64_t)(a.total / (int64_t)a.count);
		return (uint64_t)a.total / a.count;
	}
	case TY_HIST:
	case TY_LHIST: {
		size_t n = out_nbuckets(t);
		uint64_t sum = 0, c;

		for (size_t i = 0; i < n; i++) {
			memcpy(&c, (const char *)v + i * 8, 8);
			sum += c;
		}
		return sum;
	}
	default:
		return load_int(v, t->size, type_signed(t));
	}
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_number(const struct type *t, uint64_t a, uint64_t b)
{
	if (type_signed(t) && t->kind != TY_HIST && t->kind != TY_LHIST)
		return (int64_t)a < (int64_t)b ? -1 : (int64_t)a > (int64_t)b;
	return cmp_u64(a, b);
}

/* bpftrace's key order: integers as u64, strings bytewise, tuples
 * element by element. */
static int cmp_value(const struct type *t, const void *a, const void *b)
{
	if (is_int_kind(t))
		return cmp_u64(load_int(a, t->size, type_signed(t)),
			       load_int(b, t->size, type_signed(t)));
	if (t->kind == TY_TUPLE) {
		for (int i = 0; i < t->nfields; i++) {
			size_t off = t->fields[i].offset;
			int c = cmp_value(t->fields[i].type,
					  (const char *)a + off,
					  (const char *)b + off);

			if (c)
				return c;
		}
		return 0;
	}
	return memcmp(a, b, t->size);
}

struct sort_item {
	const struct out_entry *e;
	uint64_t number;
	size_t index;
};

struct sort_ctx {
	const struct out_map *m;
	enum map_class mc;
};

static int cmp_items(const void *pa, const void *pb, void *pctx)
{
	const struct sort_item *a = pa, *b = pb;
	const struct sort_ctx *ctx = pctx;
	const struct out_map *m = ctx->m;
	int c = 0;

	if (ctx->mc != MC_KEY)
		c = cmp_number(m->value_type, a->number, b->number);
	if (!c && m->key_type) {
		if (ctx->mc == MC_HIST)
			c = memcmp(a->e->key, b->e->key, m->key_type->size);
		else
			c = cmp_value(m->key_type, a->e->key, b->e->key);
	}
	if (!c)
		c = cmp_u64(a->index, b->index);
	return c;
}

static struct sort_item *sort_entries(const struct out_map *m,
				      enum map_class mc)
{
	struct sort_item *items = xcalloc(m->nentries + 1, sizeof(*items));
	struct sort_ctx ctx = { .m = m, .mc = mc };

	for (size_t i = 0; i < m->nentries; i++) {
		items[i].e = &m->entries[i];
		items[i].index = i;
		if (mc != MC_KEY)
			items[i].number = entry_number(m->value_type,
						       m->entries[i].value);
	}
	qsort_r(items, m->nentries, sizeof(*items), cmp_items, &ctx);
	return items;
}

static uint64_t div_number(const struct type *t, uint64_t v, uint64_t div)
{
	if (type_signed(t))
		return (uint64_t)((int64_t)v / (int64_t)div);
	return v / div;
}

static void sb_number(struct sb *b, const struct type *t, uint64_t v)
{
	if (type_signed(t))
		sb_printf(b, "%" PRId64, (int64_t)v);
	else
		sb_printf(b, "%" PRIu64, v);
}

static int sb_map_entry_text(const struct out *o, struct sb *b,
			     const struct out_map *m,
			     enum map_class mc, const struct sort_item *it,
			     uint64_t div)
{
	const struct type *vt = m->value_type;
	int err;

	sb_adds(b, m->name);
	if (m->key_type) {
		sb_addc(b, '[');
		err = sb_key(o, b, m, it->e->key, false);
		if (err)
			return err;
		sb_addc(b, ']');
	}
	sb_adds(b, ": ");
	switch (mc) {
	case MC_VALUE:
	case MC_AVG:
		sb_number(b, vt, div_number(vt, it->number, div));
		sb_addc(b, '\n');
		return 0;
	case MC_STATS: {
		struct out_avg a;

		memcpy(&a, it->e->value, sizeof(a));
		sb_printf(b, "count %" PRIu64 ", average ", a.count);
		sb_number(b, vt, it->number);
		sb_adds(b, ", total ");
		sb_number(b, vt, (uint64_t)a.total);
		sb_addc(b, '\n');
		return 0;
	}
	case MC_HIST:
		sb_addc(b, '\n');
		sb_hist_text(b, vt, it->e->value, div);
		sb_addc(b, '\n');
		return 0;
	case MC_KEY:
		err = sb_value(o, b, vt, it->e->value, VS_TEXT);
		if (err)
			return err;
		sb_addc(b, '\n');
		return 0;
	}
	BUG("bad map class");
}

static int sb_map_value_json(const struct out *o, struct sb *b,
			     const struct out_map *m,
			     enum map_class mc, const struct sort_item *it,
			     uint64_t div)
{
	const struct type *vt = m->value_type;

	switch (mc) {
	case MC_VALUE:
	case MC_AVG:
		sb_number(b, vt, div_number(vt, it->number, div));
		return 0;
	case MC_STATS: {
		struct out_avg a;

		memcpy(&a, it->e->value, sizeof(a));
		sb_printf(b, "{\"count\": %" PRIu64 ", \"average\": ",
			  a.count);
		sb_number(b, vt, it->number);
		sb_adds(b, ", \"total\": ");
		sb_number(b, vt, (uint64_t)a.total);
		sb_addc(b, '}');
		return 0;
	}
	case MC_HIST:
		sb_hist_json(b, vt, it->e->value, div);
		return 0;
	case MC_KEY:
		return sb_value(o, b, vt, it->e->value, VS_JSON);
	}
	BUG("bad map class");
}

static const char *json_map_type(enum map_class mc)
{
	switch (mc) {
	case MC_AVG:
	case MC_STATS:
		return "stats";
	case MC_HIST:
		return "hist";
	default:
		return "map";
	}
}

static int map_to_sb(const struct out *o, struct sb *b,
		     const struct out_map *m, bool json, uint64_t top,
		     uint64_t div)
{
	enum map_class mc = map_class(m->value_type);
	struct sort_item *items;
	size_t first = 0;
	int err = 0;

	if (!div)
		div = 1;
	if (mc == MC_STATS)
		div = 1;	/* bpftrace ignores top and div for stats */
	if (mc == MC_STATS)
		top = 0;
	if (!m->nentries && !m->key_type && m->value_type->kind == TY_COUNT) {
		/* bpftrace 0.17 shows a keyless count() as 0 when unset */
		static const uint64_t zero_count;
		struct out_entry e = { .value = &zero_count };
		struct out_map one = *m;

		one.entries = &e;
		one.nentries = 1;
		return map_to_sb(o, b, &one, json, top, div);
	}
	if (!m->nentries) {
		/* the empty line(s) bpftrace prints for an empty map */
		if (!json)
			sb_adds(b, mc == MC_AVG || mc == MC_STATS ? "\n\n" :
				"\n");
		return 0;
	}
	items = sort_entries(m, mc);
	if (top && m->nentries > top)
		first = m->nentries - top;
	if (json) {
		sb_printf(b, "{\"type\": \"%s\", \"data\": {",
			  json_map_type(mc));
		sb_json_string(b, m->name, strlen(m->name));
		sb_adds(b, ": ");
		if (m->key_type)
			sb_addc(b, '{');
	}
	for (size_t i = first; i < m->nentries && !err; i++) {
		if (!json) {
			err = sb_map_entry_text(o, b, m, mc, &items[i], div);
			continue;
		}
		if (m->key_type) {
			struct sb k = { 0 };

			if (i > first)
				sb_adds(b, ", ");
			err = sb_key(o, &k, m, items[i].e->key, true);
			if (!err)
				sb_json_string(b, k.s ? k.s : "", k.len);
			sb_release(&k);
			if (err)
				break;
			sb_adds(b, ": ");
		}
		err = sb_map_value_json(o, b, m, mc, &items[i], div);
		if (!m->key_type)
			break;
	}
	if (!err) {
		if (json)
			sb_adds(b, m->key_type ? "}}}\n" : "}}\n");
		else if (mc == MC_AVG || mc == MC_STATS)
			sb_addc(b, '\n');
	}
	free(items);
	return err;
}

int out_print_map(struct out *o, const struct out_map *m, uint64_t top,
		  uint64_t div)
{
	struct sb b = { 0 };
	int err = map_to_sb(o, &b, m, o->format == OUT_JSON, top, div);

	if (!err && b.len)
		fwrite(b.s, 1, b.len, o->f);
	sb_release(&b);
	return err;
}

static int cmp_map_names(const void *pa, const void *pb)
{
	const struct out_map *const *a = pa, *const *b = pb;

	return strcmp((*a)->name, (*b)->name);
}

int out_print_maps_at_exit(struct out *o, const struct out_map *const *maps,
			   int nmaps)
{
	const struct out_map **sorted;
	int err = 0;

	fputs("\n\n", o->f);
	if (nmaps <= 0)
		return 0;
	sorted = xcalloc(nmaps, sizeof(*sorted));
	memcpy(sorted, maps, nmaps * sizeof(*sorted));
	qsort(sorted, nmaps, sizeof(*sorted), cmp_map_names);
	for (int i = 0; i < nmaps; i++) {
		int e = out_print_map(o, sorted[i], 0, 0);

		if (e && !err)
			err = e;
	}
	free(sorted);
	return err;
}
