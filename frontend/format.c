/*
 * printf-style format strings, read the way bpftrace 0.17 reads them: a
 * conversion is '%', an optional '-', digits, an optional '.' with
 * digits, then a known specifier; every other '%' is plain text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "compat.h"
#include "diag.h"
#include "format.h"
#include "types.h"
#include "util.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_int_conv(char c)
{
	return c == 'd' || c == 'u' || c == 'x' || c == 'X' || c == 'p' ||
	       c == 'o';
}

/*
 * Try to read a conversion at s[0] == '%'. Returns its length and fills
 * cv, or 0 when the text there is not a conversion.
 */
static size_t fmt_match(const char *s, size_t n, struct fmt_conv *cv)
{
	static const char *const lengths[] = {
		"hh", "h", "ll", "l", "j", "z", "t",
	};
	size_t i = 1, tok;
	int width = -1, prec = -1;
	bool left = false, zero = false;

	if (i < n && s[i] == '-') {
		left = true;
		i++;
	}
	if (i < n && s[i] == '0')
		zero = true;
	if (i < n && is_digit(s[i])) {
		width = 0;
		while (i < n && is_digit(s[i])) {
			if (width < 100000)
				width = width * 10 + (s[i] - '0');
			i++;
		}
	}
	if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
		i++;
		prec = 0;
		while (i < n && is_digit(s[i])) {
			if (prec < 100000)
				prec = prec * 10 + (s[i] - '0');
			i++;
		}
	}
	if (i >= n)
		return 0;
	tok = i;
	memset(cv, 0, sizeof(*cv));
	cv->left = left;
	cv->zero_pad = zero;
	cv->width = width;
	cv->precision = prec;
	switch (s[i]) {
	case 'c':
		cv->conv = 'c';
		cv->arg = FMT_ARG_INT;
		i++;
		goto done;
	case 's':
		cv->conv = 's';
		cv->arg = FMT_ARG_STRING;
		i++;
		goto done;
	case 'g':
		/* %gr (the newest bpftrace): GFP flags by name */
		if (i + 1 >= n || s[i + 1] != 'r')
			return 0;
		cv->conv = 'G';
		cv->arg = FMT_ARG_INT;
		i += 2;
		goto done;
	case 'r':
		cv->conv = 'r';
		cv->arg = FMT_ARG_BUFFER;
		i++;
		if (i < n && (s[i] == 'x' || s[i] == 'h'))
			cv->buf_mode = s[i++];
		goto done;
	}
	/* an integer conversion, with a length modifier or without */
	if (is_int_conv(s[i])) {
		cv->conv = s[i++];
		cv->arg = FMT_ARG_INT;
		goto done;
	}
	for (size_t l = 0; l < ARRAY_SIZE(lengths); l++) {
		size_t ll = strlen(lengths[l]);

		if (i + ll < n && !strncmp(s + i, lengths[l], ll) &&
		    is_int_conv(s[i + ll])) {
			memcpy(cv->length, lengths[l], ll);
			cv->conv = s[i + ll];
			cv->arg = FMT_ARG_INT;
			i += ll + 1;
			goto done;
		}
	}
	return 0;
done:
	cv->spec = s;
	cv->spec_len = i;
	cv->token = s + tok;	/* NUL-terminated copy made by the caller */
	return i;
}

int fmt_parse(struct arena *a, const char *text, size_t len,
	      struct fmt_string *out)
{
	struct fmt_conv *convs = NULL, cv;
	int n = 0, cap = 0;
	size_t i = 0, start = 0;

	memset(out, 0, sizeof(*out));
	out->text = text;
	out->len = len;
	while (i < len) {
		size_t m;

		if (text[i] != '%') {
			i++;
			continue;
		}
		m = fmt_match(text + i, len - i, &cv);
		if (!m) {
			i++;
			continue;
		}
		cv.prefix = text + start;
		cv.prefix_len = i - start;
		cv.token = arena_strndup(a, cv.token,
					 m - (size_t)(cv.token - (text + i)));
		if (n == cap) {
			struct fmt_conv *nc;

			cap = cap ? cap * 2 : 4;
			nc = arena_alloc(a, cap * sizeof(*nc));
			if (n)
				memcpy(nc, convs, n * sizeof(*nc));
			convs = nc;
		}
		convs[n++] = cv;
		i += m;
		start = i;
	}
	out->convs = convs;
	out->nconvs = n;
	out->tail = text + start;
	out->tail_len = len - start;
	return 0;
}

bool fmt_arg_of_type(const struct type *t, enum fmt_arg *out)
{
	if (!t)
		return false;
	switch (t->kind) {
	case TY_INT:
	case TY_BOOL:
	case TY_POINTER:
	case TY_ENUM:
		*out = FMT_ARG_INT;
		return true;
	case TY_STRING:
	case TY_USYM:
	case TY_KSYM:
	case TY_USTACK:
	case TY_KSTACK:
	case TY_USERNAME:
	case TY_INET:
	case TY_MAC:
	case TY_TIMESTAMP:
	case TY_CGROUP_PATH:
	case TY_STRERROR:
	case TY_SYSCALL_NAME:
	case TY_SIGNAL_NAME:
	case TY_PROBE:
		*out = FMT_ARG_STRING;
		return true;
	case TY_BUFFER:
		*out = FMT_ARG_BUFFER;
		return true;
	case TY_ARRAY:
		/* char[N] (tracepoint fields) is a string to bpftrace */
		if (t->elem && t->elem->kind == TY_INT && t->elem->size == 1) {
			*out = FMT_ARG_STRING;
			return true;
		}
		return false;
	default:
		return false;
	}
}

static const char *fmt_arg_name(enum fmt_arg a)
{
	switch (a) {
	case FMT_ARG_INT:
		return "integer";
	case FMT_ARG_STRING:
		return "string";
	case FMT_ARG_BUFFER:
		return "buffer";
	}
	BUG("bad fmt_arg %d", (int)a);
}

const char *fmt_type_name(const struct type *t)
{
	enum fmt_arg a;

	if (fmt_arg_of_type(t, &a))
		return fmt_arg_name(a);
	if (!t)
		return "none";
	if (t->kind == TY_TUPLE || t->kind == TY_RECORD ||
	    t->kind == TY_ARRAY || type_is_aggregation(t))
		return type_class(t);
	return "none";
}

const char *fmt_check_args(struct arena *a, const char *func,
			   const struct fmt_string *f,
			   struct type *const *args, int nargs)
{
	if (nargs < f->nconvs)
		return arena_printf(a,
			"%s: Not enough arguments for format string (%d supplied, %d expected)",
			func, nargs, f->nconvs);
	if (nargs > f->nconvs)
		return arena_printf(a,
			"%s: Too many arguments for format string (%d supplied, %d expected)",
			func, nargs, f->nconvs);
	for (int i = 0; i < nargs; i++) {
		const struct fmt_conv *cv = &f->convs[i];
		enum fmt_arg have;

		if (fmt_arg_of_type(args[i], &have) && have == cv->arg)
			continue;
		/* "%s" of an enum's value: its name (the newest bpftrace) */
		if (cv->arg == FMT_ARG_STRING && args[i] &&
		    args[i]->kind == TY_INT && args[i]->enumvals &&
		    compat_has(COMPAT_ENUM_NAMES))
			continue;
		return arena_printf(a,
			"%s: %%%s specifier expects a value of type %s (%s supplied)",
			func, cv->token, fmt_arg_name(cv->arg),
			fmt_type_name(args[i]));
	}
	return NULL;
}

const char *fmt_check_tuple(struct arena *a, const char *func,
			    const struct fmt_string *f,
			    const struct type *tuple)
{
	int n = tuple ? tuple->nfields : 0;
	struct type **args = arena_alloc(a, (n + 1) * sizeof(*args));

	for (int i = 0; i < n; i++)
		args[i] = tuple->fields[i].type;
	return fmt_check_args(a, func, f, args, n);
}

int fmt_check_diag(struct diag_list *d, const struct ast_loc *loc,
		   const char *func, const struct fmt_string *f,
		   struct type *const *args, int nargs)
{
	const char *msg = fmt_check_args(d->arena, func, f, args, nargs);

	if (!msg)
		return 0;
	diag_error(d, loc, "%s", msg);
	return -EINVAL;
}
