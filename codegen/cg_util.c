/*
 * Helpers every part of the lowering uses (cg_int.h): scalar types, the
 * located "not supported" error, values loaded and stored by type, the
 * if-non-null block, the globals map's value, events and their records.
 * Below the lowerings and cg.c: it calls only irb.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <linux/bpf.h>

#include "cg_int.h"
#include "irb_native.h"
#include "util.h"

bool cg_is_scalar(const struct type *t)
{
	if (!t)
		return true;
	switch (t->kind) {
	case TY_STRING:
	case TY_BUFFER:
	case TY_TUPLE:
	case TY_RECORD:
	case TY_ARRAY:
	case TY_USTACK:
	case TY_KSTACK:
	case TY_INET:
	case TY_MAC:
	case TY_CGROUP_PATH:
		return false;
	case TY_VOID:
	case TY_NONE:
		return true;
	default:
		return t->size <= 8;
	}
}

bool cg_is_uprobe(struct cg *g)
{
	enum sema_provider p = g->sap ? g->sap->provider :
					g->probe->provider;

	return p == PROV_UPROBE || p == PROV_URETPROBE || p == PROV_USDT;
}

/*
 * Is the memory a pointer of unknown address space points to the
 * process's? In uprobes and usdt, and in watchpoints on a user address
 * (or on a function's argument): bpftrace 0.17 reads those as the
 * process's memory too.
 */
bool cg_reads_user(struct cg *g)
{
	enum sema_provider p = g->sap ? g->sap->provider :
					g->probe->provider;

	if (p == PROV_WATCHPOINT)
		return !g->ap || g->ap->ap.address < 0x800000000000ULL;
	return cg_is_uprobe(g);
}

/* The step of pointer arithmetic on t: its pointee's size (1 for void). */
uint64_t cg_pointee_size(const struct type *t)
{
	if (!t || !t->elem || !t->elem->size)
		return 1;
	return t->elem->size;
}

enum sema_func cg_map_agg(const struct sema_map *sm)
{
	return sm->agg != FN_NONE ? sm->agg : sema_agg_of(sm->value);
}

void cg_unsupported(struct cg *g, const struct ast_node *n, const char *what)
{
	diag_error(&g->c->diag, n ? &n->loc : NULL,
		   "%s is not supported yet", what);
	g->err = -EINVAL;
}

int cg_event_new(struct cg *g, enum cg_event_kind kind,
		 const struct ast_node *call)
{
	struct cg_object *o = g->obj;
	struct cg_event *e;

	if (o->nevents == g->cap_events) {
		struct cg_event *ne;

		g->cap_events = g->cap_events ? 2 * g->cap_events : 16;
		ne = arena_alloc(&g->c->arena,
				 g->cap_events * sizeof(*ne));
		if (o->nevents)
			memcpy(ne, o->events, o->nevents * sizeof(*ne));
		o->events = ne;
	}
	e = &o->events[o->nevents];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->call = call;
	e->map = -1;
	e->fmt_id = -1;
	e->size = sizeof(struct cg_event_hdr);
	return o->nevents++;
}

/* cg_opts.event_time, CG_TIME_NONE for callers that predate it */
static enum cg_event_time cg_event_time(const struct cg *g)
{
	const struct cg_opts *o = g->opts;

	if (!o || o->sz < offsetof(struct cg_opts, event_time) +
				  sizeof(o->event_time))
		return CG_TIME_NONE;
	return o->event_time;
}

LLVMValueRef cg_record_begin(struct cg *g, int ev, size_t size)
{
	LLVMValueRef rec = irb_alloca(
		&g->ir, cg_record_room(cg_event_time(g), size), "rec");

	irb_memset(&g->ir, rec, 0, (size + 7) & ~(size_t)7);
	LLVMBuildStore(g->ir.b, irb_const(&g->ir, ev), rec);
	return rec;
}

LLVMValueRef cg_int_norm(struct cg *g, LLVMValueRef v, const struct type *t)
{
	LLVMTypeRef nt;
	size_t sz;

	if (!t || t->kind == TY_BOOL)
		return v;
	sz = t->size;
	if (sz == 0 || sz >= 8 || (sz != 1 && sz != 2 && sz != 4))
		return v;
	nt = LLVMIntTypeInContext(g->ir.ctx, sz * 8);
	v = LLVMBuildTrunc(g->ir.b, v, nt, "");
	return t->is_signed ? LLVMBuildSExt(g->ir.b, v, g->ir.i64, "") :
			      LLVMBuildZExt(g->ir.b, v, g->ir.i64, "");
}

LLVMValueRef cg_load(struct cg *g, LLVMValueRef src, const struct type *t)
{
	size_t sz = t && t->size ? t->size : 8;
	LLVMTypeRef nt;
	LLVMValueRef v;

	if (!cg_is_scalar(t))
		return src;
	if (sz != 1 && sz != 2 && sz != 4)
		sz = 8;
	nt = LLVMIntTypeInContext(g->ir.ctx, sz * 8);
	v = LLVMBuildLoad2(g->ir.b, nt, src, "");
	LLVMSetAlignment(v, 1);
	if (sz == 8)
		return v;
	return cg_signed(t) ? LLVMBuildSExt(g->ir.b, v, g->ir.i64, "") :
			      LLVMBuildZExt(g->ir.b, v, g->ir.i64, "");
}

void cg_store(struct cg *g, LLVMValueRef dst, const struct type *dt,
	      LLVMValueRef v, const struct type *vt)
{
	size_t dsz = dt && dt->size ? dt->size : 8;

	if (cg_is_scalar(dt)) {
		LLVMValueRef s;

		if (!cg_is_scalar(vt)) {
			/* e.g. a 16-byte usym stored into 8 bytes */
			irb_memcpy(&g->ir, dst, v, dsz);
			return;
		}
		if (dsz != 1 && dsz != 2 && dsz != 4)
			dsz = 8;
		if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMPointerTypeKind)
			v = LLVMBuildPtrToInt(g->ir.b, v, g->ir.i64, "");
		if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) != 64)
			v = LLVMBuildZExt(g->ir.b, v, g->ir.i64, "");
		if (dsz < 8)
			v = LLVMBuildTrunc(g->ir.b, v,
					   LLVMIntTypeInContext(g->ir.ctx,
								dsz * 8),
					   "");
		s = LLVMBuildStore(g->ir.b, v, dst);
		LLVMSetAlignment(s, 1);
		return;
	}
	if (cg_is_scalar(vt)) {
		/* an integer into a wider buffer: store the value first */
		irb_memset(&g->ir, dst, 0, dsz);
		cg_store(g, dst, vt, v, vt);
		return;
	}
	if (dt && vt && dt->kind == TY_TUPLE && vt->kind == TY_TUPLE &&
	    dt->nfields == vt->nfields && !type_equal(dt, vt)) {
		irb_memset(&g->ir, dst, 0, dsz);
		for (int i = 0; i < dt->nfields; i++) {
			struct type_field *df = &dt->fields[i];
			const struct type_field *vf = type_tuple_match(dt, vt,
								       i);
			LLVMValueRef fv;

			if (!vf)	/* sema allows no such store */
				BUG("no field of the record stored");
			fv = irb_gep(&g->ir, v, vf->offset);

			cg_store(g, irb_gep(&g->ir, dst, df->offset), df->type,
				 cg_load(g, fv, vf->type), vf->type);
		}
		return;
	}
	{
		size_t vsz = vt && vt->size ? vt->size : dsz;

		if (vsz < dsz) {
			irb_memset(&g->ir, dst, 0, dsz);
			irb_memcpy(&g->ir, dst, v, vsz);
		} else {
			irb_memcpy(&g->ir, dst, v, dsz);
			if (dt && dt->kind == TY_STRING && vsz > dsz)
				/* keep the string terminated */
				LLVMBuildStore(g->ir.b,
					       LLVMConstInt(g->ir.i8, 0, 0),
					       irb_gep(&g->ir, dst, dsz - 1));
		}
	}
}

LLVMValueRef cg_globals_ptr(struct cg *g)
{
	LLVMValueRef key = irb_alloca(&g->ir, 4, "gkey");

	LLVMBuildStore(g->ir.b, LLVMConstInt(g->ir.i32, 0, 0), key);
	return irb_map_lookup(&g->ir, g->globals, key);
}

LLVMBasicBlockRef cg_if_nonnull(struct cg *g, LLVMValueRef p)
{
	struct irb *ir = &g->ir;
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "nonnull");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "nonnull_done");

	/* null (a full map, no block) is the rare case */
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, p, ""),
					 cont, then),
		     true);
	LLVMPositionBuilderAtEnd(ir->b, then);
	return cont;
}

/* Send a record; when the ring is full, count the loss per CPU. */
void cg_record_send(struct cg *g, LLVMValueRef rec, size_t size)
{
	struct irb *ir = &g->ir;
	enum cg_event_time et = cg_event_time(g);
	LLVMValueRef r;

	if (et != CG_TIME_NONE) {
		/* last, as close to the output as the record allows */
		LLVMValueRef ts = et == CG_TIME_TSC && irb_is_native(ir) ?
					  irb_native_stamp(ir) :
					  irb_helper(ir, BPF_FUNC_ktime_get_ns,
						     NULL, 0);

		LLVMBuildStore(ir->b, ts,
			       irb_gep(ir, rec, cg_record_room(
						       CG_TIME_NONE, size)));
		size = cg_record_room(et, size);
	}
	r = irb_ringbuf_output(ir, g->ringbuf, rec, size);
	LLVMBasicBlockRef lost = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "lost");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
							       "sent");
	LLVMValueRef key, p;
	LLVMBasicBlockRef cont;

	LLVMBuildCondBr(ir->b,
			LLVMBuildICmp(ir->b, LLVMIntSLT, r, irb_const(ir, 0),
				      ""),
			lost, done);
	LLVMPositionBuilderAtEnd(ir->b, lost);
	key = irb_alloca(ir, 4, "lost_key");
	LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, 0, 0), key);
	p = irb_map_lookup(ir, g->lost, key);
	cont = cg_if_nonnull(g, p);
	LLVMBuildStore(ir->b,
		       LLVMBuildAdd(ir->b, LLVMBuildLoad2(ir->b, ir->i64, p, ""),
				    irb_const(ir, 1), ""),
		       p);
	LLVMBuildBr(ir->b, cont);
	LLVMPositionBuilderAtEnd(ir->b, cont);
	LLVMBuildBr(ir->b, done);
	LLVMPositionBuilderAtEnd(ir->b, done);
}

/* A string literal in a zeroed stack buffer of at least size bytes. */
LLVMValueRef cg_string_lit(struct cg *g, const char *s, size_t len,
			   size_t size)
{
	LLVMValueRef buf;

	if (size < len + 1)
		size = len + 1;
	buf = irb_alloca(&g->ir, size, "str");
	irb_memset(&g->ir, buf, 0, (size + 7) & ~(size_t)7);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = 0;
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(&w, s + i, n);
		if (!w)
			continue;
		LLVMBuildStore(g->ir.b, irb_const(&g->ir, w),
			       irb_gep(&g->ir, buf, i));
	}
	return buf;
}

/* Argument i (from 0) of a call, NULL past the last. */
struct ast_node *cg_call_arg(struct ast_node *call, int i)
{
	struct ast_node *a = call->call.args;

	while (a && i--)
		a = a->next;
	return a;
}
