/*
 * Attaching the kernel probe kinds: kprobes and kretprobes (one
 * kprobe_multi link for all the functions of a program where the
 * program was built for one, a perf-event kprobe per function
 * otherwise), fentry/fexit programs (their target was set when they
 * loaded), raw tracepoints by name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "ast.h"
#include "cg.h"
#include "compile.h"
#include "kernel.h"
#include "probes.h"
#include "sema.h"
#include "kernel_int.h"

bool kernel_kprobe_is(const struct cg_prog *p)
{
	switch (p->provider) {
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_KFUNC:
	case PROV_KRETFUNC:
	case PROV_RAWTRACEPOINT:
		return true;
	default:
		return false;
	}
}

static bool kernel_is_multi(const struct cg_prog *p)
{
	return p->section && strstr(p->section, ".multi");
}

/*
 * A kprobe the kernel refused, in bpftrace 0.17's words (its libbcc's
 * line, then its own): "cannot attach kprobe, probe entry may not
 * exist" for a function the kernel does not know (none of that name, a
 * module not loaded), the kernel's reason otherwise (a function on the
 * kprobe blacklist: Invalid argument).  libbpf's own line only with -v.
 */
static void kernel_kprobe_why(int err)
{
	if (err == -ENOENT)
		fprintf(stderr, "cannot attach kprobe, probe entry may not exist\n");
	else
		fprintf(stderr, "cannot attach kprobe, %s\n", strerror(-err));
}

static int kernel_kprobe_fail(struct kernel *k, const struct cg_prog *p,
			      const char *name)
{
	int err = errno ? -errno : -EINVAL;

	if (p->provider != PROV_KPROBE && p->provider != PROV_KRETPROBE) {
		struct probes_match m = { .name = name };

		/* bpftrace 0.17 says only which (the why with -v) */
		if (kernel_get_verbose() > 0)
			fprintf(stderr, "ubt: cannot attach %s: %s\n", name,
				strerror(-err));
		kernel_attach_error(k, p, &m);
		return err;
	}
	kernel_kprobe_why(err);
	/* the kernel's answer to an offset inside an instruction */
	if (err == -EILSEQ)
		fprintf(stderr, "ERROR: Possible attachment attempt in the middle of an instruction, try a different offset.\n");
	fprintf(stderr, "ERROR: Error attaching probe: '%s'\n", name);
	k->attach_status = 255;	/* bpftrace's exit status for it */
	return err;
}

/* libbpf's lines for a kprobe it could not create: only with -v */
static struct bpf_link *kernel_attach_kprobe_quietly(struct bpf_program *prog,
						     const char *sym,
						     const struct bpf_kprobe_opts *o)
{
	int verbose = kernel_get_verbose(), err;
	struct bpf_link *l;

	if (!verbose)
		kernel_set_verbose(-1);
	l = bpf_program__attach_kprobe_opts(prog, sym, o);
	err = errno;
	kernel_set_verbose(verbose);
	errno = err;
	return l;
}

/*
 * Does a failure to attach m skip it, as bpftrace 0.17 skips an attach
 * point of a probe that has several (or a wildcard's match), instead of
 * failing the run?
 */
static bool kernel_kprobe_skips(const struct cg_prog *p)
{
	const struct ast_node *ap = p->ap;

	return ap && (ap->next || p->probe->probe.aps != ap ||
		      ap->ap.need_expansion);
}

/*
 * A kfunc that no BTF has (no such function, its module not loaded),
 * not loaded (kernel_load.c): bpftrace 0.17 finds no BTF id when it
 * attaches it and says so, an error (exit status 255), or a warning when
 * the probe has other attach points, whose attach goes on.
 */
static int kernel_kfunc_no_btf(struct kernel *k, const struct cg_prog *p,
			       const struct probes_match *m)
{
	if (kernel_kprobe_skips(p)) {
		fprintf(stderr, "WARNING: No BTF found for %s, skipping.\n",
			m->func);
		return 0;
	}
	fprintf(stderr, "ERROR: No BTF found for %s\n", m->func);
	k->attach_status = 255;
	return -ENOENT;
}

/*
 * kprobe:FUNC+OFFSET: bpftrace 0.17 checks the offset against a vmlinux
 * file with symbols where there is one (probes_kvmlinux.c), and fails
 * the run (exit status 255) when it is past the function or inside an
 * instruction; with none, -v says the kernel checks.
 */
static int kernel_kprobe_offset(struct kernel *k, const struct probes_match *m)
{
	const char *msg;
	int err = probes_kernel_offset_check(&k->c->arena, m->func,
					     m->func_offset, k->c->unsafe,
					     &msg);

	if (err == -ENOENT) {
		if (kernel_get_verbose() > 0)
			fprintf(stderr,
				"WARNING: Could not resolve symbol %s. Skipping usermode offset checking.\n"
				"WARNING: The kernel will verify the safety of the location but will also allow the offset to be in a different symbol.\n",
				m->func);
		return 0;
	}
	if (!err) {
		if (msg)
			fprintf(stderr, "WARNING: %s\n", msg);
		return 0;
	}
	fprintf(stderr, "ERROR: %s\n", msg);
	k->attach_status = 255;
	return err;
}

/* All functions of program i through one kprobe_multi link. */
static int kernel_attach_kmulti(struct kernel *k, int i)
{
	const struct cg_prog *p = &k->obj->progs[i];
	const char **syms = calloc(k->ntargets + 1, sizeof(*syms));
	const char *first = NULL;
	struct bpf_link *l;
	size_t n = 0;

	if (!syms)
		return -ENOMEM;
	for (int j = 0; j < k->ntargets; j++) {
		if (k->targets[j].prog != i)
			continue;
		if (!first)
			first = k->targets[j].m.name;
		syms[n++] = k->targets[j].m.func;
	}
	if (!n) {
		free(syms);
		return 0;
	}
	LIBBPF_OPTS(bpf_kprobe_multi_opts, o, .syms = syms, .cnt = n,
		    .retprobe = p->provider == PROV_KRETPROBE);
	errno = 0;
	l = bpf_program__attach_kprobe_multi_opts(k->progs[i], NULL, &o);
	free(syms);
	if (!l)
		return kernel_kprobe_fail(k, p, n == 1 ? first : p->probe_name);
	kernel_add_link(k, l);
	return 0;
}

static int kernel_attach_kone(struct kernel *k, struct kernel_target *t)
{
	const struct cg_prog *p = &k->obj->progs[t->prog];
	struct bpf_program *prog = k->progs[t->prog];
	const struct probes_match *m = &t->m;
	struct bpf_link *l = NULL;

	errno = 0;
	switch (p->provider) {
	case PROV_KPROBE:
	case PROV_KRETPROBE: {
		LIBBPF_OPTS(bpf_kprobe_opts, o,
			    .offset = m->func_offset,
			    .retprobe = p->provider == PROV_KRETPROBE);

		char sym[512];
		int err = m->func_offset && !(m->target && *m->target) ?
				  kernel_kprobe_offset(k, m) :
				  0;

		if (err)
			return err;
		/* kprobe:module:func: the kernel looks "module:func" up */
		if (m->target && *m->target)
			snprintf(sym, sizeof(sym), "%s:%s", m->target,
				 m->func);
		else
			snprintf(sym, sizeof(sym), "%s", m->func);
		l = kernel_attach_kprobe_quietly(prog, sym, &o);
		break;
	}
	case PROV_KFUNC:
	case PROV_KRETFUNC:
		if (m->no_btf)
			return kernel_kfunc_no_btf(k, p, m);
		l = bpf_program__attach_trace(prog);
		break;
	case PROV_RAWTRACEPOINT:
		l = bpf_program__attach_raw_tracepoint(prog, m->func);
		break;
	default:
		errno = ENOTSUP;
		break;
	}
	if (!l && kernel_kprobe_skips(p) &&
	    (p->provider == PROV_KPROBE || p->provider == PROV_KRETPROBE)) {
		kernel_kprobe_why(errno ? -errno : -EINVAL);
		fprintf(stderr, "WARNING: could not attach probe %s, skipping.\n",
			m->name);
		return 0;
	}
	if (!l)
		return kernel_kprobe_fail(k, p, m->name);
	kernel_add_link(k, l);
	return 0;
}

int kernel_kprobe_attach_prog(struct kernel *k, int i)
{
	if (kernel_is_multi(&k->obj->progs[i]))
		return kernel_attach_kmulti(k, i);
	for (int j = 0; j < k->ntargets; j++) {
		int err;

		if (k->targets[j].prog != i)
			continue;
		err = kernel_attach_kone(k, &k->targets[j]);
		if (err)
			return err;
	}
	return 0;
}
