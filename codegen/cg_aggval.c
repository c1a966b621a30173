/*
 * The value of one key of an aggregation map (count, sum, min, max,
 * avg) as the map's values merge, for for ($kv : @m): in BPF every
 * CPU's value read with bpf_map_lookup_percpu_elem() and combined, as
 * bpftrace v0.26 does; in user mode the value the calling thread's
 * table holds (the loop sees every thread's keys with its own values).
 */
#include <linux/bpf.h>
#include <bpf/libbpf.h>

#include "cg_int.h"

struct agg_acc {
	LLVMValueRef a, b;	/* count/sum/min/max value or avg count;
				 * avg total or min/max "set" */
};

static LLVMValueRef ld(struct irb *ir, LLVMValueRef p, size_t off)
{
	return LLVMBuildLoad2(ir->b, ir->i64, off ? irb_gep(ir, p, off) : p,
			      "");
}

/* Fold the per-CPU (or per-thread) value at p into acc. */
static void agg_fold(struct cg *g, enum sema_func f, bool sgn,
		     struct agg_acc *acc, LLVMValueRef p)
{
	struct irb *ir = &g->ir;
	LLVMValueRef a = ld(ir, acc->a, 0), b = ld(ir, acc->b, 0);
	LLVMValueRef v = ld(ir, p, 0), w = ld(ir, p, 8), take;

	switch (f) {
	case FN_COUNT:
	case FN_SUM:
		LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, a, v, ""), acc->a);
		break;
	case FN_AVG:
		LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, a, v, ""), acc->a);
		LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, b, w, ""), acc->b);
		break;
	default:	/* min, max: a CPU's value counts once it is set */
		take = LLVMBuildICmp(ir->b,
				     f == FN_MIN ? (sgn ? LLVMIntSLT : LLVMIntULT) :
						   (sgn ? LLVMIntSGT : LLVMIntUGT),
				     v, a, "");
		take = LLVMBuildOr(ir->b, take,
				   LLVMBuildICmp(ir->b, LLVMIntEQ, b,
						 irb_const(ir, 0), ""), "");
		take = LLVMBuildAnd(ir->b, take,
				    LLVMBuildICmp(ir->b, LLVMIntNE, w,
						  irb_const(ir, 0), ""), "");
		LLVMBuildStore(ir->b, LLVMBuildSelect(ir->b, take, v, a, ""),
			       acc->a);
		LLVMBuildStore(ir->b,
			       LLVMBuildSelect(ir->b, take, irb_const(ir, 1),
					       b, ""), acc->b);
		break;
	}
}

/* Every CPU's value of key: for (cpu = 0; cpu < ncpus; cpu++). */
static void agg_cpus(struct cg *g, int id, enum sema_func f, bool sgn,
		     struct agg_acc *acc, LLVMValueRef key)
{
	struct irb *ir = &g->ir;
	int n = libbpf_num_possible_cpus();
	LLVMValueRef cpup = irb_alloca(ir, 8, "agg_cpu"), cpu, args[3], p;
	LLVMBasicBlockRef cond, body, next, done, cont;

	cond = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "agg_cond");
	body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "agg_body");
	next = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "agg_next");
	done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "agg_done");
	LLVMBuildStore(ir->b, irb_const(ir, 0), cpup);
	LLVMBuildBr(ir->b, cond);

	LLVMPositionBuilderAtEnd(ir->b, cond);
	cpu = ld(ir, cpup, 0);
	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntULT, cpu,
				      irb_const(ir, n > 0 ? (uint64_t)n : 1),
				      ""),
			body, done);

	LLVMPositionBuilderAtEnd(ir->b, body);
	args[0] = g->maps[id];
	args[1] = key;
	args[2] = LLVMBuildTrunc(ir->b, cpu, ir->i32, "");
	p = LLVMBuildIntToPtr(ir->b,
			      irb_helper(ir, BPF_FUNC_map_lookup_percpu_elem,
					 args, 3),
			      ir->ptr, "");
	cont = cg_if_nonnull(g, p);
	agg_fold(g, f, sgn, acc, p);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	LLVMBuildBr(ir->b, next);

	LLVMPositionBuilderAtEnd(ir->b, next);
	LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, ld(ir, cpup, 0),
					   irb_const(ir, 1), ""), cpup);
	LLVMBuildBr(ir->b, cond);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

LLVMValueRef cg_avg_div(struct cg *g, LLVMValueRef total, LLVMValueRef count,
			bool sgn)
{
	struct irb *ir = &g->ir;
	LLVMValueRef zero, neg, q;

	zero = LLVMBuildICmp(ir->b, LLVMIntEQ, count, irb_const(ir, 0), "");
	count = LLVMBuildSelect(ir->b, zero, irb_const(ir, 1), count, "");
	if (!sgn) {
		q = LLVMBuildUDiv(ir->b, total, count, "");
	} else {
		/* BPF has no signed division: |total| / count, signed */
		neg = LLVMBuildICmp(ir->b, LLVMIntSLT, total, irb_const(ir, 0),
				    "");
		q = LLVMBuildUDiv(ir->b,
				  LLVMBuildSelect(ir->b, neg,
						  LLVMBuildNeg(ir->b, total, ""),
						  total, ""),
				  count, "");
		q = LLVMBuildSelect(ir->b, neg, LLVMBuildNeg(ir->b, q, ""), q,
				    "");
	}
	return LLVMBuildSelect(ir->b, zero, irb_const(ir, 0), q, "avg");
}

LLVMValueRef cg_agg_value(struct cg *g, int id, LLVMValueRef key,
			  LLVMValueRef val)
{
	struct irb *ir = &g->ir;
	const struct cg_map *m = &g->obj->maps[id];
	const struct sema_map *sm = g->c->sema->maps[id];
	enum sema_func f = cg_map_agg(sm);
	bool sgn = m->value_type && m->value_type->is_signed;
	struct agg_acc acc = {
		.a = irb_alloca(ir, 8, "agg_a"), .b = irb_alloca(ir, 8, "agg_b"),
	};
	LLVMValueRef a;

	LLVMBuildStore(ir->b, irb_const(ir, 0), acc.a);
	LLVMBuildStore(ir->b, irb_const(ir, 0), acc.b);
	if (ir->target == CG_TARGET_BPF && m->percpu && !m->xmap)
		agg_cpus(g, id, f, sgn, &acc, key);
	else
		agg_fold(g, f, sgn, &acc, val);
	a = ld(ir, acc.a, 0);
	if (f != FN_AVG)
		return a;
	/* avg: total / count (as the map read divides), 0 without one */
	return cg_avg_div(g, ld(ir, acc.b, 0), a, sgn);
}
