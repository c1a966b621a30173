/*
 * irb for the native target: map lookup, update and delete in user-mode
 * probes (codegen/native.h: fixed slots, arrays, per-thread tables,
 * shared tables), with inline fast paths for per-thread tables with
 * 8-byte keys (struct rt_htab: @[tid], @s[tid], a pointer as key):
 * lookup, insert-or-find and delete at the key's first slot, as the
 * runtime (runtime/rt_htab.c) would find it; anything else is a call.
 */
#include <errno.h>

#include <llvm-c/Core.h>

#include "cg.h"
#include "irb.h"
#include "irb_native.h"
#include "native.h"
#include "rt_abi.h"
#include "irb_native_int.h"
#include "util.h"

/* A release store of v at ptr (8-byte aligned): a slot's state or key. */
static void nat_store_release(struct irb *ir, LLVMValueRef v, LLVMValueRef ptr)
{
	LLVMValueRef s = LLVMBuildStore(ir->b, v, ptr);

	LLVMSetOrdering(s, LLVMAtomicOrderingRelease);
	LLVMSetAlignment(s, 8);
}

/* An 8-byte key's word (the key may be unaligned). */
static LLVMValueRef nat_key_word(struct irb *ir, LLVMValueRef key)
{
	LLVMValueRef k = LLVMBuildLoad2(ir->b, ir->i64, key, "k");

	LLVMSetAlignment(k, 1);
	return k;
}

/* The thread's own tid (in the block), as an int64. */
static LLVMValueRef nat_own_tid(struct irb *ir)
{
	LLVMValueRef tid = LLVMBuildLoad2(ir->b, ir->i32,
					  irb_gep(ir, irb_nat.blk, RT_BLK_TID),
					  "tid");

	return LLVMBuildZExt(ir->b, nat_invariant(ir, tid), ir->i64, "");
}

/*
 * The slow path of an inline table access: in block slow, runtime
 * function fn of (base, key) with no registers saved, then on to done;
 * its result: a pointer, or of type ty (an int64 result comes back in
 * %rax as nat_call_kept()'s pointer).
 */
static LLVMValueRef nat_htab_slow(struct irb *ir, LLVMBasicBlockRef slow,
				  LLVMBasicBlockRef done, int fn,
				  LLVMValueRef base, LLVMValueRef key,
				  LLVMTypeRef ty)
{
	LLVMValueRef a[2] = { base, key }, rt;

	LLVMPositionBuilderAtEnd(ir->b, slow);
	rt = nat_call_kept(ir, fn, a);
	if (ty != ir->ptr)
		rt = LLVMBuildPtrToInt(ir->b, rt, ty, "");
	LLVMBuildBr(ir->b, done);
	return rt;
}

/*
 * The key's first slot in a per-thread table with 8-byte keys, as
 * nat_htab_hit() finds it: its address in *slot, its state in *st;
 * returns "state is not empty and the slot holds the key".
 */
static LLVMValueRef nat_htab_first(struct irb *ir, struct native_map *m,
				   LLVMValueRef base, LLVMValueRef key,
				   LLVMValueRef *slot, LLVMValueRef *st)
{
	uint64_t ss = 16 + rt_align8(m->val_size);
	LLVMValueRef k, h, sk, tid, th;

	k = nat_key_word(ir, key);
	h = LLVMBuildMul(ir->b,
			 LLVMBuildXor(ir->b, k,
				      irb_const(ir, 1469598103934665603ULL),
				      ""),
			 irb_const(ir, 1099511628211ULL), "");
	h = LLVMBuildXor(ir->b, h, LLVMBuildLShr(ir->b, h, irb_const(ir, 29),
						 ""), "hash");
	/*
	 * The thread's own tid as the key (@s[tid]): its hash is in the
	 * block.  Where the key is the tid builtin, the comparison folds and
	 * the hashing above goes; elsewhere it costs a load and a cmov.
	 */
	tid = nat_own_tid(ir);
	th = nat_invariant(ir, LLVMBuildLoad2(ir->b, ir->i64,
					      irb_gep(ir, irb_nat.blk,
						      RT_BLK_TID_HASH),
					      "tid_hash"));
	h = LLVMBuildSelect(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, k, tid, ""),
			    th, h, "");
	h = LLVMBuildAnd(ir->b, h, irb_const(ir, m->nslots - 1), "");
	h = LLVMBuildAdd(ir->b, LLVMBuildMul(ir->b, h, irb_const(ir, ss), ""),
			 irb_const(ir, sizeof(struct rt_htab)), "");
	*slot = LLVMBuildInBoundsGEP2(ir->b, ir->i8, base, &h, 1, "slot");
	*st = LLVMBuildLoad2(ir->b, ir->i64, *slot, "state");
	sk = LLVMBuildLoad2(ir->b, ir->i64, irb_gep(ir, *slot, 8), "skey");
	return LLVMBuildAnd(
		ir->b,
		LLVMBuildICmp(ir->b, LLVMIntNE, *st, irb_const(ir, 0), ""),
		LLVMBuildICmp(ir->b, LLVMIntEQ, sk, k, ""), "mine");
}

/*
 * An inline change of the key's first slot (insert-or-find, delete): its
 * blocks, the slot and its state.
 */
struct nat_fast {
	LLVMBasicBlockRef mine, set, slow, done;
	LLVMValueRef slot, st;
};

/*
 * Open f: the slot (nat_htab_first()), the blocks named p_mine, p_set,
 * p_slow, p_done; the builder is left in the "mine" block.
 */
static void nat_fast_open(struct irb *ir, struct native_map *m,
			  LLVMValueRef base, LLVMValueRef key,
			  const char *const names[4], struct nat_fast *f)
{
	LLVMValueRef own = nat_htab_first(ir, m, base, key, &f->slot, &f->st);

	f->mine = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, names[0]);
	f->set = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, names[1]);
	f->slow = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, names[2]);
	f->done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, names[3]);
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, own, f->mine, f->slow), false);
	LLVMPositionBuilderAtEnd(ir->b, f->mine);
}

/* From "mine": state already st_done goes to done, else to "set" (the
 * builder is left there). */
static void nat_fast_state(struct irb *ir, struct nat_fast *f,
			   uint64_t st_done)
{
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, f->st,
					     irb_const(ir, st_done), ""),
			f->done, f->set);
	LLVMPositionBuilderAtEnd(ir->b, f->set);
}

/*
 * Close f: the "set" path on to done, the slow path (runtime function fn
 * of (base, key), its result of type ty); in done, a phi of v_mine,
 * v_set and the runtime's result.
 */
static LLVMValueRef nat_fast_close(struct irb *ir, struct nat_fast *f, int fn,
				   LLVMValueRef base, LLVMValueRef key,
				   LLVMTypeRef ty, const char *name,
				   LLVMValueRef v_mine, LLVMValueRef v_set)
{
	LLVMValueRef vals[3], phi;
	LLVMBasicBlockRef bbs[3];

	bbs[0] = f->mine;
	bbs[1] = LLVMGetInsertBlock(ir->b);
	bbs[2] = f->slow;
	LLVMBuildBr(ir->b, f->done);
	vals[0] = v_mine;
	vals[1] = v_set;
	vals[2] = nat_htab_slow(ir, f->slow, f->done, fn, base, key, ty);
	LLVMPositionBuilderAtEnd(ir->b, f->done);
	phi = LLVMBuildPhi(ir->b, ty, name);
	LLVMAddIncoming(phi, vals, bbs, 3);
	return phi;
}

/*
 * Lookup in a per-thread table with 8-byte keys (tid, a pointer): the
 * key's first slot, inline, when it holds the key (state 1), as
 * rt_htab_slot() finds it (rt_hash() of one word); anything else through
 * the runtime (another slot, an insert, a revival). No call, so no
 * registers saved, on a hit.
 */
static LLVMValueRef nat_htab_hit(struct irb *ir, struct native_map *m,
				 LLVMValueRef base, LLVMValueRef key)
{
	LLVMBasicBlockRef slow, done, from;
	LLVMValueRef slot, st, own, hit, rt, phi, idx;

	own = nat_htab_first(ir, m, base, key, &slot, &st);
	own = LLVMBuildAnd(ir->b, own,
			   LLVMBuildICmp(ir->b, LLVMIntEQ, st,
					 irb_const(ir, RT_HTAB_USED), ""),
			   "");
	/* inbounds of the block: never null, a null check folds away */
	idx = irb_const(ir, 16);
	hit = LLVMBuildInBoundsGEP2(ir->b, ir->i8, slot, &idx, 1, "hit");
	from = LLVMGetInsertBlock(ir->b);
	slow = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "htab_slow");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "htab_done");
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, own, done, slow), false);
	rt = nat_htab_slow(ir, slow, done,
			   m->plain ? RT_FN_HTAB_FIND : RT_FN_HTAB_LOOKUP,
			   base, key, ir->ptr);
	LLVMPositionBuilderAtEnd(ir->b, done);
	phi = LLVMBuildPhi(ir->b, ir->ptr, "val");
	nat_incoming2(phi, hit, from, rt, slow);
	return phi;
}

/*
 * Insert-or-find in a per-thread table with 8-byte keys: the key's first
 * slot, inline, when it holds the key, reviving a deleted or zeroed one
 * as rt_htab_lookup() does (value zeroed, then state used: the owner is
 * the only writer of its slots but for ubt's state changes, which never
 * start from deleted); an empty first slot (an insert, counted against
 * the map's limit) or another key through the runtime.  The latency
 * idiom's @s[tid] = nsecs after delete(@s[tid]) stays inline.
 */
static LLVMValueRef nat_htab_insert_fast(struct irb *ir, struct native_map *m,
					 LLVMValueRef base, LLVMValueRef key)
{
	static const char *const names[4] = { "ins_mine", "ins_revive",
					      "ins_slow", "ins_done" };
	struct nat_fast f;
	LLVMValueRef val;

	nat_fast_open(ir, m, base, key, names, &f);
	val = irb_gep(ir, f.slot, 16);
	nat_fast_state(ir, &f, RT_HTAB_USED);
	/* revive */
	irb_native_memset(ir, val, 0, rt_align8(m->val_size));
	nat_store_release(ir, irb_const(ir, RT_HTAB_USED), f.slot);
	return nat_fast_close(ir, &f, RT_FN_HTAB_LOOKUP, base, key, ir->ptr,
			      "ins_val", val, val);
}

/*
 * delete() in a per-thread table with 8-byte keys: the key's first slot
 * inline (state deleted: -ENOENT; used or zeroed: deleted, as
 * rt_htab_delete()); anything else through the runtime (its int64 result
 * comes back in %rax as nat_call_kept()'s pointer).
 */
static LLVMValueRef nat_htab_delete_fast(struct irb *ir, struct native_map *m,
					 LLVMValueRef base, LLVMValueRef key)
{
	static const char *const names[4] = { "del_mine", "del_set",
					      "del_slow", "del_done" };
	struct nat_fast f;

	nat_fast_open(ir, m, base, key, names, &f);
	nat_fast_state(ir, &f, RT_HTAB_DELETED);
	nat_store_release(ir, irb_const(ir, RT_HTAB_DELETED), f.slot);
	/* kept: the probe saves no registers for its slow path */
	return nat_fast_close(ir, &f, RT_FN_HTAB_DELETE, base, key, ir->i64,
			      "del_ret", irb_const(ir, (uint64_t)-ENOENT),
			      irb_const(ir, 0));
}

/*
 * A per-thread slot (native_map.tslot): "key is the thread's own tid",
 * the slot's address in *slot.  Where the key is the tid builtin (every
 * use, shim/place/place_slot.c) the comparison folds to true; any other
 * key goes to the table, as before.
 */
static LLVMValueRef nat_tslot_mine(struct irb *ir, struct native_map *m,
				   LLVMValueRef key, LLVMValueRef *slot)
{
	LLVMValueRef k, tid;

	k = nat_key_word(ir, key);
	tid = nat_own_tid(ir);
	*slot = nat_map_area(ir, m->tslot);
	return LLVMBuildICmp(ir->b, LLVMIntEQ, k, tid, "own_tid");
}

/*
 * Branch on nat_tslot_mine(): the builder is left in the "mine" block;
 * *other is the block for any other key, *done the join.
 */
static LLVMValueRef nat_tslot_split(struct irb *ir, struct native_map *m,
				    LLVMValueRef key,
				    LLVMBasicBlockRef *other,
				    LLVMBasicBlockRef *done)
{
	LLVMBasicBlockRef mine;
	LLVMValueRef slot, own;

	own = nat_tslot_mine(ir, m, key, &slot);
	mine = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "tslot");
	*other = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "tslot_tab");
	*done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "tslot_done");
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, own, mine, *other), false);
	LLVMPositionBuilderAtEnd(ir->b, mine);
	return slot;
}

/*
 * The "mine" path of a per-thread slot done (its last block, returned,
 * goes on to done); the builder is left in the table's block other.
 */
static LLVMBasicBlockRef nat_tslot_other(struct irb *ir,
					 LLVMBasicBlockRef other,
					 LLVMBasicBlockRef done)
{
	LLVMBasicBlockRef from = LLVMGetInsertBlock(ir->b);

	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, other);
	return from;
}

/* The table's path done too: in done, a phi of v (from) and tab. */
static LLVMValueRef nat_tslot_join(struct irb *ir, LLVMBasicBlockRef done,
				   LLVMTypeRef ty, const char *name,
				   LLVMValueRef v, LLVMBasicBlockRef from,
				   LLVMValueRef tab)
{
	LLVMBasicBlockRef other = LLVMGetInsertBlock(ir->b);
	LLVMValueRef phi;

	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	phi = LLVMBuildPhi(ir->b, ty, name);
	nat_incoming2(phi, v, from, tab, other);
	return phi;
}

/* The slot's key word (0: absent). */
static LLVMValueRef nat_tslot_kw(struct irb *ir, LLVMValueRef slot)
{
	LLVMValueRef kw = LLVMBuildLoad2(ir->b, ir->i64, slot, "slot_key");

	LLVMSetAlignment(kw, 8);
	return kw;
}

/* The slot's value if present (its key word not 0), else NULL. */
static LLVMValueRef nat_tslot_lookup(struct irb *ir, struct native_map *m,
				     LLVMValueRef key)
{
	LLVMBasicBlockRef other, done, from;
	LLVMValueRef slot, kw, val, tab, idx;

	slot = nat_tslot_split(ir, m, key, &other, &done);
	kw = nat_tslot_kw(ir, slot);
	/* inbounds of the block: never null, the caller's check folds */
	idx = irb_const(ir, 8);
	val = LLVMBuildSelect(ir->b,
			      LLVMBuildICmp(ir->b, LLVMIntNE, kw,
					    irb_const(ir, 0), ""),
			      LLVMBuildInBoundsGEP2(ir->b, ir->i8, slot, &idx,
						    1, ""),
			      LLVMConstNull(ir->ptr), "slot_val");
	from = nat_tslot_other(ir, other, done);
	tab = nat_htab_hit(ir, m, nat_map_area(ir, m->off), key);
	return nat_tslot_join(ir, done, ir->ptr, "tslot_val", val, from, tab);
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
		/*
		 * inbounds of the block: the slot is never null, so the
		 * caller's null check folds into the range check (an out of
		 * range index is poison only on the side not selected)
		 */
		return LLVMBuildSelect(
			ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, b,
				      irb_const(ir, m->nslots), ""),
			LLVMBuildInBoundsGEP2(ir->b, ir->i64, base, &b, 1, ""),
			LLVMConstNull(ir->ptr), "");
	case NATIVE_MAP_HTAB:
		args[0] = base;
		args[1] = key;
		if (m->tslot)
			return nat_tslot_lookup(ir, m, key);
		if (m->key_size == 8)
			return nat_htab_hit(ir, m, base, key);
		/* an aggregation's value is created on first use; a plain
		 * map's only by an update */
		return nat_call(ir, m->plain ? RT_FN_HTAB_FIND :
					       RT_FN_HTAB_LOOKUP,
				ir->ptr, args, 2);
	case NATIVE_MAP_SHARED:
	case NATIVE_MAP_XMAP:	/* cg_xmap.c, never a lookup */
		break;
	}
	BUG("bad native map kind");
}

/* The value of key in an HTAB map, inserted (zeroed) when absent. */
static LLVMValueRef nat_htab_insert(struct irb *ir, struct native_map *m,
				    LLVMValueRef key)
{
	LLVMValueRef args[2] = { nat_map_area(ir, m->off), key };

	if (m->key_size == 8)
		return nat_htab_insert_fast(ir, m, args[0], key);
	return nat_call(ir, RT_FN_HTAB_LOOKUP, ir->ptr, args, 2);
}

/*
 * An update of a per-thread slot: the value, then the key word (the
 * thread's tid: present), so that ubt never reads a present slot with
 * an older value than the key says; 0.
 */
static LLVMValueRef nat_tslot_update(struct irb *ir, struct native_map *m,
				     LLVMValueRef map, LLVMValueRef key,
				     LLVMValueRef value, uint64_t flags)
{
	LLVMBasicBlockRef other, done, from;
	LLVMValueRef slot, k, tab;
	struct native_map keep = *m;

	slot = nat_tslot_split(ir, m, key, &other, &done);
	irb_native_memcpy(ir, irb_gep(ir, slot, 8), value, m->val_size);
	k = nat_key_word(ir, key);
	nat_store_release(ir, k, slot);
	from = nat_tslot_other(ir, other, done);
	/* the table, as without a slot */
	m->tslot = 0;
	tab = irb_native_map_update(ir, map, key, value, flags);
	*m = keep;
	return nat_tslot_join(ir, done, ir->i64, "tslot_upd", irb_const(ir, 0),
			      from, tab);
}

/* delete() of a per-thread slot: the key word cleared; 0, or -ENOENT
 * when it was not present. */
static LLVMValueRef nat_tslot_delete(struct irb *ir, struct native_map *m,
				     LLVMValueRef key)
{
	LLVMBasicBlockRef other, done, from;
	LLVMValueRef slot, kw, ret, tab;

	slot = nat_tslot_split(ir, m, key, &other, &done);
	kw = nat_tslot_kw(ir, slot);
	nat_store_release(ir, irb_const(ir, 0), slot);
	ret = LLVMBuildSelect(ir->b,
			      LLVMBuildICmp(ir->b, LLVMIntNE, kw,
					    irb_const(ir, 0), ""),
			      irb_const(ir, 0), irb_const(ir, (uint64_t)-2),
			      "");
	from = nat_tslot_other(ir, other, done);
	tab = m->key_size == 8 ?
		      nat_htab_delete_fast(ir, m, nat_map_area(ir, m->off),
					   key) :
		      irb_const(ir, (uint64_t)-2);
	return nat_tslot_join(ir, done, ir->i64, "tslot_del", ret, from, tab);
}

LLVMValueRef irb_native_map_update(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key, LLVMValueRef value,
				   uint64_t flags)
{
	struct native_map *m = nat_find(map);
	LLVMValueRef p, phi;
	LLVMBasicBlockRef yes, done, from;

	if (m && m->kind == NATIVE_MAP_HTAB && m->tslot)
		return nat_tslot_update(ir, m, map, key, value, flags);
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
	if (m->tslot)
		return nat_tslot_delete(ir, m, key);
	args[0] = nat_map_area(ir, m->off);
	args[1] = key;
	if (m->key_size == 8)
		return nat_htab_delete_fast(ir, m, args[0], key);
	return nat_call(ir, RT_FN_HTAB_DELETE, ir->i64, args, 2);
}
