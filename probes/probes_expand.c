/*
 * Attach points expanded: a probe's attach points (wildcards, library
 * names, USDT providers, tracepoint categories) to the concrete functions,
 * addresses and notes they match (see probes.h).
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
#include "attach.h"
#include "compat.h"
#include "compile.h"
#include "diag.h"
#include "probes.h"
#include "sema.h"
#include "tracepoint.h"
#include "util.h"
#include "probes_int.h"

/* ------------------------------------------------------------------ */
/* Expansion                                                           */

static int probes_match_cmp(const void *x, const void *y)
{
	const struct probes_match *a = x, *b = y;

	return strcmp(a->name, b->name);
}

static struct probes_match *probes_new_match(struct probes_vec *v, const char *prov,
					     int pid)
{
	struct probes_match *m = probes_vec_push(v);

	m->provider = prov;
	m->pid = pid;
	return m;
}

static struct diag *probes_report(struct diag_list *d,
				  const struct ast_loc *loc, bool warn,
				  const char *msg)
{
	if (!d)
		return NULL;
	if (warn)
		return diag_warning(d, loc, "%s", msg);
	return diag_error(d, loc, "%s", msg);
}

static int probes_expand_tracepoint(struct arena *a, struct diag_list *d,
				    const struct ast_loc *loc,
				    const char *cat, const char *ev,
				    bool warn_only, struct probes_vec *v)
{
	bool wild = probes_has_wildcard(cat) || probes_has_wildcard(ev);

	if (!wild) {
		struct tp_format f;

		if (tp_format_read(a, cat, ev, &f)) {
			char *msg = arena_printf(a,
						 "tracepoint not found: %s:%s",
						 cat, ev);

			probes_report(d, loc, warn_only, msg);
			if (!strcmp(cat, "syscall"))
				probes_report(d, loc, true,
					      arena_printf(a,
							   "Did you mean syscalls:%s?",
							   ev));
			return warn_only ? 0 : -ENOENT;
		}
		struct probes_match *m = probes_new_match(v, "tracepoint", 0);

		m->target = arena_strdup(a, cat);
		m->func = arena_strdup(a, ev);
		m->name = arena_printf(a, "tracepoint:%s:%s", cat, ev);
		return 0;
	}

	const char **all;
	int n, err = tp_list(a, &all, &n);
	size_t before = v->len;

	if (err && err != -ENOENT)
		return err;
	for (int i = 0; i < n; i++) {
		const char *colon = strchr(all[i], ':');
		char *c = arena_strndup(a, all[i], colon - all[i]);

		if (!probes_match_wildcard(cat, c) ||
		    !probes_match_wildcard(ev, colon + 1))
			continue;
		struct probes_match *m = probes_new_match(v, "tracepoint", 0);

		m->target = c;
		m->func = colon + 1;
		m->name = arena_printf(a, "tracepoint:%s", all[i]);
	}
	if (v->len == before) {
		probes_report(d, loc, false,
			      arena_printf(a, "tracepoints not found: %s:%s",
					   cat, ev));
		if (!strcmp(cat, "syscall"))
			probes_report(d, loc, false,
				      arena_printf(a,
						   "Did you mean syscalls:%s?",
						   ev));
		return -ENOENT;
	}
	return 0;
}

/*
 * C++ names: bpftrace matches a uprobe's function against a mangled
 * symbol as written, and against its demangled name, without the
 * parameter list unless the pattern has one: "foo" matches _Z3fooi and
 * _Z3foov, "foo(int)" only _Z3fooi. The demangler is libstdc++'s, which
 * ubt has loaded through LLVM (looked up at run time: ubt is C).
 */
typedef char *(*probes_demangle_fn)(const char *, char *, size_t *, int *);

static probes_demangle_fn probes_demangler(void)
{
	static probes_demangle_fn fn;
	static bool tried;

	if (!tried) {
		void *h;

		tried = true;
		fn = (probes_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!fn && (h = dlopen("libstdc++.so.6", RTLD_LAZY)))
			fn = (probes_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return fn;
}

char *probes_demangle(const char *sym)
{
	probes_demangle_fn demangle;
	int status;

	if (strncmp(sym, "_Z", 2) || !(demangle = probes_demangler()))
		return NULL;
	return demangle(sym, NULL, NULL, &status);
}

/* Cut "(params) const" off a demangled name (the last balanced group). */
static void probes_erase_params(char *s)
{
	int depth = 0;

	for (ssize_t i = (ssize_t)strlen(s) - 1; i >= 0; i--) {
		if (s[i] == ')') {
			depth++;
		} else if (s[i] == '(' && --depth == 0) {
			s[i] = '\0';
			return;
		}
	}
}

/* Does pattern (wildcards when wild) name symbol sym? cpp_only: only as a
 * demangled C++ name (uprobe:bin:cpp:func). */
/*
 * A part of a function the compiler split out (foo.cold, foo.cold.1,
 * foo.part.0; "foo() [clone .cold]" demangled): not a function of its
 * own.  Its entry is not the function's, and it never returns as the
 * function does.
 */
static bool probes_is_fragment(const char *sym)
{
	const char *p = strchr(sym, '.');

	for (; p; p = strchr(p + 1, '.'))
		if (!strncmp(p, ".cold", 5) || !strncmp(p, ".part.", 6))
			return true;
	return false;
}

static bool probes_func_matches(const char *pattern, bool wild,
				const char *sym, bool cpp_only, bool whole)
{
	probes_demangle_fn demangle;
	char *d;
	bool m;
	int status;

	/* a fragment only where named exactly, as it is spelled (-l lists
	 * every symbol, as bpftrace does: whole false) */
	if (whole && probes_is_fragment(sym))
		return !cpp_only && !wild && !strcmp(pattern, sym);
	if (!cpp_only && (wild ? probes_match_wildcard(pattern, sym) :
				 !strcmp(pattern, sym)))
		return true;
	if (strncmp(sym, "_Z", 2) || !(demangle = probes_demangler()))
		return false;
	d = demangle(sym, NULL, NULL, &status);
	if (!d)
		return false;
	if (!strchr(pattern, '('))
		probes_erase_params(d);
	m = wild ? probes_match_wildcard(pattern, d) : !strcmp(pattern, d);
	free(d);
	return m;
}

/*
 * An STT_GNU_IFUNC symbol's address is its resolver, which runs once at
 * relocation: a uprobe there never fires for calls. When ubt has the same
 * library loaded (libc, libm, ...), the implementation the resolver picks
 * on this machine is the one dlsym() returns here: use its address in
 * the file. 0, or -ENOENT when the library is not loaded in ubt.
 */
static int probes_ifunc_target(const char *path, const char *name,
			       uint64_t *vaddr)
{
	char want[PATH_MAX], have[PATH_MAX];
	struct link_map *lm = NULL;
	Dl_info info;
	void *h, *addr;
	int err = -ENOENT;

	if (!realpath(path, want))
		return -ENOENT;
	h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return -ENOENT;
	addr = dlsym(h, name);
	if (addr && dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) &&
	    lm && lm->l_name && realpath(lm->l_name, have) &&
	    !strcmp(have, want)) {
		*vaddr = (uint64_t)(uintptr_t)addr - lm->l_addr;
		err = 0;
	}
	dlclose(h);
	return err;
}

static int probes_expand_uprobe(struct arena *a, struct diag_list *d,
				const struct ast_loc *loc, const char *prov,
				const char *target, const char *func,
				bool cpp_only, uint64_t address,
				uint64_t func_offset, int pid, bool warn_only,
				bool whole, struct probes_vec *v)
{
	const char **paths;
	int npaths, err;
	bool wild = probes_has_wildcard(func);
	size_t before = v->len;

	if (!*target) {
		/* uprobe:func with -p: the process's executable */
		char exe[PATH_MAX];
		ssize_t len = -1;

		if (pid > 0)
			len = readlink(arena_printf(a, "/proc/%d/exe", pid),
				       exe, sizeof(exe) - 1);
		if (len <= 0) {
			probes_report(d, loc, false,
				      arena_printf(a,
						   "%s probe needs a target binary or -p PID",
						   prov));
			return -EINVAL;
		}
		target = arena_strndup(a, exe, len);
	}
	err = probes_resolve_target(a, target, pid, &paths, &npaths);
	if (err) {
		probes_report(d, loc, warn_only,
			      arena_printf(a,
					   "%s target file '%s' does not exist or is not executable",
					   "uprobe", target));
		return warn_only ? 0 : err;
	}
	for (int p = 0; p < npaths; p++) {
		struct probes_sym *syms;
		int nsyms;

		if (!func || !*func) {
			/* uprobe:bin:0x1234: inside a known function */
			struct probes_match *m = probes_new_match(v, prov, pid);
			const struct probes_sym *in = NULL;

			m->target = paths[p];
			m->addr = address;
			if (!probes_elf_funcs(a, paths[p], &syms, &nsyms))
				in = probes_sym_at(syms, nsyms, address);
			if (in) {
				m->func = in->name;
				m->size = in->size;
				m->func_offset = address - in->addr;
			}
			if (!in || probes_elf_vaddr_to_offset(paths[p], address,
							      &m->offset)) {
				/* bpftrace's bare ERROR: line (it finds
				 * out when attaching) */
				probes_report(d, NULL, warn_only,
					      arena_printf(a,
							   "Could not resolve address: %s:0x%llx",
							   paths[p],
							   (unsigned long long)address));
				v->len--;
				if (!warn_only)
					return -ENOENT;
				continue;
			}
			m->name = arena_printf(a, "%s:%s:0x%llx", prov,
					       paths[p],
					       (unsigned long long)address);
			continue;
		}
		err = probes_elf_funcs(a, paths[p], &syms, &nsyms);
		if (err) {
			probes_report(d, loc, warn_only,
				      arena_printf(a,
						   "%s target file '%s' does not exist or is not executable",
						   "uprobe", paths[p]));
			if (!warn_only)
				return err;
			continue;
		}
		for (int i = 0; i < nsyms; i++) {
			const struct probes_sym *s = &syms[i];

			if (!probes_func_matches(func, wild, s->name,
						 cpp_only, whole))
				continue;
			if (func_offset && s->size && func_offset >= s->size) {
				/* bpftrace's words */
				probes_report(d, loc, false,
					      arena_printf(a,
							   "Offset outside the function bounds ('%s' size is %llu)",
							   s->name,
							   (unsigned long long)s->size));
				return -EINVAL;
			}
			struct probes_match *m = probes_new_match(v, prov, pid);
			uint64_t impl, impl_off;

			m->target = paths[p];
			m->func = s->name;
			m->addr = s->addr + func_offset;
			m->offset = s->offset + func_offset;
			m->size = s->size;
			if (s->type == STT_GNU_IFUNC &&
			    !probes_ifunc_target(paths[p], s->name, &impl) &&
			    !probes_elf_vaddr_to_offset(paths[p], impl,
							&impl_off)) {
				const struct probes_sym *is =
					probes_sym_at(syms, nsyms, impl);

				m->addr = impl + func_offset;
				m->offset = impl_off + func_offset;
				m->size = is ? is->size : 0;
			}
			m->func_offset = func_offset;
			if (func_offset)
				m->name = arena_printf(a, "%s:%s:%s+%llu", prov,
						       paths[p], s->name,
						       (unsigned long long)func_offset);
			else
				m->name = arena_printf(a, "%s:%s:%s", prov,
						       paths[p], s->name);
		}
	}
	if (v->len == before) {
		const char *t = npaths == 1 ? paths[0] : target;

		if (wild)
			probes_report(d, loc, warn_only,
				      arena_printf(a, "uprobes not found: %s:%s",
						   t, func));
		else
			probes_report(d, loc, warn_only,
				      arena_printf(a,
						   "Could not resolve symbol: %s:%s",
						   t, func));
		return warn_only ? 0 : -ENOENT;
	}
	return 0;
}

static int probes_expand_usdt(struct arena *a, struct diag_list *d,
			      const struct ast_loc *loc, const char *target,
			      const char *ns, const char *func, int pid,
			      bool warn_only, struct probes_vec *v)
{
	const char **paths;
	int npaths, err;
	size_t before = v->len;
	bool wild;

	if (!target || !*target) {
		/* usdt::name or usdt:name with -p: every mapped file */
		if (pid <= 0) {
			probes_report(d, loc, false,
				      "usdt probe needs a target binary or -p PID");
			return -EINVAL;
		}
		target = "*";
	}
	err = probes_resolve_target(a, target, pid, &paths, &npaths);
	if (err) {
		probes_report(d, loc, warn_only,
			      arena_printf(a,
					   "usdt target file '%s' does not exist or is not executable",
					   target));
		return warn_only ? 0 : err;
	}
	if (!ns || !*ns)
		ns = "*";
	wild = probes_has_wildcard(ns) || probes_has_wildcard(func);
	for (int p = 0; p < npaths; p++) {
		struct probes_usdt *notes;
		int n;

		if (probes_usdt_notes(a, paths[p], &notes, &n))
			continue;
		for (int i = 0; i < n; i++) {
			const struct probes_usdt *u = &notes[i];

			if (!probes_match_wildcard(ns, u->provider) ||
			    !probes_match_wildcard(func, u->name))
				continue;
			/* a probe with several sites: one match per site */
			struct probes_match *m = probes_new_match(v, "usdt",
								  pid);

			m->target = paths[p];
			m->ns = u->provider;
			m->func = u->name;
			m->addr = u->pc;
			m->offset = u->pc_offset;
			m->semaphore_offset = u->semaphore ?
						      u->semaphore_offset : 0;
			m->usdt_args = u->args;
			m->name = arena_printf(a, "usdt:%s:%s:%s", paths[p],
					       u->provider, u->name);
		}
	}
	if (v->len == before) {
		probes_report(d, loc, warn_only && !wild,
			      arena_printf(a,
					   "usdt probe not found: %s:%s:%s",
					   npaths == 1 ? paths[0] : target, ns,
					   func));
		return warn_only && !wild ? 0 : -ENOENT;
	}
	return 0;
}

static int probes_expand_lang(struct arena *a, struct diag_list *d,
			      const struct ast_loc *loc, const char *provider,
			      const char *target, const char *ns,
			      const char *func, bool cpp_only,
			      uint64_t address, uint64_t func_offset, int pid,
			      bool warn_only, bool whole,
			      struct probes_match **out, int *n)
{
	struct probes_vec v = { .elem = sizeof(struct probes_match) };
	static const struct ast_loc noloc;
	int err = 0;

	if (!loc)
		loc = &noloc;
	*out = NULL;
	*n = 0;
	if (!strcmp(provider, "tracepoint")) {
		err = probes_expand_tracepoint(a, d, loc, target ? target : "",
					       func ? func : "", warn_only,
					       &v);
	} else if (!strcmp(provider, "uprobe") ||
		   !strcmp(provider, "uretprobe")) {
		err = probes_expand_uprobe(a, d, loc, provider,
					   target ? target : "", func,
					   cpp_only, address, func_offset,
					   pid, warn_only, whole, &v);
	} else if (probes_is_kernel(provider)) {
		err = probes_expand_kernel(a, d, loc, provider, target,
					   func ? func : "", func_offset,
					   warn_only, &v);
	} else if (!strcmp(provider, "usdt")) {
		err = probes_expand_usdt(a, d, loc, target, ns,
					 func ? func : "*", pid, warn_only,
					 &v);
	} else {
		struct probes_match *m = probes_new_match(&v, provider, pid);
		const char *t = target && *target ? target : NULL;

		m->target = t;
		m->func = func;
		if (!strcmp(provider, "BEGIN") || !strcmp(provider, "END"))
			m->name = provider;
		else if (t && func && *func)
			m->name = arena_printf(a, "%s:%s:%s", provider, t,
					       func);
		else if (t)
			m->name = arena_printf(a, "%s:%s", provider, t);
		else
			m->name = arena_printf(a, "%s:%s", provider,
					       func ? func : "");
	}
	if (err) {
		free(v.data);
		return err;
	}
	if (v.len > 1)
		qsort(v.data, v.len, v.elem, probes_match_cmp);
	for (size_t i = 0; i < v.len; i++)
		((struct probes_match *)v.data)[i].index = i;
	*n = v.len;
	*out = probes_vec_to_arena(a, &v);
	return 0;
}

int probes_expand_ap(struct arena *a, struct diag_list *d,
		     const struct ast_loc *loc, const char *provider,
		     const char *target, const char *ns, const char *func,
		     uint64_t address, uint64_t func_offset, int pid,
		     bool warn_only, struct probes_match **out, int *n)
{
	return probes_expand_lang(a, d, loc, provider, target, ns, func,
				  false, address, func_offset, pid, warn_only,
				  false, out, n);
}

/*
 * An offset into a function (FUNC+N, or an address inside one) must start
 * an instruction: refused as bpftrace refuses it, in its words, before
 * anything is placed; --unsafe lets it through with bpftrace's warning
 * (only a kernel uprobe can be placed there: patch_analyze() refuses it).
 */
static int probes_check_offsets(struct compile *c, const struct ast_loc *loc,
				const struct probes_match *m, int n)
{
	for (int i = 0; i < n; i++) {
		const char *kind = m[i].provider, *what;
		int r;

		if (!m[i].func_offset || !m[i].func)
			continue;
		r = probes_insn_boundary(m[i].target,
					 m[i].offset - m[i].func_offset,
					 m[i].size, m[i].func_offset);
		if (r == 1)
			continue;
		what = arena_printf(&c->arena, "%s:%s+%llu", m[i].target,
				    m[i].func,
				    (unsigned long long)m[i].func_offset);
		if (c->unsafe && r) {
			diag_warning(&c->diag, loc, "Unchecked %s: %s", kind,
				     what);
			continue;
		}
		if (c->unsafe) {
			diag_warning(&c->diag, loc,
				     "Unsafe %s in the middle of the instruction: %s",
				     kind, what);
			continue;
		}
		if (r)
			diag_error(&c->diag, loc,
				   "Failed to check if %s is in proper place: %s",
				   kind, what);
		else
			diag_error(&c->diag, loc,
				   "Could not add %s into middle of instruction: %s",
				   kind, what);
		return -EINVAL;
	}
	return 0;
}

/*
 * bpftrace 0.17 drops a uprobe whose symbol does not resolve, or a
 * kprobe or uprobe wildcard that matches nothing, and runs the rest of
 * the program (threadsnoop.bt's libpthread:pthread_create on Debian 12,
 * dcsnoop.bt's lookup_fast.constprop.*): here a warning, and an error
 * only when nothing else is in the program ("No probes to attach").
 */
static bool probes_droppable(const struct compile *c, const char *provider)
{
	static const char *const kinds[] = {
		"uprobe", "uretprobe", "kprobe", "kretprobe",
	};
	const struct ast_node *prog = c->program;

	provider = ap_canonical_provider(provider);
	if (!provider || !prog || prog->kind != AST_PROGRAM || !prog->program.probes ||
	    !prog->program.probes->next)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(provider, kinds[i]))
			return true;
	return false;
}

/*
 * compat zero-size: a uprobe on a function whose symbol has size 0 (no
 * boundary to check the patch against) needs --unsafe, as in v0.26,
 * which finds out when attaching (an error without a location).
 */
static int probes_zero_size(struct compile *c, const struct probes_match *m,
			    int n)
{
	for (int i = 0; i < n; i++) {
		if (!m[i].func || m[i].func_offset || m[i].size)
			continue;
		diag_error(&c->diag, NULL,
			   "Could not determine boundary for %s (symbol has size 0).\n"
			   "Use --unsafe to force attachment. WARNING: This option could lead to data corruption in the target process.",
			   m[i].func);
		return -EINVAL;
	}
	return 0;
}

/*
 * compat missing-probes: a uprobe nothing matches, in v0.26's words
 * ("No matches for uprobe FILE:FUNC."): an error, or with config
 * missing_probes = warn (ignore) dropped with a warning (silently).
 * Other errors keep their words.
 */
static int probes_expand_missing(struct compile *c, struct ast_node *ap,
				 const char *provider, int pid,
				 struct probes_match **out, int *n)
{
	const struct ast_attach_point *p = &ap->ap;
	int mode = c->sema ? (int)c->sema->missing_probes : MISSING_ERROR;
	struct diag_list saved = c->diag, got;
	const char *what;
	int err;

	diag_init(&c->diag, &c->arena, saved.filename, saved.source);
	err = probes_expand_lang(&c->arena, &c->diag, &ap->loc, provider,
				 p->target, p->ns, p->func, p->lang != NULL,
				 p->address, p->func_offset, pid, true, true,
				 out, n);
	got = c->diag;
	c->diag = saved;
	for (const struct diag *e = got.head; e; e = e->next)
		if (strncmp(e->msg, "Could not resolve symbol: ", 26) &&
		    strncmp(e->msg, "uprobes not found: ", 19))
			err = err ?: -EINVAL;	/* another complaint */
	if ((err && err != -ENOENT) || *n || diag_has_errors(&got)) {
		/* not a missing probe: what the expansion said */
		for (struct diag *e = got.head, *next; e; e = next) {
			next = e->next;
			e->next = NULL;
			*c->diag.tail = e;
			c->diag.tail = &e->next;
			if (e->level == DIAG_ERROR)
				c->diag.nerrors++;
			else
				c->diag.nwarnings++;
		}
		return err == -EINVAL && !diag_has_errors(&got) ? 0 : err;
	}
	what = arena_printf(&c->arena, "No matches for %s %s%s%s", provider,
			    p->target ? p->target : "", p->target ? ":" : "",
			    p->func ? p->func : "");
	if (mode == MISSING_ERROR) {
		diag_error(&c->diag, &ap->loc, "%s.", what);
		return -ENOENT;
	}
	what = arena_printf(&c->arena, "%s. Skipping.", what);
	/* once, though the probe is compiled for the kernel and the
	 * process both */
	for (const struct diag *e = c->diag.head; e; e = e->next)
		if (!strcmp(e->msg, what) &&
		    !memcmp(&e->loc, &ap->loc, sizeof(ap->loc)))
			return 0;
	if (mode == MISSING_WARN)
		diag_warning(&c->diag, &ap->loc, "%s", what);
	return 0;
}

int probes_expand(struct compile *c, struct ast_node *probe,
		  struct ast_node *ap, struct probes_match **out, int *n)
{
	const struct ast_attach_point *p = &ap->ap;
	bool warn_only = probe && probe->kind == AST_PROBE &&
			 probe->probe.aps && probe->probe.aps->next;
	const char *provider = p->provider;
	static const struct {
		const char *alias, *name;
	} aliases[] = {
		{ "u", "uprobe" }, { "ur", "uretprobe" },
		{ "U", "usdt" }, { "t", "tracepoint" },
	};

	int pid = p->pid ? p->pid : c->pid, err;

	for (size_t i = 0; provider && i < ARRAY_SIZE(aliases); i++)
		if (!strcmp(provider, aliases[i].alias))
			provider = aliases[i].name;
	if (!provider)
		provider = "";
	warn_only = warn_only || probes_droppable(c, provider);
	if (p->lang && strcmp(p->lang, "cpp")) {
		diag_error(&c->diag, &ap->loc, "unsupported language: %s",
			   p->lang);
		return -ENOTSUP;
	}
	if (probes_is_watch(provider)) {
		/* FUNC+argN: the function's entry in the -p/-c program */
		const char *t = p->func ? probes_watch_target(c, pid) : NULL;

		err = probes_expand_lang(&c->arena, &c->diag, &ap->loc,
					 p->func ? "uprobe" : provider, t,
					 NULL, p->func, false, p->address, 0,
					 pid, warn_only, true, out, n);
		if (!err)
			probes_watch_names(c, ap, t, *out, *n);
		return err;
	}
	if (p->src_file) {
		/* uprobe:BINARY@FILE:LINE: that line's address */
		uint64_t addr = 0;

		if (!p->target ||
		    probes_srcline_addr(&c->arena, p->target, p->src_file,
					p->src_line, &addr)) {
			diag_error(&c->diag, &ap->loc,
				   "No address found for %s:%d in %s",
				   p->src_file, p->src_line,
				   p->target ? p->target : "");
			return -ENOENT;
		}
		err = probes_expand_lang(&c->arena, &c->diag, &ap->loc,
					 provider, p->target, NULL, NULL,
					 false, addr, 0, pid, warn_only, true,
					 out, n);
	} else if (compat_has(COMPAT_MISSING_PROBES) && !p->address &&
	    (!strcmp(provider, "uprobe") || !strcmp(provider, "uretprobe")))
		err = probes_expand_missing(c, ap, provider, pid, out, n);
	else
		err = probes_expand_lang(&c->arena, &c->diag, &ap->loc,
					 provider, p->target, p->ns, p->func,
					 p->lang != NULL, p->address,
					 p->func_offset, pid, warn_only, true,
					 out, n);
	if (!err && (!strcmp(provider, "uprobe") ||
		     !strcmp(provider, "uretprobe")))
		err = probes_check_offsets(c, &ap->loc, *out, *n);
	if (!err && compat_has(COMPAT_ZERO_SIZE) && !c->unsafe &&
	    !p->address && p->func && !probes_has_wildcard(p->func) &&
	    (!strcmp(provider, "uprobe") || !strcmp(provider, "uretprobe")))
		err = probes_zero_size(c, *out, *n);
	if (!err && *n == 1 && probes_kernel_drops(probe, ap))
		*n = 0;
	if (err || *n != 1)
		return err;
	/* rate probes: bpftrace's canonical spelling of the probe name */
	if (p->unit)
		(*out)->name = arena_printf(&c->arena, "%s:%s:%llu", provider,
					    p->unit,
					    (unsigned long long)p->freq);
	else if (p->freq && p->target && (!strcmp(provider, "software") ||
					  !strcmp(provider, "hardware")))
		(*out)->name = arena_printf(&c->arena, "%s:%s:%llu", provider,
					    p->target,
					    (unsigned long long)p->freq);
	return 0;
}

int probes_expand_quiet(struct compile *c, struct ast_node *p,
			struct ast_node *ap, struct probes_match **m, int *n,
			const char **why)
{
	struct diag_list saved = c->diag;
	int err;

	diag_init(&c->diag, &c->arena, saved.filename, saved.source);
	err = probes_expand(c, p, ap, m, n);
	if (!err && diag_has_errors(&c->diag))
		err = -EINVAL;
	*why = NULL;
	for (const struct diag *e = c->diag.head; err && e; e = e->next)
		if (e->level == DIAG_ERROR) {
			*why = e->msg;
			break;
		}
	c->diag = saved;
	return err;
}
