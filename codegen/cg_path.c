/*
 * path(): bpf_d_path(), as bpftrace 0.17 calls it, in kfunc, kretfunc
 * and iter probes (frontend/func_sys.c checks where).  Its argument is a
 * struct path * (args->path) or a struct path in kernel memory
 * (args->filp->f_path: its address); either way the pointer the
 * verifier must see is the one loaded from the probe's context, plus an
 * offset, so it is passed as it is, never copied.  The result is a
 * string of BPFTRACE_STRLEN bytes, zeroed first.
 *
 * The kernel lets only some functions call bpf_d_path (an allowlist in
 * the verifier): elsewhere the load fails, and the shim prints bpftrace's
 * "helper bpf_d_path not supported in probe" at the call
 * (cg_prog.d_path_refused, shim/kernel/kernel_load.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <linux/bpf.h>

#include "cg_int.h"
#include "util.h"

/* bpftrace 0.17's located error for the call at loc, as printed. */
static const char *cg_path_refusal(struct cg *g, const struct ast_loc *loc)
{
	struct diag_list one = g->c->diag;
	struct diag d = {
		.level = DIAG_ERROR,
		.loc = *loc,
		.msg = "helper bpf_d_path not supported in probe",
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const char *kept;

	if (!f)
		return d.msg;
	one.head = &d;
	diag_print(&one, f);
	fclose(f);
	kept = arena_strdup(&g->c->arena, text ? text : d.msg);
	free(text);
	return kept;
}

LLVMValueRef cg_path(struct cg *g, struct ast_node *n)
{
	struct ast_node *a = cg_call_arg(n, 0);
	struct irb *ir = &g->ir;
	size_t len = n->type->size;
	LLVMValueRef buf = irb_alloca(ir, len, "path"), args[3], ret;
	struct cg_prog *p = &g->obj->progs[g->prog];

	irb_memset(ir, buf, 0, (len + 7) & ~(size_t)7);
	if (g->ir.target != CG_TARGET_BPF) {
		cg_unsupported(g, n, "path() outside the kernel");
		return buf;
	}
	args[0] = a->type->kind == TY_POINTER ? cg_expr(g, a) :
						cg_record_addr(g, a);
	args[1] = buf;
	args[2] = LLVMConstInt(ir->i32, len, 0);
	ret = irb_helper(ir, BPF_FUNC_d_path, args, 3);
	cg_helper_check(g, &n->loc, "d_path", ret, CG_CHECK_NEG);
	if (!p->d_path_refused)
		p->d_path_refused = cg_path_refusal(g, &n->loc);
	return buf;
}
