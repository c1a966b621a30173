/*
 * printf() and friends: a format string's conversions applied to the
 * arguments of an event, the common integer conversions formatted fast.
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
#include "env.h"
#include "output.h"
#include "types.h"
#include "util.h"
#include "output_int.h"

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

		if (!out_is_int_kind(t))
			return out_not_supported(t);
		v = out_load_int(p, t->size, out_type_signed(t));
		if (cv->conv == 'G') {
			/* %gr: GFP flags by name, padded as a string */
			char gfp[1024];

			out_gfp_flags(gfp, sizeof(gfp), v);
			conv_spec(spec, sizeof(spec), cv, "", 's');
			sb_printf(b, spec, gfp);
			return 0;
		}
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

		if (t->kind == TY_STRING || out_is_char_array(t)) {
			const char *tr = t->kind == TY_STRING ?
						 env_get()->str_trailer : NULL;
			size_t trn = tr ? strlen(tr) : 0;

			s = xmalloc(t->size + trn + 1);
			memcpy(s, p, t->size);
			s[t->size] = '\0';
			/* no NUL: cut short (compat str-trailer) */
			if (tr && strlen(s) == t->size)
				strcpy(s + t->size, tr);
		} else if (t->kind == TY_INT && t->enumvals) {
			/* an enum's value: its name, else the number */
			uint64_t v = out_load_int(p, t->size, false);
			const char *en = out_enum_name(t, v);

			char num[24];

			snprintf(num, sizeof(num), "%" PRIu64, v);
			s = xstrdup(en ? en : num);
		} else {
			s = out_resolve(o, t, p);
			if (!s)
				return out_not_supported(t);
		}
		conv_spec(spec, sizeof(spec), cv, "", 's');
		sb_printf(b, spec, s);
		free(s);
		return 0;
	}
	case FMT_ARG_BUFFER: {
		struct sb e = { 0 };
		uint32_t len;

		if (t->kind != TY_BUFFER || t->size < 1)
			return out_not_supported(t);
		if (cv->left || cv->width >= 0 || cv->precision >= 0) {
			/* bpftrace 0.17 prints "%5r" as it is written */
			sb_add(b, cv->spec, cv->spec_len);
			return 0;
		}
		len = *(const unsigned char *)p;
		if (len > t->size - 1)
			len = t->size - 1;
		out_buf_escape(&e, (const unsigned char *)p + 1, len,
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
