/*
 * irb for the native x86-64 target (native.h): the same helpers as irb.c,
 * lowered to per-thread memory operations in the thread's block, calls
 * through the runtime's helper table (struct rt_ctl fn[]) and inline
 * system calls. Nothing here needs a relocation: the block is reached
 * through %fs (address space 257) at an offset patched in after the
 * runtime is placed (native_patch_tls()).
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
#include "util.h"

_Static_assert(NATIVE_GLOBALS_PID == RT_MAP_PID,
	       "the runtime writes a forked child's pid there");
_Static_assert(NATIVE_GLOBALS_START == CG_GLOBALS_START &&
		       NATIVE_GLOBALS_CPID == CG_GLOBALS_CPID &&
		       NATIVE_GLOBALS_EXIT == CG_GLOBALS_EXIT &&
		       NATIVE_GLOBALS_PID >= CG_GLOBALS_SIZE,
	       "native globals follow the BPF globals");

#include "irb_native_int.h"

struct irb_native irb_nat;

bool irb_is_native(const struct irb *ir)
{
	return ir->target == CG_TARGET_NATIVE;
}

int irb_native_init(struct irb *ir, const char *name)
{
	LLVMTargetMachineRef tm = native_target_machine();

	if (!tm)
		return -ENOENT;
	free(irb_nat.maps);
	free(irb_nat.refs);
	memset(&irb_nat, 0, sizeof(irb_nat));
	irb_nat.ir = ir;
	irb_nat.area = NATIVE_MAPS_OFF;
	irb_module_init(ir, CG_TARGET_NATIVE, name, "x86_64-unknown-linux-gnu",
			tm);
	return 0;
}

void irb_native_set_object(struct irb *ir, const struct cg_object *obj)
{
	BUG_ON(irb_nat.ir != ir);
	irb_nat.obj = obj;
}

void irb_native_set_thread_maps(struct irb *ir, const bool *by_map)
{
	BUG_ON(irb_nat.ir != ir);
	irb_nat.thread_maps = by_map;
}

void irb_native_set_slot_maps(struct irb *ir, const bool *by_map)
{
	BUG_ON(irb_nat.ir != ir);
	irb_nat.slot_maps = by_map;
}

void irb_native_set_regs_ctx(struct irb *ir, bool on)
{
	BUG_ON(irb_nat.ir != ir);
	irb_nat.regs_ctx = on;
}

void irb_native_release(struct irb *ir)
{
	if (irb_nat.ir != ir)
		return;
	free(irb_nat.maps);
	free(irb_nat.refs);
	memset(&irb_nat, 0, sizeof(irb_nat));
}

bool irb_native_uses_task(const struct irb *ir)
{
	return irb_nat.ir == ir && irb_nat.uses_task;
}

const char *irb_native_unsupported(const struct irb *ir)
{
	return irb_nat.ir == ir ? irb_nat.unsupported : NULL;
}

const struct native_map *irb_native_maps(const struct irb *ir, int *n,
					 uint64_t *area)
{
	BUG_ON(irb_nat.ir != ir);
	*n = irb_nat.nmaps;
	*area = irb_nat.area;
	return irb_nat.maps;
}

uint64_t native_shared_size(const struct native_map *maps, int n)
{
	uint64_t end = 0;

	for (int i = 0; i < n; i++)
		if ((maps[i].kind == NATIVE_MAP_SHARED ||
		     maps[i].kind == NATIVE_MAP_XMAP) &&
		    maps[i].off + maps[i].bytes > end)
			end = maps[i].off + maps[i].bytes;
	return rt_align8(end);
}

void nat_unsupported(const char *what)
{
	if (!irb_nat.unsupported)
		irb_nat.unsupported = what;
}

static void nat_attr(struct irb *ir, LLVMValueRef fn, const char *k,
		     const char *v)
{
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateStringAttribute(ir->ctx, k, strlen(k),
							  v, strlen(v)));
}

/* *(u64 *)%fs:NATIVE_TLS_SENTINEL, patched to the runtime's offset. */
static LLVMValueRef nat_block(struct irb *ir)
{
	LLVMTypeRef fsp = LLVMPointerTypeInContext(ir->ctx, 257);
	LLVMValueRef a = LLVMConstIntToPtr(
		LLVMConstInt(ir->i64, NATIVE_TLS_SENTINEL, 0), fsp);
	LLVMValueRef v = LLVMBuildLoad2(ir->b, ir->ptr, a, "blk");
	unsigned nn = LLVMGetMDKindIDInContext(ir->ctx, "nonnull", 7);
	LLVMMetadataRef none = LLVMMDNodeInContext2(ir->ctx, NULL, 0);

	LLVMSetAlignment(v, 8);
	/* the trampoline calls probe code only with a block */
	LLVMSetMetadata(v, nn, LLVMMetadataAsValue(ir->ctx, none));
	return v;
}

LLVMValueRef irb_native_func_begin(struct irb *ir, const char *name)
{
	LLVMTypeRef params[6] = { ir->i64, ir->i64, ir->i64,
				  ir->i64, ir->i64, ir->i64 };
	LLVMTypeRef ft = LLVMFunctionType(ir->i64, params, 6, 0);
	LLVMValueRef fn = LLVMAddFunction(ir->mod, name, ft);
	unsigned kind = LLVMGetEnumAttributeKindForName("nounwind", 8);
	/* pt_regs offsets of rdi, rsi, rdx, rcx, r8, r9 */
	static const size_t regs[6] = { 112, 104, 96, 88, 72, 64 };
	LLVMValueRef ctx, ra;
	LLVMTypeRef ft_ra;
	unsigned id;

	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, kind, 0));
	nat_attr(ir, fn, "no-builtins", "");
	nat_attr(ir, fn, "no-jump-tables", "true");
	nat_attr(ir, fn, "frame-pointer", "none");
	/* nat_call_kept() pushes below %rsp */
	kind = LLVMGetEnumAttributeKindForName("noredzone", 9);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, kind, 0));
	LLVMSetFunctionCallConv(fn, NAT_CC_PRESERVE_MOST);
	LLVMSetLinkage(fn, LLVMExternalLinkage);
	ir->fn = fn;
	ir->entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
	LLVMPositionBuilderAtEnd(ir->b, ir->entry);

	if (irb_nat.regs_ctx) {
		/* the trampoline's struct pt_regs, site's %rsp included */
		ctx = LLVMBuildIntToPtr(ir->b, LLVMGetParam(fn, 0), ir->ptr,
					"regs");
		irb_nat.blk = nat_block(ir);
		return ctx;
	}
	/*
	 * The probe's context: a struct pt_regs on the stack holding what the
	 * trampoline passed in registers, so that the lowering reads arg0..5
	 * (and retval, in %rax and %rdi for return probes) as in BPF; LLVM
	 * turns these stores and loads into register moves.
	 */
	ctx = irb_alloca(ir, 168, "regs");
	for (int i = 0; i < 6; i++)
		LLVMBuildStore(ir->b, LLVMGetParam(fn, i),
			       irb_gep(ir, ctx, regs[i]));
	LLVMBuildStore(ir->b, LLVMGetParam(fn, 0), irb_gep(ir, ctx, 80));
	/* the function's %rsp at its entry: our return address + 16 */
	id = LLVMLookupIntrinsicID("llvm.addressofreturnaddress", 27);
	ft_ra = LLVMIntrinsicGetType(ir->ctx, id, &ir->ptr, 1);
	ra = LLVMBuildCall2(ir->b, ft_ra,
			    LLVMGetIntrinsicDeclaration(ir->mod, id, &ir->ptr,
							1),
			    NULL, 0, "");
	LLVMBuildStore(ir->b,
		       LLVMBuildAdd(ir->b,
				    LLVMBuildPtrToInt(ir->b, ra, ir->i64, ""),
				    irb_const(ir, 16), ""),
		       irb_gep(ir, ctx, 152));
	irb_nat.blk = nat_block(ir);
	return ctx;
}

/*
 * The body of a map iteration (for, len()): long fn(map, key, val, blk),
 * called directly by the loop of BPF_FUNC_for_each_map_elem and always
 * inlined there (a call of a function in the large code model needs its
 * address: a relocation). Its fourth parameter, the BPF callback's
 * context, is the thread's block pointer here.
 */
LLVMValueRef irb_native_callback_begin(struct irb *ir, const char *name,
				       int nparams)
{
	LLVMTypeRef params[4];
	LLVMValueRef fn;
	unsigned kind;

	BUG_ON(nparams != 4);
	for (int i = 0; i < nparams; i++)
		params[i] = ir->ptr;
	fn = LLVMAddFunction(ir->mod, name,
			     LLVMFunctionType(ir->i64, params, nparams, 0));
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, kind, 0));
	kind = LLVMGetEnumAttributeKindForName("nounwind", 8);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateEnumAttribute(ir->ctx, kind, 0));
	nat_attr(ir, fn, "no-builtins", "");
	nat_attr(ir, fn, "no-jump-tables", "true");
	nat_attr(ir, fn, "frame-pointer", "none");
	ir->fn = fn;
	ir->entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
	LLVMPositionBuilderAtEnd(ir->b, ir->entry);
	if (irb_nat.nest < NAT_MAX_NEST)
		irb_nat.outer_blk[irb_nat.nest] = irb_nat.blk;
	else
		nat_unsupported("map iterations nested this deep");
	irb_nat.nest++;
	irb_nat.blk = LLVMGetParam(fn, 3);
	return fn;
}

LLVMValueRef nat_map_area(struct irb *ir, uint64_t off)
{
	LLVMValueRef idx = irb_const(ir, RT_BLK_MAP + off);

	/* inbounds of a non-null block: never null, checks fold away */
	return LLVMBuildInBoundsGEP2(ir->b, ir->i8, irb_nat.blk, &idx, 1, "");
}

/*
 * A load of a block field that no probe and no other thread changes while
 * a probe runs (the control block's address, the thread's tid): LLVM may
 * then merge its loads across the slow paths' calls, and what is computed
 * from it (a map key's hash: @s[tid] looked up, read and deleted in one
 * probe is hashed once).
 */
LLVMValueRef nat_invariant(struct irb *ir, LLVMValueRef load)
{
	static const char name[] = "invariant.load";
	unsigned kind = LLVMGetMDKindIDInContext(ir->ctx, name,
						 sizeof(name) - 1);

	LLVMSetMetadata(load, kind,
			LLVMMetadataAsValue(ir->ctx,
					    LLVMMDNodeInContext2(ir->ctx,
								 NULL, 0)));
	return load;
}

/* *(blk + RT_BLK_CTL): the control block */
LLVMValueRef nat_ctl(struct irb *ir)
{
	return nat_invariant(ir, LLVMBuildLoad2(ir->b, ir->ptr,
						irb_gep(ir, irb_nat.blk,
							RT_BLK_CTL),
						"ctl"));
}

/* fn = ctl->fn[i], ctl = *(blk + RT_BLK_CTL) */
static LLVMValueRef nat_rt_fn(struct irb *ir, int i)
{
	LLVMValueRef ctl = nat_ctl(ir);

	return nat_invariant(ir, LLVMBuildLoad2(
					 ir->b, ir->ptr,
					 irb_gep(ir, ctl,
						 offsetof(struct rt_ctl, fn) +
							 8 * i),
					 "rt_fn"));
}

/* The shared table of map m: ctl + RT_SHARED_OFF + m->off. */
LLVMValueRef nat_shtab(struct irb *ir, const struct native_map *m)
{
	LLVMValueRef ctl = nat_ctl(ir);
	LLVMValueRef idx = irb_const(ir, RT_SHARED_OFF + m->off);

	return LLVMBuildInBoundsGEP2(ir->b, ir->i8, ctl, &idx, 1, "shtab");
}

LLVMValueRef nat_call(struct irb *ir, int i, LLVMTypeRef ret,
		      LLVMValueRef *args, int n)
{
	LLVMTypeRef params[6];
	LLVMTypeRef ft;

	BUG_ON(n > 6);
	for (int k = 0; k < n; k++)
		params[k] = LLVMTypeOf(args[k]);
	ft = LLVMFunctionType(ret, params, n, 0);
	return LLVMBuildCall2(ir->b, ft, nat_rt_fn(ir, i), args, n, "");
}

/*
 * The same call, for a slow path: the caller-saved registers are saved
 * around it here, by inline assembly that keeps every register but %rax
 * (and aligns the stack), so that LLVM need not save them in the probe's
 * prologue, on its fast path too (preserve_most).  Two pointer arguments.
 */
LLVMValueRef nat_call_kept(struct irb *ir, int i, LLVMValueRef *args)
{
	static const char text[] =
		"push %rbp\n\tmov %rsp, %rbp\n\tand $$-16, %rsp\n\t"
		"push %rdi\n\tpush %rsi\n\tpush %rdx\n\tpush %rcx\n\t"
		"push %r8\n\tpush %r9\n\tpush %r10\n\tpush %r11\n\t"
		"call *%rax\n\t"
		"pop %r11\n\tpop %r10\n\tpop %r9\n\tpop %r8\n\t"
		"pop %rcx\n\tpop %rdx\n\tpop %rsi\n\tpop %rdi\n\t"
		"mov %rbp, %rsp\n\tpop %rbp";
	static const char cons[] = "={ax},{ax},{di},{si},~{memory},~{dirflag},"
				   "~{fpsr},~{flags}";
	LLVMTypeRef params[3] = { ir->ptr, ir->ptr, ir->ptr };
	LLVMTypeRef ft = LLVMFunctionType(ir->ptr, params, 3, 0);
	LLVMValueRef asm_ = LLVMGetInlineAsm(ft, (char *)text,
					     sizeof(text) - 1, (char *)cons,
					     sizeof(cons) - 1, 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef a[3] = { nat_rt_fn(ir, i), args[0], args[1] };

	return LLVMBuildCall2(ir->b, ft, asm_, a, 3, "");
}

/*
 * nat_call_kept() for a call without arguments (rt_clock_ns(): every
 * nsecs where the clock is not the time-stamp counter, kvm-clock among
 * them): %rsi, %rdx, %rcx, which the probe saves in its prologue anyway
 * (nsecs's time-stamp counter path uses them), and %r11 (not kept by
 * preserve_most) are given to LLVM as clobbered; only %rdi and %r8-%r10
 * are saved here, four pushes instead of eight.
 */
LLVMValueRef nat_call_clobber(struct irb *ir, int i)
{
	static const char text[] =
		"push %rbp\n\tmov %rsp, %rbp\n\tand $$-16, %rsp\n\t"
		"push %rdi\n\tpush %r8\n\tpush %r9\n\tpush %r10\n\t"
		"call *%rax\n\t"
		"pop %r10\n\tpop %r9\n\tpop %r8\n\tpop %rdi\n\t"
		"mov %rbp, %rsp\n\tpop %rbp";
	static const char cons[] = "={ax},{ax},~{rsi},~{rdx},~{rcx},~{r11},"
				   "~{memory},~{dirflag},~{fpsr},~{flags}";
	LLVMTypeRef params[1] = { ir->ptr };
	LLVMTypeRef ft = LLVMFunctionType(ir->ptr, params, 1, 0);
	LLVMValueRef asm_ = LLVMGetInlineAsm(ft, (char *)text,
					     sizeof(text) - 1, (char *)cons,
					     sizeof(cons) - 1, 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef a[1] = { nat_rt_fn(ir, i) };

	return LLVMBuildCall2(ir->b, ft, asm_, a, 1, "");
}

/* Slots of a keyed table for max_entries keys (native.h). */
static uint32_t nat_table_slots(uint32_t max_entries, uint32_t cap)
{
	uint32_t slots = 16;

	while (slots < 2 * (uint64_t)max_entries && slots < cap)
		slots *= 2;
	return slots;
}

/* Keys a table of slots slots takes: max_entries, or half a capped one. */
static uint32_t nat_table_keys(uint32_t max_entries, uint32_t slots)
{
	return max_entries && max_entries <= slots / 2 ? max_entries :
							 slots / 2;
}

LLVMValueRef irb_native_map_define(struct irb *ir, const char *name,
				   int bpf_type, size_t key_size,
				   size_t value_size, uint32_t max_entries)
{
	const struct cg_map *cm = NULL;
	struct native_map *m;
	LLVMValueRef ref;

	BUG_ON(irb_nat.ir != ir);
	ref = LLVMConstIntToPtr(LLVMConstInt(ir->i64, 0x1000 + irb_nat.nmaps, 0),
				ir->ptr);
	if (irb_nat.nmaps == irb_nat.cap) {
		irb_nat.cap = irb_nat.cap ? 2 * irb_nat.cap : 16;
		irb_nat.maps = xrealloc(irb_nat.maps, irb_nat.cap * sizeof(*irb_nat.maps));
		irb_nat.refs = xrealloc(irb_nat.refs, irb_nat.cap * sizeof(*irb_nat.refs));
	}
	irb_nat.refs[irb_nat.nmaps] = (struct nat_map){ .ref = ref,
						.idx = irb_nat.nmaps };
	m = &irb_nat.maps[irb_nat.nmaps++];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->key_size = key_size;
	m->val_size = value_size;
	if (bpf_type == BPF_MAP_TYPE_RINGBUF) {
		irb_nat.refs[irb_nat.nmaps - 1].idx = -1;
		return ref;
	}
	if (!strcmp(name, CG_MAP_GLOBALS)) {
		m->kind = NATIVE_MAP_FIXED;
		m->off = 0;
		m->bytes = NATIVE_GLOBALS_SIZE;
		return ref;
	}
	if (!strcmp(name, CG_MAP_LOST)) {
		m->kind = NATIVE_MAP_FIXED;
		m->off = NATIVE_LOST_OFF;
		m->bytes = 8;
		return ref;
	}
	for (int i = 0; irb_nat.obj && i < irb_nat.obj->nmaps; i++)
		if (irb_nat.obj->maps[i].bpf_name &&
		    !strcmp(irb_nat.obj->maps[i].bpf_name, name))
			cm = &irb_nat.obj->maps[i];
	if (cm && !cm->percpu && !cm->bucketed &&
	    !(irb_nat.thread_maps && cm->key_type &&
	      irb_nat.thread_maps[cm - irb_nat.obj->maps])) {
		/* an ordinary map: one table for all threads */
		uint32_t slots = nat_table_slots(max_entries,
						 NATIVE_SHTAB_MAX_SLOTS);

		m->kind = NATIVE_MAP_SHARED;
		m->plain = true;
		m->nslots = slots;
		m->max_keys = nat_table_keys(max_entries, slots);
		m->max_probe = slots < NATIVE_SHTAB_MAX_PROBE ?
				       slots : NATIVE_SHTAB_MAX_PROBE;
		m->bytes = sizeof(struct rt_shtab) +
			   (uint64_t)slots * (8 + rt_align8(key_size) +
					      rt_align8(value_size));
		m->off = irb_nat.shared;
		irb_nat.shared = rt_align8(irb_nat.shared + m->bytes);
		m->scratch = irb_nat.area;
		irb_nat.area = rt_align8(irb_nat.area + rt_align8(value_size));
		return ref;
	}
	if (cm && !cm->key_type && !cm->bucketed) {
		m->kind = NATIVE_MAP_FIXED;
		m->bytes = rt_align8(value_size);
		/* sum: a presence word after the value (native.h) */
		if (cm->value_type && cm->value_type->kind == TY_SUM)
			m->bytes += 8;
	} else if (cm && !cm->key_type && cm->bucketed &&
		   out_nbuckets(cm->value_type) &&
		   out_nbuckets(cm->value_type) < 0x10000 &&
		   out_nbuckets(cm->value_type) <= max_entries) {
		/* every bucket fits in the map's limit: an array */
		m->kind = NATIVE_MAP_ARRAY;
		m->nslots = out_nbuckets(cm->value_type);
		m->bytes = 8 * (uint64_t)m->nslots;
	} else {
		uint32_t slots = nat_table_slots(max_entries,
						 NATIVE_HTAB_MAX_SLOTS);

		m->kind = NATIVE_MAP_HTAB;
		m->plain = cm && !cm->percpu;
		m->nslots = slots;
		m->max_keys = nat_table_keys(max_entries, slots);
		m->bytes = sizeof(struct rt_htab) +
			   (uint64_t)slots * (8 + rt_align8(key_size) +
					      rt_align8(value_size));
	}
	m->off = irb_nat.area;
	irb_nat.area = rt_align8(irb_nat.area + m->bytes);
	if (m->kind == NATIVE_MAP_HTAB && m->plain && key_size == 8 &&
	    value_size <= 8 && cm && irb_nat.slot_maps &&
	    irb_nat.slot_maps[cm - irb_nat.obj->maps]) {
		/* the thread's own entry: {u64 key, u64 value} */
		m->tslot = irb_nat.area;
		irb_nat.area += 16;
	}
	return ref;
}

struct native_map *nat_find(LLVMValueRef ref)
{
	for (int i = 0; i < irb_nat.nmaps; i++)
		if (irb_nat.refs[i].ref == ref)
			return irb_nat.refs[i].idx < 0 ? NULL : &irb_nat.maps[i];
	BUG("native map not defined");
}

/* phi's values: v0 coming from b0, v1 from b1 */
void nat_incoming2(LLVMValueRef phi, LLVMValueRef v0,
		   LLVMBasicBlockRef b0, LLVMValueRef v1,
		   LLVMBasicBlockRef b1)
{
	LLVMValueRef v[2] = { v0, v1 };
	LLVMBasicBlockRef b[2] = { b0, b1 };

	LLVMAddIncoming(phi, v, b, 2);
}

static void nat_intrinsic_mem(struct irb *ir, const char *name,
			      LLVMValueRef *args, LLVMTypeRef *ov, int nov)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, ov, nov);
	LLVMTypeRef ft = LLVMIntrinsicGetType(ir->ctx, id, ov, nov);

	LLVMBuildCall2(ir->b, ft, fn, args, 4, "");
}

/*
 * memset/memcpy that never become library calls (no relocations).  SROA
 * turns llvm.memset.inline into a plain llvm.memset, which the back end
 * may lower to a call of memset: sizes are written as stores instead,
 * larger ones by a loop of them (the functions are "no-builtins", so no
 * pass merges them back into a memset).
 */
#define NAT_MEMSET_STORES 512

/* The whole words of dst[0, size) set to w, in a loop. */
static void nat_memset_loop(struct irb *ir, LLVMValueRef dst, uint64_t w,
			    size_t size)
{
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(ir->b);
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(
		ir->ctx, ir->fn, "memset_loop");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(
		ir->ctx, ir->fn, "memset_done");
	LLVMValueRef i, next, st;

	LLVMBuildBr(ir->b, body);
	LLVMPositionBuilderAtEnd(ir->b, body);
	i = LLVMBuildPhi(ir->b, ir->i64, "");
	st = LLVMBuildStore(ir->b, irb_const(ir, w),
			    LLVMBuildGEP2(ir->b, ir->i8, dst, &i, 1, ""));
	LLVMSetAlignment(st, 1);
	next = LLVMBuildAdd(ir->b, i, irb_const(ir, 8), "");
	LLVMAddIncoming(i, (LLVMValueRef[]){ irb_const(ir, 0), next },
			(LLVMBasicBlockRef[]){ pre, body }, 2);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, next,
				      irb_const(ir, size & ~(size_t)7), ""),
			body, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

void irb_native_memset(struct irb *ir, LLVMValueRef dst, int c, size_t size)
{
	uint64_t b = (uint8_t)c, w = b * 0x0101010101010101ull;
	size_t i = 0;

	if (size > NAT_MEMSET_STORES) {
		nat_memset_loop(ir, dst, w, size);
		i = size & ~(size_t)7;
	}
	for (; i + 8 <= size; i += 8) {
		LLVMValueRef st = LLVMBuildStore(ir->b, irb_const(ir, w),
						 irb_gep(ir, dst, i));

		LLVMSetAlignment(st, 1);
	}
	for (; i < size; i++)
		LLVMBuildStore(ir->b, LLVMConstInt(ir->i8, b, 0),
			       irb_gep(ir, dst, i));
}

void irb_native_memcpy(struct irb *ir, LLVMValueRef dst, LLVMValueRef src,
		       size_t size)
{
	LLVMTypeRef ov[3] = { ir->ptr, ir->ptr, ir->i64 };
	LLVMValueRef args[4] = { dst, src, irb_const(ir, size),
				 LLVMConstInt(ir->i1, 0, 0) };

	if (size)
		nat_intrinsic_mem(ir, "llvm.memcpy.inline", args, ov, 3);
}

int irb_native_emit(struct irb *ir, bool optimise, struct native_code *funcs,
		    int n, char *err, size_t errlen)
{
	int ret;

	if (irb_nat.unsupported) {
		snprintf(err, errlen, "%s is not supported", irb_nat.unsupported);
		return -ENOTSUP;
	}
	ret = native_emit(ir->mod, optimise, funcs, n, err, errlen);
	return ret;
}

int native_patch_func(void *code, size_t len, uint64_t addr)
{
	uint8_t *p = code;
	uint64_t want = NATIVE_FUNC_SENTINEL;
	int n = 0;

	for (size_t i = 0; i + 8 <= len; i++) {
		uint64_t v;

		memcpy(&v, p + i, 8);
		if (v != want)
			continue;
		memcpy(p + i, &addr, 8);
		n++;
		i += 7;
	}
	return n ? 0 : -ENOENT;
}

int native_patch_tls(void *code, size_t len, int64_t tls_offset)
{
	uint8_t *p = code;
	uint32_t want = NATIVE_TLS_SENTINEL, put = (uint32_t)tls_offset;
	int n = 0;

	if (tls_offset < INT32_MIN || tls_offset > INT32_MAX)
		return -ERANGE;
	/* mov %fs:disp32, reg: 64 [REX] 8b modrm(00 reg 100) sib(25) */
	for (size_t i = 0; i + 4 <= len; i++) {
		uint32_t v;

		memcpy(&v, p + i, 4);
		if (v != want || i < 4 || p[i - 1] != 0x25)
			continue;
		memcpy(p + i, &put, 4);
		n++;
	}
	return n ? 0 : -ENOENT;
}
