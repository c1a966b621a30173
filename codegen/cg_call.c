/*
 * Lowering of function calls: output events (printf, time, print, exit,
 * clear, zero), strings (str, strncmp), and calls whose value is an
 * integer.
 */
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "compat.h"
#include "util.h"

/* printf/time/cat/system: header + the arguments as sema's tuple. */
void cg_fmt_event(struct cg *g, struct ast_node *n, enum cg_event_kind kind)
{
	struct sema_fmt *f = n->sema->fmt;
	const struct type *t = f ? f->args : NULL;
	size_t size = sizeof(struct cg_event_hdr) + (t ? t->size : 0);
	int ev = cg_event_new(g, kind, n);
	struct cg_event *e = &g->obj->events[ev];
	LLVMValueRef rec;
	struct ast_node *a;
	int i = 0;

	e->fmt = f ? f->fmt : NULL;
	e->fmt_id = f ? f->id : -1;
	e->args_type = t;
	e->size = size;
	e->nargs = t ? t->nfields : 0;
	e->args = arena_alloc(&g->c->arena,
			      (e->nargs + 1) * sizeof(*e->args));
	rec = cg_record_begin(g, ev, size);
	a = n->call.args;
	if (kind != CG_EV_TIME && a)
		a = a->next;	/* skip the format */
	for (; a && t && i < t->nfields; a = a->next, i++) {
		struct type_field *fl = &t->fields[i];
		size_t off = sizeof(struct cg_event_hdr) + fl->offset;

		/* events may have been reallocated by nested calls */
		g->obj->events[ev].args[i] = (struct cg_arg){
			.type = fl->type, .offset = off, .size = fl->type->size
		};
		cg_store(g, irb_gep(&g->ir, rec, off), fl->type,
			 cg_expr(g, a), a->type);
	}
	cg_record_send(g, rec, size);
}

/* The words of a user-mode clear()/zero()'s event after the header: the
 * value, and sum's presence word (shim/run/run_maps.c reads as many). */
static size_t cg_agg_own_size(const struct cg_map *m)
{
	return ((m->value_size + 7) & ~(size_t)7) +
	       (m->value_type && m->value_type->kind == TY_SUM ? 8 : 0);
}

static void cg_agg_reset_stored(struct cg *g, const struct cg_map *m,
				LLVMValueRef slot)
{
	enum type_kind k = m->value_type ? m->value_type->kind : TY_INT;
	size_t from = k == TY_SUM ? 8 : 0, to = k == TY_SUM ? 16 : 0;

	if (k == TY_MIN || k == TY_MAX)
		to = (m->value_size + 7) & ~(size_t)7;
	for (size_t off = from; off < to; off += 8)
		LLVMBuildStore(g->ir.b, irb_const(&g->ir, 0),
			       irb_gep(&g->ir, slot, off));
}

/* clear(), zero(), print() of a whole map: an event naming the map */
void cg_map_event(struct cg *g, struct ast_node *n, enum cg_event_kind kind)
{
	struct sema_map *sm = n->sema ? n->sema->map : NULL;
	size_t size = sizeof(struct cg_event_hdr);
	const struct cg_map *m;
	int ev;
	LLVMValueRef rec, val;

	if (!sm) {
		cg_unsupported(g, n, "this call without a map");
		return;
	}
	ev = cg_event_new(g, kind, n);
	g->obj->events[ev].map = sm->id;
	if (kind == CG_EV_PRINT) {
		g->obj->events[ev].top = n->sema->iargs[0];
		g->obj->events[ev].div = n->sema->iargs[1];
	}
	m = &g->obj->maps[sm->id];
	if ((kind == CG_EV_CLEAR || kind == CG_EV_ZERO) &&
	    g->ir.target == CG_TARGET_NATIVE && !m->key_type && m->percpu &&
	    !m->bucketed && !m->xmap && n->call.args &&
	    n->call.args->kind == AST_MAP) {
		/*
		 * A keyless aggregation in a user-mode probe: the thread's
		 * own values at the call go with the event, so that ubt's
		 * reset of this thread stops there (run_agg_reset()), not
		 * where ubt reads the event; the other threads' are reset
		 * when ubt reads it, as bpftrace's clear() is.
		 */
		size_t vs = cg_agg_own_size(m);

		val = irb_map_lookup(&g->ir, g->maps[sm->id],
				     cg_map_key(g, n->call.args, m, NULL));
		size += vs;
		g->obj->events[ev].size = size;
		g->obj->events[ev].native = true;
		rec = cg_record_begin(g, ev, size);
		irb_memcpy(&g->ir,
			   irb_gep(&g->ir, rec, sizeof(struct cg_event_hdr)),
			   val, vs);
		/* the words ubt stores over rather than subtracts (min/max
		 * { value, set }, sum's presence word after its value):
		 * this thread's at once, ubt leaves them to it */
		cg_agg_reset_stored(g, m, val);
		cg_record_send(g, rec, size);
		return;
	}
	rec = cg_record_begin(g, ev, size);
	cg_record_send(g, rec, size);
}

void cg_print(struct cg *g, struct ast_node *n)
{
	struct ast_node *a = n->call.args;
	size_t size;
	int ev;
	LLVMValueRef rec;

	if (a && a->kind == AST_MAP && !a->map.keys && n->sema &&
	    n->sema->map) {
		cg_map_event(g, n, CG_EV_PRINT);
		return;
	}
	if (!a || !a->type) {
		cg_unsupported(g, n, "this print()");
		return;
	}
	size = sizeof(struct cg_event_hdr) + ((a->type->size + 7) & ~7ul);
	ev = cg_event_new(g, CG_EV_PRINT_VALUE, n);
	g->obj->events[ev].size = size;
	g->obj->events[ev].nargs = 1;
	g->obj->events[ev].args = arena_alloc(&g->c->arena,
					      sizeof(struct cg_arg));
	g->obj->events[ev].args[0] = (struct cg_arg){
		.type = a->type, .offset = sizeof(struct cg_event_hdr),
		.size = a->type->size
	};
	rec = cg_record_begin(g, ev, size);
	cg_store(g, irb_gep(&g->ir, rec, sizeof(struct cg_event_hdr)),
		 a->type, cg_expr(g, a), a->type);
	cg_record_send(g, rec, size);
}

static bool cg_user_ptr(struct cg *g, const struct type *t)
{
	enum sema_provider p = g->sap ? g->sap->provider :
					g->probe->provider;

	if (t && t->addrspace == AS_USER)
		return true;
	if (t && t->addrspace == AS_KERNEL)
		return false;
	return p == PROV_UPROBE || p == PROV_URETPROBE || p == PROV_USDT;
}

LLVMValueRef cg_str(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0), *len = cg_call_arg(n, 1);
	size_t size = n->type && n->type->size ? n->type->size : 64;
	LLVMValueRef buf, v, sz;
	bool data_loc;
	/*
	 * compat str-trailer: str(p) reads max_strlen characters and the
	 * NUL into a byte more than its type (v0.26, max_strlen < 1024):
	 * a value without a NUL was cut, and prints with the trailer.
	 * str(p, n) reads that byte more too: n characters, at most
	 * max_strlen and then the trailer (v0.26's read of n + 1).
	 */
	size_t pad = compat_has(COMPAT_STR_TRAILER) &&
		     g->sp->max_strlen < 1024 && a;

	if (!a)
		return irb_alloca(ir, size, "str");
	v = cg_expr(g, a);
	buf = irb_alloca(ir, size + pad, "str");
	irb_memset(ir, buf, 0, (size + pad + 7) & ~(size_t)7);
	if (!cg_is_scalar(a->type)) {
		/* already a string (or bytes): copy and terminate */
		cg_store(g, buf, n->type, v, a->type);
		LLVMBuildStore(ir->b, LLVMConstInt(ir->i8, 0, 0),
			       irb_gep(ir, buf, size - 1));
		if (len) {
			/* str(s, n): its first n characters at most */
			LLVMValueRef l = cg_expr(g, len), last, at;

			/* the newest: n bytes with the NUL (compat str-length),
			 * n + 1 below max_strlen 1024 (compat str-trailer) */
			if (compat_has(COMPAT_STR_LENGTH) && !pad)
				l = LLVMBuildSelect(
					ir->b,
					LLVMBuildICmp(ir->b, LLVMIntEQ, l,
						      irb_const(ir, 0), ""),
					l,
					LLVMBuildSub(ir->b, l, irb_const(ir, 1),
						     ""),
					"");
			last = irb_const(ir, size - 1);
			l = LLVMBuildSelect(ir->b,
					    LLVMBuildICmp(ir->b, LLVMIntULT, l,
							  last, ""),
					    l, last, "");
			at = LLVMBuildGEP2(ir->b, ir->i8, buf, &l, 1, "");
			LLVMBuildStore(ir->b, LLVMConstInt(ir->i8, 0, 0), at);
		}
		return buf;
	}
	sz = irb_const(ir, size + pad);
	if (len) {
		/* str(p, n): at most n characters, and at most the buffer */
		LLVMValueRef l = cg_expr(g, len);
		LLVMValueRef big;

		/* n characters: n + 1 bytes with the NUL (bpftrace 0.17);
		 * the newest: n bytes with the NUL (compat str-length), n + 1
		 * below max_strlen 1024 (compat str-trailer's pad) */
		if (!compat_has(COMPAT_STR_LENGTH) || pad)
			l = LLVMBuildAdd(ir->b, l, irb_const(ir, 1), "");
		big = LLVMBuildICmp(ir->b, LLVMIntUGT, l, sz, "");

		sz = LLVMBuildSelect(ir->b, big, sz, l, "");
	}
	data_loc = a->kind == AST_FIELD && a->type && a->type->name &&
		   !strcmp(a->type->name, "__data_loc");
	if (data_loc || !cg_user_ptr(g, a->type)) {
		cg_helper_check(g, &n->loc, "probe_read_kernel_str",
				irb_probe_read(ir, IRB_READ_KERNEL_STR, buf,
					       sz, v),
				CG_CHECK_READ);
		return buf;
	}
	{
		LLVMValueRef r = irb_probe_read(ir, IRB_READ_USER_STR, buf,
						sz, v);
		enum sema_provider p = g->sap ? g->sap->provider :
						g->probe->provider;
		LLVMBasicBlockRef retry, done;
		LLVMValueRef args[3];

		if (p != PROV_UPROBE && p != PROV_URETPROBE &&
		    p != PROV_USDT) {
			cg_helper_check(g, &n->loc, "probe_read_user_str", r,
					CG_CHECK_READ);
			return buf;
		}
		/*
		 * A string not paged in yet cannot be read without a fault:
		 * fault it in with bpf_copy_from_user() (the program becomes
		 * sleepable), then read it again.  The copy takes all sz
		 * bytes, also those past the string's NUL, and the second
		 * read leaves them in place: zero the buffer between the
		 * two, so that a string is followed by zeros on every path
		 * (the same string must make the same map key).
		 */
		g->sleepable = true;
		retry = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
						      "str_retry");
		done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
						     "str_done");
		LLVMBuildCondBr(ir->b,
				LLVMBuildICmp(ir->b, LLVMIntSLT, r,
					      irb_const(ir, 0), ""),
				retry, done);
		LLVMPositionBuilderAtEnd(ir->b, retry);
		args[0] = buf;
		args[1] = LLVMBuildTrunc(ir->b, sz, ir->i32, "");
		args[2] = LLVMBuildIntToPtr(ir->b, v, ir->ptr, "");
		irb_helper(ir, BPF_FUNC_copy_from_user, args, 3);
		irb_memset(ir, buf, 0, (size + pad + 7) & ~(size_t)7);
		/* -kk: what the read gave after the fault-in */
		cg_helper_check(g, &n->loc, "probe_read_user_str",
				irb_probe_read(ir, IRB_READ_USER_STR, buf, sz,
					       v),
				CG_CHECK_READ);
		LLVMBuildBr(ir->b, done);
		LLVMPositionBuilderAtEnd(ir->b, done);
	}
	return buf;
}

LLVMValueRef cg_strncmp(struct cg *g, struct ast_node *n)
{
	struct ast_node *a = cg_call_arg(n, 0), *b = cg_call_arg(n, 1),
			*l = cg_call_arg(n, 2);
	LLVMValueRef va = cg_expr(g, a), vb = cg_expr(g, b), eq;
	uint64_t limit = 0;

	if (!l) {
		cg_unsupported(g, n, "strncmp() without a length");
		return irb_const(&g->ir, 0);
	}
	limit = n->sema->iargs[0];
	if (!limit)
		return irb_const(&g->ir, 0);
	eq = cg_string_equal(g, va, a->type, vb, b->type, limit);
	/* strncmp is 0 when equal */
	return LLVMBuildXor(g->ir.b, eq, irb_const(&g->ir, 1), "");
}

LLVMValueRef cg_usym(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	struct ast_node *a = cg_call_arg(n, 0);
	LLVMValueRef v = cg_expr(g, a), buf, pt;

	if (cg_is_scalar(n->type))
		return v;
	buf = irb_alloca(ir, n->type->size, "usym");
	irb_memset(ir, buf, 0, (n->type->size + 7) & ~7ul);
	LLVMBuildStore(ir->b, v, buf);
	if (n->type->size >= 16) {
		pt = irb_helper(ir, BPF_FUNC_get_current_pid_tgid, NULL, 0);
		LLVMBuildStore(ir->b,
			       LLVMBuildLShr(ir->b, pt, irb_const(ir, 32), ""),
			       irb_gep(ir, buf, 8));
	}
	return buf;
}

/* exit([code]): ubt's exit event; nothing after it runs. */
void cg_exit(struct cg *g, struct ast_node *n)
{
	struct irb *ir = &g->ir;
	LLVMValueRef gp, rec;
	LLVMBasicBlockRef cont;
	int ev;

	/* the other probes stop at once (cg.c prologue) */
	gp = cg_globals_ptr(g);
	cont = cg_if_nonnull(g, gp);
	LLVMBuildStore(ir->b, irb_const(ir, 1),
		       irb_gep(ir, gp, CG_GLOBALS_EXIT));
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	ev = cg_event_new(g, CG_EV_EXIT, n);
	if (n->call.args) {
		/* exit(code) (v0.25): ubt's exit status */
		size_t sz = sizeof(struct cg_event_hdr) + 8;

		LLVMValueRef code = cg_expr(g, n->call.args);

		if (LLVMGetIntTypeWidth(LLVMTypeOf(code)) < 64)
			code = LLVMBuildZExt(ir->b, code, ir->i64, "");
		g->obj->events[ev].size = sz;
		rec = cg_record_begin(g, ev, sz);
		LLVMBuildStore(ir->b, code,
			       irb_gep(ir, rec, sizeof(struct cg_event_hdr)));
		cg_record_send(g, rec, sz);
	} else {
		rec = cg_record_begin(g, ev, sizeof(struct cg_event_hdr));
		cg_record_send(g, rec, sizeof(struct cg_event_hdr));
	}
	/*
	 * Nothing after exit() runs: the probe returns (from a for loop's
	 * callback, 1 ends the iteration and the probe returns after it:
	 * cg_stmt.c).  What follows is lowered into a block nothing
	 * reaches.
	 */
	LLVMBuildRet(ir->b, irb_const(ir, g->in_for ? 1 : 0));
	LLVMPositionBuilderAtEnd(ir->b,
				 LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "after_exit"));
}
