/*
 * `@m[k] = tseries(value, interval, num_intervals[, agg])` (bpftrace
 * v0.26), in the kernel: the clock (nsecs(sw_tai)) picks the epoch,
 * epoch / interval, and the bucket, epoch % num_intervals, which ends the
 * map's key; the bucket's struct tseries_cell (frontend/tseries.h) on
 * this CPU is then updated:
 *   none:     value = v, meta = now
 *   sum, avg: a new epoch starts from 0; value += v (avg: meta += 1)
 *   min, max: a new epoch starts from 0; value = v when meta is 0, else
 *             the smaller/greater; meta = 1
 * and epoch stored. ubt merges the CPUs' cells and prints the series
 * (shim/kernel/kernel_maps.c, shim/output/output_tseries.c).
 *
 * BPFTRACE_DUMMY_TS_MAP=@name (bpftrace's, for its tests): the clock is
 * the value of the keyless integer map @name instead, so that a program
 * sets the time itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "tseries.h"

/* The time: sw_tai, or the dummy map's value (0 while it is unset). */
static LLVMValueRef cg_tseries_now(struct cg *g, struct ast_node *call)
{
	struct irb *ir = &g->ir;
	const char *dummy = getenv("BPFTRACE_DUMMY_TS_MAP");
	struct sema_map *sm;
	LLVMValueRef key, p, res;
	LLVMBasicBlockRef cont;

	if (!dummy || !*dummy)
		return cg_sw_tai(g);
	sm = sema_map_find(g->c, dummy);
	if (!sm || sm->key || !sm->value || sm->value->kind != TY_INT ||
	    g->obj->maps[sm->id].xmap) {
		diag_error(&g->c->diag, &call->loc,
			   "BPFTRACE_DUMMY_TS_MAP: %s is not a keyless integer map of the program",
			   dummy);
		g->err = -EINVAL;
		return irb_const(ir, 0);
	}
	res = irb_alloca(ir, 8, "ts_now");
	LLVMBuildStore(ir->b, irb_const(ir, 0), res);
	key = irb_alloca(ir, 8, "ts_key");
	LLVMBuildStore(ir->b, irb_const(ir, 0), key);
	p = irb_map_lookup(ir, g->maps[sm->id], key);
	cont = cg_if_nonnull(g, p);
	LLVMBuildStore(ir->b, LLVMBuildLoad2(ir->b, ir->i64, p, ""), res);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	return LLVMBuildLoad2(ir->b, ir->i64, res, "ts_now");
}

/* sum, avg, min, max: a cell of an older epoch starts again from 0 */
static void cg_tseries_restart(struct cg *g, LLVMValueRef vp,
			       LLVMValueRef mp, LLVMValueRef ep,
			       LLVMValueRef epoch)
{
	struct irb *ir = &g->ir;
	LLVMValueRef same = LLVMBuildICmp(
		ir->b, LLVMIntEQ, LLVMBuildLoad2(ir->b, ir->i64, ep, ""),
		epoch, "");

	LLVMBuildStore(ir->b,
		       LLVMBuildSelect(ir->b, same,
				       LLVMBuildLoad2(ir->b, ir->i64, vp, ""),
				       irb_const(ir, 0), ""),
		       vp);
	LLVMBuildStore(ir->b,
		       LLVMBuildSelect(ir->b, same,
				       LLVMBuildLoad2(ir->b, ir->i64, mp, ""),
				       irb_const(ir, 0), ""),
		       mp);
}

void cg_tseries(struct cg *g, struct ast_node *mapnode, struct ast_node *call)
{
	struct irb *ir = &g->ir;
	struct sema_map *sm = mapnode->sema->map;
	const struct cg_map *m = &g->obj->maps[sm->id];
	const struct type *vt = m->value_type;
	struct ast_node *arg = call->call.args;
	LLVMValueRef now, epoch, bucket, key, v, p, vp, mp, ep, old, meta;
	LLVMValueRef take;
	LLVMBasicBlockRef cont;

	if (ir->target != CG_TARGET_BPF) {
		/* shim/place keeps such probes in the kernel */
		cg_unsupported(g, call, "tseries() in user mode");
		return;
	}
	now = cg_tseries_now(g, call);
	epoch = LLVMBuildUDiv(ir->b, now, irb_const(ir, vt->ts_interval),
			      "ts_epoch");
	bucket = LLVMBuildURem(ir->b, epoch, irb_const(ir, vt->ts_num),
			       "ts_bucket");
	key = cg_map_key(g, mapnode, m, bucket);
	v = cg_expr(g, arg);
	if (!cg_is_scalar(arg->type)) {
		cg_unsupported(g, arg, "a non-integer argument");
		return;
	}
	v = LLVMBuildIntCast2(ir->b, v, ir->i64, arg->type->is_signed, "");
	g->update_loc = &call->loc;
	p = cg_map_get_or_init(g, sm->id, key);
	g->update_loc = NULL;
	cont = cg_if_nonnull(g, p);
	vp = p;
	mp = irb_gep(ir, p, 8);
	ep = irb_gep(ir, p, 16);
	if (vt->ts_agg != TSERIES_NONE)
		cg_tseries_restart(g, vp, mp, ep, epoch);
	old = LLVMBuildLoad2(ir->b, ir->i64, vp, "");
	meta = LLVMBuildLoad2(ir->b, ir->i64, mp, "");
	switch (vt->ts_agg) {
	case TSERIES_AVG:
		LLVMBuildStore(ir->b,
			       LLVMBuildAdd(ir->b, meta, irb_const(ir, 1), ""),
			       mp);
		/* fall through */
	case TSERIES_SUM:
		LLVMBuildStore(ir->b, LLVMBuildAdd(ir->b, old, v, ""), vp);
		break;
	case TSERIES_MIN:
	case TSERIES_MAX:
		take = LLVMBuildICmp(
			ir->b,
			vt->ts_agg == TSERIES_MIN ?
				(vt->is_signed ? LLVMIntSLT : LLVMIntULT) :
				(vt->is_signed ? LLVMIntSGT : LLVMIntUGT),
			v, old, "");
		take = LLVMBuildOr(ir->b, take,
				   LLVMBuildICmp(ir->b, LLVMIntEQ, meta,
						 irb_const(ir, 0), ""),
				   "");
		LLVMBuildStore(ir->b, LLVMBuildSelect(ir->b, take, v, old, ""),
			       vp);
		LLVMBuildStore(ir->b, irb_const(ir, 1), mp);
		break;
	default:
		LLVMBuildStore(ir->b, v, vp);
		LLVMBuildStore(ir->b, now, mp);
		break;
	}
	LLVMBuildStore(ir->b, epoch, ep);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
}
