/*
 * Lowering of builtins (pid, nsecs, argN, retval, ...) and of fields
 * of args (tracepoint records, USDT and uprobe arguments).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>
#include <bpf/libbpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"

/* x86-64 struct pt_regs offsets */
#define PT_R9 64
#define PT_R8 72
#define PT_AX 80
#define PT_CX 88
#define PT_DX 96
#define PT_SI 104
#define PT_DI 112
#define PT_SP 152

static LLVMValueRef cg_globals_field(struct cg *g, size_t off)
{
	LLVMValueRef res = irb_alloca(&g->ir, 8, "gval");
	LLVMValueRef p;
	LLVMBasicBlockRef cont;

	LLVMBuildStore(g->ir.b, irb_const(&g->ir, 0), res);
	p = cg_globals_ptr(g);
	cont = cg_if_nonnull(g, p);
	LLVMBuildStore(g->ir.b,
		       LLVMBuildLoad2(g->ir.b, g->ir.i64,
				      irb_gep(&g->ir, p, off), ""),
		       res);
	LLVMBuildBr(g->ir.b, cont);
	LLVMPositionBuilderAtEnd(g->ir.b, cont);
	return LLVMBuildLoad2(g->ir.b, g->ir.i64, res, "");
}

static bool cg_is_usdt(struct cg *g)
{
	enum sema_provider p = g->sap ? g->sap->provider :
					g->probe->provider;

	return p == PROV_USDT;
}

/* Extend the low `size` bytes of v by signedness. */
static LLVMValueRef cg_extend(struct cg *g, LLVMValueRef v, int size,
			      bool sgn)
{
	LLVMTypeRef t;

	if (size >= 8 || size <= 0)
		return v;
	t = LLVMIntTypeInContext(g->ir.ctx, size * 8);
	v = LLVMBuildTrunc(g->ir.b, v, t, "");
	return sgn ? LLVMBuildSExt(g->ir.b, v, g->ir.i64, "") :
		     LLVMBuildZExt(g->ir.b, v, g->ir.i64, "");
}

/* argN of a USDT site: from its argument spec (sys/sdt.h, x86-64). */
static LLVMValueRef cg_usdt_arg(struct cg *g, struct ast_node *n, int i)
{
	struct irb *ir = &g->ir;
	struct probes_usdt_arg *args, *a;
	LLVMValueRef v, buf;
	int na = 0;

	if (!g->match || !g->match->usdt_args ||
	    probes_usdt_parse_args(&g->c->arena, g->match->usdt_args, &args,
				   &na) ||
	    i < 0 || i >= na) {
		cg_unsupported(g, n, arena_printf(&g->c->arena,
						  "arg%d of this USDT probe",
						  i));
		return irb_const(ir, 0);
	}
	a = &args[i];
	switch (a->kind) {
	case USDT_ARG_CONST:
		return irb_const(ir, a->val);
	case USDT_ARG_REG:
		if (a->pt_regs_off < 0)
			break;
		v = irb_ctx_load(ir, g->ctxp, a->pt_regs_off, 8);
		return cg_extend(g, v, a->size, a->is_signed);
	case USDT_ARG_REG_DEREF:
		if (a->pt_regs_off < 0)
			break;
		v = irb_ctx_load(ir, g->ctxp, a->pt_regs_off, 8);
		if (a->idx_pt_regs_off >= 0)
			v = LLVMBuildAdd(
				ir->b, v,
				LLVMBuildMul(ir->b,
					     irb_ctx_load(ir, g->ctxp,
							  a->idx_pt_regs_off,
							  8),
					     irb_const(ir, a->scale), ""),
				"");
		v = LLVMBuildAdd(ir->b, v, irb_const(ir, a->val), "");
		buf = irb_alloca(ir, 8, "usdt_arg");
		LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
		irb_probe_read(ir, IRB_READ_USER, buf,
			       LLVMConstInt(ir->i32, a->size, 0), v);
		v = LLVMBuildLoad2(ir->b, ir->i64, buf, "");
		return cg_extend(g, v, a->size, a->is_signed);
	default:
		break;
	}
	cg_unsupported(g, n, arena_printf(&g->c->arena,
					  "USDT argument \"%s\"",
					  g->match->usdt_args));
	return irb_const(ir, 0);
}

/*
 * ppid: the current task's real_parent->pid, read through the offsets
 * of the running kernel's BTF; getppid() in native code.
 */
static LLVMValueRef cg_ppid(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	size_t parent, pid;
	LLVMValueRef task, buf;

	if (irb_is_native(ir))
		return irb_native_syscall(ir, 110 /* getppid */, NULL, 0);
	if (cg_btf_member_offset("task_struct", "real_parent", &parent) ||
	    cg_btf_member_offset("task_struct", "pid", &pid)) {
		cg_unsupported(g, n, "ppid without the kernel's BTF");
		return irb_const(ir, 0);
	}
	task = irb_helper(ir, BPF_FUNC_get_current_task, NULL, 0);
	buf = irb_alloca(ir, 8, "ppid");
	LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
	irb_probe_read(ir, IRB_READ_KERNEL, buf, irb_const(ir, 8),
		       LLVMBuildAdd(ir->b, task, irb_const(ir, parent), ""));
	task = LLVMBuildLoad2(ir->b, ir->i64, buf, "");
	LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
	irb_probe_read(ir, IRB_READ_KERNEL, buf, irb_const(ir, 4),
		       LLVMBuildAdd(ir->b, task, irb_const(ir, pid), ""));
	return LLVMBuildZExt(ir->b, LLVMBuildLoad2(ir->b, ir->i32, buf, ""),
			     ir->i64, "");
}

/* pcomm: the current task's real_parent->comm (kernel only). */
static LLVMValueRef cg_pcomm(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	size_t parent, comm, sz = n->type->size;
	LLVMValueRef task, buf, slot;

	if (cg_btf_member_offset("task_struct", "real_parent", &parent) ||
	    cg_btf_member_offset("task_struct", "comm", &comm)) {
		cg_unsupported(g, n, "pcomm without the kernel's BTF");
		return irb_alloca(ir, sz, "pcomm");
	}
	task = irb_helper(ir, BPF_FUNC_get_current_task, NULL, 0);
	slot = irb_alloca(ir, 8, "parent");
	LLVMBuildStore(ir->b, irb_const(ir, 0), slot);
	irb_probe_read(ir, IRB_READ_KERNEL, slot, irb_const(ir, 8),
		       LLVMBuildAdd(ir->b, task, irb_const(ir, parent), ""));
	task = LLVMBuildLoad2(ir->b, ir->i64, slot, "");
	buf = irb_alloca(ir, sz, "pcomm");
	irb_memset(ir, buf, 0, (sz + 7) & ~(size_t)7);
	irb_probe_read(ir, IRB_READ_KERNEL_STR, buf, irb_const(ir, sz),
		       LLVMBuildAdd(ir->b, task, irb_const(ir, comm), ""));
	return buf;
}

LLVMValueRef cg_builtin(struct cg *g, struct ast_node *n)
{
	struct sema_node *s = n->sema;
	struct irb *ir = &g->ir;
	static const size_t argregs[] = { PT_DI, PT_SI, PT_DX,
					  PT_CX, PT_R8, PT_R9 };
	LLVMValueRef v, buf;

	switch (s ? s->builtin : BI_NONE) {
	case BI_PID:
		v = irb_helper(ir, BPF_FUNC_get_current_pid_tgid, NULL, 0);
		return LLVMBuildLShr(ir->b, v, irb_const(ir, 32), "pid");
	case BI_TID:
		v = irb_helper(ir, BPF_FUNC_get_current_pid_tgid, NULL, 0);
		return LLVMBuildAnd(ir->b, v, irb_const(ir, 0xffffffff),
				    "tid");
	case BI_UID:
	case BI_USERNAME:
		v = irb_helper(ir, BPF_FUNC_get_current_uid_gid, NULL, 0);
		return LLVMBuildAnd(ir->b, v, irb_const(ir, 0xffffffff),
				    "uid");
	case BI_GID:
		v = irb_helper(ir, BPF_FUNC_get_current_uid_gid, NULL, 0);
		return LLVMBuildLShr(ir->b, v, irb_const(ir, 32), "gid");
	case BI_COMM: {
		size_t sz = n->type && n->type->size ? n->type->size : 16;
		LLVMValueRef args[2];

		buf = irb_alloca(ir, sz, "comm");
		irb_memset(ir, buf, 0, (sz + 7) & ~(size_t)7);
		args[0] = buf;
		args[1] = LLVMConstInt(ir->i32, sz < 16 ? sz : 16, 0);
		irb_helper(ir, BPF_FUNC_get_current_comm, args, 2);
		return buf;
	}
	case BI_NSECS:
		return irb_helper(ir, BPF_FUNC_ktime_get_ns, NULL, 0);
	case BI_ELAPSED:
		v = irb_helper(ir, BPF_FUNC_ktime_get_ns, NULL, 0);
		return LLVMBuildSub(ir->b, v,
				    cg_globals_field(g, CG_GLOBALS_START),
				    "elapsed");
	case BI_CPU:
		return LLVMBuildZExt(
			ir->b,
			LLVMBuildTrunc(ir->b,
				       irb_helper(ir,
						  BPF_FUNC_get_smp_processor_id,
						  NULL, 0),
				       ir->i32, ""),
			ir->i64, "cpu");
	case BI_CPID:
		return cg_globals_field(g, CG_GLOBALS_CPID);
	case BI_RAND:
		return LLVMBuildZExt(
			ir->b,
			LLVMBuildTrunc(ir->b,
				       irb_helper(ir,
						  BPF_FUNC_get_prandom_u32,
						  NULL, 0),
				       ir->i32, ""),
			ir->i64, "rand");
	case BI_ARG:
		if (cg_is_usdt(g))
			return cg_usdt_arg(g, n, s->arg);
		if (cg_kernel_kind(g) == CG_KCTX_U64 && s->arg >= 0 &&
		    s->arg < 12)
			return cg_int_norm(g,
					   irb_ctx_load(ir, g->ctxp,
							8 * s->arg, 8),
					   n->type);
		if ((!cg_is_uprobe(g) && cg_kernel_kind(g) != CG_KCTX_REGS) ||
		    s->arg < 0 || s->arg > 5)
			break;
		return cg_int_norm(g,
				   irb_ctx_load(ir, g->ctxp, argregs[s->arg], 8),
				   n->type);
	case BI_RETVAL:
		if (cg_kernel_kind(g) == CG_KCTX_U64)
			return cg_kernel_retval(g, n);
		if (!cg_is_uprobe(g) && cg_kernel_kind(g) != CG_KCTX_REGS)
			break;
		return cg_int_norm(g, irb_ctx_load(ir, g->ctxp, PT_AX, 8),
				   n->type);
	case BI_SARG: {
		LLVMValueRef sp;

		if (!cg_is_uprobe(g) && cg_kernel_kind(g) != CG_KCTX_REGS)
			break;
		sp = irb_ctx_load(ir, g->ctxp, PT_SP, 8);
		sp = LLVMBuildAdd(ir->b, sp,
				  irb_const(ir, 8 * (s->arg + 1)), "");
		buf = irb_alloca(ir, 8, "sarg");
		LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
		irb_probe_read(ir, cg_is_uprobe(g) ? IRB_READ_USER :
						     IRB_READ_KERNEL, buf,
			       LLVMConstInt(ir->i32, 8, 0), sp);
		return cg_load(g, buf, n->type);
	}
	case BI_FUNC:
		if (cg_is_uprobe(g)) {
			LLVMValueRef ip = cg_func_ip(g);

			if (cg_is_scalar(n->type))
				return ip;
			buf = irb_alloca(ir, n->type->size, "usym");
			irb_memset(ir, buf, 0, (n->type->size + 7) & ~7ul);
			LLVMBuildStore(ir->b, ip, buf);
			if (n->type->size >= 16) {
				/* { ip, u32 pid, u32 program + 1 } (cg.h) */
				v = irb_helper(ir,
					       BPF_FUNC_get_current_pid_tgid,
					       NULL, 0);
				v = LLVMBuildLShr(ir->b, v, irb_const(ir, 32),
						  "");
				v = LLVMBuildOr(ir->b, v,
						irb_const(ir,
							  (uint64_t)(cg_prog_id(g) +
								     1)
								  << 32),
						"");
				LLVMBuildStore(ir->b, v, irb_gep(ir, buf, 8));
			}
			return buf;
		}
		if (cg_kernel_kind(g) != CG_KCTX_NONE && n->type &&
		    n->type->kind == TY_KSYM)
			return cg_kernel_func(g);
		if (n->type && n->type->kind == TY_STRING) {
			const char *f = g->ap && g->ap->ap.func ?
						g->ap->ap.func : "";

			return cg_string_lit(g, f, strlen(f), n->type->size);
		}
		break;
	case BI_PROBE:
		if (cg_is_scalar(n->type))
			return irb_const(ir, cg_prog_id(g));
		break;
	case BI_ARGS:
		if (n->type && n->type->kind == TY_RECORD)
			return cg_args_value(g, n);
		/* fall through */
	case BI_CTX:
		return LLVMBuildPtrToInt(ir->b, g->ctxp, ir->i64, "ctx");
	case BI_CURTASK:
		return irb_helper(ir, BPF_FUNC_get_current_task, NULL, 0);
	case BI_CGROUP:
		return irb_helper(ir, BPF_FUNC_get_current_cgroup_id, NULL, 0);
	case BI_PPID:
		return cg_ppid(g, n);
	case BI_PCOMM:
		return cg_pcomm(g, n);
	case BI_NCPUS: {
		/* the machine's possible CPUs, as bpftrace (0.19 on) */
		int n = libbpf_num_possible_cpus();

		return irb_const(ir, n > 0 ? (uint64_t)n : 1);
	}
	case BI_JIFFIES:
		return irb_helper(ir, BPF_FUNC_jiffies64, NULL, 0);
	case BI_NUMAID:
		return irb_helper(ir, BPF_FUNC_get_numa_node_id, NULL, 0);
	case BI_USTACK:
	case BI_KSTACK:
		return cg_stack(g, n);
	case BI_USERMODE:
		return cg_usermode(g);
	default:
		break;
	}
	cg_unsupported(g, n, arena_printf(&g->c->arena, "builtin %s here",
					  n->ident.name));
	return irb_const(ir, 0);
}

/* args.f / args->f in a tracepoint: read the field from the context. */
static LLVMValueRef cg_tp_field(struct cg *g, struct ast_node *n,
				const struct type *rec)
{
	struct irb *ir = &g->ir;

	for (int i = 0; i < rec->nfields; i++) {
		struct type_field *f = &rec->fields[i];
		LLVMValueRef buf, p;

		if (!f->name || strcmp(f->name, n->field.field))
			continue;
		p = irb_gep(ir, g->ctxp, f->offset);
		if (tp_field_is_data_loc(rec, i)) {
			LLVMValueRef off = LLVMBuildLoad2(ir->b, ir->i32, p,
							  "");

			off = LLVMBuildAnd(ir->b, off,
					   LLVMConstInt(ir->i32, 0xffff, 0),
					   "");
			off = LLVMBuildZExt(ir->b, off, ir->i64, "");
			return LLVMBuildAdd(ir->b,
					    LLVMBuildPtrToInt(ir->b, g->ctxp,
							      ir->i64, ""),
					    off, "data_loc");
		}
		if (cg_is_scalar(f->type)) {
			size_t sz = f->type->size;
			LLVMValueRef v;

			if (sz != 1 && sz != 2 && sz != 4 && sz != 8) {
				cg_unsupported(g, n, "this field size");
				return irb_const(ir, 0);
			}
			v = irb_ctx_load(ir, g->ctxp, f->offset, sz);
			if (sz < 8)
				v = cg_signed(f->type) ?
					    LLVMBuildSExt(ir->b, v, ir->i64, "") :
					    LLVMBuildZExt(ir->b, v, ir->i64, "");
			return cg_int_norm(g, v, n->type);
		}
		buf = irb_alloca(ir, f->type->size, "field");
		irb_memset(ir, buf, 0, (f->type->size + 7) & ~7ul);
		irb_probe_read(ir, IRB_READ_KERNEL, buf,
			       LLVMConstInt(ir->i32, f->type->size, 0), p);
		return buf;
	}
	cg_unsupported(g, n, "this field");
	return irb_const(ir, 0);
}

/*
 * `args` as a value (sema_t_args_value()): each parameter copied from the
 * context's record (its register) to its place in the C layout.
 */
LLVMValueRef cg_args_value(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	const struct type *rec = n->type, *src = g->args_type;
	LLVMValueRef buf = irb_alloca(ir, rec->size, "args");

	irb_memset(ir, buf, 0, (rec->size + 7) & ~(size_t)7);
	for (int i = 0; i < rec->nfields; i++) {
		const struct type_field *f = &rec->fields[i], *sf = NULL;
		size_t sz = f->type->size;
		LLVMTypeRef it;

		for (int j = 0; src && j < src->nfields; j++)
			if (src->fields[j].name && f->name &&
			    !strcmp(src->fields[j].name, f->name))
				sf = &src->fields[j];
		if (!sf || (sz != 1 && sz != 2 && sz != 4 && sz != 8)) {
			cg_unsupported(g, n, "this parameter in args");
			return buf;
		}
		it = LLVMIntTypeInContext(ir->ctx, (unsigned)sz * 8);
		LLVMBuildStore(ir->b, irb_ctx_load(ir, g->ctxp, sf->offset, sz),
			       LLVMBuildBitCast(ir->b,
						irb_gep(ir, buf, f->offset),
						LLVMPointerType(it, 0), ""));
	}
	return buf;
}

LLVMValueRef cg_field(struct cg *g, struct ast_node *n)
{
	struct ast_node *e = n->field.expr;
	const struct type *t = e->type;

	if (e->kind == AST_BUILTIN && e->sema &&
	    e->sema->builtin == BI_ARGS) {
		const struct type *rec = t;

		if (rec && rec->kind == TY_POINTER)
			rec = rec->elem;
		if (g->args_type)
			rec = g->args_type;
		if (rec && rec->kind == TY_RECORD)
			return cg_tp_field(g, n, rec);
	}
	cg_unsupported(g, n, "this field access");
	return irb_const(&g->ir, 0);
}

