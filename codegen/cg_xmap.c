/*
 * Lowering of the maps user-mode and kernel probes share (cg_xmap.h): the
 * table in a BPF_F_MMAPABLE array, read and written by the same IR in
 * both targets.  Only the table's address differs: map_lookup_elem() of
 * key 0 in BPF, the word ubt wrote into the shared area in native code.
 * Accesses to the table's words are 8-byte atomics: in BPF volatile loads
 * and stores (the JIT keeps them whole and in order; x86 orders them
 * like release and acquire), cmpxchg and fetch-and-add (BPF_ATOMIC,
 * kernel 5.12 on), in native code acquire loads, release stores, lock
 * cmpxchg, xchg and xadd.  The usual update of a live key loads its state
 * and key words, pins the slot (lock xadd), loads them again, stores the
 * value and unpins it (lock xadd): the protocol is cg_xmap.h's.
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

/* an 8-byte atomic load; seq_cst where it must not pass an earlier
 * atomic read-modify-write (a pin or a claim, then the other's word) */
static LLVMValueRef xm_load_ord(struct cg *g, LLVMValueRef p,
				LLVMAtomicOrdering ord)
{
	LLVMValueRef v = LLVMBuildLoad2(g->ir.b, g->ir.i64, p, "");

	LLVMSetAlignment(v, 8);
	if (xm_native(g))
		LLVMSetOrdering(v, ord);
	else
		LLVMSetVolatile(v, 1);
	return v;
}

static LLVMValueRef xm_load(struct cg *g, LLVMValueRef p, bool acquire)
{
	return xm_load_ord(g, p, acquire ? LLVMAtomicOrderingAcquire :
					   LLVMAtomicOrderingMonotonic);
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

/* an 8-byte temporary of the operation: in BPF, of its function
 * (xm_sub()), which has none of the program's scopes */
static LLVMValueRef xm_alloca(struct cg *g, const char *name)
{
	if (xm_native(g))
		return irb_alloca(&g->ir, 8, name);
	return irb_alloca_type(&g->ir, g->ir.i64, name);
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

static LLVMValueRef xm_eq(struct cg *g, LLVMValueRef a, uint64_t b)
{
	return LLVMBuildICmp(g->ir.b, LLVMIntEQ, a, irb_const(&g->ir, b), "");
}

/* a state word's state, and the word of state st in s's generation */
static LLVMValueRef xm_state(struct cg *g, LLVMValueRef s)
{
	return LLVMBuildAnd(g->ir.b, s, irb_const(&g->ir, CG_XMAP_STATE_MASK),
			    "state");
}

static LLVMValueRef xm_with(struct cg *g, LLVMValueRef s, uint64_t st)
{
	struct irb *ir = &g->ir;

	return LLVMBuildOr(ir->b,
			   LLVMBuildAnd(ir->b, s,
					irb_const(ir, ~CG_XMAP_STATE_MASK), ""),
			   irb_const(ir, st), "");
}

/* compare-and-swap of *p from old to new: did it succeed */
static LLVMValueRef xm_cas(struct cg *g, LLVMValueRef p, LLVMValueRef old,
			   LLVMValueRef new)
{
	LLVMValueRef pair = LLVMBuildAtomicCmpXchg(
		g->ir.b, p, old, new, LLVMAtomicOrderingSequentiallyConsistent,
		LLVMAtomicOrderingSequentiallyConsistent, 0);

	return LLVMBuildExtractValue(g->ir.b, pair, 1, "");
}

/* atomically *p += d (a count of the header, a slot's pins): the old */
static LLVMValueRef xm_add(struct cg *g, LLVMValueRef p, int64_t d)
{
	return LLVMBuildAtomicRMW(g->ir.b, LLVMAtomicRMWBinOpAdd, p,
				  irb_const(&g->ir, (uint64_t)d),
				  LLVMAtomicOrderingSequentiallyConsistent, 0);
}

static LLVMValueRef xm_word(struct cg *g, LLVMValueRef slot, size_t off)
{
	return irb_gep(&g->ir, slot, off);
}

/* The key's word as stored, and the first slot of its probe sequence. */
static LLVMValueRef xm_enc(struct cg *g, LLVMValueRef k)
{
	return LLVMBuildXor(g->ir.b, k, irb_const(&g->ir, CG_XMAP_KEY_FLIP),
			    "enc");
}

static LLVMValueRef xm_hash(struct cg *g, int id, LLVMValueRef enc)
{
	struct irb *ir = &g->ir;
	int bits = __builtin_ctz(g->obj->maps[id].xmap_slots);

	return LLVMBuildLShr(ir->b,
			     LLVMBuildMul(ir->b, enc,
					  irb_const(ir, CG_XMAP_HASH), ""),
			     irb_const(ir, 64 - bits), "hash");
}

/*
 * A walk of the probe sequence from hash h: the i-th slot in head (from
 * the block the walk is begun in); a body ends by branching to next (the
 * following slot, or exit past the bound) or out of the walk.
 */
struct xm_walk {
	LLVMValueRef i, slot;
	LLVMBasicBlockRef next;
	LLVMBasicBlockRef from;
};

static void xm_walk_begin(struct cg *g, int id, struct xm_walk *w,
			  LLVMValueRef tab, LLVMValueRef h, const char *name)
{
	struct irb *ir = &g->ir;
	uint32_t nslots = g->obj->maps[id].xmap_slots;
	LLVMBasicBlockRef head = xm_block(g, name);
	LLVMValueRef idx, off;

	w->from = LLVMGetInsertBlock(ir->b);
	w->next = xm_block(g, "xmap_next");
	LLVMBuildBr(ir->b, head);
	LLVMPositionBuilderAtEnd(ir->b, head);
	w->i = LLVMBuildPhi(ir->b, ir->i64, "i");
	idx = LLVMBuildAnd(ir->b, LLVMBuildAdd(ir->b, h, w->i, ""),
			   irb_const(ir, nslots - 1), "idx");
	off = LLVMBuildAdd(ir->b,
			   LLVMBuildMul(ir->b, idx,
					irb_const(ir, CG_XMAP_SLOT), ""),
			   irb_const(ir, CG_XMAP_HDR), "");
	w->slot = LLVMBuildGEP2(ir->b, ir->i8, tab, &off, 1, "slot");
}

/* next: the following slot, or exit after the last */
static void xm_walk_end(struct cg *g, int id, struct xm_walk *w,
			LLVMBasicBlockRef exit)
{
	struct irb *ir = &g->ir;
	uint32_t probes = cg_xmap_max_probe(g->obj->maps[id].xmap_slots);
	LLVMValueRef inext, iv[2];
	LLVMBasicBlockRef ib[2];

	LLVMPositionBuilderAtEnd(ir->b, w->next);
	inext = LLVMBuildAdd(ir->b, w->i, irb_const(ir, 1), "");
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, inext,
				      irb_const(ir, probes), ""),
			LLVMGetInstructionParent(w->i), exit);
	iv[0] = irb_const(ir, 0);
	ib[0] = w->from;
	iv[1] = inext;
	ib[1] = w->next;
	LLVMAddIncoming(w->i, iv, ib, 2);
}

/*
 * The live slot of key enc in table tab (null: not placed), with its
 * state word as read (*st), or null.  The usual case, the key live where
 * it hashes, falls through.
 */
static LLVMValueRef xm_find(struct cg *g, int id, LLVMValueRef tab,
			    LLVMValueRef enc, LLVMValueRef *st)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef start, live, found, miss, done, br_from[3];
	LLVMValueRef s, kw, br, res, sres, slots[3], states[3];
	struct xm_walk w;

	start = xm_block(g, "xmap_find");
	live = xm_block(g, "xmap_live");
	found = xm_block(g, "xmap_found");
	miss = xm_block(g, "xmap_miss");
	done = xm_block(g, "xmap_find_done");
	br = LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, tab, ""), miss,
			     start);
	irb_unlikely(ir, br, true);
	LLVMPositionBuilderAtEnd(ir->b, start);
	xm_walk_begin(g, id, &w, tab, xm_hash(g, id, enc), "xmap_probe");
	/* the state first: the key word read after a live state is that
	 * generation's (a claim writes it before the state) */
	s = xm_load(g, xm_word(g, w.slot, CG_XMAP_SLOT_STATE), true);
	br = LLVMBuildCondBr(ir->b, xm_eq(g, xm_state(g, s), CG_XMAP_LIVE),
			     live, w.next);
	irb_unlikely(ir, br, false);
	LLVMPositionBuilderAtEnd(ir->b, live);
	kw = xm_load(g, xm_word(g, w.slot, CG_XMAP_SLOT_KEY), true);
	br = LLVMBuildCondBr(ir->b,
			     LLVMBuildICmp(ir->b, LLVMIntEQ, kw, enc, ""),
			     found, w.next);
	irb_unlikely(ir, br, false);
	/* an empty slot ends the sequence: no key lives past one */
	{
		LLVMBasicBlockRef nb = w.next;

		w.next = xm_block(g, "xmap_next_chk");
		LLVMPositionBuilderAtEnd(ir->b, nb);
		LLVMBuildCondBr(ir->b, xm_eq(g, s, 0), miss, w.next);
	}
	xm_walk_end(g, id, &w, miss);
	LLVMPositionBuilderAtEnd(ir->b, found);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, miss);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	res = LLVMBuildPhi(ir->b, ir->ptr, "xslot");
	sres = LLVMBuildPhi(ir->b, ir->i64, "xstate");
	slots[0] = w.slot;
	states[0] = s;
	br_from[0] = found;
	slots[1] = LLVMConstPointerNull(ir->ptr);
	states[1] = irb_const(ir, 0);
	br_from[1] = miss;
	LLVMAddIncoming(res, slots, br_from, 2);
	LLVMAddIncoming(sres, states, br_from, 2);
	*st = sres;
	return res;
}

/* A flag in the stack frame (has the key, deleted it), 0 at first. */
static LLVMValueRef xm_flag(struct cg *g, const char *name)
{
	LLVMValueRef f = xm_alloca(g, name);

	LLVMBuildStore(g->ir.b, irb_const(&g->ir, 0), f);
	return f;
}

/* On to has when xm_find() found a slot, else to cont; the builder in has. */
static void xm_found_br(struct cg *g, LLVMValueRef slot,
			LLVMBasicBlockRef has, LLVMBasicBlockRef cont)
{
	struct irb *ir = &g->ir;

	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, slot, ""), cont, has);
	LLVMPositionBuilderAtEnd(ir->b, has);
}

/* The flag set, on to cont; there, the flag's value. */
static LLVMValueRef xm_flag_join(struct cg *g, LLVMValueRef flag,
				 LLVMBasicBlockRef cont, const char *name)
{
	struct irb *ir = &g->ir;

	LLVMBuildStore(ir->b, irb_const(ir, 1), flag);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	return LLVMBuildLoad2(ir->b, ir->i64, flag, name);
}

/*
 * Read key k of map id: its value in *val (when not null) and whether it
 * is there.  The value is the one of the generation whose live state was
 * read, when the state is still that after the value: else the slot was
 * deleted meanwhile, and the key is absent.
 */
static LLVMValueRef xm_get(struct cg *g, int id, LLVMValueRef tab,
			   LLVMValueRef k, LLVMValueRef val)
{
	struct irb *ir = &g->ir;
	LLVMValueRef slot, s, s2, v, res;
	LLVMBasicBlockRef has, same, cont;

	res = xm_flag(g, "xmap_has");
	slot = xm_find(g, id, tab, xm_enc(g, k), &s);
	has = xm_block(g, "xmap_has");
	same = xm_block(g, "xmap_same");
	cont = xm_block(g, "xmap_read_done");
	xm_found_br(g, slot, has, cont);
	/* acquire: the state's second read stays after the value's */
	v = xm_load(g, xm_word(g, slot, CG_XMAP_SLOT_VALUE), true);
	s2 = xm_load(g, xm_word(g, slot, CG_XMAP_SLOT_STATE), true);
	LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, s, s2, ""),
			same, cont);
	LLVMPositionBuilderAtEnd(ir->b, same);
	if (val)
		LLVMBuildStore(ir->b, v, val);
	return xm_flag_join(g, res, cont, "has_key");
}

static LLVMValueRef xm_delete(struct cg *g, int id, LLVMValueRef tab,
			      LLVMValueRef k)
{
	struct irb *ir = &g->ir;
	LLVMValueRef slot, s, res;
	LLVMBasicBlockRef has, del, cont;

	res = xm_flag(g, "xmap_del");
	slot = xm_find(g, id, tab, xm_enc(g, k), &s);
	has = xm_block(g, "xmap_del_has");
	del = xm_block(g, "xmap_del_live");
	cont = xm_block(g, "xmap_del_done");
	/* live to dead, in the generation read (a failure: another delete
	 * came first); one key less.  The key word stays, the slot may be
	 * claimed again (cg_xmap.h) */
	xm_found_br(g, slot, has, cont);
	LLVMBuildCondBr(ir->b,
			xm_cas(g, xm_word(g, slot, CG_XMAP_SLOT_STATE), s,
			       xm_with(g, s, CG_XMAP_DEAD)),
			del, cont);
	LLVMPositionBuilderAtEnd(ir->b, del);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), -1);
	/* delete()'s value: was the key there */
	return xm_flag_join(g, res, cont, "deleted");
}

/* a branch to one of two blocks, with the first likely or not */
static void xm_br(struct cg *g, LLVMValueRef c, LLVMBasicBlockRef t,
		  LLVMBasicBlockRef f, int likely)
{
	LLVMValueRef br = LLVMBuildCondBr(g->ir.b, c, t, f);

	if (likely >= 0)
		irb_unlikely(&g->ir, br, !likely);
}

/*
 * In spin (from abort): the nearer inserter of the key, whose state word
 * was s, is between its INS and live: the next attempt finds it live if
 * this waits a little for the word to change (at most CG_XMAP_SPIN loads:
 * it may have been preempted there), then retry.  Native code only: the
 * verifier would walk the loop in every attempt of every update.
 */
static void xm_spin(struct cg *g, LLVMBasicBlockRef spin,
		    LLVMBasicBlockRef abort, LLVMValueRef slot, LLVMValueRef s,
		    LLVMBasicBlockRef retry)
{
	struct irb *ir = &g->ir;
	LLVMValueRef c, cnext, now, cv[2];
	LLVMBasicBlockRef cb[2] = { abort, spin };

	LLVMPositionBuilderAtEnd(ir->b, spin);
	c = LLVMBuildPhi(ir->b, ir->i64, "spin");
	cnext = LLVMBuildAdd(ir->b, c, irb_const(ir, 1), "");
	now = xm_load(g, xm_word(g, slot, CG_XMAP_SLOT_STATE), true);
	xm_br(g,
	      LLVMBuildAnd(ir->b, LLVMBuildICmp(ir->b, LLVMIntEQ, now, s, ""),
			   LLVMBuildICmp(ir->b, LLVMIntULT, cnext,
					 irb_const(ir, CG_XMAP_SPIN), ""),
			   ""),
	      spin, retry, -1);
	cv[0] = irb_const(ir, 0);
	cv[1] = cnext;
	LLVMAddIncoming(c, cv, cb, 2);
}

/*
 * @m[k] = val (cg_xmap.h: update of a live key, else insert), tried again
 * up to CG_XMAP_ATTEMPTS times when a race was lost; most: the live keys
 * the map holds (max_entries).
 */
static void xm_assign(struct cg *g, int id, LLVMValueRef tab, LLVMValueRef k,
		      LLVMValueRef val, LLVMValueRef most)
{
	struct irb *ir = &g->ir;
	LLVMValueRef enc, h, a, s, kw, n, s2, news, mine, s3, st3, kw3,
		slot3, slotu, su, kwu, pins, anext, ok, passed,
		nearer;
	LLVMBasicBlockRef start, attempt, l1live, l1not, ins, limit, cstart,
		l2try, l2pins, l2back, noslot, claimed, l3load, l3empty, l3key,
		l3mine, l3same, kill, promote, abort, spin, lost, upd, updset,
		updfail, retry, raced, cont, from[2];
	struct xm_walk w1, w2, w3;

	enc = xm_enc(g, k);
	start = xm_block(g, "xmap_put");
	attempt = xm_block(g, "xmap_attempt");
	l1live = xm_block(g, "xmap_live");
	l1not = xm_block(g, "xmap_not_live");
	ins = xm_block(g, "xmap_insert");
	limit = xm_block(g, "xmap_limit");
	cstart = xm_block(g, "xmap_claim_start");
	l2try = xm_block(g, "xmap_claim_try");
	l2pins = xm_block(g, "xmap_claim_pins");
	l2back = xm_block(g, "xmap_claim_back");
	noslot = xm_block(g, "xmap_no_slot");
	claimed = xm_block(g, "xmap_claimed");
	l3load = xm_block(g, "xmap_check_load");
	l3empty = xm_block(g, "xmap_check_empty");
	l3key = xm_block(g, "xmap_check_key");
	l3mine = xm_block(g, "xmap_check_mine");
	l3same = xm_block(g, "xmap_check_same");
	kill = xm_block(g, "xmap_kill");
	promote = xm_block(g, "xmap_promote");
	abort = xm_block(g, "xmap_abort");
	spin = xm_block(g, "xmap_spin");
	lost = xm_block(g, "xmap_lost");
	upd = xm_block(g, "xmap_update");
	updset = xm_block(g, "xmap_update_set");
	updfail = xm_block(g, "xmap_update_fail");
	retry = xm_block(g, "xmap_retry");
	raced = xm_block(g, "xmap_raced");
	cont = xm_block(g, "xmap_put_done");

	xm_br(g, LLVMBuildIsNull(ir->b, tab, ""), cont, start, 0);
	LLVMPositionBuilderAtEnd(ir->b, start);
	h = xm_hash(g, id, enc);
	LLVMBuildBr(ir->b, attempt);
	LLVMPositionBuilderAtEnd(ir->b, attempt);
	a = LLVMBuildPhi(ir->b, ir->i64, "attempt");

	/* 1: the key's live slot (the usual case falls through to upd) */
	xm_walk_begin(g, id, &w1, tab, h, "xmap_find");
	s = xm_load(g, xm_word(g, w1.slot, CG_XMAP_SLOT_STATE), true);
	xm_br(g, xm_eq(g, xm_state(g, s), CG_XMAP_LIVE), l1live, l1not, 1);
	LLVMPositionBuilderAtEnd(ir->b, l1live);
	kw = xm_load(g, xm_word(g, w1.slot, CG_XMAP_SLOT_KEY), true);
	xm_br(g, LLVMBuildICmp(ir->b, LLVMIntEQ, kw, enc, ""), upd, w1.next,
	      1);
	LLVMPositionBuilderAtEnd(ir->b, l1not);
	xm_br(g, xm_eq(g, s, 0), ins, w1.next, -1);
	xm_walk_end(g, id, &w1, ins);

	/* 2: a new key: one more, within max_entries (else a drop, as a
	 * full BPF map's) */
	LLVMPositionBuilderAtEnd(ir->b, ins);
	n = xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), 1);
	xm_br(g,
	      LLVMBuildICmp(ir->b, LLVMIntULT, n, most, ""),
	      cstart, limit, 1);
	LLVMPositionBuilderAtEnd(ir->b, limit);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), -1);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_DROPPED), 1);
	LLVMBuildBr(ir->b, cont);

	/* claim the first empty or dead slot nobody pins: busy, the next
	 * generation; pinned, it goes back to dead (no writer of its old
	 * key may store into it once ours is there) */
	LLVMPositionBuilderAtEnd(ir->b, cstart);
	xm_walk_begin(g, id, &w2, tab, h, "xmap_claim");
	s2 = xm_load(g, xm_word(g, w2.slot, CG_XMAP_SLOT_STATE), true);
	xm_br(g,
	      LLVMBuildOr(ir->b, xm_eq(g, s2, 0),
			  xm_eq(g, xm_state(g, s2), CG_XMAP_DEAD), ""),
	      l2try, w2.next, -1);
	LLVMPositionBuilderAtEnd(ir->b, l2try);
	news = LLVMBuildAdd(ir->b, xm_with(g, s2, CG_XMAP_BUSY),
			    irb_const(ir, 1ull << CG_XMAP_GEN_SHIFT), "busy");
	xm_br(g, xm_cas(g, xm_word(g, w2.slot, CG_XMAP_SLOT_STATE), s2, news),
	      l2pins, w2.next, 1);
	LLVMPositionBuilderAtEnd(ir->b, l2pins);
	pins = xm_load_ord(g, xm_word(g, w2.slot, CG_XMAP_SLOT_PINS),
			   LLVMAtomicOrderingSequentiallyConsistent);
	xm_br(g, xm_eq(g, pins, 0), claimed, l2back, 1);
	LLVMPositionBuilderAtEnd(ir->b, l2back);
	xm_store(g, xm_word(g, w2.slot, CG_XMAP_SLOT_STATE),
		 xm_with(g, news, CG_XMAP_DEAD), true);
	LLVMBuildBr(ir->b, w2.next);
	xm_walk_end(g, id, &w2, noslot);
	LLVMPositionBuilderAtEnd(ir->b, noslot);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), -1);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_COLLIDED), 1);
	LLVMBuildBr(ir->b, cont);

	/* 3: key and value, then INS (an exchange: the scan below reads
	 * after it), then the key's other slots */
	LLVMPositionBuilderAtEnd(ir->b, claimed);
	xm_store(g, xm_word(g, w2.slot, CG_XMAP_SLOT_KEY), enc, false);
	xm_store(g, xm_word(g, w2.slot, CG_XMAP_SLOT_VALUE), val, false);
	mine = xm_with(g, news, CG_XMAP_INS);
	LLVMBuildAtomicRMW(ir->b, LLVMAtomicRMWBinOpXchg,
			   xm_word(g, w2.slot, CG_XMAP_SLOT_STATE), mine,
			   LLVMAtomicOrderingSequentiallyConsistent, 0);
	/* ours is skipped, and the slots before it are nearer the hash.
	 * BPF: ours is met by its address, and the nearer slots are those
	 * before it was met (passed 0): the claim's index, which the scan
	 * then does not read, takes no part, so the verifier checks the
	 * scan once, not once for every slot the claim may have taken */
	passed = xm_native(g) ? NULL : xm_alloca(g, "xmap_passed");
	if (passed)
		LLVMBuildStore(ir->b, irb_const(ir, 0), passed);
	xm_walk_begin(g, id, &w3, tab, h, "xmap_check");
	slot3 = w3.slot;
	if (passed) {
		xm_br(g, LLVMBuildICmp(ir->b, LLVMIntEQ, slot3, w2.slot, ""),
		      l3mine, l3load, -1);
		LLVMPositionBuilderAtEnd(ir->b, l3mine);
		LLVMBuildStore(ir->b, irb_const(ir, 1), passed);
		LLVMBuildBr(ir->b, w3.next);
	} else {
		xm_br(g, LLVMBuildICmp(ir->b, LLVMIntEQ, w3.i, w2.i, ""),
		      w3.next, l3load, -1);
		LLVMDeleteBasicBlock(l3mine);
	}
	LLVMPositionBuilderAtEnd(ir->b, l3load);
	s3 = xm_load_ord(g, xm_word(g, slot3, CG_XMAP_SLOT_STATE),
			 LLVMAtomicOrderingSequentiallyConsistent);
	st3 = xm_state(g, s3);
	xm_br(g,
	      LLVMBuildOr(ir->b, xm_eq(g, st3, CG_XMAP_LIVE),
			  xm_eq(g, st3, CG_XMAP_INS), ""),
	      l3key, l3empty, -1);
	LLVMPositionBuilderAtEnd(ir->b, l3empty);
	xm_br(g, xm_eq(g, s3, 0), promote, w3.next, -1);
	LLVMPositionBuilderAtEnd(ir->b, l3key);
	kw3 = xm_load_ord(g, xm_word(g, slot3, CG_XMAP_SLOT_KEY),
			  LLVMAtomicOrderingSequentiallyConsistent);
	xm_br(g, LLVMBuildICmp(ir->b, LLVMIntEQ, kw3, enc, ""), l3same,
	      w3.next, 0);
	/* a live slot of the key, or one being inserted nearer the hash,
	 * wins; one being inserted farther loses (dead: its inserter's
	 * last compare-and-swap fails, and it tries again) */
	LLVMPositionBuilderAtEnd(ir->b, l3same);
	nearer = passed ? xm_eq(g, LLVMBuildLoad2(ir->b, ir->i64, passed, ""),
				0) :
			  LLVMBuildICmp(ir->b, LLVMIntULT, w3.i, w2.i, "");
	xm_br(g, LLVMBuildOr(ir->b, xm_eq(g, st3, CG_XMAP_LIVE), nearer, ""),
	      abort, kill, -1);
	LLVMPositionBuilderAtEnd(ir->b, kill);
	/* a failure: its inserter may have turned it live meanwhile (its
	 * scan ran before ours was INS): ours gives way, and the next
	 * attempt finds it */
	xm_br(g,
	      xm_cas(g, xm_word(g, slot3, CG_XMAP_SLOT_STATE), s3,
		     xm_with(g, s3, CG_XMAP_DEAD)),
	      w3.next, abort, 1);
	xm_walk_end(g, id, &w3, promote);

	/* INS to live: ours, unless another inserter turned it dead */
	LLVMPositionBuilderAtEnd(ir->b, promote);
	ok = xm_cas(g, xm_word(g, w2.slot, CG_XMAP_SLOT_STATE), mine,
		    xm_with(g, mine, CG_XMAP_LIVE));
	xm_br(g, ok, cont, lost, 1);
	LLVMPositionBuilderAtEnd(ir->b, lost);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), -1);
	LLVMBuildBr(ir->b, retry);
	/* ours gives way (it may be dead already: killed) */
	LLVMPositionBuilderAtEnd(ir->b, abort);
	xm_cas(g, xm_word(g, w2.slot, CG_XMAP_SLOT_STATE), mine,
	       xm_with(g, mine, CG_XMAP_DEAD));
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_KEYS), -1);
	xm_br(g, xm_eq(g, st3, CG_XMAP_LIVE), upd,
	      xm_native(g) ? spin : retry, -1);
	if (xm_native(g))
		xm_spin(g, spin, abort, w3.slot, s3, retry);
	else
		LLVMDeleteBasicBlock(spin);

	/* 4: the value of a live key, the slot pinned: still live and the
	 * key's (else deleted, perhaps claimed again, meanwhile: again) */
	LLVMPositionBuilderAtEnd(ir->b, upd);
	slotu = LLVMBuildPhi(ir->b, ir->ptr, "uslot");
	from[0] = l1live;
	from[1] = abort;
	{
		LLVMValueRef sv[2] = { w1.slot, slot3 };

		LLVMAddIncoming(slotu, sv, from, 2);
	}
	pins = xm_word(g, slotu, CG_XMAP_SLOT_PINS);
	xm_add(g, pins, 1);
	su = xm_load_ord(g, xm_word(g, slotu, CG_XMAP_SLOT_STATE),
			 LLVMAtomicOrderingSequentiallyConsistent);
	kwu = xm_load(g, xm_word(g, slotu, CG_XMAP_SLOT_KEY), true);
	xm_br(g,
	      LLVMBuildAnd(ir->b, xm_eq(g, xm_state(g, su), CG_XMAP_LIVE),
			   LLVMBuildICmp(ir->b, LLVMIntEQ, kwu, enc, ""), ""),
	      updset, updfail, 1);
	LLVMPositionBuilderAtEnd(ir->b, updset);
	xm_store(g, xm_word(g, slotu, CG_XMAP_SLOT_VALUE), val, false);
	xm_add(g, pins, -1);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, updfail);
	xm_add(g, pins, -1);
	LLVMBuildBr(ir->b, retry);

	LLVMPositionBuilderAtEnd(ir->b, retry);
	anext = LLVMBuildAdd(ir->b, a, irb_const(ir, 1), "");
	xm_br(g,
	      LLVMBuildICmp(ir->b, LLVMIntULT, anext,
			    irb_const(ir, xm_native(g) ? CG_XMAP_ATTEMPTS :
							 CG_XMAP_ATTEMPTS_BPF),
			    ""),
	      attempt, raced, 1);
	{
		LLVMValueRef av[2] = { irb_const(ir, 0), anext };
		LLVMBasicBlockRef ab[2] = { start, retry };

		LLVMAddIncoming(a, av, ab, 2);
	}
	LLVMPositionBuilderAtEnd(ir->b, raced);
	xm_add(g, irb_gep(ir, tab, CG_XMAP_OFF_RACED), 1);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

/* the most live keys of map id */
static LLVMValueRef xm_limit(struct cg *g, int id)
{
	const struct cg_map *m = &g->obj->maps[id];

	return irb_const(&g->ir, m->max_entries ? m->max_entries : 1);
}

/*
 * BPF: operation op on a table of map id's size as a global function
 * (irb_subprog_begin()), built at its first use and shared by the maps
 * of that size: the verifier walks its loops and races once per program,
 * not once per use (40 updates in one probe were past its million
 * instructions inline).  The table is memory of its size, or null.
 *   long ubt_xget_SLOTS(table, long key, long *val): has; *val the value
 *   long ubt_xput_SLOTS(table, long key, long val, long max_entries)
 *   long ubt_xdel_SLOTS(table, long key): was the key there
 */
enum xm_op { XM_GET, XM_PUT, XM_DEL };

static LLVMValueRef xm_sub(struct cg *g, int id, enum xm_op op)
{
	static const char *const names[] = { "get", "put", "del" };
	static const int nparams[] = { 3, 4, 2 };
	struct irb *ir = &g->ir;
	uint32_t nslots = g->obj->maps[id].xmap_slots;
	LLVMValueRef fn = ir->fn, sub, tab, k, p, ret;
	LLVMBasicBlockRef entry = ir->entry, at = LLVMGetInsertBlock(ir->b);
	LLVMBasicBlockRef body, none;
	uint64_t mem[4] = { cg_xmap_bytes(nslots), 0,
			    op == XM_GET ? 8 : 0, 0 };
	char name[32];

	snprintf(name, sizeof(name), "ubt_x%s_%u", names[op], nslots);
	sub = LLVMGetNamedFunction(ir->mod, name);
	if (sub)
		return sub;
	sub = irb_subprog_begin(ir, name, nparams[op], mem);
	tab = LLVMGetParam(sub, 0);
	k = LLVMGetParam(sub, 1);
	switch (op) {
	case XM_GET:
		/* the verifier has *val as memory that may be null */
		p = LLVMGetParam(sub, 2);
		body = xm_block(g, "xmap_get");
		none = xm_block(g, "xmap_get_none");
		LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""), none,
				body);
		LLVMPositionBuilderAtEnd(ir->b, none);
		LLVMBuildRet(ir->b, irb_const(ir, 0));
		LLVMPositionBuilderAtEnd(ir->b, body);
		ret = xm_get(g, id, tab, k, p);
		break;
	case XM_PUT:
		xm_assign(g, id, tab, k, LLVMGetParam(sub, 2),
			  LLVMGetParam(sub, 3));
		ret = irb_const(ir, 0);
		break;
	default:
		ret = xm_delete(g, id, tab, k);
		break;
	}
	LLVMBuildRet(ir->b, ret);
	ir->fn = fn;
	ir->entry = entry;
	LLVMPositionBuilderAtEnd(ir->b, at);
	return sub;
}

/* read or has_key(): the value in val (an 8-byte temporary) */
static LLVMValueRef xm_get_at(struct cg *g, int id, LLVMValueRef k,
			      LLVMValueRef val)
{
	LLVMValueRef args[3];

	LLVMBuildStore(g->ir.b, irb_const(&g->ir, 0), val);
	if (xm_native(g))
		return xm_get(g, id, xm_table(g, id), k, val);
	args[0] = xm_table(g, id);
	args[1] = k;
	args[2] = val;
	return irb_subprog_call(&g->ir, xm_sub(g, id, XM_GET), args, 3);
}

LLVMValueRef cg_xmap_read(struct cg *g, int id, LLVMValueRef k,
			  const struct type *vt, LLVMValueRef *found)
{
	LLVMValueRef val = irb_alloca(&g->ir, 8, "xmap_val");

	*found = xm_get_at(g, id, k, val);
	return cg_load(g, val, vt);
}

LLVMValueRef cg_xmap_has(struct cg *g, int id, LLVMValueRef k)
{
	if (xm_native(g))
		return xm_get(g, id, xm_table(g, id), k, NULL);
	return xm_get_at(g, id, k, irb_alloca(&g->ir, 8, "xmap_val"));
}

LLVMValueRef cg_xmap_delete(struct cg *g, int id, LLVMValueRef k)
{
	LLVMValueRef args[2];

	if (xm_native(g))
		return xm_delete(g, id, xm_table(g, id), k);
	args[0] = xm_table(g, id);
	args[1] = k;
	return irb_subprog_call(&g->ir, xm_sub(g, id, XM_DEL), args, 2);
}

void cg_xmap_assign(struct cg *g, int id, LLVMValueRef k, LLVMValueRef val)
{
	LLVMValueRef args[4];

	if (xm_native(g)) {
		xm_assign(g, id, xm_table(g, id), k, val, xm_limit(g, id));
		return;
	}
	args[0] = xm_table(g, id);
	args[1] = k;
	args[2] = val;
	args[3] = xm_limit(g, id);
	irb_subprog_call(&g->ir, xm_sub(g, id, XM_PUT), args, 4);
}
