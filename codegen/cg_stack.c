/*
 * Lowering of stacks, symbols and registers: ustack/kstack (builtins and
 * calls), ksym(), reg(), kaddr(), uaddr().
 *
 * Values (cg.h): a kstack is a u64, the stack id in the stack map of its
 * limit (negative: the kernel's error, printed as an empty stack); a
 * ustack is { u64 id; u64 pid }.  The BPF target takes the id from
 * bpf_get_stackid() on the map "ubt_stack_<limit>" (one per limit, shared
 * by user and kernel stacks: an id names the frames whatever their kind).
 * The native target walks the frame pointers inside the process
 * (cg_stack_native.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "probes.h"
#include "stack.h"
#include "util.h"

#define CG_STACK_ENTRIES 16384

/* The stack map of limit frames, defined on first use. */
static LLVMValueRef cg_stack_map(struct cg *g, int limit)
{
	char name[32];
	LLVMValueRef m;

	snprintf(name, sizeof(name), CG_MAP_STACK_PREFIX "%d", limit);
	m = LLVMGetNamedGlobal(g->ir.mod, name);
	if (m)
		return m;
	return irb_map_define(&g->ir, arena_strdup(&g->c->arena, name),
			      BPF_MAP_TYPE_STACK_TRACE, 4, 8 * (size_t)limit,
			      CG_STACK_ENTRIES);
}

/*
 * A -c command's mappings are gone once it exits, and a map printed at
 * the end holds addresses of it: the first time a probe takes a user
 * address of that process (a ustack, usym()), stop it (SIGSTOP) and tell
 * ubt (CG_EV_STACK_NOTE: { hdr; u64 pid }), which takes a snapshot of its
 * mappings and lets it go on (SIGCONT).  Once per process: the map
 * CG_MAP_STACK_NOTED holds the pids done.
 */
void cg_stack_note(struct cg *g, const struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMValueRef gp, cpid, pid, noted, key, one, r, rec, sig;
	LLVMBasicBlockRef cont, is_c, first, done;
	int ev;

	if (irb_is_native(ir))
		return;
	gp = cg_globals_ptr(g);
	cont = cg_if_nonnull(g, gp);
	cpid = LLVMBuildLoad2(ir->b, ir->i64,
			      irb_gep(ir, gp, CG_GLOBALS_CPID), "cpid");
	pid = LLVMBuildLShr(ir->b,
			    irb_helper(ir, BPF_FUNC_get_current_pid_tgid,
				       NULL, 0),
			    irb_const(ir, 32), "pid");
	is_c = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "note_cpid");
	first = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "note_first");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "note_done");
	LLVMBuildCondBr(ir->b,
			LLVMBuildAnd(ir->b,
				     LLVMBuildICmp(ir->b, LLVMIntEQ, pid, cpid,
						   ""),
				     LLVMBuildICmp(ir->b, LLVMIntNE, cpid,
						   irb_const(ir, 0), ""),
				     ""),
			is_c, done);
	LLVMPositionBuilderAtEnd(ir->b, is_c);
	noted = LLVMGetNamedGlobal(ir->mod, CG_MAP_STACK_NOTED);
	if (!noted)
		noted = irb_map_define(ir, CG_MAP_STACK_NOTED,
				       BPF_MAP_TYPE_HASH, 8, 8, 1024);
	key = irb_alloca(ir, 8, "note_pid");
	LLVMBuildStore(ir->b, pid, key);
	one = irb_alloca(ir, 8, "note_one");
	LLVMBuildStore(ir->b, irb_const(ir, 1), one);
	r = irb_map_update(ir, noted, key, one, BPF_NOEXIST);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntEQ, r, irb_const(ir, 0),
				      ""),
			first, done);
	LLVMPositionBuilderAtEnd(ir->b, first);
	sig = irb_const(ir, 19 /* SIGSTOP */);
	irb_helper(ir, BPF_FUNC_send_signal, &sig, 1);
	ev = cg_event_new(g, CG_EV_STACK_NOTE, n);
	rec = cg_record_begin(g, ev, 16);
	LLVMBuildStore(ir->b, pid, irb_gep(ir, rec, 8));
	cg_record_send(g, rec, 16);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

LLVMValueRef cg_stack(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	const struct type *t = n->type;
	bool user = t->kind == TY_USTACK;
	LLVMValueRef buf, id, args[3];

	if (irb_is_native(ir) && user)
		return cg_stack_native(g, n);
	if (irb_is_native(ir) || g->probe->provider == PROV_BEGIN ||
	    g->probe->provider == PROV_END) {
		/*
		 * The empty stack: BEGIN and END have no traced task, and a
		 * uprobe has no kernel stack (the kernel's stack id is
		 * -EFAULT there too, kstack prints nothing)
		 */
		buf = irb_alloca(ir, t->size, user ? "ustack" : "kstack");
		LLVMBuildStore(ir->b, irb_const(ir, (uint64_t)-EFAULT), buf);
		if (user)
			LLVMBuildStore(ir->b, irb_const(ir, 0),
				       irb_gep(ir, buf, 8));
		return buf;
	}
	if (user)
		cg_stack_note(g, n);
	args[0] = g->ctxp;
	args[1] = cg_stack_map(g, stack_limit(t));
	args[2] = irb_const(ir, user ? BPF_F_USER_STACK : 0);
	id = irb_helper(ir, BPF_FUNC_get_stackid, args, 3);
	/* the helper's int result, sign-extended */
	id = LLVMBuildSExt(ir->b, LLVMBuildTrunc(ir->b, id, ir->i32, ""),
			   ir->i64, "stackid");
	buf = irb_alloca(ir, t->size, user ? "ustack" : "kstack");
	LLVMBuildStore(ir->b, id, buf);
	if (user) {
		LLVMValueRef pt = irb_helper(ir, BPF_FUNC_get_current_pid_tgid,
					     NULL, 0);

		LLVMBuildStore(ir->b,
			       LLVMBuildLShr(ir->b, pt, irb_const(ir, 32), ""),
			       irb_gep(ir, buf, 8));
	}
	return buf;
}

/* reg("name"): the register at pt_regs offset iargs[0]. */
LLVMValueRef cg_reg(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	size_t off = (size_t)n->sema->iargs[0];

	if (irb_is_native(ir))
		return cg_reg_native(g, n, off);
	return irb_ctx_load(ir, g->ctxp, off, 8);
}

/* The address of a kernel symbol, from /proc/kallsyms; 0 when absent. */
static uint64_t cg_kallsyms_addr(const char *name)
{
	char line[512], sym[256];
	unsigned long long a;
	uint64_t found = 0;
	char kind;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &kind, sym) == 3 &&
		    !strcmp(sym, name)) {
			found = a;
			break;
		}
	fclose(f);
	return found;
}

/* A literal argument's text: "text", $N or str($N); NULL otherwise. */
static const char *cg_literal(struct cg *g, const struct ast_node *a)
{
	if (a && a->kind == AST_CALL && !strcmp(a->call.name, "str") &&
	    a->call.nargs == 1 && a->call.args->kind == AST_POSITIONAL)
		a = a->call.args;
	if (a && a->kind == AST_STRING)
		return a->str.value;
	if (a && a->kind == AST_POSITIONAL)
		return a->pos.num >= 1 && a->pos.num <= g->c->nparams ?
			       g->c->params[a->pos.num - 1] : "";
	return NULL;
}

LLVMValueRef cg_kaddr(struct cg *g, struct ast_node *n)
{
	const char *s = cg_literal(g, n->call.args);
	uint64_t addr;

	addr = s ? cg_kallsyms_addr(s) : 0;
	if (!addr) {
		diag_error(&g->c->diag, &n->loc,
			   "Failed to resolve kernel symbol: %s", s ? s : "");
		g->err = -EINVAL;
	}
	return irb_const(&g->ir, addr);
}

#define CG_PT_IP 128	/* offsetof(struct pt_regs, ip), x86-64 */

/*
 * In a uretprobe, where bpf_get_func_ip() reads 0 (kernels before 6.6,
 * Debian 12's 6.1): the probed function's address as the kernel's own
 * uretprobe dispatcher keeps it while the programs run: it points
 * current->utask->vaddr at its struct uprobe_dispatch_data, whose
 * bp_addr is the function (what bpf_get_func_ip() itself reads from
 * 6.6 on).  The offsets are the running kernel's BTF; where it lacks
 * one of them, 0 (func then prints as bpftrace's does there).
 */
static LLVMValueRef cg_uretprobe_func(struct cg *g, LLVMValueRef ip)
{
	struct irb *ir = &g->ir;
	size_t utask, vaddr, bp;
	LLVMValueRef p, buf;

	if (cg_btf_member_offset("task_struct", "utask", &utask) ||
	    cg_btf_member_offset("uprobe_task", "vaddr", &vaddr) ||
	    cg_btf_member_offset("uprobe_dispatch_data", "bp_addr", &bp))
		return ip;
	buf = irb_alloca(ir, 8, "func_ip");
	p = irb_helper(ir, BPF_FUNC_get_current_task, NULL, 0);
	for (int i = 0; i < 3; i++) {
		size_t off = i == 0 ? utask : i == 1 ? vaddr : bp;

		LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
		irb_probe_read(ir, IRB_READ_KERNEL, buf, irb_const(ir, 8),
			       LLVMBuildAdd(ir->b, p, irb_const(ir, off), ""));
		p = LLVMBuildLoad2(ir->b, ir->i64, buf, "");
	}
	return LLVMBuildSelect(ir->b,
			       LLVMBuildICmp(ir->b, LLVMIntNE, ip,
					     irb_const(ir, 0), ""),
			       ip, p, "func_ip");
}

/*
 * The probed function's address in a uprobe's program.  At a uprobe's or
 * USDT site the kernel has set the registers' ip to the probed address
 * before it runs the programs (handle_swbp(), on every kernel), whereas
 * bpf_get_func_ip() reads 0 in uprobes on kernels before uprobe_multi
 * links (Debian 12's 6.1).  In a uretprobe ip is the return address:
 * bpf_get_func_ip() knows the function there, or the kernel's uretprobe
 * dispatcher (cg_uretprobe_func()).
 */
LLVMValueRef cg_func_ip(struct cg *g)
{
	struct irb *ir = &g->ir;
	enum sema_provider p = g->sap ? g->sap->provider :
					g->probe->provider;
	LLVMValueRef ip;

	if (!irb_is_native(ir) && p != PROV_URETPROBE)
		return irb_ctx_load(ir, g->ctxp, CG_PT_IP, 8);
	ip = irb_helper(ir, BPF_FUNC_get_func_ip, &g->ctxp, 1);
	return irb_is_native(ir) ? ip : cg_uretprobe_func(g, ip);
}

/*
 * uaddr("name"): the symbol's address in the probed binary, plus where
 * the binary is loaded (a PIE executable or a library anywhere): the
 * probed address less the probed function's address in the file.
 */
LLVMValueRef cg_uaddr(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	const struct probes_match *m = g->match;
	struct ast_node *a = n->call.args;
	const char *s = cg_literal(g, a);
	uint64_t addr = 0, size;
	LLVMValueRef ip;

	if (!s && a && a->kind == AST_POSITIONAL && a->pos.num >= 1 &&
	    a->pos.num <= g->c->nparams)
		s = g->c->params[a->pos.num - 1];
	if (!m || !m->target || !m->addr || !s ||
	    probes_elf_symbol(m->target, s, &addr, &size)) {
		diag_error(&g->c->diag, &n->loc,
			   "Could not resolve symbol: %s:%s",
			   m && m->target ? m->target : "", s ? s : "");
		g->err = -EINVAL;
		return irb_const(ir, 0);
	}
	ip = irb_is_native(ir) ? irb_native_func_ip(ir) : cg_func_ip(g);
	return LLVMBuildAdd(ir->b,
			    LLVMBuildSub(ir->b, ip, irb_const(ir, m->addr), ""),
			    irb_const(ir, addr), "uaddr");
}
