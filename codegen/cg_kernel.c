/*
 * Kernel probe kinds in the BPF target: the section each program goes
 * in (kprobe, kretprobe, their kprobe_multi forms, fentry/fexit at a
 * function, raw_tp), and the builtins whose lowering depends on the
 * context the kernel passes: struct pt_regs for kprobes, an array of
 * u64 arguments for fentry/fexit and raw tracepoints.
 */
#include <string.h>
#include <linux/bpf.h>

#include "cg_int.h"
#include "kprov.h"
#include "probes.h"

#define PT_IP 128	/* offsetof(struct pt_regs, ip), x86-64 */

static enum sema_provider cg_kernel_prov(struct cg *g)
{
	return g->sap ? g->sap->provider : g->probe->provider;
}

enum cg_kctx cg_kernel_kind(struct cg *g)
{
	if (g->ir.target != CG_TARGET_BPF)
		return CG_KCTX_NONE;
	switch (cg_kernel_prov(g)) {
	case PROV_KPROBE:
	case PROV_KRETPROBE:
		return CG_KCTX_REGS;
	case PROV_KFUNC:
	case PROV_KRETFUNC:
	case PROV_RAWTRACEPOINT:
		return CG_KCTX_U64;
	default:
		return CG_KCTX_NONE;
	}
}

const char *cg_kernel_section(struct cg *g, enum sema_provider p,
			      const struct probes_match *m, int nm)
{
	bool multi = nm > 1 && kprov_kprobe_multi();

	switch (p) {
	case PROV_KPROBE:
		/* kprobe_multi has no offsets within a function */
		if (multi && !m[0].func_offset && !g->ap->ap.func_offset)
			return "kprobe.multi";
		return "kprobe";
	case PROV_KRETPROBE:
		return multi ? "kretprobe.multi" : "kretprobe";
	case PROV_KFUNC:
	case PROV_KRETFUNC:
		/* libbpf finds the function's BTF id from the name, in
		 * vmlinux's BTF or a module's; one program per function */
		return arena_printf(&g->c->arena, "%s/%s",
				    p == PROV_KFUNC ? "fentry" : "fexit",
				    m[0].func ? m[0].func : "");
	case PROV_RAWTRACEPOINT:
		return "raw_tp";
	default:
		return NULL;
	}
}

/* retval in fexit: the slot after the arguments ("$retval", BTF). */
LLVMValueRef cg_kernel_retval(struct cg *g, struct ast_node *n)
{
	const struct type *rec = g->sap && g->sap->args_type ?
					 g->sap->args_type : g->args_type;
	struct irb *ir = &g->ir;

	for (int i = 0; rec && i < rec->nfields; i++) {
		const struct type_field *f = &rec->fields[i];

		if (strcmp(f->name, "$retval"))
			continue;
		return cg_int_norm(g, irb_ctx_load(ir, g->ctxp, f->offset, 8),
				   n->type);
	}
	cg_unsupported(g, n, "retval of a function that returns nothing");
	return irb_const(ir, 0);
}

/* func: the probed function's address, resolved when printed (ksym). */
LLVMValueRef cg_kernel_func(struct cg *g)
{
	struct irb *ir = &g->ir;

	/* kprobes: the instruction pointer, as bpftrace 0.17 reads it (in
	 * a kretprobe the caller's, where the function returned to);
	 * fentry/fexit: the kernel knows the function */
	if (cg_kernel_kind(g) == CG_KCTX_REGS)
		return irb_ctx_load(ir, g->ctxp, PT_IP, 8);
	return irb_helper(ir, BPF_FUNC_get_func_ip, &g->ctxp, 1);
}
