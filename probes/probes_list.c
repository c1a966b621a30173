/*
 * ubt -l: listing the probes that match a pattern (tracepoints, software
 * and hardware events, uprobes with DWARF parameters in -v, USDT).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem */
#endif
#include <ctype.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "compat.h"
#include "diag.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"
#include "probes_int.h"

/* ------------------------------------------------------------------ */
/* Listing                                                             */

static const char *const probes_sw_events[] = {
	"alignment-faults", "bpf-output", "context-switches", "cs",
	"cpu-clock", "cpu", "cpu-migrations", "dummy", "emulation-faults",
	"faults", "major-faults", "minor-faults", "page-faults",
	"task-clock",
};

static const char *const probes_hw_events[] = {
	"backend-stalls", "branch-instructions", "branches", "branch-misses",
	"bus-cycles", "cache-misses", "cache-references", "cpu-cycles",
	"cycles", "frontend-stalls", "instructions", "ref-cycles",
};

struct probes_lister {
	struct arena *a;
	struct probes_vec lines;	/* const char *: name, then verbose text */
	bool verbose;
	bool quiet;	/* a probe type from a wildcard: a wrong number of
			 * parts lists nothing instead of an error */
	int skipped;	/* such probe types */
	bool no_aps;	/* every probe type of the wildcard skipped */
};

struct probes_line {
	const char *name;
	const char *detail;	/* -lv lines, or NULL */
};

static void probes_emit(struct probes_lister *l, const char *name,
			const char *detail)
{
	struct probes_line *ln = probes_vec_push(&l->lines);

	/* compat fentry-names: v0.26 lists kfunc and kretfunc by their
	 * newer names */
	if (compat_has(COMPAT_FENTRY_NAMES) && !strncmp(name, "kfunc:", 6))
		name = arena_printf(l->a, "fentry:%s", name + 6);
	else if (compat_has(COMPAT_FENTRY_NAMES) &&
		 !strncmp(name, "kretfunc:", 9))
		name = arena_printf(l->a, "fexit:%s", name + 9);
	ln->name = name;
	ln->detail = detail;
}

static void probes_emit_cb(void *ctx, const char *name, const char *detail)
{
	probes_emit(ctx, name, detail);
}

static const char *probes_tp_detail(struct arena *a, const char *cat,
				    const char *ev)
{
	struct tp_format f;
	char *s = arena_strdup(a, "");

	if (tp_format_read(a, cat, ev, &f))
		return NULL;
	for (int i = 0; i < f.nfields; i++)
		if (!f.fields[i].common)
			s = arena_printf(a, "%s    %s\n", s, f.fields[i].decl);
	return s;
}

/*
 * -lv for uprobes: each function's parameters from DWARF (the file's own
 * or its separate debug file), spelled as bpftrace 0.17 spells them:
 * "const char* s", "const <unknown type>* q", "struct foo* const p".
 */
struct probes_dwfn {
	const char *name;
	const char *params;	/* "    T name\n" lines */
	size_t order;		/* position in the file */
};
_Static_assert(offsetof(struct probes_dwfn, name) == 0, "name first");

struct probes_dwctx {
	struct arena *a;
	struct probes_vec fns;
};

static const char *probes_dw_type_name(struct arena *a, Dwarf_Die *die,
				       int depth)
{
	Dwarf_Attribute attr;
	Dwarf_Die inner, *in = NULL;
	const char *name;
	int tag = dwarf_tag(die);

	if (depth > 32)
		return "<unknown type>";
	if (dwarf_attr_integrate(die, DW_AT_type, &attr) &&
	    dwarf_formref_die(&attr, &inner))
		in = &inner;
	switch (tag) {
	case DW_TAG_pointer_type:
		return arena_printf(a, "%s*",
				    in ? probes_dw_type_name(a, in, depth + 1) :
					 "void");
	case DW_TAG_const_type:
		if (!in)
			return "const <unknown type>";
		if (dwarf_tag(in) == DW_TAG_pointer_type)
			return arena_printf(a, "%s const",
					    probes_dw_type_name(a, in,
								depth + 1));
		return arena_printf(a, "const %s",
				    probes_dw_type_name(a, in, depth + 1));
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_class_type:
		name = dwarf_diename(die);
		return arena_printf(a, "%s %s",
				    tag == DW_TAG_structure_type ? "struct" :
				    tag == DW_TAG_union_type ? "union" :
				    tag == DW_TAG_enumeration_type ? "enum" :
								     "class",
				    name ? name : "<unknown type>");
	default:
		name = dwarf_diename(die);
		return name ? name : "<unknown type>";
	}
}

static int probes_dw_func(Dwarf_Die *die, void *arg)
{
	struct probes_dwctx *x = arg;
	struct probes_dwfn *fn;
	const char *name = dwarf_diename(die);
	Dwarf_Die child;
	char *params;

	if (!name || dwarf_hasattr(die, DW_AT_declaration))
		return DWARF_CB_OK;
	params = arena_strdup(x->a, "");
	if (dwarf_child(die, &child) == 0) {
		do {
			Dwarf_Attribute attr;
			Dwarf_Die type;
			const char *pn, *tn = "<unknown type>";

			if (dwarf_tag(&child) != DW_TAG_formal_parameter)
				continue;
			pn = dwarf_diename(&child);
			if (!pn)
				continue;
			if (dwarf_attr_integrate(&child, DW_AT_type, &attr) &&
			    dwarf_formref_die(&attr, &type))
				tn = probes_dw_type_name(x->a, &type, 0);
			params = arena_printf(x->a, "%s    %s %s\n", params,
					      tn, pn);
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	fn = probes_vec_push(&x->fns);
	fn->name = arena_strdup(x->a, name);
	fn->params = params;
	fn->order = x->fns.len;
	return DWARF_CB_OK;
}

static int probes_dwfn_cmp(const void *x, const void *y)
{
	const struct probes_dwfn *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	/* equal names: the first definition in the file wins */
	if (c)
		return c;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The functions with DWARF of an ELF file, sorted by name (first wins). */
static int probes_dw_funcs(struct arena *a, const char *path,
			   struct probes_dwfn **out, int *n)
{
	struct probes_dwctx x = {
		.a = a, .fns = { .elem = sizeof(struct probes_dwfn) },
	};
	const char *file = probes_elf_dwarf_file(a, path);
	Dwarf *dw;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t ut;
	int fd, cnt = 0;

	*out = NULL;
	*n = 0;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return -ENOENT;
	}
	/* a skeleton unit's functions are in its split unit (.dwo) */
	while (!dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, &subdie))
		dwarf_getfuncs(ut == DW_UT_skeleton ? &subdie : &cudie,
			       probes_dw_func, &x, 0);
	dwarf_end(dw);
	close(fd);
	if (x.fns.len) {
		struct probes_dwfn *f = x.fns.data;

		qsort(f, x.fns.len, sizeof(*f), probes_dwfn_cmp);
		for (size_t i = 0; i < x.fns.len; i++)
			if (!cnt || strcmp(f[cnt - 1].name, f[i].name))
				f[cnt++] = f[i];
	}
	x.fns.len = cnt;
	*n = cnt;
	*out = probes_vec_to_arena(a, &x.fns);
	return 0;
}

static const char *probes_dw_params(const struct probes_dwfn *fns, int n,
				    const char *name)
{
	const struct probes_dwfn *f =
		n > 0 ? bsearch(name, fns, n, sizeof(*fns), probes_name_cmp) :
			NULL;

	return f ? f->params : NULL;
}

/* List every probe whose full name matches pattern (NULL: all). */
static void probes_list_fixed(struct probes_lister *l, const char *provider,
			      const char *pattern)
{
	bool all = !provider;

	if (all || !strcmp(provider, "software"))
		for (size_t i = 0; i < ARRAY_SIZE(probes_sw_events); i++) {
			char *nm = arena_printf(l->a, "software:%s:",
						probes_sw_events[i]);

			if (!pattern || probes_match_wildcard(pattern, nm))
				probes_emit(l, nm, NULL);
		}
	/* bpftrace's fixed list, also without a PMU (attaching says) */
	if (all || !strcmp(provider, "hardware"))
		for (size_t i = 0; i < ARRAY_SIZE(probes_hw_events); i++) {
			char *nm = arena_printf(l->a, "hardware:%s:",
						probes_hw_events[i]);

			if (!pattern || probes_match_wildcard(pattern, nm))
				probes_emit(l, nm, NULL);
		}
	if (all)
		probes_list_kernel_all(l->a, pattern, probes_emit_cb, l);
	if (all || !strcmp(provider, "tracepoint")) {
		const char **tps;
		int n;

		if (tp_list(l->a, &tps, &n))
			return;
		for (int i = 0; i < n; i++) {
			char *nm = arena_printf(l->a, "tracepoint:%s", tps[i]);
			const char *detail = NULL;

			if (pattern && !probes_match_wildcard(pattern, nm))
				continue;
			if (l->verbose) {
				const char *colon = strchr(tps[i], ':');

				detail = probes_tp_detail(
					l->a,
					arena_strndup(l->a, tps[i],
						      colon - tps[i]),
					colon + 1);
			}
			probes_emit(l, nm, detail);
		}
	}
}

static int probes_line_cmp(const void *x, const void *y)
{
	return strcmp(((const struct probes_line *)x)->name,
		      ((const struct probes_line *)y)->name);
}

/*
 * Split s at ':' into at most max parts (the last keeps the rest); a
 * double-quoted part may contain ':' ("ns::f(int)"), quotes are removed.
 */
static int probes_split(struct arena *a, const char *s, const char **parts,
			int max)
{
	char *buf = arena_alloc(a, strlen(s) + 1), *o = buf;
	bool quoted = false;
	int n = 0;

	parts[n] = buf;
	for (; *s; s++) {
		if (*s == '"') {
			quoted = !quoted;
		} else if (*s == ':' && !quoted && n < max - 1) {
			*o++ = '\0';
			parts[++n] = o;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return n + 1;
}

static const char *probes_canonical(const char *p)
{
	static const struct {
		const char *alias, *name;
	} tab[] = {
		{ "t", "tracepoint" }, { "tracepoint", "tracepoint" },
		{ "u", "uprobe" }, { "uprobe", "uprobe" },
		{ "ur", "uretprobe" }, { "uretprobe", "uretprobe" },
		{ "U", "usdt" }, { "usdt", "usdt" },
		{ "s", "software" }, { "software", "software" },
		{ "h", "hardware" }, { "hardware", "hardware" },
		{ "k", "kprobe" }, { "kprobe", "kprobe" },
		{ "kr", "kretprobe" }, { "kretprobe", "kretprobe" },
		{ "f", "kfunc" }, { "kfunc", "kfunc" }, { "fentry", "kfunc" },
		{ "fr", "kretfunc" }, { "kretfunc", "kretfunc" },
		{ "fexit", "kretfunc" },
		{ "rt", "rawtracepoint" }, { "rawtracepoint", "rawtracepoint" },
		{ "it", "iter" }, { "iter", "iter" },
		{ "i", "interval" }, { "interval", "interval" },
		{ "p", "profile" }, { "profile", "profile" },
		{ "BEGIN", "BEGIN" }, { "END", "END" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(tab); i++)
		if (!strcmp(p, tab[i].alias))
			return tab[i].name;
	return NULL;
}

static int probes_list_pattern(struct probes_lister *l, struct diag_list *d,
			       const struct ast_loc *loc, const char *pattern,
			       int pid);

/*
 * A wildcard probe type ("*:FILE:*", "*ware:*"): each probe type it
 * matches, as bpftrace expands it: the user-space ones (uprobe, usdt)
 * with -p or when the target is a path, else the kernel ones; return
 * probes are left out.  A type the rest does not fit lists nothing.
 */
static int probes_list_types(struct probes_lister *l, struct diag_list *d,
			     const struct ast_loc *loc, const char *pattern,
			     const char *types, int pid)
{
	static const char *const user[] = { "uprobe", "usdt" };
	static const char *const kernel[] = { "hardware", "kprobe",
					      "software", "tracepoint" };
	const char *rest = strchr(pattern, ':') + 1;
	const char *const *cand = kernel;
	size_t ncand = ARRAY_SIZE(kernel);
	bool quiet = l->quiet;
	int err = 0, any = 0, skipped = l->skipped;

	if (pid > 0 || strchr(rest, '/')) {
		cand = user;
		ncand = ARRAY_SIZE(user);
	}
	l->quiet = true;
	for (size_t i = 0; i < ncand && !err; i++) {
		if (fnmatch(types, cand[i], 0))
			continue;
		any++;
		err = probes_list_pattern(l, d, loc,
					  arena_printf(l->a, "%s:%s", cand[i],
						       rest),
					  pid);
	}
	l->quiet = quiet;
	if (!any)
		diag_error(d, loc, "No probe type matched for %s", types);
	if (!any || (!err && l->skipped - skipped == any)) {
		l->no_aps = true;
		return -EINVAL;
	}
	return err;
}

static int probes_list_pattern(struct probes_lister *l, struct diag_list *d,
			       const struct ast_loc *loc, const char *pattern,
			       int pid)
{
	struct arena *a = l->a;
	const char *parts[4] = { 0 };
	const char *prov;
	int np;

	if (!strchr(pattern, ':')) {
		static const struct {
			const char *prov, *count;
		} counts[] = {
			{ "tracepoint", "2 arguments" },
			{ "uprobe", "2 arguments" },
			{ "uretprobe", "2 arguments" },
			{ "usdt", "2 or 3 arguments" },
			{ "software", "1 or 2 arguments" },
			{ "hardware", "1 or 2 arguments" },
		};

		/* a probe type alone: bpftrace's complaint */
		prov = probes_canonical(pattern);
		for (size_t i = 0; prov && i < ARRAY_SIZE(counts); i++)
			if (!strcmp(prov, counts[i].prov)) {
				diag_error(d, loc,
					   "%s probe type requires %s", prov,
					   counts[i].count);
				return -EINVAL;
			}
		if (prov)
			return 0;
		/* a bare search: every full name matching it */
		probes_list_fixed(l, NULL, pattern);
		return 0;
	}
	np = probes_split(a, pattern, parts, 4);
	prov = probes_canonical(parts[0]);
	if (!prov) {
		if (probes_has_wildcard(parts[0]))
			return probes_list_types(l, d, loc, pattern, parts[0],
						 pid);
		diag_error(d, loc, "Invalid probe type: %s", parts[0]);
		return -EINVAL;
	}
	if (!strcmp(prov, "tracepoint") || !strcmp(prov, "software") ||
	    !strcmp(prov, "hardware")) {
		int need = !strcmp(prov, "tracepoint") ? 3 : 2;

		if (np < need && !probes_has_wildcard(parts[np - 1])) {
			if (l->quiet)
				return ++l->skipped, 0;
			diag_error(d, loc, "%s probe type requires %d %s",
				   prov, need - 1,
				   need - 1 == 1 ? "argument" :
						   "arguments");
			return -EINVAL;
		}
		/* the canonical provider name, the rest as written */
		const char *rest = strchr(pattern, ':') + 1;

		/* an event's name ends in ':' (its count left out) */
		probes_list_fixed(l, prov,
				  arena_printf(a, "%s:%s%s", prov, rest,
					       need == 2 && np == 2 ? ":" :
								     ""));
		return 0;
	}
	if (!strcmp(prov, "uprobe") || !strcmp(prov, "uretprobe")) {
		struct probes_match *m;
		int n, err;
		const char *func;

		if (np < 3 && !(np == 2 && pid > 0)) {
			if (l->quiet)
				return ++l->skipped, 0;
			diag_error(d, loc, "%s probe type requires 2 arguments",
				   prov);
			return -EINVAL;
		}
		func = np >= 3 ? parts[2] : "*";
		if (np == 4)
			func = arena_printf(a, "%s:%s", parts[2], parts[3]);
		if (!*func)
			func = "*";
		err = probes_expand_ap(a, NULL, loc, prov,
				       np >= 3 ? parts[1] : "*", NULL,
				       probes_has_wildcard(func) ? func :
				       arena_printf(a, "%s", func),
				       0, 0, pid, false, &m, &n);
		if (err == -ENOENT) {
			const char **paths;
			int npaths;

			if (probes_resolve_target(a, np >= 3 ? parts[1] : "*",
						  pid, &paths, &npaths)) {
				diag_error(d, loc,
					   "uprobe target file '%s' does not exist or is not executable",
					   parts[1]);
				return -ENOENT;
			}
			return 0;	/* nothing matched: print nothing */
		}
		const char *dw_path = NULL;
		struct probes_dwfn *fns = NULL;
		int nfns = 0;

		for (int i = 0; i < n; i++) {
			const char *detail = NULL;

			/* uretprobes have no args: bpftrace shows none */
			if (l->verbose && m[i].func &&
			    !strcmp(prov, "uprobe")) {
				if (!dw_path || strcmp(dw_path, m[i].target)) {
					dw_path = m[i].target;
					probes_dw_funcs(a, dw_path, &fns, &nfns);
				}
				detail = probes_dw_params(fns, nfns, m[i].func);
			}
			probes_emit(l, m[i].name, detail);
		}
		return 0;
	}
	if (!strcmp(prov, "usdt")) {
		struct probes_match *m;
		int n, err;
		const char *target = np >= 2 ? parts[1] : "";

		if (np < 3 && pid <= 0) {
			if (l->quiet)
				return ++l->skipped, 0;
			diag_error(d, loc,
				   "usdt probe type requires 2 or 3 arguments");
			return -EINVAL;
		}
		err = probes_expand_ap(a, NULL, loc, "usdt",
				       *target ? target : "*",
				       np == 4 ? parts[2] : "*",
				       np == 4 ? parts[3] :
				       np == 3 ? parts[2] : "*",
				       0, 0, pid, false, &m, &n);
		if (err == -ENOENT) {
			const char **paths;
			int npaths;

			if (probes_resolve_target(a, *target ? target : "*",
						  pid, &paths, &npaths)) {
				diag_error(d, loc,
					   "usdt target file '%s' does not exist or is not executable",
					   target);
				return -ENOENT;
			}
			return 0;
		}
		/* one line per provider:name, even with several sites */
		for (int i = 0; i < n; i++)
			if (!i || strcmp(m[i].name, m[i - 1].name))
				probes_emit(l, m[i].name, NULL);
		return 0;
	}
	if (!strcmp(prov, "iter"))
		return probes_list_iters(a, arena_printf(a, "iter:%s",
							 np >= 2 ? parts[1] :
								   "*"),
					 probes_emit_cb, l);
	if (probes_is_kernel(prov))
		return probes_list_kernel(a, prov, np >= 3 ? parts[1] : NULL,
					  np >= 3 ? parts[2] :
					  np == 2 ? parts[1] : "*",
					  l->verbose, probes_emit_cb, l);
	/* compat list-more: interval and profile list their units */
	if (compat_has(COMPAT_LIST_MORE) &&
	    (!strcmp(prov, "interval") || !strcmp(prov, "profile"))) {
		static const char *const units[] = { "hz", "ms", "s", "us" };

		for (size_t i = 0; i < ARRAY_SIZE(units); i++)
			if (!fnmatch(np >= 2 ? parts[1] : "*", units[i], 0))
				probes_emit(l, arena_printf(a, "%s:%s:", prov,
							    units[i]),
					    NULL);
		return 0;
	}
	/* BEGIN, END, interval, profile: nothing to list */
	return 0;
}

int probes_list(const char *pattern, int pid, bool verbose, FILE *out,
		FILE *err)
{
	struct probes_lister l = {
		.lines = { .elem = sizeof(struct probes_line) },
		.verbose = verbose,
	};
	struct arena a;
	struct diag_list d;
	struct ast_loc loc = { 0 };
	int rc = 0;

	arena_init(&a);
	l.a = &a;
	diag_init(&d, &a, "stdin", pattern ? pattern : "");
	if ((!pattern || !*pattern) && pid > 0) {
		/* -p alone: the process's executable, as bpftrace spells it
		 * (through /proc/PID/root, its mount namespace) */
		char exe[PATH_MAX];
		ssize_t len = readlink(arena_printf(&a, "/proc/%d/exe", pid),
				       exe, sizeof(exe) - 1);

		if (len > 0) {
			const char *path = arena_printf(&a, "/proc/%d/root%.*s",
							pid, (int)len, exe);

			probes_list_pattern(&l, &d, &loc,
					    arena_printf(&a, "uprobe:%s:*",
							 path), 0);
			probes_list_pattern(&l, &d, &loc,
					    arena_printf(&a, "usdt:%s:*:*",
							 path), 0);
		} else {
			fprintf(err, "ubt: cannot read /proc/%d/exe: %s\n",
				pid, strerror(errno));
			rc = 1;
		}
	} else if (!pattern || !*pattern) {
		probes_list_fixed(&l, NULL, NULL);
		/* compat list-more: the raw tracepoints too, as v0.26 */
		if (compat_has(COMPAT_LIST_MORE))
			probes_list_pattern(&l, &d, &loc, "rawtracepoint:*",
					    0);
	} else if (strchr(pattern, ',') && compat_has(COMPAT_LIST_MORE)) {
		/* compat list-more: several patterns, as v0.26 */
		char *all = arena_strdup(&a, pattern), *save = NULL;

		for (char *p = strtok_r(all, ",", &save); p;
		     p = strtok_r(NULL, ",", &save)) {
			if (!strchr(p, ':') && (!strncmp(p, "struct", 6) ||
						!strncmp(p, "union", 5) ||
						!strncmp(p, "enum", 4))) {
				if (probes_list_btf_types(&a, p, verbose,
							  probes_emit_cb, &l))
					rc = 1;
			} else if (probes_list_pattern(&l, &d, &loc, p, pid)) {
				rc = 1;
			}
		}
	} else if (!strchr(pattern, ':') &&
		   (!strncmp(pattern, "struct", 6) ||
		    !strncmp(pattern, "union", 5) ||
		    !strncmp(pattern, "enum", 4))) {
		/* type definitions, as bpftrace tells them apart */
		if (probes_list_btf_types(&a, pattern, verbose,
					  probes_emit_cb, &l))
			rc = 1;
	} else {
		loc.first_line = loc.last_line = 1;
		loc.first_column = 1;
		loc.last_column = strlen(pattern) + 1;
		if (probes_list_pattern(&l, &d, &loc, pattern, pid))
			rc = 1;
	}
	if (diag_has_errors(&d) || d.nwarnings)
		diag_print(&d, err);
	/* bpftrace's follow-up, located nowhere (an empty underline) */
	if (l.no_aps)
		fprintf(err, "stdin:1:1-1: ERROR: No attach points for probe\n%s\n\n",
			pattern);
	if (diag_has_errors(&d))
		rc = 1;
	if (!rc) {
		struct probes_line *lines = l.lines.data;

		if (l.lines.len)
			qsort(lines, l.lines.len, sizeof(*lines),
			      probes_line_cmp);
		for (size_t i = 0; i < l.lines.len; i++) {
			if (i && !strcmp(lines[i].name, lines[i - 1].name))
				continue;
			fprintf(out, "%s\n", lines[i].name);
			if (lines[i].detail)
				fputs(lines[i].detail, out);
		}
	}
	free(l.lines.data);
	arena_release(&a);
	return rc;
}
