/*
 * irb for the native target: the BPF helpers a probe body calls (time,
 * cpu, map iteration, user-memory reads, the output ring), lowered to
 * inline code, inline system calls or calls into the runtime.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>
#include <llvm-c/Core.h>

#include "cg.h"
#include "cg_int.h"
#include "irb.h"
#include "irb_native.h"
#include "native.h"
#include "output.h"
#include "rt_abi.h"
#include "irb_native_int.h"
#include "util.h"

/* An inline system call with up to three arguments. */
LLVMValueRef irb_native_syscall(struct irb *ir, long nr, LLVMValueRef *args,
				int n)
{
	static const char *cons[] = {
		"={rax},{rax},~{rcx},~{r11},~{memory}",
		"={rax},{rax},{rdi},~{rcx},~{r11},~{memory}",
		"={rax},{rax},{rdi},{rsi},~{rcx},~{r11},~{memory}",
		"={rax},{rax},{rdi},{rsi},{rdx},~{rcx},~{r11},~{memory}",
	};
	LLVMTypeRef params[4];
	LLVMValueRef a[4];
	LLVMTypeRef ft;
	LLVMValueRef asmv;

	BUG_ON(n > 3);
	a[0] = irb_const(ir, nr);
	params[0] = ir->i64;
	for (int i = 0; i < n; i++) {
		a[i + 1] = args[i];
		params[i + 1] = LLVMTypeOf(args[i]);
	}
	ft = LLVMFunctionType(ir->i64, params, n + 1, 0);
	asmv = LLVMGetInlineAsm(ft, "syscall", 7, (char *)cons[n],
				strlen(cons[n]), 1, 0, LLVMInlineAsmDialectATT,
				0);
	return LLVMBuildCall2(ir->b, ft, asmv, a, n + 1, "");
}

/* A load of the control block's field at off, of type t (volatile: ubt
 * rewrites it while the target runs). */
static LLVMValueRef nat_ctl_load(struct irb *ir, LLVMValueRef ctl,
				 LLVMTypeRef t, size_t off, const char *name)
{
	LLVMValueRef v = LLVMBuildLoad2(ir->b, t, irb_gep(ir, ctl, off), name);

	LLVMSetVolatile(v, 1);
	return v;
}

/*
 * CLOCK_MONOTONIC in ns, as bpf_ktime_get_ns(), without a call where the
 * time-stamp counter is a clock: ubt keeps a linear map from the counter
 * to the kernel's clock in the control block (rt_abi.h, clk_*;
 * shim/user/user_clock.c), read under its sequence count:
 *
 *	tsc = rdtsc;
 *	seq = ctl->clk_seq; mult = ctl->clk_mult; tsc0, ns0;
 *	if (!seq || (seq & 1) || ctl->clk_seq != seq)
 *		return rt_clock_ns();	// the vDSO: no system call either
 *	return ns0 + ((s128)(s64)(tsc - tsc0) * (s64)mult >> RT_CLK_SHIFT);
 *
 * Never a loop: a ubt killed while it wrote leaves seq odd, and probes
 * read the vDSO from then on.  The rdtsc is most of the cost (~12 ns a
 * read on AMD Zen 3, which no other instruction here changes): the rest
 * is kept to what overlaps with it: a constant shift and mult below 2^63
 * (one imul and a shrd), and the vDSO's slow path through
 * nat_call_kept(), so that the probe saves no registers for it.
 */
/* The thread runs with the time-stamp counter off (RT_BLK_NOTSC): i1. */
static LLVMValueRef nat_notsc(struct irb *ir)
{
	LLVMValueRef v = LLVMBuildLoad2(ir->b, ir->i32,
					irb_gep(ir, irb_nat.blk, RT_BLK_NOTSC),
					"notsc");

	return LLVMBuildICmp(ir->b, LLVMIntNE, v, LLVMConstInt(ir->i32, 0, 0),
			     "");
}

static LLVMValueRef nat_clock(struct irb *ir)
{
	LLVMBasicBlockRef fast, slow, done;
	LLVMValueRef ctl, seq, seq2, mult, tsc0, ns0, tsc, bad, v, r;
	LLVMValueRef vals[2];
	LLVMBasicBlockRef bbs[2];
	LLVMTypeRef i128 = LLVMInt128TypeInContext(ir->ctx);

	ctl = nat_ctl(ir);
	fast = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "clk_tsc");
	slow = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "clk_vdso");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "clk_done");
	/*
	 * No segment (seq 0: the counter is no clock here, UBT_NO_TSC), or a
	 * thread with the counter off (RT_BLK_NOTSC): no rdtsc at all.  Then
	 * the counter: the segment read after it converts it as well (a new
	 * segment continues the old one; seq2 below is compared with seq).
	 * Each field is used as soon as it is read (the difference, the
	 * product, the sum), so that few values are live at once: fewer
	 * registers for the probe to save.
	 */
	seq = nat_ctl_load(ir, ctl, ir->i32,
			   offsetof(struct rt_ctl, clk_seq), "clk_seq");
	bad = LLVMBuildOr(
		ir->b,
		LLVMBuildICmp(ir->b, LLVMIntEQ, seq, LLVMConstInt(ir->i32, 0, 0),
			      ""),
		nat_notsc(ir), "clk_none");
	{
		LLVMBasicBlockRef read = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "clk_read");

		irb_unlikely(ir, LLVMBuildCondBr(ir->b, bad, slow, read),
			     true);
		LLVMPositionBuilderAtEnd(ir->b, read);
	}
	tsc = irb_native_cycles(ir);
	tsc0 = nat_ctl_load(ir, ctl, ir->i64,
			    offsetof(struct rt_ctl, clk_tsc0), "clk_tsc0");
	v = LLVMBuildSExt(ir->b, LLVMBuildSub(ir->b, tsc, tsc0, ""), i128, "");
	mult = nat_ctl_load(ir, ctl, ir->i64,
			    offsetof(struct rt_ctl, clk_mult), "clk_mult");
	v = LLVMBuildMul(ir->b, v, LLVMBuildSExt(ir->b, mult, i128, ""), "");
	v = LLVMBuildAShr(ir->b, v, LLVMConstInt(i128, RT_CLK_SHIFT, 0), "");
	ns0 = nat_ctl_load(ir, ctl, ir->i64,
			   offsetof(struct rt_ctl, clk_ns0), "clk_ns0");
	v = LLVMBuildAdd(ir->b, ns0, LLVMBuildTrunc(ir->b, v, ir->i64, ""),
			 "clk_ns");
	seq2 = nat_ctl_load(ir, ctl, ir->i32,
			    offsetof(struct rt_ctl, clk_seq), "clk_seq2");
	/* ubt rewrote the segment meanwhile, or is writing it */
	bad = LLVMBuildOr(ir->b,
			  LLVMBuildICmp(ir->b, LLVMIntNE, seq, seq2, ""),
			  LLVMBuildTrunc(ir->b, seq, ir->i1, ""), "clk_bad");
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, bad, slow, fast), true);

	LLVMPositionBuilderAtEnd(ir->b, fast);
	vals[0] = v;
	bbs[0] = LLVMGetInsertBlock(ir->b);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, slow);
	/* the vDSO's clock (kvm-clock, UBT_NO_TSC): every nsecs there */
	vals[1] = LLVMBuildPtrToInt(ir->b, nat_call_clobber(ir, RT_FN_CLOCK_NS),
				    ir->i64, "");
	bbs[1] = LLVMGetInsertBlock(ir->b);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, done);
	r = LLVMBuildPhi(ir->b, ir->i64, "nsecs");
	LLVMAddIncoming(r, vals, bbs, 2);
	return r;
}

/*
 * getcpu(2): the thread's CPU, or its NUMA node, as the vDSO's getcpu()
 * reads them, (node << 12) | cpu: from the kernel's per-CPU TSC_AUX with
 * rdpid (~2 ns here) where the CPU has it, else rdtscp (~23 ns); else
 * (a CPU, or a virtual machine, with neither: the kernel then writes no
 * TSC_AUX) the limit of the per-CPU segment the kernel sets up for the
 * vDSO (lsl of __CPUNODE_SEG, which every x86-64 CPU can run in user
 * mode).  Never a system call.  The target runs on this machine: an
 * instruction the CPU lacks would fault, so each is used only where cpuid
 * lists it.
 */
static LLVMValueRef nat_getcpu_lsl(struct irb *ir);

static bool nat_cpuid_bit(unsigned int leaf, int reg, int bit)
{
	unsigned int r[4];

	__asm__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
		: "a"(leaf & 0x80000000u), "c"(0));
	if (r[0] < leaf)
		return false;
	__asm__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
		: "a"(leaf), "c"(0));
	return r[reg] & (1u << bit);
}

static LLVMValueRef nat_getcpu(struct irb *ir, bool node)
{
	LLVMValueRef aux = NULL;

	bool no_rdtscp = getenv("UBT_NO_RDTSCP") != NULL;

	if (!no_rdtscp && !getenv("UBT_NO_RDPID") &&
	    nat_cpuid_bit(7, 2 /* ecx */, 22)) {
		LLVMTypeRef ft = LLVMFunctionType(ir->i64, NULL, 0, 0);
		LLVMValueRef asmv = LLVMGetInlineAsm(
			ft, "rdpid $0", 8, "=r", 2, 1, 0,
			LLVMInlineAsmDialectATT, 0);

		aux = LLVMBuildCall2(ir->b, ft, asmv, NULL, 0, "tsc_aux");
	} else if (!no_rdtscp &&
		   nat_cpuid_bit(0x80000001u, 3 /* edx */, 27)) {
		LLVMTypeRef st = LLVMStructTypeInContext(
			ir->ctx, (LLVMTypeRef[]){ ir->i32, ir->i32 }, 2, 0);
		LLVMTypeRef ft = LLVMFunctionType(st, NULL, 0, 0);
		LLVMValueRef asmv = LLVMGetInlineAsm(
			ft, "rdtscp", 6, "={eax},={ecx},~{edx}", 20, 1, 0,
			LLVMInlineAsmDialectATT, 0);
		LLVMBasicBlockRef yes, no, done;
		LLVMValueRef r, v[2];
		LLVMBasicBlockRef from[2];

		/* rdtscp faults where the thread has the counter off */
		yes = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "rdtscp");
		no = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "cpu_lsl");
		done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "cpu");
		irb_unlikely(ir, LLVMBuildCondBr(ir->b, nat_notsc(ir), no, yes),
			     true);
		LLVMPositionBuilderAtEnd(ir->b, yes);
		r = LLVMBuildCall2(ir->b, ft, asmv, NULL, 0, "");
		v[0] = LLVMBuildZExt(ir->b,
				     LLVMBuildExtractValue(ir->b, r, 1, "aux"),
				     ir->i64, "");
		from[0] = LLVMGetInsertBlock(ir->b);
		LLVMBuildBr(ir->b, done);
		LLVMPositionBuilderAtEnd(ir->b, no);
		v[1] = nat_getcpu_lsl(ir);
		from[1] = LLVMGetInsertBlock(ir->b);
		LLVMBuildBr(ir->b, done);
		LLVMPositionBuilderAtEnd(ir->b, done);
		aux = LLVMBuildPhi(ir->b, ir->i64, "tsc_aux");
		LLVMAddIncoming(aux, v, from, 2);
	}
	if (!aux)
		aux = nat_getcpu_lsl(ir);
	aux = LLVMBuildAnd(ir->b, aux, irb_const(ir, 0xffffffff), "");
	return node ? LLVMBuildLShr(ir->b, aux, irb_const(ir, 12), "") :
		      LLVMBuildAnd(ir->b, aux, irb_const(ir, 0xfff), "");
}

/* The kernel's GDT_ENTRY_CPUNODE (15) as a user-mode selector. */
#define NAT_CPUNODE_SEG (15 * 8 + 3)

static LLVMValueRef nat_getcpu_lsl(struct irb *ir)
{
	LLVMTypeRef ft = LLVMFunctionType(ir->i32, &ir->i32, 1, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(ft, "lsl $1, $0", 10, "=r,r", 4,
					     0, 0, LLVMInlineAsmDialectATT, 0);
	LLVMValueRef seg = LLVMConstInt(ir->i32, NAT_CPUNODE_SEG, 0);

	return LLVMBuildZExt(ir->b,
			     LLVMBuildCall2(ir->b, ft, asmv, &seg, 1, "cpunode"),
			     ir->i64, "");
}

/*
 * bpf_for_each_map_elem(map, callback, ctx, flags) over a shared table:
 *
 *	for (i = 0, count = 0; (i = rt_shtab_next(tab, i, key, val)); )
 *		if (count++, callback(ctx, key, val, blk))
 *			break;
 *
 * key and val are this loop's buffers in the thread's map area; the
 * callback (irb_native_callback_begin()) is inlined. Returns the entries
 * visited, as the kernel does (len(): a callback that returns 0).
 * Over an aggregation (a per-thread table, HTAB and not plain), the same
 * loop with rt_htab_next_all(): every thread's keys, this thread's values
 * (a per-CPU map's keys with the current CPU's values).
 */
static LLVMValueRef nat_for_each(struct irb *ir, LLVMValueRef *args, int n)
{
	struct native_map *m;
	LLVMValueRef tab, kbuf, vbuf, from, cnt, next, cnt1, r, res, a[4];
	LLVMBasicBlockRef pre, loop, body, done;
	LLVMTypeRef ft;
	uint64_t off;

	BUG_ON(n != 4 || !irb_nat.nest);
	irb_nat.nest--;
	if (irb_nat.nest < NAT_MAX_NEST)
		irb_nat.blk = irb_nat.outer_blk[irb_nat.nest];
	m = nat_find(args[0]);
	if (!m || (m->kind != NATIVE_MAP_SHARED &&
		   (m->kind != NATIVE_MAP_HTAB || m->plain))) {
		nat_unsupported("a map iteration (for, len()) over a map "
				"that is not in the shared table");
		return irb_const(ir, 0);
	}
	off = irb_nat.area;
	irb_nat.area = rt_align8(irb_nat.area + rt_align8(m->key_size) +
			     rt_align8(m->val_size));
	tab = m->kind == NATIVE_MAP_SHARED ? nat_shtab(ir, m) :
					     nat_map_area(ir, m->off);
	kbuf = nat_map_area(ir, off);
	vbuf = nat_map_area(ir, off + rt_align8(m->key_size));
	pre = LLVMGetInsertBlock(ir->b);
	loop = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "each");
	body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "each_body");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "each_done");
	LLVMBuildBr(ir->b, loop);

	LLVMPositionBuilderAtEnd(ir->b, loop);
	from = LLVMBuildPhi(ir->b, ir->i64, "from");
	cnt = LLVMBuildPhi(ir->b, ir->i64, "count");
	a[0] = tab;
	a[1] = from;
	a[2] = kbuf;
	a[3] = vbuf;
	next = nat_call(ir, m->kind == NATIVE_MAP_SHARED ? RT_FN_SHTAB_NEXT :
							 RT_FN_HTAB_NEXT_ALL,
			ir->i64, a, 4);
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, next,
					     irb_const(ir, 0), ""),
			done, body);

	LLVMPositionBuilderAtEnd(ir->b, body);
	cnt1 = LLVMBuildAdd(ir->b, cnt, irb_const(ir, 1), "");
	a[0] = args[2];		/* the loop's context (cg_for_map()) */
	a[1] = kbuf;
	a[2] = vbuf;
	a[3] = irb_nat.blk;
	ft = LLVMGlobalGetValueType(args[1]);
	r = LLVMBuildCall2(ir->b, ft, args[1], a, 4, "");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntNE, r,
					     irb_const(ir, 0), ""),
			done, loop);
	nat_incoming2(from, irb_const(ir, 0), pre, next, body);
	nat_incoming2(cnt, irb_const(ir, 0), pre, cnt1, body);

	LLVMPositionBuilderAtEnd(ir->b, done);
	res = LLVMBuildPhi(ir->b, ir->i64, "visited");
	nat_incoming2(res, cnt, loop, cnt1, body);
	return res;
}

/*
 * comm: the thread's name as its block keeps it (runtime/rt_builtin.c),
 * brought up to date by RT_FN_COMM_SYNC when the word of its slot in the
 * control block changed (a rename: rt_abi.h, RT_COMM_SLOTS):
 *
 *	if (*blk->comm_slot != blk->comm_word)
 *		rt_comm_sync();
 *	memcpy(dst, blk->comm, size);
 */
static void nat_comm(struct irb *ir, LLVMValueRef dst, uint64_t size)
{
	LLVMBasicBlockRef sync, done;
	LLVMValueRef slot, word, seen;

	slot = LLVMBuildLoad2(ir->b, ir->ptr,
			      irb_gep(ir, irb_nat.blk, RT_BLK_COMM_SLOT),
			      "comm_slot");
	word = LLVMBuildLoad2(ir->b, ir->i64, slot, "comm_word");
	LLVMSetVolatile(word, 1);
	seen = LLVMBuildLoad2(ir->b, ir->i64,
			      irb_gep(ir, irb_nat.blk, RT_BLK_COMM_WORD),
			      "comm_seen");
	sync = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "comm_sync");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "comm_done");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntNE, word, seen, ""),
			sync, done);
	LLVMPositionBuilderAtEnd(ir->b, sync);
	nat_call(ir, RT_FN_COMM_SYNC, LLVMVoidTypeInContext(ir->ctx), NULL, 0);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	irb_native_memcpy(ir, dst, irb_gep(ir, irb_nat.blk, RT_BLK_COMM),
			  size);
	irb_nat.uses_task = true;
}

/*
 * uid and gid: the thread's, read when it took its block and again after
 * a credentials change of the process (runtime/rt_builtin.c):
 *
 *	if (*blk->cred_at != blk->cred_gen)
 *		rt_cred_sync();
 *	return blk->uid | (u64)blk->gid << 32;
 */
static LLVMValueRef nat_uid_gid(struct irb *ir)
{
	LLVMBasicBlockRef sync, done;
	LLVMValueRef at, gen, seen, v;

	at = LLVMBuildLoad2(ir->b, ir->ptr,
			    irb_gep(ir, irb_nat.blk, RT_BLK_CRED_AT), "cred_at");
	gen = LLVMBuildLoad2(ir->b, ir->i64, at, "cred_gen");
	LLVMSetVolatile(gen, 1);
	seen = LLVMBuildLoad2(ir->b, ir->i64,
			      irb_gep(ir, irb_nat.blk, RT_BLK_CRED_GEN),
			      "cred_seen");
	sync = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "cred_sync");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "cred_done");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntNE, gen, seen, ""),
			sync, done);
	LLVMPositionBuilderAtEnd(ir->b, sync);
	nat_call(ir, RT_FN_CRED_SYNC, LLVMVoidTypeInContext(ir->ctx), NULL, 0);
	LLVMBuildBr(ir->b, done);
	irb_nat.uses_task = true;
	LLVMPositionBuilderAtEnd(ir->b, done);
	v = LLVMBuildLoad2(ir->b, ir->i64, irb_gep(ir, irb_nat.blk, RT_BLK_UID),
			   "uid_gid");
	LLVMSetVolatile(v, 1);
	return v;
}

/*
 * rand: xorshift64* over the thread's own state in its block (seeded by
 * the runtime when the thread took the block: runtime/rt.c), the upper
 * 32 bits of the product.  Not cryptographic, as BPF's is not.
 */
static LLVMValueRef nat_rand(struct irb *ir)
{
	LLVMValueRef at = irb_gep(ir, irb_nat.blk, RT_BLK_RAND);
	LLVMValueRef x = LLVMBuildLoad2(ir->b, ir->i64, at, "rand_state");

	x = LLVMBuildXor(ir->b, x, LLVMBuildLShr(ir->b, x, irb_const(ir, 12),
						 ""), "");
	x = LLVMBuildXor(ir->b, x, LLVMBuildShl(ir->b, x, irb_const(ir, 25),
						""), "");
	x = LLVMBuildXor(ir->b, x, LLVMBuildLShr(ir->b, x, irb_const(ir, 27),
						 ""), "");
	LLVMBuildStore(ir->b, x, at);
	x = LLVMBuildMul(ir->b, x, irb_const(ir, 0x2545f4914f6cdd1dULL), "");
	return LLVMBuildLShr(ir->b, x, irb_const(ir, 32), "rand");
}

/*
 * An event's stamp in counter units (CG_TIME_TSC): rdtsc, or in a thread
 * with the counter off (RT_BLK_NOTSC) CLOCK_MONOTONIC (the system call,
 * through rt_clock_ns()) turned into counter units by the inverse of the
 * control block's segment, tsc0 + ((ns - ns0) << RT_CLK_SHIFT) / mult
 * (one idiv of %rdx:%rax); 0 before ubt wrote a segment.
 */
LLVMValueRef irb_native_stamp(struct irb *ir)
{
	LLVMBasicBlockRef tsc_bb, off, conv, done, from[3];
	LLVMValueRef ctl, v[3], a[2], ns, mult, d, r;
	LLVMTypeRef st = LLVMStructTypeInContext(
		ir->ctx, (LLVMTypeRef[]){ ir->i64, ir->i64 }, 2, 0);
	LLVMTypeRef ft = LLVMFunctionType(
		st, (LLVMTypeRef[]){ ir->i64, ir->i64, ir->i64 }, 3, 0);
	LLVMValueRef idiv = LLVMGetInlineAsm(
		ft, "idivq $4", 8, "={rax},={rdx},{rax},{rdx},r,~{flags}", 36, 0,
		0, LLVMInlineAsmDialectATT, 0);

	tsc_bb = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "stamp_tsc");
	off = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "stamp_notsc");
	conv = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "stamp_conv");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "stamp");
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, nat_notsc(ir), off, tsc_bb),
		     true);

	LLVMPositionBuilderAtEnd(ir->b, tsc_bb);
	v[0] = irb_native_cycles(ir);
	from[0] = LLVMGetInsertBlock(ir->b);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, off);
	a[0] = irb_nat.blk;
	a[1] = irb_nat.blk;
	ns = LLVMBuildPtrToInt(ir->b, nat_call_kept(ir, RT_FN_CLOCK_NS, a),
			       ir->i64, "");
	ctl = nat_ctl(ir);
	mult = nat_ctl_load(ir, ctl, ir->i64,
			    offsetof(struct rt_ctl, clk_mult), "clk_mult");
	v[1] = irb_const(ir, 0);
	from[1] = LLVMGetInsertBlock(ir->b);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntSGT, mult, irb_const(ir, 0),
				      ""),
			conv, done);

	LLVMPositionBuilderAtEnd(ir->b, conv);
	d = LLVMBuildSub(ir->b, ns,
			 nat_ctl_load(ir, ctl, ir->i64,
				      offsetof(struct rt_ctl, clk_ns0),
				      "clk_ns0"), "");
	/* %rdx:%rax = d << RT_CLK_SHIFT, sign-extended */
	r = LLVMBuildCall2(
		ir->b, ft, idiv,
		(LLVMValueRef[]){
			LLVMBuildShl(ir->b, d, irb_const(ir, RT_CLK_SHIFT), ""),
			LLVMBuildAShr(ir->b, d,
				      irb_const(ir, 64 - RT_CLK_SHIFT), ""),
			mult },
		3, "");
	v[2] = LLVMBuildAdd(ir->b,
			    nat_ctl_load(ir, ctl, ir->i64,
					 offsetof(struct rt_ctl, clk_tsc0),
					 "clk_tsc0"),
			    LLVMBuildExtractValue(ir->b, r, 0, ""), "");
	from[2] = LLVMGetInsertBlock(ir->b);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, done);
	r = LLVMBuildPhi(ir->b, ir->i64, "stamp");
	LLVMAddIncoming(r, v, from, 3);
	return r;
}

LLVMValueRef irb_native_cycles(struct irb *ir)
{
	static const char name[] = "llvm.readcyclecounter";
	unsigned id = LLVMLookupIntrinsicID(name, sizeof(name) - 1);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, NULL, 0);
	LLVMTypeRef ft = LLVMIntrinsicGetType(ir->ctx, id, NULL, 0);

	return LLVMBuildCall2(ir->b, ft, fn, NULL, 0, "tsc");
}

LLVMValueRef irb_native_helper(struct irb *ir, int id, LLVMValueRef *args,
			       int n)
{
	LLVMValueRef a[3];

	switch (id) {
	case BPF_FUNC_get_current_pid_tgid: {
		/* pid from the globals, tid from the block */
		LLVMValueRef pid = nat_invariant(ir, LLVMBuildLoad2(
			ir->b, ir->i64, nat_map_area(ir, NATIVE_GLOBALS_PID),
			"pid"));
		LLVMValueRef tid = nat_invariant(ir, LLVMBuildLoad2(
			ir->b, ir->i32, irb_gep(ir, irb_nat.blk, RT_BLK_TID),
			"tid"));

		return LLVMBuildOr(ir->b,
				   LLVMBuildShl(ir->b, pid, irb_const(ir, 32),
						""),
				   LLVMBuildZExt(ir->b, tid, ir->i64, ""), "");
	}
	case BPF_FUNC_get_current_uid_gid:
		return nat_uid_gid(ir);
	case BPF_FUNC_ktime_get_ns:
	case BPF_FUNC_ktime_get_boot_ns:
		if (id == BPF_FUNC_ktime_get_boot_ns)
			break;
		return nat_clock(ir);
	case BPF_FUNC_get_current_comm: {
		uint64_t sz = n == 2 && LLVMIsAConstantInt(args[1]) ?
				      LLVMConstIntGetZExtValue(args[1]) : 0;

		if (!sz || sz > 16)
			break;
		nat_comm(ir, args[0], sz);
		return irb_const(ir, 0);
	}
	case BPF_FUNC_for_each_map_elem:
		return nat_for_each(ir, args, n);
	case BPF_FUNC_get_func_ip:
		/* the probed address, written in at install */
		return irb_const(ir, NATIVE_FUNC_SENTINEL);
	case BPF_FUNC_copy_from_user:
		/* (dst, u32 size, src): a fault-safe copy in the process */
		if (n != 3)
			break;
		a[0] = args[0];
		a[1] = args[2];
		a[2] = LLVMBuildZExt(ir->b, args[1], ir->i64, "");
		return nat_call(ir, RT_FN_PROBE_READ, ir->i64, a, 3);
	case BPF_FUNC_send_signal:
	case BPF_FUNC_send_signal_thread:
		/* signal(): raised in the thread that hit the probe,
		 * tgkill(getpid(), gettid(), sig) */
		if (n != 1)
			break;
		a[0] = irb_native_syscall(ir, 39 /* getpid */, NULL, 0);
		a[1] = irb_native_syscall(ir, 186 /* gettid */, NULL, 0);
		a[2] = LLVMBuildZExt(ir->b, args[0], ir->i64, "");
		return irb_native_syscall(ir, 234 /* tgkill */, a, 3);
	case BPF_FUNC_get_smp_processor_id:
		return nat_getcpu(ir, false);
	case BPF_FUNC_get_numa_node_id:
		return nat_getcpu(ir, true);
	case BPF_FUNC_get_prandom_u32:
		return nat_rand(ir);
	default:
		break;
	}
	nat_unsupported("this builtin in a user-mode probe");
	return irb_const(ir, 0);
}

/* Read a NUL-terminated string byte by byte (each read fault-safe). */
static LLVMValueRef nat_read_str(struct irb *ir, LLVMValueRef dst,
				 LLVMValueRef size, LLVMValueRef src)
{
	LLVMBasicBlockRef from = LLVMGetInsertBlock(ir->b);
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "str_loop");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "str_byte");
	LLVMBasicBlockRef chk = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							      "str_chk");
	LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "str_stop");
	LLVMValueRef i, next, r, c, d, s, args[3], vals[3], res;
	LLVMBasicBlockRef bbs[3];
	LLVMValueRef last = LLVMBuildSub(ir->b, size, irb_const(ir, 1), "");

	LLVMBuildBr(ir->b, loop);
	LLVMPositionBuilderAtEnd(ir->b, loop);
	i = LLVMBuildPhi(ir->b, ir->i64, "i");
	/* i == size - 1: terminate and stop */
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntUGE, i, last, ""),
			stop, body);
	LLVMPositionBuilderAtEnd(ir->b, body);
	d = LLVMBuildGEP2(ir->b, ir->i8, dst, &i, 1, "");
	s = LLVMBuildAdd(ir->b, src, i, "");
	args[0] = d;
	args[1] = LLVMBuildIntToPtr(ir->b, s, ir->ptr, "");
	args[2] = irb_const(ir, 1);
	r = nat_call(ir, RT_FN_PROBE_READ, ir->i64, args, 3);
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntNE, r,
					     irb_const(ir, 0), ""),
			stop, chk);
	LLVMPositionBuilderAtEnd(ir->b, chk);
	c = LLVMBuildLoad2(ir->b, ir->i8, d, "");
	next = LLVMBuildAdd(ir->b, i, irb_const(ir, 1), "");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, c,
					     LLVMConstInt(ir->i8, 0, 0), ""),
			stop, loop);
	nat_incoming2(i, irb_const(ir, 0), from, next, chk);

	LLVMPositionBuilderAtEnd(ir->b, stop);
	{
		LLVMValueRef at = LLVMBuildPhi(ir->b, ir->i64, "at");
		LLVMValueRef okv = LLVMBuildPhi(ir->b, ir->i1, "ok");
		LLVMValueRef av[3] = { i, i, i };
		LLVMValueRef ov[3] = { LLVMConstInt(ir->i1, 1, 0),
				       LLVMConstInt(ir->i1, 0, 0),
				       LLVMConstInt(ir->i1, 1, 0) };

		bbs[0] = loop;
		bbs[1] = body;
		bbs[2] = chk;
		LLVMAddIncoming(at, av, bbs, 3);
		LLVMAddIncoming(okv, ov, bbs, 3);
		LLVMBuildStore(ir->b, LLVMConstInt(ir->i8, 0, 0),
			       LLVMBuildGEP2(ir->b, ir->i8, dst, &at, 1, ""));
		/* bytes copied with the NUL; -EFAULT when the first fails */
		res = LLVMBuildAdd(ir->b, at, irb_const(ir, 1), "");
		vals[0] = LLVMBuildSelect(
			ir->b,
			LLVMBuildICmp(ir->b, LLVMIntEQ, at, irb_const(ir, 0),
				      ""),
			irb_const(ir, (uint64_t)-EFAULT), res, "");
		return LLVMBuildSelect(ir->b, okv, res, vals[0], "");
	}
}

LLVMValueRef irb_native_probe_read(struct irb *ir, enum irb_read kind,
				   LLVMValueRef dst, LLVMValueRef size,
				   LLVMValueRef src)
{
	LLVMValueRef args[3];

	if (kind == IRB_READ_KERNEL || kind == IRB_READ_KERNEL_STR) {
		nat_unsupported("reading kernel memory in a user-mode probe");
		return irb_const(ir, (uint64_t)-EFAULT);
	}
	if (LLVMGetTypeKind(LLVMTypeOf(src)) == LLVMPointerTypeKind)
		src = LLVMBuildPtrToInt(ir->b, src, ir->i64, "");
	if (LLVMGetTypeKind(LLVMTypeOf(size)) != LLVMIntegerTypeKind)
		BUG("probe read size is not an integer");
	if (LLVMGetIntTypeWidth(LLVMTypeOf(size)) < 64)
		size = LLVMBuildZExt(ir->b, size, ir->i64, "");
	if (kind == IRB_READ_USER_STR)
		return nat_read_str(ir, dst, size, src);
	args[0] = dst;
	args[1] = LLVMBuildIntToPtr(ir->b, src, ir->ptr, "");
	args[2] = size;
	return nat_call(ir, RT_FN_PROBE_READ, ir->i64, args, 3);
}

LLVMValueRef irb_native_ringbuf_output(struct irb *ir, LLVMValueRef rb,
				       LLVMValueRef data, size_t size)
{
	LLVMValueRef args[3] = { data, LLVMConstInt(ir->i32, size, 0),
				 LLVMConstInt(ir->i32, NATIVE_REC_EVENT, 0) };

	(void)rb;
	return LLVMBuildSExt(ir->b, nat_call(ir, RT_FN_RING_WRITE, ir->i32,
					     args, 3),
			     ir->i64, "");
}
