/*
 * Attach-point parsing: provider aliases, the meaning of each ':'-separated
 * part per probe type, wildcards, offsets and addresses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "compat.h"
#include "util.h"

static const struct {
	const char *alias, *name;
} providers[] = {
	{ "BEGIN", "BEGIN" }, { "begin", "BEGIN" },
	{ "END", "END" }, { "end", "END" },
	{ "bench", "bench" }, { "test", "test" }, { "self", "self" },
	{ "kprobe", "kprobe" }, { "k", "kprobe" },
	{ "kretprobe", "kretprobe" }, { "kr", "kretprobe" },
	{ "uprobe", "uprobe" }, { "u", "uprobe" },
	{ "uretprobe", "uretprobe" }, { "ur", "uretprobe" },
	{ "usdt", "usdt" }, { "U", "usdt" },
	{ "tracepoint", "tracepoint" }, { "t", "tracepoint" },
	{ "rawtracepoint", "rawtracepoint" }, { "rt", "rawtracepoint" },
	{ "profile", "profile" }, { "p", "profile" },
	{ "interval", "interval" }, { "i", "interval" },
	{ "software", "software" }, { "s", "software" },
	{ "hardware", "hardware" }, { "h", "hardware" },
	{ "watchpoint", "watchpoint" }, { "w", "watchpoint" },
	{ "asyncwatchpoint", "asyncwatchpoint" }, { "aw", "asyncwatchpoint" },
	{ "kfunc", "kfunc" }, { "fentry", "kfunc" }, { "f", "kfunc" },
	{ "kretfunc", "kretfunc" }, { "fexit", "kretfunc" },
	{ "fr", "kretfunc" },
	{ "iter", "iter" }, { "it", "iter" },
};

const char *ap_canonical_provider(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(providers); i++)
		if (!strcmp(providers[i].alias, name))
			return providers[i].name;
	return NULL;
}

#define AP_MAX_PARTS 8

struct ap_parts {
	const char *part[AP_MAX_PARTS];
	bool quoted[AP_MAX_PARTS];
	/* a quoted part: where its last quoted text ends ("f"+8: 1) */
	size_t qend[AP_MAX_PARTS];
	bool wild[AP_MAX_PARTS];
	int n;
	bool too_many;
};

/* Substitute $N from the positional parameters. */
static const char *ap_subst_params(struct compile *c, const char *raw,
				   const struct ast_loc *loc, int *err)
{
	const char *p = strchr(raw, '$');
	char *out;

	if (!p)
		return raw;
	out = arena_strdup(&c->arena, "");
	p = raw;
	while (*p) {
		const char *d = strchr(p, '$');
		char *end;
		long num;

		if (!d) {
			out = arena_printf(&c->arena, "%s%s", out, p);
			break;
		}
		out = arena_printf(&c->arena, "%s%.*s", out, (int)(d - p), p);
		num = strtol(d + 1, &end, 10);
		if (end == d + 1 || num < 1) {
			diag_error(&c->diag, loc,
				   "Not a positional parameter in attach point: %s",
				   raw);
			*err = -EINVAL;
			return raw;
		}
		if (num <= c->nparams)
			out = arena_printf(&c->arena, "%s%s", out,
					   c->params[num - 1]);
		p = end;
	}
	return out;
}

static void ap_split(struct compile *c, const char *raw, struct ap_parts *ps,
		     char **unquoted)
{
	size_t len = strlen(raw);
	char *cur = arena_alloc(&c->arena, len + 1);
	char *all = arena_alloc(&c->arena, len + 1);
	size_t n = 0, na = 0, qend = 0;
	bool quoted = false, wild = false;

	memset(ps, 0, sizeof(*ps));
	for (const char *p = raw;; p++) {
		if (*p == '"') {
			quoted = true;
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				cur[n++] = *p;
				all[na++] = *p;
			}
			qend = n;
			if (!*p)
				p--;
			continue;
		}
		if (*p == ':' || !*p) {
			if (ps->n < AP_MAX_PARTS) {
				ps->part[ps->n] = arena_strndup(&c->arena, cur, n);
				ps->quoted[ps->n] = quoted;
				ps->qend[ps->n] = qend;
				ps->wild[ps->n] = wild;
				ps->n++;
			} else {
				ps->too_many = true;
			}
			n = qend = 0;
			quoted = wild = false;
			if (!*p)
				break;
			all[na++] = ':';
			continue;
		}
		if (*p == '*' || *p == '?' || *p == '[' || *p == ']')
			wild = true;
		cur[n++] = *p;
		all[na++] = *p;
	}
	all[na] = '\0';
	*unquoted = all;
}

/*
 * A number in an attach point: decimal, 0x hex, octal, with '_'
 * separators and an optional exponent (1e6), as integer literals.
 */
static int parse_u64(const char *s, uint64_t *v)
{
	char digits[64], *end;
	size_t n = 0;
	int base = 0;

	if (!*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	for (; *s && (base == 16 || (*s != 'e' && *s != 'E')); s++) {
		if (*s == '_')
			continue;
		if (n + 1 >= sizeof(digits))
			return -EINVAL;
		digits[n++] = *s;
	}
	digits[n] = '\0';
	if (!n || digits[0] == '-' || digits[0] == '+')
		return -EINVAL;
	errno = 0;
	*v = strtoull(digits, &end, base);
	if (errno || *end)
		return -EINVAL;
	if (*s) {
		unsigned long exp;

		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		exp = strtoul(s, &end, 10);
		if (*end || errno)
			return -EINVAL;
		/* 0eN is 0 for any N; otherwise 10^20 overflows anyway */
		for (; exp && *v; exp--) {
			if (*v > UINT64_MAX / 10)
				return -EINVAL;
			*v *= 10;
		}
	}
	return 0;
}

/* "func+0x10" -> func, offset; plain addresses for uprobes. */
static int split_offset(struct compile *c, struct ast_attach_point *ap,
			const char *s)
{
	const char *plus = strrchr(s, '+');

	if (!plus || plus == s) {
		ap->func = s;
		return 0;
	}
	if (parse_u64(plus + 1, &ap->func_offset))
		return -EINVAL;
	ap->func = arena_strndup(&c->arena, s, plus - s);
	return 0;
}

/* bpftrace's wording for a wrong number of ':'-separated parts. */
static int ap_nargs(struct compile *c, const struct ast_loc *loc,
		    const char *prov, const char *what)
{
	diag_error(&c->diag, loc, "%s probe type requires %s", prov, what);
	return -EINVAL;
}

/*
 * PROV:FUNC or PROV:TARGET:FUNC (kprobe, uprobe): the target set, the
 * function part in *f; false for another number of parts.
 */
static bool ap_target_func(struct ast_attach_point *ap,
			   const struct ap_parts *ps, const char **f)
{
	if (ps->n == 2) {
		*f = ps->part[1];
	} else if (ps->n == 3) {
		ap->target = ps->part[1];
		*f = ps->part[2];
	} else {
		return false;
	}
	return true;
}

/* A return probe (ret) takes no offset: bpftrace's wording. */
static int ap_ret_offset(struct compile *c, const struct ast_loc *loc,
			 const struct ast_attach_point *ap, bool ret)
{
	if (!ap->func_offset || !ret)
		return 0;
	diag_error(&c->diag, loc, "Offset not allowed");
	return -EINVAL;
}

static bool is_number(const char *s)
{
	uint64_t v;

	return parse_u64(s, &v) == 0;
}

/* interval:1s, interval:s:1, profile:hz:99, profile:99 (hz) */
static int parse_rate(struct compile *c, struct ast_attach_point *ap,
		      const struct ap_parts *ps, const struct ast_loc *loc)
{
	static const char *const units[] = { "s", "ms", "us", "ns", "hz" };
	const char *unit = NULL, *num = NULL;

	if (ps->n == 3) {
		unit = ps->part[1];
		num = ps->part[2];
	} else if (ps->n == 2) {
		/* interval:1s, interval:100ms; a bare number is nanoseconds */
		const char *p = ps->part[1];
		size_t i = strspn(p, "0123456789_");

		if (i && (p[i] == 'e' || p[i] == 'E') && p[i + 1] >= '0' &&
		    p[i + 1] <= '9')
			i += 1 + strspn(p + i + 1, "0123456789");
		num = arena_strndup(&c->arena, p, i);
		unit = p[i] ? p + i : "ns";
	} else {
		return ap_nargs(c, loc, ap->provider, "1 or 2 arguments");
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(units[i], unit)) {
			ap->unit = units[i];
			break;
		}
	}
	if (!ap->unit) {
		diag_error(&c->diag, loc, "%s is not an accepted unit of time",
			   unit);
		return -EINVAL;
	}
	if (parse_u64(num, &ap->freq) || ap->freq == 0) {
		diag_error(&c->diag, loc, "%s: invalid rate: %s",
			   ap->provider, num);
		return -EINVAL;
	}
	/* nanoseconds in the largest unit that keeps the value exact */
	if (!strcmp(ap->unit, "ns")) {
		static const struct {
			const char *unit;
			uint64_t ns;
		} scale[] = {
			{ "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 },
		};

		for (size_t i = 0; i < ARRAY_SIZE(scale); i++) {
			if (ap->freq % scale[i].ns == 0) {
				ap->freq /= scale[i].ns;
				ap->unit = scale[i].unit;
				break;
			}
		}
	}
	return 0;
}

int ap_parse(struct compile *c, struct ast_node *n, const char *raw)
{
	struct ast_attach_point *ap = &n->ap;
	const struct ast_loc *loc = &n->loc;
	struct ap_parts ps;
	const char *prov;
	char *unquoted;
	int err = 0;

	/* an optional probe name: name=provider:... */
	{
		size_t n = strspn(raw, "abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

		if (n && raw[n] == '=')
			raw += n + 1;
	}
	raw = ap_subst_params(c, raw, loc, &err);
	if (err)
		return err;
	ap_split(c, raw, &ps, &unquoted);
	ap->raw = unquoted;
	if (ps.too_many) {
		diag_error(&c->diag, loc, "Invalid attach point: %s",
			   unquoted);
		return -EINVAL;
	}
	prov = ap_canonical_provider(ps.part[0]);
	if (!prov) {
		diag_error(&c->diag, loc, "Invalid probe type: %s",
			   ps.part[0]);
		return -EINVAL;
	}
	ap->provider = prov;
	for (int i = 1; i < ps.n; i++)
		if (ps.wild[i])
			ap->need_expansion = true;

	if (!strcmp(prov, "BEGIN") || !strcmp(prov, "END")) {
		if (ps.n != 1)
			return ap_nargs(c, loc, prov, "0 arguments");
		return 0;
	}
	if (!strcmp(prov, "bench") || !strcmp(prov, "test")) {
		if (ps.n != 2 || !*ps.part[1])
			return ap_nargs(c, loc, prov, "1 argument");
		ap->func = ps.part[1];
		return 0;
	}
	if (!strcmp(prov, "iter")) {
		/* iter:task, iter:task:PIN (the pin file goes in target) */
		if (ps.n < 2 || ps.n > 3 || !*ps.part[1] ||
		    (ps.n == 3 && !*ps.part[2]))
			return ap_nargs(c, loc, prov, "1 or 2 arguments");
		ap->func = ps.part[1];
		if (ps.n == 3)
			ap->target = ps.part[2];
		return 0;
	}
	if (!strcmp(prov, "self")) {
		if (ps.n != 3)
			return ap_nargs(c, loc, prov, "2 arguments");
		ap->target = ps.part[1];
		ap->func = ps.part[2];
		return 0;
	}
	if (!strcmp(prov, "kprobe") || !strcmp(prov, "kretprobe")) {
		const char *f;

		if (!ap_target_func(ap, &ps, &f)) {
			/* bpftrace 0.17 has no kprobe:MODULE:FUNC (sema
			 * refuses it there, after the config block) */
			return ap_nargs(c, loc, prov,
					compat_has(COMPAT_KPROBE_MODULE) ?
						"1 or 2 arguments" :
						"1 argument");
		}
		if (!*f) {
			diag_error(&c->diag, loc,
				   "kprobes should be attached to a function");
			return -EINVAL;
		}
		if (!strcmp(prov, "kprobe") && is_number(f))
			return parse_u64(f, &ap->address), 0;
		if (split_offset(c, ap, f))
			goto bad_offset;
		return ap_ret_offset(c, loc, ap, !strcmp(prov, "kretprobe"));
	}
	if (!strcmp(prov, "uprobe") || !strcmp(prov, "uretprobe")) {
		const char *f;

		if (ap_target_func(ap, &ps, &f)) {
			/* the function in f */
		} else if (ps.n == 4) {
			ap->target = ps.part[1];
			ap->lang = ps.part[2];
			f = ps.part[3];
			if (strcmp(ap->lang, "cpp")) {
				diag_error(&c->diag, loc,
					   "unsupported language: %s",
					   ap->lang);
				return -EINVAL;
			}
		} else {
			return ap_nargs(c, loc, prov, "1, 2 or 3 arguments");
		}
		if (!*f) {
			diag_error(&c->diag, loc,
				   "%s should be attached to a function and/or address",
				   prov);
			return -EINVAL;
		}
		ap->quoted_func = ps.quoted[ps.n - 1];
		/* BINARY@FILE:LINE (v0.26): a source line, found in the
		 * binary's DWARF when the probe is expanded */
		if (ap->target && strchr(ap->target, '@') && !ap->lang &&
		    !ap->quoted_func && is_number(f) &&
		    !strcmp(prov, "uprobe")) {
			const char *at = strrchr(ap->target, '@');
			uint64_t line;

			parse_u64(f, &line);
			ap->src_file = at + 1;
			ap->src_line = (int)line;
			ap->target = arena_strndup(&c->arena, ap->target,
						   (size_t)(at - ap->target));
			if (!*ap->src_file || !line || line > INT32_MAX) {
				diag_error(&c->diag, loc,
					   "invalid source location: %s:%s",
					   ap->src_file, f);
				return -EINVAL;
			}
			return 0;
		}
		if (!ap->quoted_func && is_number(f)) {
			parse_u64(f, &ap->address);
			if (!strcmp(prov, "uretprobe")) {
				diag_error(&c->diag, loc,
					   "Address not allowed for uretprobe");
				return -EINVAL;
			}
			return 0;
		}
		if (ap->quoted_func) {
			size_t q = ps.qend[ps.n - 1];

			/* "name"+offset: the offset follows the quotes */
			ap->func = f;
			if (f[q] != '+')
				return 0;
			ap->func = arena_strndup(&c->arena, f, q);
			if (parse_u64(f + q + 1, &ap->func_offset))
				goto bad_offset;
			return ap_ret_offset(c, loc, ap,
					     !strcmp(prov, "uretprobe"));
		}
		if (split_offset(c, ap, f))
			goto bad_offset;
		return ap_ret_offset(c, loc, ap, !strcmp(prov, "uretprobe"));
	}
	if (!strcmp(prov, "usdt")) {
		if (ps.n == 2) {
			ap->func = ps.part[1];
		} else if (ps.n == 3) {
			ap->target = ps.part[1];
			ap->func = ps.part[2];
		} else if (ps.n == 4) {
			ap->target = ps.part[1];
			ap->ns = ps.part[2];
			ap->func = ps.part[3];
		} else {
			return ap_nargs(c, loc, prov, "1, 2 or 3 arguments");
		}
		if (!*ap->func)
			return ap_nargs(c, loc, prov, "1, 2 or 3 arguments");
		return 0;
	}
	if (!strcmp(prov, "tracepoint")) {
		if (ps.n != 3 || !*ps.part[1] || !*ps.part[2])
			return ap_nargs(c, loc, prov, "2 arguments");
		ap->target = ps.part[1];
		ap->func = ps.part[2];
		return 0;
	}
	if (!strcmp(prov, "rawtracepoint") || !strcmp(prov, "kfunc") ||
	    !strcmp(prov, "kretfunc")) {
		if (ps.n == 2) {
			ap->func = ps.part[1];
		} else if (ps.n == 3) {
			ap->target = ps.part[1];
			ap->func = ps.part[2];
		} else if (ps.n == 4 && strcmp(prov, "rawtracepoint") &&
			   !strcmp(ps.part[1], "bpf") &&
			   !parse_u64(ps.part[2], &ap->address)) {
			/* fentry:bpf:PROG_ID:NAME; the program id in address */
			ap->target = ps.part[1];
			ap->func = ps.part[3];
		} else {
			return ap_nargs(c, loc, prov, "1 or 2 arguments");
		}
		if (!*ap->func)
			return ap_nargs(c, loc, prov, "1 or 2 arguments");
		return 0;
	}
	if (!strcmp(prov, "profile") || !strcmp(prov, "interval"))
		return parse_rate(c, ap, &ps, loc);
	if (!strcmp(prov, "software") || !strcmp(prov, "hardware")) {
		if ((ps.n != 2 && ps.n != 3) || !*ps.part[1])
			return ap_nargs(c, loc, prov, "1 or 2 arguments");
		ap->target = ps.part[1];
		if (ps.n == 3 && *ps.part[2] &&
		    (parse_u64(ps.part[2], &ap->freq) || ap->freq == 0)) {
			diag_error(&c->diag, loc, "%s: invalid count: %s",
				   prov, ps.part[2]);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(prov, "watchpoint") || !strcmp(prov, "asyncwatchpoint")) {
		const char *a;

		if (ps.n != 4)
			return ap_nargs(c, loc, prov, "3 arguments");
		a = ps.part[1];
		if (is_number(a)) {
			parse_u64(a, &ap->address);
		} else if (strncmp(a, "0x", 2) && strstr(a, "+arg")) {
			ap->func = arena_strndup(&c->arena, a,
						 strstr(a, "+arg") - a);
			ap->func_offset = strtoull(strstr(a, "+arg") + 4,
						   NULL, 10);
		} else {
			diag_error(&c->diag, loc,
				   "%s: invalid address: %s", prov, a);
			return -EINVAL;
		}
		if (parse_u64(ps.part[2], &ap->len) ||
		    (ap->len != 1 && ap->len != 2 && ap->len != 4 &&
		     ap->len != 8)) {
			diag_error(&c->diag, loc,
				   "%s length must be one of (1,2,4,8)", prov);
			return -EINVAL;
		}
		ap->mode = ps.part[3];
		if (strspn(ap->mode, "rwx") != strlen(ap->mode) ||
		    !*ap->mode) {
			diag_error(&c->diag, loc,
				   "%s mode must be combination of (r,w,x)", prov);
			return -EINVAL;
		}
		return 0;
	}
	BUG("provider %s not handled", prov);

bad_offset:
	diag_error(&c->diag, loc, "Invalid offset in attach point: %s",
		   unquoted);
	return -EINVAL;
}
