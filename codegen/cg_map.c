/*
 * Lowering of map accesses: keys, reads, assignments, aggregations;
 * the calls on a map: delete(), has_key(), len().
 */
#include <errno.h>
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "util.h"

static struct sema_map *cg_sema_map(struct ast_node *mapnode)
{
	if (mapnode->sema && mapnode->sema->map)
		return mapnode->sema->map;
	BUG("map %s without sema", mapnode->map.name);
}

/* Store the key expressions `keys` (n of them) as map key type kt. */
static void cg_store_keys(struct cg *g, LLVMValueRef key,
			  const struct type *kt, struct ast_node *keys, int n)
{
	if (!kt || !keys)
		return;
	if (n == 1) {
		cg_store(g, key, kt, cg_expr(g, keys), keys->type);
		return;
	}
	if (kt->kind != TY_TUPLE)
		BUG("multi-key map with key type %d", kt->kind);
	for (int i = 0; keys && i < kt->nfields; keys = keys->next, i++)
		cg_store(g, irb_gep(&g->ir, key, kt->fields[i].offset),
			 kt->fields[i].type, cg_expr(g, keys), keys->type);
}

LLVMValueRef cg_key_with(struct cg *g, int id, struct ast_node *keys,
			 int nkeys, LLVMValueRef bucket)
{
	const struct cg_map *m = &g->obj->maps[id];
	LLVMValueRef key = irb_alloca(&g->ir, m->key_size, "key");

	irb_memset(&g->ir, key, 0, m->key_size);
	cg_store_keys(g, key, m->key_type, keys, nkeys);
	if (m->bucketed)
		LLVMBuildStore(g->ir.b, bucket ? bucket : irb_const(&g->ir, 0),
			       irb_gep(&g->ir, key, m->key_size - 8));
	return key;
}

/* The key of a shared map (cg_xmap.h) as one 8-byte word: the key's
 * bytes as the map's key type stores them (both sides and the printer
 * agree); 0 for a keyless map. */
static LLVMValueRef cg_xmap_key(struct cg *g, int id, struct ast_node *keys,
				int nkeys)
{
	struct irb *ir = &g->ir;
	const struct cg_map *m = &g->obj->maps[id];
	LLVMValueRef buf;

	if (!m->key_type || !keys || nkeys != 1)
		return irb_const(ir, 0);
	buf = irb_alloca(ir, 8, "xmap_k");
	LLVMBuildStore(ir->b, irb_const(ir, 0), buf);
	cg_store(g, buf, m->key_type, cg_expr(g, keys), keys->type);
	return LLVMBuildLoad2(ir->b, ir->i64, buf, "");
}

LLVMValueRef cg_map_xmap_has(struct cg *g, int id, struct ast_node *k)
{
	return cg_xmap_has(g, id, cg_xmap_key(g, id, k, 1));
}

LLVMValueRef cg_map_key(struct cg *g, struct ast_node *mapnode,
			const struct cg_map *m, LLVMValueRef bucket)
{
	int id = m - g->obj->maps;

	return cg_key_with(g, id, mapnode->map.keys, mapnode->map.nkeys,
			   bucket);
}

/*
 * An update of map id that returned ret: when the map was full (E2BIG;
 * ENOMEM when a map could not allocate the element), one more in the
 * map's counter of the full map (cg.h cg_object.full_name), which ubt
 * reports at exit. Other failures (EEXIST: another CPU inserted the key
 * first) are not drops. One range check, -ENOMEM..-E2BIG, which takes in
 * nothing else a map update returns: each conditional jump is a state
 * more for the verifier in every iteration of a loop that updates a map.
 */
static void cg_count_full(struct cg *g, int id, LLVMValueRef ret)
{
	struct irb *ir = &g->ir;
	const struct cg_map *m = &g->obj->maps[id];
	LLVMBasicBlockRef full, done, cont;
	LLVMValueRef key, p, n, off;

	/* a keyless map holds one key: never full (and the check's jump
	 * to its counting code, at the program's end, would make every
	 * assignment a long jump) */
	if (!g->full || (!m->key_type && !m->bucketed && m->max_entries))
		return;
	full = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "map_full");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "map_full_done");
	off = LLVMBuildAdd(ir->b, ret, irb_const(ir, ENOMEM), "");
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULE, off,
				      irb_const(ir, ENOMEM - E2BIG), ""),
			full, done);
	LLVMPositionBuilderAtEnd(ir->b, full);
	key = irb_alloca(ir, 4, "full_key");
	LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, id, 0), key);
	p = irb_map_lookup(ir, g->full, key);
	cont = cg_if_nonnull(g, p);
	n = LLVMBuildLoad2(ir->b, ir->i64, p, "");
	LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, n, irb_const(ir, 1), ""), p);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

LLVMValueRef cg_map_get_or_init(struct cg *g, int id, LLVMValueRef key)
{
	struct irb *ir = &g->ir;
	const struct cg_map *m = &g->obj->maps[id];
	LLVMValueRef p, zero, vals[2], res, ret;
	LLVMBasicBlockRef miss, done, from[2];

	/* the pointer is a phi, not a stack slot: one slot per call of
	 * every statement made SROA's promotion of them quadratic */
	p = irb_map_lookup(ir, g->maps[id], key);
	/*
	 * The native target's lookup of an aggregation inserts the key
	 * (RT_FN_HTAB_LOOKUP), and is null only when the table is full,
	 * a drop the table counts: no second try (it would count again).
	 */
	if (ir->target == CG_TARGET_NATIVE)
		return p;
	miss = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "init");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "init_done");
	vals[0] = p;
	from[0] = LLVMGetInsertBlock(ir->b);
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""), miss, done);
	LLVMPositionBuilderAtEnd(ir->b, miss);
	zero = irb_alloca(ir, m->value_size, "zero");
	irb_memset(ir, zero, 0, (m->value_size + 7) & ~(size_t)7);
	ret = irb_map_update(ir, g->maps[id], key, zero, BPF_NOEXIST);
	cg_count_full(g, id, ret);
	cg_helper_check(g, g->update_loc, "map_update_elem", ret,
			CG_CHECK_NEG);
	vals[1] = irb_map_lookup(ir, g->maps[id], key);
	from[1] = LLVMGetInsertBlock(ir->b);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
	res = LLVMBuildPhi(ir->b, ir->ptr, "valp");
	LLVMAddIncoming(res, vals, from, 2);
	return res;
}

LLVMValueRef cg_map_read(struct cg *g, struct ast_node *mapnode)
{
	struct irb *ir = &g->ir;
	struct sema_map *sm = cg_sema_map(mapnode);
	const struct cg_map *m = &g->obj->maps[sm->id];
	const struct type *vt = mapnode->type ? mapnode->type : sm->value;
	size_t sz = vt && vt->size ? vt->size : 8;
	LLVMValueRef key, p, res;
	LLVMBasicBlockRef cont;

	if (m->bucketed) {
		cg_unsupported(g, mapnode, "reading a hist() map's value");
		return irb_const(ir, 0);
	}
	if (m->xmap) {
		LLVMValueRef found;

		res = cg_xmap_read(g, sm->id,
				   cg_xmap_key(g, sm->id, mapnode->map.keys,
					       mapnode->map.nkeys),
				   vt, &found);
		/* -kk: a key not there, as a lookup's null pointer */
		cg_helper_check(g, &mapnode->loc, "map_lookup_elem", found,
				CG_CHECK_NULL);
		return res;
	}
	key = cg_map_key(g, mapnode, m, NULL);
	p = irb_map_lookup(ir, g->maps[sm->id], key);
	cg_helper_check(g, &mapnode->loc, "map_lookup_elem", p, CG_CHECK_NULL);
	/* in BPF, every CPU's value merged (bpftrace v0.26) */
	if (ir->target == CG_TARGET_BPF && m->percpu &&
	    (cg_map_agg(sm) == FN_COUNT || cg_map_agg(sm) == FN_SUM ||
	     cg_map_agg(sm) == FN_MIN || cg_map_agg(sm) == FN_MAX ||
	     cg_map_agg(sm) == FN_AVG))
		return cg_agg_value(g, sm->id, key, p);
	if (cg_map_agg(sm) == FN_AVG) {
		res = irb_alloca(ir, 8, "avg");
		LLVMBuildStore(ir->b, irb_const(ir, 0), res);
		cont = cg_if_nonnull(g, p);
		{
			LLVMValueRef n = LLVMBuildLoad2(ir->b, ir->i64, p, "");
			LLVMValueRef t = LLVMBuildLoad2(ir->b, ir->i64,
							irb_gep(ir, p, 8), "");

			LLVMBuildStore(ir->b,
				       cg_avg_div(g, t, n,
						  m->value_type &&
						  m->value_type->is_signed),
				       res);
		}
		LLVMBuildBr(ir->b, cont);
		LLVMPositionBuilderAtEnd(ir->b, cont);
		return LLVMBuildLoad2(ir->b, ir->i64, res, "");
	}
	if (cg_map_agg(sm) != FN_NONE) {
		/* count/sum/min/max: this CPU's value */
		res = irb_alloca(ir, 8, "agg");
		LLVMBuildStore(ir->b, irb_const(ir, 0), res);
		cont = cg_if_nonnull(g, p);
		LLVMBuildStore(ir->b, LLVMBuildLoad2(ir->b, ir->i64, p, ""),
			       res);
		LLVMBuildBr(ir->b, cont);
		LLVMPositionBuilderAtEnd(ir->b, cont);
		return LLVMBuildLoad2(ir->b, ir->i64, res, "");
	}
	res = irb_alloca(ir, sz, "mapval");
	irb_memset(ir, res, 0, (sz + 7) & ~(size_t)7);
	cont = cg_if_nonnull(g, p);
	irb_memcpy(ir, res, p, sz < m->value_size ? sz : m->value_size);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	return cg_load(g, res, vt);
}

void cg_map_assign(struct cg *g, struct ast_node *mapnode, LLVMValueRef v,
		   const struct type *vt)
{
	struct irb *ir = &g->ir;
	struct sema_map *sm = cg_sema_map(mapnode);
	const struct cg_map *m = &g->obj->maps[sm->id];
	LLVMValueRef key, val, ret;

	if (cg_map_agg(sm) != FN_NONE) {
		cg_unsupported(g, mapnode,
			       "assigning a value to an aggregation map");
		return;
	}
	/* evaluate the value before building the key, as written */
	val = irb_alloca(ir, m->value_size, "val");
	irb_memset(ir, val, 0, (m->value_size + 7) & ~(size_t)7);
	cg_store(g, val, sm->value, v, vt);
	if (m->xmap) {
		/* an integer of at most 8 bytes (place_xmap.c) */
		val = LLVMBuildLoad2(ir->b, ir->i64, val, "");
		cg_xmap_assign(g, sm->id,
			       cg_xmap_key(g, sm->id, mapnode->map.keys,
					   mapnode->map.nkeys),
			       val);
		return;
	}
	key = cg_map_key(g, mapnode, m, NULL);
	ret = irb_map_update(ir, g->maps[sm->id], key, val, BPF_ANY);
	cg_count_full(g, sm->id, ret);
	cg_helper_check(g, g->update_loc ? g->update_loc : &mapnode->loc,
			"map_update_elem", ret, CG_CHECK_NEG);
}

LLVMValueRef cg_map_delete(struct cg *g, const struct ast_node *call, int id,
			   struct ast_node *keys, int nkeys)
{
	const struct cg_map *m = &g->obj->maps[id];
	LLVMValueRef key, ret;

	if (m->bucketed) {
		cg_unsupported(g, keys,
			       m->value_type && m->value_type->kind ==
						TY_TSERIES ?
				       "delete() on a tseries() map" :
				       "delete() on a hist() map");
		return irb_const(&g->ir, 0);
	}
	if (m->xmap) {
		LLVMValueRef gone = cg_xmap_delete(g, id, cg_xmap_key(g, id,
								       keys,
								       nkeys));

		/* -k: a key not there, as the helper's -ENOENT */
		if (g->c->helper_check)
			cg_helper_check(g, &call->loc, "map_delete_elem",
					LLVMBuildSelect(g->ir.b,
						LLVMBuildIsNull(g->ir.b, gone,
								""),
						irb_const(&g->ir,
							  (uint64_t)-ENOENT),
						irb_const(&g->ir, 0), ""),
					CG_CHECK_NEG);
		return gone;
	}
	key = cg_key_with(g, id, keys, nkeys, NULL);
	ret = irb_map_delete(&g->ir, g->maps[id], key);
	cg_helper_check(g, &call->loc, "map_delete_elem", ret, CG_CHECK_NEG);
	/* delete()'s value (bpftrace v0.22 on): was the key there */
	ret = LLVMBuildZExt(g->ir.b,
			    LLVMBuildICmp(g->ir.b, LLVMIntEQ, ret,
					  LLVMConstNull(LLVMTypeOf(ret)), ""),
			    g->ir.i64, "deleted");
	if ((g->ir.target == CG_TARGET_NATIVE && m->percpu) ||
	    (g->ir.target == CG_TARGET_BPF && g->opts &&
	     g->opts->user_agg_maps && g->opts->user_agg_maps[id])) {
		/*
		 * An aggregation's key in a user-mode probe: gone from this
		 * thread's table at once; ubt deletes it from the other
		 * threads' tables and the kernel's map when it reads this
		 * event (asynchronously, as bpftrace's clear()). In a kernel
		 * probe, on a map user-mode probes also write: gone from the
		 * kernel's map at once, from every thread's table when ubt
		 * reads the event.
		 */
		size_t size = sizeof(struct cg_event_hdr) +
			      ((m->key_size + 7) & ~(size_t)7);
		int ev = cg_event_new(g, CG_EV_DELETE, call);
		LLVMValueRef rec;

		g->obj->events[ev].map = id;
		g->obj->events[ev].size = size;
		g->obj->events[ev].native = g->ir.target == CG_TARGET_NATIVE;
		rec = cg_record_begin(g, ev, size);
		irb_memcpy(&g->ir, irb_gep(&g->ir, rec,
					   sizeof(struct cg_event_hdr)),
			   key, m->key_size);
		cg_record_send(g, rec, size);
	}
	return ret;
}

/*
 * hist bucket, as out_hist_index() (shim/output/output.h): 0 negative, 1 zero;
 * l = floor(log2 v): l < k: 1 + v, else 1 + (l - k) * 2^k + (v >> (l - k)).
 */
static LLVMValueRef cg_log2_bucket(struct cg *g, LLVMValueRef v, bool sgn,
				   int k)
{
	struct irb *ir = &g->ir;
	LLVMValueRef n = v, l = irb_const(ir, 0), r, small, sh, isneg, iszero;

	if (ir->target == CG_TARGET_NATIVE) {
		/* one lzcnt (or bsr): l = 63 - ctlz(v | 1) */
		static const char name[] = "llvm.ctlz";
		unsigned id = LLVMLookupIntrinsicID(name, sizeof(name) - 1);
		LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id,
							      &ir->i64, 1);
		LLVMTypeRef ft = LLVMIntrinsicGetType(ir->ctx, id, &ir->i64, 1);
		LLVMValueRef args[2] = {
			LLVMBuildOr(ir->b, v, irb_const(ir, 1), ""),
			LLVMConstInt(ir->i1, 1, 0),	/* never zero */
		};

		l = LLVMBuildSub(ir->b, irb_const(ir, 63),
				 LLVMBuildCall2(ir->b, ft, fn, args, 2, ""),
				 "");
	} else {
		/* BPF: a cascade of compares the verifier follows */
		for (int s = 32; s >= 1; s /= 2) {
			LLVMValueRef big = LLVMBuildICmp(
				ir->b, LLVMIntUGE, n, irb_const(ir, 1ull << s),
				"");
			LLVMValueRef d = LLVMBuildSelect(
				ir->b, big, irb_const(ir, s), irb_const(ir, 0),
				"");

			n = LLVMBuildLShr(ir->b, n, d, "");
			l = LLVMBuildAdd(ir->b, l, d, "");
		}
	}
	sh = LLVMBuildAnd(ir->b, LLVMBuildSub(ir->b, l, irb_const(ir, k), ""),
			  irb_const(ir, 63), "");
	r = LLVMBuildAdd(ir->b,
			 LLVMBuildMul(ir->b, sh, irb_const(ir, 1ull << k), ""),
			 LLVMBuildLShr(ir->b, v, sh, ""), "");
	r = LLVMBuildAdd(ir->b, r, irb_const(ir, 1), "");
	if (k > 0) {
		small = LLVMBuildAdd(ir->b, v, irb_const(ir, 1), "");
		r = LLVMBuildSelect(ir->b,
				    LLVMBuildICmp(ir->b, LLVMIntULT, l,
						  irb_const(ir, k), ""),
				    small, r, "");
	}
	iszero = LLVMBuildICmp(ir->b, LLVMIntEQ, v, irb_const(ir, 0), "");
	r = LLVMBuildSelect(ir->b, iszero, irb_const(ir, 1), r, "");
	if (sgn) {
		isneg = LLVMBuildICmp(ir->b, LLVMIntSLT, v, irb_const(ir, 0),
				      "");
		r = LLVMBuildSelect(ir->b, isneg, irb_const(ir, 0), r, "");
	}
	return r;
}

/* lhist bucket, as out_lhist_index(): 0 below min, nb + 1 at or above
 * max, else 1 + (v - min) / step. */
static LLVMValueRef cg_linear_bucket(struct cg *g, LLVMValueRef v,
				     int64_t min, int64_t max, int64_t step)
{
	struct irb *ir = &g->ir;
	LLVMValueRef below, above, r;

	if (step <= 0)
		step = 1;
	below = LLVMBuildICmp(ir->b, LLVMIntSLT, v, irb_const(ir, min), "");
	above = LLVMBuildICmp(ir->b, LLVMIntSGE, v, irb_const(ir, max), "");
	r = LLVMBuildSub(ir->b, v, irb_const(ir, min), "");
	r = LLVMBuildUDiv(ir->b,
			  LLVMBuildSelect(ir->b, below, irb_const(ir, 0), r,
					  ""),
			  irb_const(ir, step), "");
	r = LLVMBuildAdd(ir->b, r, irb_const(ir, 1), "");
	r = LLVMBuildSelect(ir->b, above,
			    irb_const(ir, 1 + (max - min) / step), r, "");
	return LLVMBuildSelect(ir->b, below, irb_const(ir, 0), r, "");
}

void cg_aggregate(struct cg *g, struct ast_node *mapnode,
		  struct ast_node *call)
{
	struct irb *ir = &g->ir;
	struct sema_map *sm = cg_sema_map(mapnode);
	const struct cg_map *m = &g->obj->maps[sm->id];
	enum sema_func f = call->sema ? call->sema->func : FN_NONE;
	struct ast_node *arg = call->call.args;
	const struct type *at = arg ? arg->type : NULL;
	bool sgn = at && at->is_signed;
	LLVMValueRef v = NULL, bucket = NULL, key, p, old, nv;
	LLVMBasicBlockRef cont;

	/* min/max compare as the map's values merge (kernel_merge) */
	if ((f == FN_MIN || f == FN_MAX) && m->value_type)
		sgn = m->value_type->is_signed;
	if (arg) {
		v = cg_expr(g, arg);
		if (!cg_is_scalar(at)) {
			cg_unsupported(g, arg, "a non-integer argument");
			return;
		}
	}
	if (f == FN_HIST) {
		int k = m->value_type ? m->value_type->hist_bits : 0;

		if (k < 0 || k > 5) {
			cg_unsupported(g, call, "this hist() bits argument");
			return;
		}
		/* signed, as bpftrace 0.17 does for any argument */
		bucket = cg_log2_bucket(g, v, true, k);
	} else if (f == FN_LHIST) {
		const struct type *vt = m->value_type;

		bucket = cg_linear_bucket(g, v, vt->lhist_min, vt->lhist_max,
					  vt->lhist_step);
	}
	key = cg_map_key(g, mapnode, m, bucket);
	g->update_loc = &call->loc;
	p = cg_map_get_or_init(g, sm->id, key);
	g->update_loc = NULL;
	cont = cg_if_nonnull(g, p);
	old = LLVMBuildLoad2(ir->b, ir->i64, p, "");
	switch (f) {
	case FN_COUNT:
	case FN_HIST:
	case FN_LHIST:
		LLVMBuildStore(ir->b,
			       LLVMBuildAdd(ir->b, old, irb_const(ir, 1), ""),
			       p);
		break;
	case FN_SUM:
		LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, old, v, ""), p);
		/* a keyless sum in user mode: its presence word (native.h) */
		if (ir->target == CG_TARGET_NATIVE && !m->key_type &&
		    !m->bucketed)
			LLVMBuildStore(ir->b, irb_const(ir, 1),
				       irb_gep(ir, p, 8));
		break;
	case FN_AVG:
	case FN_STATS: {
		LLVMValueRef tp = irb_gep(ir, p, 8);
		LLVMValueRef t = LLVMBuildLoad2(ir->b, ir->i64, tp, "");

		LLVMBuildStore(ir->b,
			       LLVMBuildAdd(ir->b, old, irb_const(ir, 1), ""),
			       p);
		LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, t, v, ""), tp);
		break;
	}
	case FN_MIN:
	case FN_MAX: {
		LLVMValueRef setp = irb_gep(ir, p, 8);
		LLVMValueRef set = LLVMBuildLoad2(ir->b, ir->i64, setp, "");
		LLVMIntPredicate pr;
		LLVMValueRef better, take;

		if (f == FN_MIN)
			pr = sgn ? LLVMIntSLT : LLVMIntULT;
		else
			pr = sgn ? LLVMIntSGT : LLVMIntUGT;
		better = LLVMBuildICmp(ir->b, pr, v, old, "");
		take = LLVMBuildOr(ir->b, better,
				   LLVMBuildICmp(ir->b, LLVMIntEQ, set,
						 irb_const(ir, 0), ""),
				   "");
		nv = LLVMBuildSelect(ir->b, take, v, old, "");
		LLVMBuildStore(ir->b, nv, p);
		LLVMBuildStore(ir->b, irb_const(ir, 1), setp);
		break;
	}
	default:
		cg_unsupported(g, call, "this aggregation");
		break;
	}
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

/*
 * @m[k] += d, @m[k]++ in the kernel: an existing integer value is added
 * to in place with an atomic add, so that probes on other CPUs adding to
 * the same value at once lose none of the additions (bpftrace's
 * read-then-update loses one; scripts that count processes with
 * "@n++" miss one when the first hits of two processes coincide).  An
 * absent key is stored as 0 + d.  The value before, as read (exact
 * unless another CPU adds at the same time), goes to *old.  False when
 * this does not apply (the native target, values that are not 4- or
 * 8-byte integers, a shared table): the caller reads and assigns.
 */
bool cg_map_can_add(struct cg *g, struct ast_node *mapnode)
{
	struct sema_map *sm = mapnode->kind == AST_MAP ?
				      cg_sema_map(mapnode) : NULL;
	const struct type *vt = sm ? sm->value : NULL;
	const struct cg_map *m;

	if (g->ir.target == CG_TARGET_NATIVE || !vt || vt->kind != TY_INT ||
	    (vt->size != 4 && vt->size != 8) || cg_map_agg(sm) != FN_NONE)
		return false;
	/* a table both sides share has its own atomics (cg_xmap.c) */
	if (g->opts && g->opts->xmap_maps && g->opts->xmap_maps[sm->id])
		return false;
	m = &g->obj->maps[sm->id];
	return !m->bucketed && m->value_size == vt->size && mapnode->type &&
	       mapnode->type->kind == TY_INT &&
	       mapnode->type->size == vt->size;
}

bool cg_map_add(struct cg *g, struct ast_node *mapnode, LLVMValueRef d,
		const struct ast_loc *loc, LLVMValueRef *old)
{
	struct irb *ir = &g->ir;
	struct sema_map *sm;
	const struct cg_map *m;
	const struct type *vt;
	LLVMTypeRef it;
	LLVMValueRef key, p, res, val, ret;
	LLVMBasicBlockRef hit, miss, done;

	if (!cg_map_can_add(g, mapnode))
		return false;
	sm = cg_sema_map(mapnode);
	vt = sm->value;
	m = &g->obj->maps[sm->id];
	it = LLVMIntTypeInContext(ir->ctx, (unsigned)vt->size * 8);
	key = cg_map_key(g, mapnode, m, NULL);
	p = irb_map_lookup(ir, g->maps[sm->id], key);
	cg_helper_check(g, &mapnode->loc, "map_lookup_elem", p,
			CG_CHECK_NULL);
	res = irb_alloca(ir, 8, "old");
	hit = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "add_hit");
	miss = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "add_miss");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "add_done");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""), miss, hit);

	LLVMPositionBuilderAtEnd(ir->b, hit);
	LLVMBuildStore(ir->b, cg_load(g, p, vt), res);
	/* the result unused: BPF's XADD (no fetch before cpu v3) */
	LLVMBuildAtomicRMW(ir->b, LLVMAtomicRMWBinOpAdd, p,
			   LLVMBuildTrunc(ir->b, d, it, ""),
			   LLVMAtomicOrderingMonotonic, false);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, miss);
	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	val = irb_alloca(ir, 8, "val");
	LLVMBuildStore(ir->b, irb_const(ir, 0), val);
	cg_store(g, val, vt, d, vt);
	ret = irb_map_update(ir, g->maps[sm->id], key, val, BPF_ANY);
	cg_count_full(g, sm->id, ret);
	cg_helper_check(g, loc, "map_update_elem", ret, CG_CHECK_NEG);
	LLVMBuildBr(ir->b, done);

	LLVMPositionBuilderAtEnd(ir->b, done);
	*old = LLVMBuildLoad2(ir->b, ir->i64, res, "");
	return true;
}

/* delete(@m[k]) or delete(@m, k) */
LLVMValueRef cg_delete(struct cg *g, struct ast_node *n)
{
	struct ast_node *m = cg_call_arg(n, 0), *k = cg_call_arg(n, 1);
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (!sm && m && m->sema)
		sm = m->sema->map;
	if (!sm || !m || m->kind != AST_MAP) {
		cg_unsupported(g, n, "this delete()");
		return irb_const(&g->ir, 0);
	}
	if (k)
		return cg_map_delete(g, n, sm->id, k, 1);
	return cg_map_delete(g, n, sm->id, m->map.keys, m->map.nkeys);
}

/* has_key(@m, key): 1 when the key is in the map. */
LLVMValueRef cg_has_key(struct cg *g, struct ast_node *n)
{
	struct ast_node *m = cg_call_arg(n, 0), *k = cg_call_arg(n, 1);
	struct sema_map *sm = n->sema ? n->sema->map : NULL;
	LLVMValueRef key, p;

	if (!sm && m && m->sema)
		sm = m->sema->map;
	if (!sm || !k || g->obj->maps[sm->id].bucketed) {
		cg_unsupported(g, n, "this has_key()");
		return irb_const(&g->ir, 0);
	}
	if (g->obj->maps[sm->id].xmap)
		return cg_map_xmap_has(g, sm->id, k);
	key = cg_key_with(g, sm->id, k, 1, NULL);
	p = irb_map_lookup(&g->ir, g->maps[sm->id], key);
	return LLVMBuildZExt(g->ir.b, LLVMBuildIsNotNull(g->ir.b, p, ""),
			     g->ir.i64, "has_key");
}

/* len(@m): bpf_for_each_map_elem() counts the entries it visits. */
LLVMValueRef cg_len(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *m = cg_call_arg(n, 0);
	struct sema_map *sm = n->sema ? n->sema->map : NULL;
	LLVMValueRef save_fn = ir->fn, cb, args[4];
	LLVMBasicBlockRef save_entry = ir->entry;
	LLVMBasicBlockRef save_bb = LLVMGetInsertBlock(ir->b);
	char name[32];

	if (!sm && m && m->sema)
		sm = m->sema->map;
	if (!sm || g->obj->maps[sm->id].bucketed) {
		cg_unsupported(g, n, "this len()");
		return irb_const(ir, 0);
	}
	snprintf(name, sizeof(name), "len_%d_%d", g->prog, g->nfor++);
	cb = irb_callback_begin(ir, name, 4);
	LLVMBuildRet(ir->b, irb_const(ir, 0));
	ir->fn = save_fn;
	ir->entry = save_entry;
	LLVMPositionBuilderAtEnd(ir->b, save_bb);
	args[0] = g->maps[sm->id];
	args[1] = cb;
	args[2] = LLVMConstNull(ir->ptr);
	args[3] = irb_const(ir, 0);
	return irb_helper(ir, BPF_FUNC_for_each_map_elem, args, 4);
}
