/*
 * Lowering of the maps user-mode and kernel probes share (cg_xmap.h): the
 * table in a BPF_F_MMAPABLE array, read and written by the same IR in
 * both targets.  Only the table's address differs: map_lookup_elem() of
 * key 0 in BPF, the word ubt wrote into the shared area in native code.
 * Accesses to the table's words are 8-byte atomics: in BPF volatile loads
 * and stores (the JIT keeps them whole and in order; x86 orders them
 * like release and acquire), cmpxchg and fetch-and-add (BPF_ATOMIC,
 * kernel 5.12 on), in native code acquire loads, release stores, lock
 * cmpxchg and lock xadd.  The usual update of a live key is one load of
 * its key word, one of its live word and one store of its value.
 */
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "cg_xmap.h"
#include "irb_native.h"
#include "util.h"

static bool xm_native(struct cg *g)
{
	return g->ir.target == CG_TARGET_NATIVE;
}

static LLVMValueRef xm_load(struct cg *g, LLVMValueRef p, bool acquire)
{
	LLVMValueRef v = LLVMBuildLoad2(g->ir.b, g->ir.i64, p, "");

	LLVMSetAlignment(v, 8);
	if (xm_native(g))
		LLVMSetOrdering(v, acquire ? LLVMAtomicOrderingAcquire :
					     LLVMAtomicOrderingMonotonic);
	else
		LLVMSetVolatile(v, 1);
	return v;
}

static void xm_store(struct cg *g, LLVMValueRef p, LLVMValueRef v,
		     bool release)
{
	LLVMValueRef s = LLVMBuildStore(g->ir.b, v, p);

	LLVMSetAlignment(s, 8);
	if (xm_native(g))
		LLVMSetOrdering(s, release ? LLVMAtomicOrderingRelease :
					     LLVMAtomicOrderingMonotonic);
	else
		LLVMSetVolatile(s, 1);
}

static LLVMBasicBlockRef xm_block(struct cg *g, const char *name)
{
	return LLVMAppendBasicBlockInContext(g->ir.ctx, g->ir.fn, name);
}

LLVMValueRef cg_xmap_define(struct cg *g, int id)
{
	struct cg_map *m = &g->obj->maps[id];

	m->xmap = true;
	/* a keyless map has one key: the smallest table */
	m->xmap_slots = m->key_type ? cg_xmap_slots(m->max_entries) :
				      CG_XMAP_MIN_SLOTS;
	if (xm_native(g))
		return irb_native_xmap_define(&g->ir, m->bpf_name,
					      m->xmap_slots);
	return irb_map_define_flags(&g->ir, m->bpf_name, BPF_MAP_TYPE_ARRAY,
				    4, cg_xmap_bytes(m->xmap_slots), 1,
				    BPF_F_MMAPABLE);
}

/* The table's address, null when it is not there (check). */
static LLVMValueRef xm_table(struct cg *g, int id)
{
	struct irb *ir = &g->ir;
	LLVMValueRef key;

	if (xm_native(g))
		return irb_native_xmap_table(ir, g->maps[id]);
	key = irb_alloca(ir, 4, "xmap_key");
	LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, 0, 0), key);
	return irb_map_lookup(ir, g->maps[id], key);
}

/*
 * The slot of key k in map id's table tab (null: not placed), null when
 * it is not there; with insert, a free slot claimed for it (compare-and-
 * swap of its key word from 0; its live word is still 0), null when none
 * was found within the probe bound (one more in the table's collided
 * count).
 */
static LLVMValueRef xm_slot(struct cg *g, int id, LLVMValueRef tab,
			    LLVMValueRef k, bool insert)
{
	struct irb *ir = &g->ir;
	const struct cg_map *m = &g->obj->maps[id];
	uint32_t nslots = m->xmap_slots, probes = cg_xmap_max_probe(nslots);
	int bits = __builtin_ctz(nslots);
	LLVMBasicBlockRef chk, start, loop, notme, claim = NULL, next, full,
		miss, done, entry_end, loop_end, claim_end = NULL;
	LLVMValueRef enc, h, i, idx, slot, kw, inext, res, br;
	LLVMValueRef vals[3];
	LLVMBasicBlockRef from[3];
	int n = 0;

	enc = LLVMBuildXor(ir->b, k, irb_const(ir, CG_XMAP_KEY_FLIP), "enc");
	chk = xm_block(g, "xmap_chk");
	start = xm_block(g, "xmap_start");
	loop = xm_block(g, "xmap_loop");
	notme = xm_block(g, "xmap_notme");
	if (insert)
		claim = xm_block(g, "xmap_claim");
	next = xm_block(g, "xmap_next");
	full = xm_block(g, "xmap_full");
	miss = xm_block(g, "xmap_miss");
	done = xm_block(g, "xmap_done");

	br = LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, tab, ""), miss,
			     chk);
	irb_unlikely(ir, br, true);
	LLVMPositionBuilderAtEnd(ir->b, chk);
	br = LLVMBuildCondBr(ir->b,
			     LLVMBuildICmp(ir->b, LLVMIntEQ, enc,
					   irb_const(ir, 0), ""),
			     insert ? full : miss, start);
	irb_unlikely(ir, br, true);

	LLVMPositionBuilderAtEnd(ir->b, start);
	h = LLVMBuildLShr(ir->b,
			  LLVMBuildMul(ir->b, enc,
				       irb_const(ir, CG_XMAP_HASH), ""),
			  irb_const(ir, 64 - bits), "hash");
	entry_end = LLVMGetInsertBlock(ir->b);
	LLVMBuildBr(ir->b, loop);

	/* loop: the i-th slot of the sequence */
	LLVMPositionBuilderAtEnd(ir->b, loop);
	i = LLVMBuildPhi(ir->b, ir->i64, "i");
	idx = LLVMBuildAnd(ir->b, LLVMBuildAdd(ir->b, h, i, ""),
			   irb_const(ir, nslots - 1), "idx");
	{
		LLVMValueRef off = LLVMBuildAdd(
			ir->b,
			LLVMBuildMul(ir->b, idx, irb_const(ir, CG_XMAP_SLOT),
				     ""),
			irb_const(ir, CG_XMAP_HDR), "");

		slot = LLVMBuildGEP2(ir->b, ir->i8, tab, &off, 1, "slot");
	}
	kw = xm_load(g, slot, true);
	loop_end = LLVMGetInsertBlock(ir->b);
	/* the usual case, a key found where it hashes, falls through */
	br = LLVMBuildCondBr(ir->b,
			     LLVMBuildICmp(ir->b, LLVMIntEQ, kw, enc, ""),
			     done, notme);
	irb_unlikely(ir, br, false);
	vals[n] = slot;
	from[n++] = loop_end;

	LLVMPositionBuilderAtEnd(ir->b, notme);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntEQ, kw, irb_const(ir, 0),
				      ""),
			insert ? claim : miss, next);

	if (insert) {
		LLVMValueRef pair, old, ok;

		LLVMPositionBuilderAtEnd(ir->b, claim);
		pair = LLVMBuildAtomicCmpXchg(
			ir->b, slot, irb_const(ir, 0), enc,
			LLVMAtomicOrderingSequentiallyConsistent,
			LLVMAtomicOrderingSequentiallyConsistent, 0);
		old = LLVMBuildExtractValue(ir->b, pair, 0, "old");
		/* ours, or another inserter's of the same key */
		ok = LLVMBuildOr(ir->b,
				 LLVMBuildICmp(ir->b, LLVMIntEQ, old,
					       irb_const(ir, 0), ""),
				 LLVMBuildICmp(ir->b, LLVMIntEQ, old, enc, ""),
				 "");
		claim_end = LLVMGetInsertBlock(ir->b);
		LLVMBuildCondBr(ir->b, ok, done, next);
		vals[n] = slot;
		from[n++] = claim_end;
	}

	LLVMPositionBuilderAtEnd(ir->b, next);
	inext = LLVMBuildAdd(ir->b, i, irb_const(ir, 1), "");
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, inext,
				      irb_const(ir, probes), ""),
			loop, insert ? full : miss);
	{
		LLVMValueRef iv[2] = { irb_const(ir, 0), inext };
		LLVMBasicBlockRef ib[2] = { entry_end, next };

		LLVMAddIncoming(i, iv, ib, 2);
	}

	/* no slot within the probe bound, or the one key that cannot be
	 * stored: counted apart from a full map's drops, reported at exit */
	LLVMPositionBuilderAtEnd(ir->b, full);
	if (insert) {
		LLVMValueRef cnt = irb_gep(ir, tab, CG_XMAP_OFF_COLLIDED);

		LLVMBuildAtomicRMW(ir->b, LLVMAtomicRMWBinOpAdd, cnt,
				   irb_const(ir, 1),
				   LLVMAtomicOrderingMonotonic, 0);
	}
	LLVMBuildBr(ir->b, miss);

	LLVMPositionBuilderAtEnd(ir->b, miss);
	LLVMBuildBr(ir->b, done);
	vals[n] = LLVMConstPointerNull(ir->ptr);
	from[n++] = miss;

	LLVMPositionBuilderAtEnd(ir->b, done);
	res = LLVMBuildPhi(ir->b, ir->ptr, "xslot");
	LLVMAddIncoming(res, vals, from, n);

	return res;
}

LLVMValueRef cg_xmap_read(struct cg *g, int id, LLVMValueRef k,
			  const struct type *vt)
{
	struct irb *ir = &g->ir;
	LLVMValueRef slot, res, live;
	LLVMBasicBlockRef has, set, cont;

	res = irb_alloca(ir, 8, "xmap_val");
	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	slot = xm_slot(g, id, xm_table(g, id), k, false);
	has = xm_block(g, "xmap_has");
	set = xm_block(g, "xmap_set");
	cont = xm_block(g, "xmap_read_done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, slot, ""), cont, has);
	LLVMPositionBuilderAtEnd(ir->b, has);
	live = xm_load(g, irb_gep(ir, slot, CG_XMAP_SLOT_LIVE), true);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntEQ, live, irb_const(ir, 1),
				      ""),
			set, cont);
	LLVMPositionBuilderAtEnd(ir->b, set);
	LLVMBuildStore(ir->b,
		       xm_load(g, irb_gep(ir, slot, CG_XMAP_SLOT_VALUE), false),
		       res);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	return cg_load(g, res, vt);
}

/* atomically *p += d (a count of the table's header) */
static LLVMValueRef xm_add(struct cg *g, LLVMValueRef p, int64_t d)
{
	return LLVMBuildAtomicRMW(g->ir.b, LLVMAtomicRMWBinOpAdd, p,
				  irb_const(&g->ir, (uint64_t)d),
				  LLVMAtomicOrderingSequentiallyConsistent, 0);
}

void cg_xmap_assign(struct cg *g, int id, LLVMValueRef k, LLVMValueRef val)
{
	struct irb *ir = &g->ir;
	const struct cg_map *m = &g->obj->maps[id];
	LLVMValueRef tab, slot, live, lp, vp, keys, n, pair;
	LLVMBasicBlockRef has, set, add, room, full, lost, cont;

	tab = xm_table(g, id);
	slot = xm_slot(g, id, tab, k, true);
	has = xm_block(g, "xmap_put");
	set = xm_block(g, "xmap_set");
	add = xm_block(g, "xmap_add");
	room = xm_block(g, "xmap_room");
	full = xm_block(g, "xmap_limit");
	lost = xm_block(g, "xmap_lost_race");
	cont = xm_block(g, "xmap_put_done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, slot, ""), cont, has);
	/* live: the value only (the live word's line is only read) */
	LLVMPositionBuilderAtEnd(ir->b, has);
	lp = irb_gep(ir, slot, CG_XMAP_SLOT_LIVE);
	vp = irb_gep(ir, slot, CG_XMAP_SLOT_VALUE);
	live = xm_load(g, lp, true);
	irb_unlikely(ir,
		     LLVMBuildCondBr(ir->b,
				     LLVMBuildICmp(ir->b, LLVMIntEQ, live,
						   irb_const(ir, 1), ""),
				     set, add),
		     false);
	LLVMPositionBuilderAtEnd(ir->b, set);
	xm_store(g, vp, val, false);
	LLVMBuildBr(ir->b, cont);
	/*
	 * A new or deleted key: one more live key, within max_entries (else
	 * a drop, as a full BPF map's); the value, then live from 0 to 1.
	 * Whoever turns live from 0 owns the count: a writer that loses the
	 * race to another gives its count back (its value was stored).
	 */
	LLVMPositionBuilderAtEnd(ir->b, add);
	keys = irb_gep(ir, tab, CG_XMAP_OFF_KEYS);
	n = xm_add(g, keys, 1);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, n,
				      irb_const(ir, m->max_entries ?
						       m->max_entries : 1),
				      ""),
			room, full);
	LLVMPositionBuilderAtEnd(ir->b, full);
	xm_add(g, keys, -1);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_DROPPED), 1);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, room);
	xm_store(g, vp, val, false);
	pair = LLVMBuildAtomicCmpXchg(ir->b, lp, irb_const(ir, 0),
				      irb_const(ir, 1),
				      LLVMAtomicOrderingSequentiallyConsistent,
				      LLVMAtomicOrderingSequentiallyConsistent,
				      0);
	LLVMBuildCondBr(ir->b, LLVMBuildExtractValue(ir->b, pair, 1, ""),
			cont, lost);
	LLVMPositionBuilderAtEnd(ir->b, lost);
	xm_add(g, keys, -1);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

LLVMValueRef cg_xmap_has(struct cg *g, int id, LLVMValueRef k)
{
	struct irb *ir = &g->ir;
	LLVMValueRef slot, res;
	LLVMBasicBlockRef has, cont;

	res = irb_alloca(ir, 8, "xmap_has");
	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	slot = xm_slot(g, id, xm_table(g, id), k, false);
	has = xm_block(g, "xmap_has_slot");
	cont = xm_block(g, "xmap_has_done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, slot, ""), cont, has);
	LLVMPositionBuilderAtEnd(ir->b, has);
	LLVMBuildStore(ir->b,
		       LLVMBuildZExt(ir->b,
				     LLVMBuildICmp(ir->b, LLVMIntEQ,
						   xm_load(g,
							   irb_gep(ir, slot,
								   CG_XMAP_SLOT_LIVE),
							   true),
						   irb_const(ir, 1), ""),
				     ir->i64, ""),
		       res);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	return LLVMBuildLoad2(ir->b, ir->i64, res, "has_key");
}

LLVMValueRef cg_xmap_delete(struct cg *g, int id, LLVMValueRef k)
{
	struct irb *ir = &g->ir;
	LLVMValueRef tab, slot, pair, res;
	LLVMBasicBlockRef has, del, cont;

	res = irb_alloca(ir, 8, "xmap_del");
	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	tab = xm_table(g, id);
	slot = xm_slot(g, id, tab, k, false);
	has = xm_block(g, "xmap_del_has");
	del = xm_block(g, "xmap_del_live");
	cont = xm_block(g, "xmap_del_done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, slot, ""), cont, has);
	/* live from 1 to 0 (the value stays: a reader checks live first,
	 * a writer stores its value before it sets live); one key less */
	LLVMPositionBuilderAtEnd(ir->b, has);
	pair = LLVMBuildAtomicCmpXchg(ir->b,
				      irb_gep(ir, slot, CG_XMAP_SLOT_LIVE),
				      irb_const(ir, 1), irb_const(ir, 0),
				      LLVMAtomicOrderingSequentiallyConsistent,
				      LLVMAtomicOrderingSequentiallyConsistent,
				      0);
	LLVMBuildCondBr(ir->b, LLVMBuildExtractValue(ir->b, pair, 1, ""), del,
			cont);
	LLVMPositionBuilderAtEnd(ir->b, del);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), -1);
	LLVMBuildStore(ir->b, irb_const(ir, 1), res);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	/* delete()'s value: was the key there */
	return LLVMBuildLoad2(ir->b, ir->i64, res, "deleted");
}
