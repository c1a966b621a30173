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

#define NAT_CC_PRESERVE_MOST 14	/* llvm::CallingConv::PreserveMost */
#define NAT_MAX_NEST 16		/* map iterations inside one another */

struct nat_map {
	LLVMValueRef ref;	/* what irb_map_define returned */
	int idx;		/* into maps, -1: the ring buffer */
};

/* One native build at a time (the compiler is single-threaded). */
static struct irb_native {
	struct irb *ir;
	const struct cg_object *obj;
	const bool *thread_maps;	/* by index in obj->maps */
	struct native_map *maps;
	struct nat_map *refs;
	int nmaps, cap;
	uint64_t area;		/* map-area bytes laid out so far */
	uint64_t shared;	/* shared-area bytes laid out so far */
	const char *unsupported;	/* first thing that cannot be lowered */
	LLVMValueRef blk;	/* the block pointer in the current function */
	/* the enclosing functions' block pointers while a map iteration's
	 * callback is built (irb_native_callback_begin() pushes, its
	 * BPF_FUNC_for_each_map_elem pops) */
	LLVMValueRef outer_blk[NAT_MAX_NEST];
	int nest;
} nat;

bool irb_is_native(const struct irb *ir)
{
	return ir->target == CG_TARGET_NATIVE;
}

int irb_native_init(struct irb *ir, const char *name)
{
	LLVMTargetMachineRef tm = native_target_machine();

	if (!tm)
		return -ENOENT;
	free(nat.maps);
	free(nat.refs);
	memset(&nat, 0, sizeof(nat));
	nat.ir = ir;
	nat.area = NATIVE_MAPS_OFF;
	irb_module_init(ir, CG_TARGET_NATIVE, name, "x86_64-unknown-linux-gnu",
			tm);
	return 0;
}

void irb_native_set_object(struct irb *ir, const struct cg_object *obj)
{
	BUG_ON(nat.ir != ir);
	nat.obj = obj;
}

void irb_native_set_thread_maps(struct irb *ir, const bool *by_map)
{
	BUG_ON(nat.ir != ir);
	nat.thread_maps = by_map;
}

void irb_native_release(struct irb *ir)
{
	if (nat.ir != ir)
		return;
	free(nat.maps);
	free(nat.refs);
	memset(&nat, 0, sizeof(nat));
}

const char *irb_native_unsupported(const struct irb *ir)
{
	return nat.ir == ir ? nat.unsupported : NULL;
}

const struct native_map *irb_native_maps(const struct irb *ir, int *n,
					 uint64_t *area)
{
	BUG_ON(nat.ir != ir);
	*n = nat.nmaps;
	*area = nat.area;
	return nat.maps;
}

uint64_t native_shared_size(const struct native_map *maps, int n)
{
	uint64_t end = 0;

	for (int i = 0; i < n; i++)
		if (maps[i].kind == NATIVE_MAP_SHARED &&
		    maps[i].off + maps[i].bytes > end)
			end = maps[i].off + maps[i].bytes;
	return rt_align8(end);
}

static void nat_unsupported(const char *what)
{
	if (!nat.unsupported)
		nat.unsupported = what;
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
	LLVMSetFunctionCallConv(fn, NAT_CC_PRESERVE_MOST);
	LLVMSetLinkage(fn, LLVMExternalLinkage);
	ir->fn = fn;
	ir->entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
	LLVMPositionBuilderAtEnd(ir->b, ir->entry);

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
	nat.blk = nat_block(ir);
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
	if (nat.nest < NAT_MAX_NEST)
		nat.outer_blk[nat.nest] = nat.blk;
	else
		nat_unsupported("map iterations nested this deep");
	nat.nest++;
	nat.blk = LLVMGetParam(fn, 3);
	return fn;
}

static LLVMValueRef nat_map_area(struct irb *ir, uint64_t off)
{
	LLVMValueRef idx = irb_const(ir, RT_BLK_MAP + off);

	/* inbounds of a non-null block: never null, checks fold away */
	return LLVMBuildInBoundsGEP2(ir->b, ir->i8, nat.blk, &idx, 1, "");
}

/* fn = ctl->fn[i], ctl = *(blk + RT_BLK_CTL) */
static LLVMValueRef nat_rt_fn(struct irb *ir, int i)
{
	LLVMValueRef ctl = LLVMBuildLoad2(ir->b, ir->ptr,
					  irb_gep(ir, nat.blk, RT_BLK_CTL),
					  "ctl");

	return LLVMBuildLoad2(ir->b, ir->ptr,
			      irb_gep(ir, ctl,
				      offsetof(struct rt_ctl, fn) + 8 * i),
			      "rt_fn");
}

/* The shared table of map m: ctl + RT_SHARED_OFF + m->off. */
static LLVMValueRef nat_shtab(struct irb *ir, const struct native_map *m)
{
	LLVMValueRef ctl = LLVMBuildLoad2(ir->b, ir->ptr,
					  irb_gep(ir, nat.blk, RT_BLK_CTL),
					  "ctl");
	LLVMValueRef idx = irb_const(ir, RT_SHARED_OFF + m->off);

	return LLVMBuildInBoundsGEP2(ir->b, ir->i8, ctl, &idx, 1, "shtab");
}

static LLVMValueRef nat_call(struct irb *ir, int i, LLVMTypeRef ret,
			     LLVMValueRef *args, int n)
{
	LLVMTypeRef params[4];
	LLVMTypeRef ft;

	BUG_ON(n > 4);
	for (int k = 0; k < n; k++)
		params[k] = LLVMTypeOf(args[k]);
	ft = LLVMFunctionType(ret, params, n, 0);
	return LLVMBuildCall2(ir->b, ft, nat_rt_fn(ir, i), args, n, "");
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

	BUG_ON(nat.ir != ir);
	ref = LLVMConstIntToPtr(LLVMConstInt(ir->i64, 0x1000 + nat.nmaps, 0),
				ir->ptr);
	if (nat.nmaps == nat.cap) {
		nat.cap = nat.cap ? 2 * nat.cap : 16;
		nat.maps = xrealloc(nat.maps, nat.cap * sizeof(*nat.maps));
		nat.refs = xrealloc(nat.refs, nat.cap * sizeof(*nat.refs));
	}
	nat.refs[nat.nmaps] = (struct nat_map){ .ref = ref,
						.idx = nat.nmaps };
	m = &nat.maps[nat.nmaps++];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->key_size = key_size;
	m->val_size = value_size;
	if (bpf_type == BPF_MAP_TYPE_RINGBUF) {
		nat.refs[nat.nmaps - 1].idx = -1;
		return ref;
	}
	if (!strcmp(name, "AT__globals")) {
		m->kind = NATIVE_MAP_FIXED;
		m->off = 0;
		m->bytes = NATIVE_GLOBALS_SIZE;
		return ref;
	}
	if (!strcmp(name, "AT__lost")) {
		m->kind = NATIVE_MAP_FIXED;
		m->off = NATIVE_LOST_OFF;
		m->bytes = 8;
		return ref;
	}
	for (int i = 0; nat.obj && i < nat.obj->nmaps; i++)
		if (nat.obj->maps[i].bpf_name &&
		    !strcmp(nat.obj->maps[i].bpf_name, name))
			cm = &nat.obj->maps[i];
	if (cm && !cm->percpu && !cm->bucketed &&
	    !(nat.thread_maps && cm->key_type &&
	      nat.thread_maps[cm - nat.obj->maps])) {
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
		m->off = nat.shared;
		nat.shared = rt_align8(nat.shared + m->bytes);
		m->scratch = nat.area;
		nat.area = rt_align8(nat.area + rt_align8(value_size));
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
	m->off = nat.area;
	nat.area = rt_align8(nat.area + m->bytes);
	return ref;
}

static struct native_map *nat_find(LLVMValueRef ref)
{
	for (int i = 0; i < nat.nmaps; i++)
		if (nat.refs[i].ref == ref)
			return nat.refs[i].idx < 0 ? NULL : &nat.maps[i];
	BUG("native map not defined");
}

/* phi's values: v0 coming from b0, v1 from b1 */
static void nat_incoming2(LLVMValueRef phi, LLVMValueRef v0,
			  LLVMBasicBlockRef b0, LLVMValueRef v1,
			  LLVMBasicBlockRef b1)
{
	LLVMValueRef v[2] = { v0, v1 };
	LLVMBasicBlockRef b[2] = { b0, b1 };

	LLVMAddIncoming(phi, v, b, 2);
}

/*
 * A per-thread table with 8-byte keys (tid, a pointer): the key's first
 * slot, inline, when it holds the key (state 1), as rt_htab_slot() finds
 * it (rt_hash() of one word); anything else through the runtime (another
 * slot, an insert, a revival). No call, so no registers saved, on a hit.
 */
static LLVMValueRef nat_htab_hit(struct irb *ir, struct native_map *m,
				 LLVMValueRef base, LLVMValueRef key)
{
	uint64_t ss = 16 + rt_align8(m->val_size);
	LLVMBasicBlockRef chk = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							      "htab_key");
	LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(ir->ctx,
							       ir->fn,
							       "htab_slow");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ir->ctx,
							       ir->fn,
							       "htab_done");
	LLVMValueRef k, h, slot, st, sk, hit, rt, phi, a[2];

	k = LLVMBuildLoad2(ir->b, ir->i64, key, "k");
	LLVMSetAlignment(k, 1);
	h = LLVMBuildMul(ir->b,
			 LLVMBuildXor(ir->b, k,
				      irb_const(ir, 1469598103934665603ULL),
				      ""),
			 irb_const(ir, 1099511628211ULL), "");
	h = LLVMBuildXor(ir->b, h, LLVMBuildLShr(ir->b, h, irb_const(ir, 29),
						 ""), "hash");
	h = LLVMBuildAnd(ir->b, h, irb_const(ir, m->nslots - 1), "");
	h = LLVMBuildAdd(ir->b, LLVMBuildMul(ir->b, h, irb_const(ir, ss), ""),
			 irb_const(ir, sizeof(struct rt_htab)), "");
	slot = LLVMBuildInBoundsGEP2(ir->b, ir->i8, base, &h, 1, "slot");
	st = LLVMBuildLoad2(ir->b, ir->i64, slot, "state");
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, st,
					     irb_const(ir, 1), ""),
			chk, slow);
	LLVMPositionBuilderAtEnd(ir->b, chk);
	sk = LLVMBuildLoad2(ir->b, ir->i64, irb_gep(ir, slot, 8), "skey");
	hit = irb_gep(ir, slot, 16);
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, sk, k, ""),
			done, slow);
	LLVMPositionBuilderAtEnd(ir->b, slow);
	a[0] = base;
	a[1] = key;
	rt = nat_call(ir, m->plain ? RT_FN_HTAB_FIND : RT_FN_HTAB_LOOKUP,
		      ir->ptr, a, 2);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	phi = LLVMBuildPhi(ir->b, ir->ptr, "val");
	nat_incoming2(phi, hit, chk, rt, slow);
	return phi;
}

LLVMValueRef irb_native_map_lookup(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key)
{
	struct native_map *m = nat_find(map);
	LLVMValueRef base, b, args[2];

	BUG_ON(!m);
	if (m->kind == NATIVE_MAP_SHARED) {
		LLVMValueRef a[3] = { nat_shtab(ir, m), key,
				      nat_map_area(ir, m->scratch) };

		/* a consistent copy into this thread's buffer */
		return nat_call(ir, RT_FN_SHTAB_READ, ir->ptr, a, 3);
	}
	base = nat_map_area(ir, m->off);
	switch (m->kind) {
	case NATIVE_MAP_FIXED:
		return base;
	case NATIVE_MAP_ARRAY:
		b = LLVMBuildLoad2(ir->b, ir->i64,
				   irb_gep(ir, key, m->key_size - 8), "bucket");
		return LLVMBuildSelect(
			ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, b,
				      irb_const(ir, m->nslots), ""),
			LLVMBuildGEP2(ir->b, ir->i64, base, &b, 1, ""),
			LLVMConstNull(ir->ptr), "");
	case NATIVE_MAP_HTAB:
		args[0] = base;
		args[1] = key;
		if (m->key_size == 8)
			return nat_htab_hit(ir, m, base, key);
		/* an aggregation's value is created on first use; a plain
		 * map's only by an update */
		return nat_call(ir, m->plain ? RT_FN_HTAB_FIND :
					       RT_FN_HTAB_LOOKUP,
				ir->ptr, args, 2);
	case NATIVE_MAP_SHARED:
		break;
	}
	BUG("bad native map kind");
}

/* The value of key in an HTAB map, inserted (zeroed) when absent. */
static LLVMValueRef nat_htab_insert(struct irb *ir, struct native_map *m,
				    LLVMValueRef key)
{
	LLVMValueRef args[2] = { nat_map_area(ir, m->off), key };

	return nat_call(ir, RT_FN_HTAB_LOOKUP, ir->ptr, args, 2);
}

LLVMValueRef irb_native_map_update(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key, LLVMValueRef value,
				   uint64_t flags)
{
	struct native_map *m = nat_find(map);
	LLVMValueRef p, phi;
	LLVMBasicBlockRef yes, done, from;

	if (m && m->kind == NATIVE_MAP_SHARED) {
		LLVMValueRef a[3] = { nat_shtab(ir, m), key, value };

		(void)flags;
		return nat_call(ir, RT_FN_SHTAB_UPDATE, ir->i64, a, 3);
	}
	p = m && m->kind == NATIVE_MAP_HTAB ? nat_htab_insert(ir, m, key) :
					      irb_native_map_lookup(ir, map,
								    key);
	yes = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "upd");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "upd_done");
	from = LLVMGetInsertBlock(ir->b);
	(void)flags;
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""), done, yes);
	LLVMPositionBuilderAtEnd(ir->b, yes);
	irb_native_memcpy(ir, p, value, m->val_size);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	phi = LLVMBuildPhi(ir->b, ir->i64, "");
	nat_incoming2(phi, irb_const(ir, (uint64_t)-ENOMEM), from,
		      irb_const(ir, 0), yes);
	return phi;
}

LLVMValueRef irb_native_map_delete(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key)
{
	struct native_map *m = nat_find(map);
	LLVMValueRef args[2];

	if (m && m->kind == NATIVE_MAP_SHARED) {
		args[0] = nat_shtab(ir, m);
		args[1] = key;
		return nat_call(ir, RT_FN_SHTAB_DELETE, ir->i64, args, 2);
	}
	/* an aggregation's key too: cg_map_delete() tells ubt */
	if (!m || m->kind != NATIVE_MAP_HTAB) {
		nat_unsupported("delete() in a user-mode probe");
		return irb_const(ir, 0);
	}
	args[0] = nat_map_area(ir, m->off);
	args[1] = key;
	return nat_call(ir, RT_FN_HTAB_DELETE, ir->i64, args, 2);
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
 * may lower to a call of memset: small sizes are written as stores
 * instead (the functions are "no-builtins", so no pass merges them back
 * into a memset).
 */
#define NAT_MEMSET_STORES 512

void irb_native_memset(struct irb *ir, LLVMValueRef dst, int c, size_t size)
{
	LLVMTypeRef ov[2] = { ir->ptr, ir->i64 };
	LLVMValueRef args[4] = { dst, LLVMConstInt(ir->i8, c, 0),
				 irb_const(ir, size),
				 LLVMConstInt(ir->i1, 0, 0) };
	uint64_t b = (uint8_t)c, w = b * 0x0101010101010101ull;
	size_t i;

	if (size > NAT_MEMSET_STORES) {
		nat_intrinsic_mem(ir, "llvm.memset.inline", args, ov, 2);
		return;
	}
	for (i = 0; i + 8 <= size; i += 8) {
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

/* An inline system call with up to three arguments. */
static LLVMValueRef nat_syscall(struct irb *ir, long nr, LLVMValueRef *args,
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

/*
 * CLOCK_MONOTONIC in ns, as bpf_ktime_get_ns(): the runtime's
 * rt_clock_ns(), the vDSO's clock_gettime() without a system call (also
 * the events' time stamps when the time-stamp counter is not a clock).
 */
static LLVMValueRef nat_clock(struct irb *ir)
{
	return nat_call(ir, RT_FN_CLOCK_NS, ir->i64, NULL, 0);
}

/* getcpu(2): the thread's CPU, or its NUMA node. */
/*
 * rdtscp gives the kernel's per-CPU TSC_AUX: (node << 12) | cpu, as the
 * vDSO's getcpu() reads it.  Only where the CPU has rdtscp (the target
 * runs on this machine): elsewhere it would fault.
 */
static LLVMValueRef nat_getcpu_syscall(struct irb *ir, bool node);

static bool nat_have_rdtscp(void)
{
	unsigned int a, b, c, d;

	if (getenv("UBT_NO_RDTSCP"))
		return false;
	__asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000));
	if (a < 0x80000001)
		return false;
	__asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001));
	return d & (1u << 27);
}

static LLVMValueRef nat_getcpu(struct irb *ir, bool node)
{
	if (nat_have_rdtscp()) {
		/* no system call: the cpu and node numbers from TSC_AUX */
		LLVMTypeRef st = LLVMStructTypeInContext(
			ir->ctx, (LLVMTypeRef[]){ ir->i32, ir->i32 }, 2, 0);
		LLVMTypeRef ft = LLVMFunctionType(st, NULL, 0, 0);
		LLVMValueRef asmv = LLVMGetInlineAsm(
			ft, "rdtscp", 6, "={eax},={ecx},~{edx}", 20, 1, 0,
			LLVMInlineAsmDialectATT, 0);
		LLVMValueRef r = LLVMBuildCall2(ir->b, ft, asmv, NULL, 0, "");
		LLVMValueRef aux = LLVMBuildZExt(
			ir->b, LLVMBuildExtractValue(ir->b, r, 1, "aux"),
			ir->i64, "");

		return node ? LLVMBuildLShr(ir->b, aux, irb_const(ir, 12), "")
			    : LLVMBuildAnd(ir->b, aux, irb_const(ir, 0xfff),
					   "");
	}
	return nat_getcpu_syscall(ir, node);
}

static LLVMValueRef nat_getcpu_syscall(struct irb *ir, bool node)
{
	LLVMValueRef v = irb_alloca(ir, 8, node ? "node" : "cpu");
	LLVMValueRef a[3], none = irb_const(ir, 0);
	LLVMValueRef at = LLVMBuildPtrToInt(ir->b, v, ir->i64, "");

	LLVMBuildStore(ir->b, irb_const(ir, 0), v);
	a[0] = node ? none : at;
	a[1] = node ? at : none;
	a[2] = none;
	nat_syscall(ir, 309 /* getcpu */, a, 3);
	return LLVMBuildZExt(ir->b, LLVMBuildLoad2(ir->b, ir->i32, v, ""),
			     ir->i64, "");
}

/*
 * bpf_for_each_map_elem(map, callback, ctx, flags) over a shared table:
 *
 *	for (i = 0, count = 0; (i = rt_shtab_next(tab, i, key, val)); )
 *		if (count++, callback(map, key, val, blk))
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

	BUG_ON(n != 4 || !nat.nest);
	nat.nest--;
	if (nat.nest < NAT_MAX_NEST)
		nat.blk = nat.outer_blk[nat.nest];
	m = nat_find(args[0]);
	if (!m || (m->kind != NATIVE_MAP_SHARED &&
		   (m->kind != NATIVE_MAP_HTAB || m->plain))) {
		nat_unsupported("a map iteration (for, len()) over a map "
				"that is not in the shared table");
		return irb_const(ir, 0);
	}
	off = nat.area;
	nat.area = rt_align8(nat.area + rt_align8(m->key_size) +
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
	a[0] = args[0];
	a[1] = kbuf;
	a[2] = vbuf;
	a[3] = nat.blk;
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
	LLVMValueRef v, a[3];

	switch (id) {
	case BPF_FUNC_get_current_pid_tgid: {
		/* pid from the globals, tid from the block */
		LLVMValueRef pid = LLVMBuildLoad2(
			ir->b, ir->i64, nat_map_area(ir, NATIVE_GLOBALS_PID),
			"pid");
		LLVMValueRef tid = LLVMBuildLoad2(
			ir->b, ir->i32, irb_gep(ir, nat.blk, RT_BLK_TID),
			"tid");

		return LLVMBuildOr(ir->b,
				   LLVMBuildShl(ir->b, pid, irb_const(ir, 32),
						""),
				   LLVMBuildZExt(ir->b, tid, ir->i64, ""), "");
	}
	case BPF_FUNC_get_current_uid_gid: {
		LLVMValueRef uid = nat_syscall(ir, 102 /* getuid */, NULL, 0);
		LLVMValueRef gid = nat_syscall(ir, 104 /* getgid */, NULL, 0);

		return LLVMBuildOr(
			ir->b,
			LLVMBuildShl(ir->b, gid, irb_const(ir, 32), ""),
			LLVMBuildAnd(ir->b, uid, irb_const(ir, 0xffffffff),
				     ""),
			"");
	}
	case BPF_FUNC_ktime_get_ns:
	case BPF_FUNC_ktime_get_boot_ns:
		if (id == BPF_FUNC_ktime_get_boot_ns)
			break;
		return nat_clock(ir);
	case BPF_FUNC_get_current_comm: {
		/* prctl(PR_GET_NAME) into 16 bytes, then the size asked */
		LLVMValueRef tmp = irb_alloca(ir, 16, "comm16");
		uint64_t sz = n == 2 && LLVMIsAConstantInt(args[1]) ?
				      LLVMConstIntGetZExtValue(args[1]) : 0;

		if (!sz || sz > 16)
			break;
		irb_native_memset(ir, tmp, 0, 16);
		a[0] = irb_const(ir, 16 /* PR_GET_NAME */);
		a[1] = LLVMBuildPtrToInt(ir->b, tmp, ir->i64, "");
		nat_syscall(ir, 157 /* prctl */, a, 2);
		irb_native_memcpy(ir, args[0], tmp, sz);
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
	case BPF_FUNC_get_smp_processor_id:
		return nat_getcpu(ir, false);
	case BPF_FUNC_get_numa_node_id:
		return nat_getcpu(ir, true);
	case BPF_FUNC_get_prandom_u32: {
		/* xorshift64 of the clock: not cryptographic, as BPF's */
		v = nat_clock(ir);
		v = LLVMBuildXor(ir->b, v,
				 LLVMBuildShl(ir->b, v, irb_const(ir, 13), ""),
				 "");
		v = LLVMBuildXor(ir->b, v,
				 LLVMBuildLShr(ir->b, v, irb_const(ir, 7), ""),
				 "");
		v = LLVMBuildXor(ir->b, v,
				 LLVMBuildShl(ir->b, v, irb_const(ir, 17), ""),
				 "");
		return LLVMBuildAnd(ir->b, v, irb_const(ir, 0xffffffff), "");
	}
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

int irb_native_emit(struct irb *ir, bool optimise, struct native_code *funcs,
		    int n, char *err, size_t errlen)
{
	int ret;

	if (nat.unsupported) {
		snprintf(err, errlen, "%s is not supported", nat.unsupported);
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
