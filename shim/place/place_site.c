/*
 * Placement, the sites: where a uprobe/uretprobe probe's attach points
 * resolve to (binary, function, offset), whether the target maps each
 * binary, and whether each site can be patched. A probe runs in user
 * mode at every site that can be, in the kernel at the rest (RUN_BOTH:
 * one probe, its programs built for both sides, cg_opts.want_site); a
 * function patched for one site carries no kernel uprobe of another
 * (place_site_conflicts()). place.c decides per probe.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ast.h"
#include "compat.h"
#include "patch.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "user.h"
#include "util.h"
#include "place.h"
#include "place_int.h"

/* ---- where the probe's sites are ----------------------------------- */

/* Is path (resolved) mapped in /proc/pid/maps? */
static bool place_mapped_in(int pid, const char *path)
{
	char buf[64], line[PATH_MAX + 128], rp[PATH_MAX];
	bool found = false;
	FILE *f;

	if (!realpath(path, rp))
		snprintf(rp, sizeof(rp), "%s", path);
	snprintf(buf, sizeof(buf), "/proc/%d/maps", pid);
	f = fopen(buf, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t n;

		if (!p)
			continue;
		n = strlen(p);
		if (n && p[n - 1] == '\n')
			p[n - 1] = 0;
		found = !strcmp(p, rp);
	}
	fclose(f);
	return found;
}

/* The -c command's executable (its first word, as child_split_cmd()
 * splits it), resolved through PATH. */
bool place_cmd_exe(const char *cmd, char *out, size_t len)
{
	char word[PATH_MAX], cand[2 * PATH_MAX + 2];
	const char *path = getenv("PATH");
	size_t n;

	cmd += strspn(cmd, " ");
	n = strcspn(cmd, " ");

	if (n >= sizeof(word))
		return false;
	memcpy(word, cmd, n);
	word[n] = 0;
	if (strchr(word, '/'))
		return realpath(word, out) != NULL;
	(void)len;
	while (path && *path) {
		size_t m = strcspn(path, ":");

		snprintf(cand, sizeof(cand), "%.*s/%s", (int)m, path, word);
		if (!access(cand, X_OK))
			return realpath(cand, out) != NULL;
		path += m + (path[m] == ':');
	}
	return false;
}

/*
 * Is lib (resolved) one the dynamic loader maps for exe at start-up
 * (ld.so --list)? Libraries loaded later with dlopen are not known here.
 */
static bool place_loaded_at_start(const char *exe, const char *lib)
{
	static const char *const loaders[] = {
		"/lib64/ld-linux-x86-64.so.2",
		"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	};
	char cmd[3 * PATH_MAX], line[2 * PATH_MAX], rp[PATH_MAX];
	bool found = false;
	const char *ld = NULL;
	FILE *f;

	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++)
		if (!access(loaders[i], X_OK)) {
			ld = loaders[i];
			break;
		}
	if (!ld || strchr(exe, '\''))
		return false;
	snprintf(cmd, sizeof(cmd), "%s --list '%s' 2>/dev/null", ld, exe);
	f = popen(cmd, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "=> ");

		p = p ? p + 3 : line + strspn(line, " \t");
		p[strcspn(p, " \t\n")] = 0;
		if (*p == '/' && realpath(p, rp) && !strcmp(rp, lib))
			found = true;
	}
	pclose(f);
	return found;
}

static bool place_in_target_now(const struct run_opts *o, const char *bin)
{
	char exe[PATH_MAX], rp[PATH_MAX];

	if (o->pid > 0)
		return place_mapped_in(o->pid, bin);
	/* system-wide: whichever process maps it (shim/run/sysw.c) */
	if (!o->cmd)
		return true;
	if (!place_cmd_exe(o->cmd, exe, sizeof(exe)) ||
	    !realpath(bin, rp))
		return false;
	return !strcmp(exe, rp) || place_loaded_at_start(exe, rp);
}

/*
 * The answer for the last binary asked about, kept: a wildcard gives
 * hundreds of sites in one binary, and each question reads the process's
 * mappings or runs ld.so --list.
 */
static bool place_in_target(const struct run_opts *o, const char *bin)
{
	static char last_bin[PATH_MAX], last_cmd[PATH_MAX];
	static int last_pid = -1;
	static bool last;
	const char *cmd = o->cmd ? o->cmd : "";

	if (o->pid != last_pid || strcmp(cmd, last_cmd) ||
	    strcmp(bin, last_bin)) {
		last = place_in_target_now(o, bin);
		last_pid = o->pid;
		snprintf(last_cmd, sizeof(last_cmd), "%s", cmd);
		snprintf(last_bin, sizeof(last_bin), "%s", bin);
	}
	return last;
}

int place_usdt_func(struct arena *a, const struct probes_match *m,
		    const char **func, uint64_t *off)
{
	const struct probes_sym *in = NULL;
	struct probes_sym *syms;
	int n;

	if (m->target && !probes_elf_funcs(a, m->target, &syms, &n))
		in = probes_sym_at(syms, n, m->addr);
	if (!in || !in->name)
		return -ENOENT;
	*func = in->name;
	*off = m->addr - in->addr;
	return 0;
}

static int place_find_sarg(struct ast_node *n, void *ctx)
{
	(void)ctx;
	if (n->kind == AST_BUILTIN && n->sema && n->sema->builtin == BI_SARG)
		return 1;
	return ast_visit_children(n, place_find_sarg, NULL);
}

/*
 * Why site m of a probe cannot run in user mode (NULL: it can); *reason
 * the same without the site's name, for -v under the probe.
 */
static const char *place_site_why(struct compile *c, const struct run_opts *o,
				  const struct probes_match *m, bool ret,
				  bool sarg, bool usdt, uint32_t reads,
				  uint32_t *clobbers, const char **reason)
{
	char buf[256];
	const char *why = NULL, *func = m->func;
	uint64_t off = m->func_offset;
	int err;

	*reason = NULL;
	if (!m->target || !m->func)
		return *reason = "an address without a function";
	if (!place_in_target(o, m->target))
		return *reason = arena_printf(
			       &c->arena, "%s is not %s", m->target,
			       o->pid ? "mapped in the -p process" :
					"the -c command or a library it "
					"starts with");
	if (usdt && place_usdt_func(&c->arena, m, &func, &off))
		return *reason = "no function holds the site";
	if (ret && m->func_offset)
		return *reason = "a return probe needs a function";
	/* the trampoline's stack inside a function */
	if (sarg && m->func_offset)
		return *reason = "sarg inside a function";
	err = user_site_check_reads(m->target, func, off, reads, clobbers,
				    buf, sizeof(buf));
	/* what is in the -p process now: others' probes */
	if (!err && o->pid)
		err = user_site_check_live(o->pid, m->target, func, off, buf,
					   sizeof(buf));
	if (!err && !off && (ret || sarg) &&
	    user_site_entry_stays(m->target, func)) {
		snprintf(buf, sizeof(buf), "the entry instruction sets flags "
			 "and cannot run twice: %s cannot follow it",
			 ret ? "a return probe" : "sarg");
		err = -EINVAL;
	}
	if (!err)
		return NULL;
	if (err == -EBUSY || err == -EINVAL)
		*reason = arena_strdup(&c->arena, buf);
	else if (err == -ENOENT)
		*reason = "no symbol with a size to patch";
	else
		*reason = arena_printf(&c->arena, "cannot be read: %s",
				       strerror(-err));
	why = arena_printf(&c->arena, "%s:%s%s %s", m->target, func,
			   err == -EBUSY || err == -EINVAL ||
					   err == -ENOENT ? ":" : "",
			   *reason);
	return why;
}

/*
 * For -v, a user site's note (NULL: none): an entry instruction that
 * changes argument registers args the probe does not read, the tail of a
 * short function moved into its trampoline.
 */
static const char *place_site_note(struct compile *c, uint32_t args,
				   bool tail)
{
	char names[64];
	const char *a = args ? arena_printf(
				       &c->arena, "the entry instruction "
				       "changes %s, which the probe does not "
				       "read",
				       patch_reg_names(args, names,
						       sizeof(names))) :
			       NULL;
	const char *t = tail ? "the function is too short for the jump: "
			       "the rest of it runs in the trampoline, the "
			       "jump takes the padding after it" :
			       NULL;

	if (a && t)
		return arena_printf(&c->arena, "%s; %s", a, t);
	return a ? a : t;
}

static struct run_site_decision *place_site_add(struct compile *c,
						struct run_decision *d,
						int *cap)
{
	struct run_site_decision *s;

	if (d->nsites == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		s = arena_alloc(&c->arena, *cap * sizeof(*s));
		if (d->nsites)
			memcpy(s, d->sites, d->nsites * sizeof(*s));
		d->sites = s;
	}
	s = &d->sites[d->nsites++];
	memset(s, 0, sizeof(*s));
	return s;
}

const char *place_sites(struct compile *c, const struct run_opts *o,
			struct ast_node *p, struct run_decision *d)
{
	const char *whole = NULL;
	char rp[PATH_MAX];
	uint32_t reads, clobbers;
	int cap = 0, kept = 0;

	for (struct ast_node *ap = p->probe.aps; ap && !whole; ap = ap->next) {
		const char *prov = ap->ap.provider ? ap->ap.provider : "";

		if (strcmp(prov, "uprobe") && strcmp(prov, "uretprobe") &&
		    strcmp(prov, "usdt"))
			whole = arena_printf(&c->arena,
					     "%s probes run in the kernel",
					     *prov ? prov : "these");
	}
	if (!o->pid && !o->cmd && (whole || o->mode == MODE_KERNEL)) {
		/* no user site, nothing to weigh */
		place_all_kernel(d, whole ?: "no -p or -c process to run in");
		return d->why;
	}
	/* system-wide: only with a runtime every process may load */
	if (!o->pid && !o->cmd) {
		char why[256];

		if (user_runtime_check(o->runtime_path, why, sizeof(why))) {
			place_all_kernel(d, arena_printf(&c->arena,
							 "system-wide: %s",
							 why));
			return d->why;
		}
	}
	/* the -p process's mappings, read again for this probe's sites */
	user_site_live_forget();
	d->sarg = (p->probe.pred && place_find_sarg(p->probe.pred, NULL)) ||
		  (p->probe.body && place_find_sarg(p->probe.body, NULL));
	reads = place_entry_reads(p);
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next) {
		struct probes_match *m = NULL;
		int n = 0, err;
		const char *prov = ap->ap.provider ? ap->ap.provider : "";
		const char *bad;
		bool ret = !strcmp(prov, "uretprobe");
		bool usdt = !strcmp(prov, "usdt");

		if (strcmp(prov, "uprobe") && !ret && !usdt)
			continue;
		err = probes_expand_quiet(c, p, ap, &m, &n, &bad);
		/* compat missing-probes: dropped (missing_probes = warn or
		 * ignore), the others run where they can */
		if (!n && compat_has(COMPAT_MISSING_PROBES) &&
		    (!err || (bad && !strncmp(bad, "No matches for ", 15))))
			continue;	/* an error: compiling says it */
		kept++;
		if (err || !n) {
			whole = whole ?: bad ?: "its attach point does not resolve";
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct run_site_decision *s;

			/* without a function: nothing to share */
			if (!m[i].target || !m[i].func) {
				whole = whole ?: "an address without a "
						 "function";
				continue;
			}
			s = place_site_add(c, d, &cap);
			s->bin = arena_strdup(&c->arena,
					      realpath(m[i].target, rp) ?
						      rp : m[i].target);
			s->func = m[i].func;
			s->func_offset = m[i].func_offset;
			s->ret = ret;
			s->usdt = usdt;
			s->addr = m[i].addr;
			s->name = m[i].name ? m[i].name : m[i].func;
			s->where = RUN_KERNEL;
			/* a USDT site is an offset in the function holding it
			 * (none: a name of its own, sharing nothing) */
			if (usdt && place_usdt_func(&c->arena, &m[i], &s->func,
						    &s->func_offset))
				s->func = arena_printf(&c->arena, "%s:%s",
						       m[i].ns, m[i].func);
			s->fhash = run_func_hash(s->func);
			if (whole)
				continue;
			clobbers = 0;
			s->why = place_site_why(c, o, &m[i], ret, d->sarg,
						usdt, reads, &clobbers,
						&s->reason);
			if (!s->why && user_site_span(m[i].target, s->func,
						      s->func_offset,
						      &s->span_lo,
						      &s->span_hi))
				s->why = s->reason = "its patch window "
						     "cannot be found";
			if (s->why)
				continue;
			s->where = RUN_USER;
			/* -v: how a site the kernel used to take runs */
			s->reason = place_site_note(c, clobbers & ~reads &
							       PATCH_REGS_ARGS,
						    clobbers &
							    PATCH_CLOBBERS_TAIL);
		}
	}
	if (!kept && !whole)
		whole = "its attach point does not resolve";
	if (whole)
		place_all_kernel(d, whole);
	return whole;
}

void place_all_kernel(struct run_decision *d, const char *why)
{
	d->where = RUN_KERNEL;
	d->why = why;
	d->weighed = false;
	for (int i = 0; i < d->nsites; i++)
		if (d->sites[i].where == RUN_USER) {
			d->sites[i].where = RUN_KERNEL;
			d->sites[i].why = d->sites[i].reason = why;
		}
}

void place_settle(struct compile *c, struct run_decision *d)
{
	int user = 0;
	const struct run_site_decision *k = NULL;

	d->weighed = true;
	for (int i = 0; i < d->nsites; i++) {
		if (d->sites[i].where == RUN_USER)
			user++;
		else if (!k)
			k = &d->sites[i];
	}
	if (!user) {
		d->where = RUN_KERNEL;
		d->why = k && k->why ? k->why : d->why;
	} else if (k) {
		d->where = RUN_BOTH;
		d->why = arena_printf(&c->arena,
				      "%d of %d sites can be patched, the "
				      "rest run in the kernel",
				      user, d->nsites);
	} else {
		d->where = RUN_USER;
		d->why = d->nsites == 1 && d->sites[0].reason ?
				 d->sites[0].reason : "every site can be patched";
	}
}

uint64_t run_func_hash(const char *func)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (const char *c = func; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
	return h | 1;
}

/*
 * The names' hashes first, then the function's name: a library's wildcard
 * compares every site with every other (n * n), and every site has the
 * same binary (libc's 7186: half of the time before "Attaching").
 */
static bool place_same_function(const struct run_site_decision *a,
				const struct run_site_decision *b)
{
	return (!a->fhash || !b->fhash || a->fhash == b->fhash) &&
	       !strcmp(a->func, b->func) && !strcmp(a->bin, b->bin);
}

/*
 * Why user site s (of probe i) must go to the kernel because of another
 * site on its function (NULL: it need not).
 */
static const char *place_site_clash(struct compile *c, struct run_decision *d,
				    int n, int i,
				    const struct run_site_decision *s,
				    bool syswide)
{
	for (int j = 0; j < n; j++)
		for (int k = 0; k < d[j].nsites; k++) {
			const struct run_site_decision *t = &d[j].sites[k];

			if (t == s || !place_same_function(s, t))
				continue;
			/* one trampoline, one contract for its code */
			if (t->where == RUN_USER && t->usdt != s->usdt &&
			    t->func_offset == s->func_offset)
				return "a USDT site and a uprobe at one "
				       "address";
			/* as user_install() would refuse it */
			if (t->where == RUN_USER &&
			    t->func_offset != s->func_offset &&
			    s->span_lo < t->span_hi && t->span_lo < s->span_hi)
				return arena_printf(
					&c->arena, "its patch window overlaps "
					"the site at %s+%#llx", s->func,
					(unsigned long long)t->func_offset);
			/* a kernel uprobe on the entry instruction shares
			 * the entry as another tracer's does: it runs the
			 * instruction and lands on the jump after it (not
			 * system-wide: a process taken at its first hit
			 * loses the kernel uprobe's later hits, issue 26) */
			if (t->where == RUN_KERNEL && !s->func_offset &&
			    !t->func_offset && !s->usdt && !t->usdt &&
			    !syswide)
				continue;
			if (t->where == RUN_KERNEL)
				return arena_printf(
					&c->arena, "a kernel uprobe on the "
					"same function (%s:%s)", s->bin,
					s->func);
			if (j != i && (d[i].sarg || d[j].sarg))
				return arena_printf(
					&c->arena, "sarg with another probe on "
					"the same function (%s:%s)", s->bin,
					s->func);
		}
	return NULL;
}

bool place_site_conflicts(struct compile *c, struct run_decision *d, int n,
			  bool syswide)
{
	bool changed = false;

	for (int i = 0; i < n; i++) {
		bool moved = false;

		if (d[i].where == RUN_KERNEL)
			continue;
		for (int k = 0; k < d[i].nsites; k++) {
			struct run_site_decision *s = &d[i].sites[k];
			const char *why;

			if (s->where != RUN_USER)
				continue;
			why = place_site_clash(c, d, n, i, s, syswide);
			if (!why)
				continue;
			s->where = RUN_KERNEL;
			s->why = s->reason = why;
			moved = true;
		}
		if (moved) {
			place_settle(c, &d[i]);
			changed = true;
		}
	}
	return changed;
}

enum run_where run_site_where(const struct run_decision *d,
			      const struct probes_match *m)
{
	char rp[PATH_MAX];
	bool ret = m->provider && !strcmp(m->provider, "uretprobe");

	bool usdt = m->provider && !strcmp(m->provider, "usdt");

	uint64_t fh;

	if (!m->target || !m->func)
		return RUN_KERNEL;
	if (!realpath(m->target, rp))
		snprintf(rp, sizeof(rp), "%s", m->target);
	fh = run_func_hash(m->func);
	for (int i = 0; i < d->nsites; i++) {
		const struct run_site_decision *s = &d->sites[i];

		if (usdt || s->usdt) {
			if (usdt && s->usdt && s->addr == m->addr &&
			    !strcmp(s->bin, rp))
				return s->where;
			continue;
		}
		/* as place_same_function(): the hash, the name, the binary */
		if (s->ret == ret && s->func_offset == m->func_offset &&
		    (!s->fhash || s->fhash == fh) &&
		    !strcmp(s->func, m->func) && !strcmp(s->bin, rp))
			return s->where;
	}
	return RUN_KERNEL;
}
