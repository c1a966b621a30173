/*
 * Code generation driver: maps, one program per attach point, events.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "cg_int.h"
#include "compat.h"
#include "irb_native.h"
#include "kfeat.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"

#define CG_RINGBUF_SIZE (1u << 20)

/*
 * The map's global in the BPF object, AT_<name>, which BTF names. The
 * kernel refuses BTF with a name of KSYM_NAME_LEN (512) or more, and
 * libbpf then dumps the whole BTF and loads the maps without it (a map of
 * a 16 KiB name): a longer name is cut, with its index to keep it unique.
 */
#define CG_BPF_NAME_MAX 200

static bool cg_bpf_name_taken(struct cg *g, int id, const char *bpf_name)
{
	struct sema_program *sp = g->sp;

	for (int i = 0; i < sp->nmaps; i++) {
		const char *n = sp->maps[i]->name + 1;

		if (i != id && !strncmp(bpf_name, "AT_", 3) &&
		    !strcmp(bpf_name + 3, n))
			return true;
	}
	return false;
}

static const char *cg_map_bpf_name(struct cg *g, int id)
{
	const char *name = g->sp->maps[id]->name + 1;
	const char *b;

	if (strlen(name) <= CG_BPF_NAME_MAX)
		return arena_printf(&g->c->arena, "AT_%s", name);
	for (int k = 0;; k++) {
		b = arena_printf(&g->c->arena, "AT_%.*s_%d_%d",
				 CG_BPF_NAME_MAX, name, id, k);
		if (!cg_bpf_name_taken(g, id, b))
			return b;
	}
}

static int cg_define_maps(struct cg *g)
{
	struct sema_program *sp = g->sp;
	struct cg_object *o = g->obj;

	o->nmaps = sp->nmaps;
	o->maps = arena_alloc(&g->c->arena, (sp->nmaps + 1) * sizeof(*o->maps));
	g->maps = arena_alloc(&g->c->arena,
			      (sp->nmaps + 1) * sizeof(*g->maps));
	for (int i = 0; i < sp->nmaps; i++) {
		struct sema_map *sm = sp->maps[i];
		struct cg_map *m = &o->maps[i];
		int bt = BPF_MAP_TYPE_HASH;
		size_t ukey;

		m->name = sm->name;
		m->bpf_name = cg_map_bpf_name(g, i);
		m->xmap = false;
		m->xmap_slots = 0;
		m->key_type = sm->key;
		m->value_type = sm->value;
		/* declared with a size, else max_map_keys */
		m->max_entries = sm->max_entries > 0 ? sm->max_entries :
						       sp->max_map_keys;
		switch (cg_map_agg(sm)) {
		case FN_COUNT:
		case FN_SUM:
			m->percpu = true;
			m->value_size = 8;
			break;
		case FN_MIN:
		case FN_MAX:
		case FN_AVG:
		case FN_STATS:
			m->percpu = true;
			m->value_size = 16;
			break;
		case FN_HIST:
		case FN_LHIST:
			m->percpu = true;
			m->bucketed = true;
			m->value_size = 8;
			break;
		case FN_TSERIES:	/* struct tseries_cell per bucket */
			m->percpu = true;
			m->bucketed = true;
			m->value_size = 24;
			break;
		default:
			m->value_size = sm->value ? sm->value->size : 8;
			if (!m->value_size)
				m->value_size = 8;
			break;
		}
		ukey = sm->key ? (sm->key->size + 7) & ~(size_t)7 :
				 (m->bucketed ? 0 : 8);
		m->key_size = ukey + (m->bucketed ? 8 : 0);
		if (sm->bpf_type && strcmp(sm->bpf_type, "hash") &&
		    strcmp(sm->bpf_type, "lruhash") &&
		    strcmp(sm->bpf_type, "percpuhash") &&
		    strcmp(sm->bpf_type, "percpulruhash")) {
			diag_error(&g->c->diag, sm->first ? &sm->first->loc :
							    NULL,
				   "map type %s is not supported yet",
				   sm->bpf_type);
			return -EINVAL;
		}
		if (sm->bpf_type && strstr(sm->bpf_type, "lru"))
			bt = m->percpu ? BPF_MAP_TYPE_LRU_PERCPU_HASH :
					 BPF_MAP_TYPE_LRU_HASH;
		else if (m->percpu ||
			 (sm->bpf_type && !strcmp(sm->bpf_type, "percpuhash")))
			bt = BPF_MAP_TYPE_PERCPU_HASH;
		if (bt == BPF_MAP_TYPE_PERCPU_HASH ||
		    bt == BPF_MAP_TYPE_LRU_PERCPU_HASH)
			m->percpu = true;
		if (g->opts && g->opts->xmap_maps && g->opts->xmap_maps[i]) {
			g->maps[i] = cg_xmap_define(g, i);
			continue;
		}
		g->maps[i] = irb_map_define(&g->ir, m->bpf_name, bt,
					    m->key_size, m->value_size,
					    m->max_entries);
	}
	o->ringbuf_name = CG_MAP_RINGBUF;
	o->ringbuf_size = CG_RINGBUF_SIZE;
	g->ringbuf = irb_map_define(&g->ir, o->ringbuf_name,
				    BPF_MAP_TYPE_RINGBUF, 0, 0,
				    CG_RINGBUF_SIZE);
	o->lost_name = CG_MAP_LOST;
	g->lost = irb_map_define(&g->ir, o->lost_name,
				 BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1);
	o->globals_name = CG_MAP_GLOBALS;
	g->globals = irb_map_define(&g->ir, o->globals_name,
				    BPF_MAP_TYPE_ARRAY, 4, CG_GLOBALS_SIZE, 1);
	/* the native target's tables count their own (rt_abi.h) */
	if (g->ir.target == CG_TARGET_BPF && sp->nmaps) {
		o->full_name = CG_MAP_FULL;
		g->full = irb_map_define(&g->ir, o->full_name,
					 BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8,
					 sp->nmaps);
	}
	return 0;
}

/*
 * Return at once in a process ubt took system-wide (CG_MAP_TAKEN holds
 * its tgid) at a site patched there (cg_skip_patched()): it runs in user
 * mode.  A uretprobe's program returns only for a call the kernel saw
 * enter there since the take at a patched site (CG_MAP_RETMARK, that
 * generation): the calls that entered before return to the kernel
 * alone, and count there.
 */
#define CG_REGS_SP 152	/* offsetof(struct pt_regs, sp), x86-64 */
#define CG_REGS_IP 128	/* offsetof(struct pt_regs, ip) */

/*
 * A uprobe or usdt probe in a process taken (v: its generation): its hit
 * is user mode's when the site is patched there (CG_MAP_PATCHED); go to
 * skip then, else to cont.
 */
static void cg_skip_patched(struct cg *g, LLVMValueRef v,
			    LLVMBasicBlockRef skip, LLVMBasicBlockRef cont)
{
	struct irb *ir = &g->ir;
	LLVMValueRef patched = LLVMGetNamedGlobal(ir->mod, CG_MAP_PATCHED);
	LLVMValueRef k = irb_alloca(ir, 16, "patched"), gen;

	if (!patched)
		patched = irb_map_define_flags(ir, CG_MAP_PATCHED,
					       BPF_MAP_TYPE_HASH, 16, 4,
					       CG_PATCHED_MAX,
					       BPF_F_NO_PREALLOC);
	gen = LLVMBuildZExt(ir->b, LLVMBuildLoad2(ir->b, ir->i32, v, ""),
			    ir->i64, "");
	LLVMBuildStore(ir->b, gen, k);
	LLVMBuildStore(ir->b, irb_ctx_load(ir, g->ctxp, CG_REGS_IP, 8),
		       irb_gep(ir, k, 8));
	LLVMBuildCondBr(ir->b,
			LLVMBuildIsNull(ir->b, irb_map_lookup(ir, patched, k),
					""),
			cont, skip);
}

static void cg_skip_taken(struct cg *g, enum sema_provider prov)
{
	struct irb *ir = &g->ir;
	LLVMValueRef taken = LLVMGetNamedGlobal(ir->mod, CG_MAP_TAKEN);
	LLVMValueRef key = irb_alloca(ir, 4, "tgid"), id, tgid, v;
	LLVMBasicBlockRef skip, cont;

	if (!taken)
		taken = irb_map_define(ir, CG_MAP_TAKEN, BPF_MAP_TYPE_HASH, 4,
				       4, CG_TAKEN_MAX);
	id = irb_helper(ir, BPF_FUNC_get_current_pid_tgid, NULL, 0);
	tgid = LLVMBuildLShr(ir->b, id, irb_const(ir, 32), "");
	LLVMBuildStore(ir->b, LLVMBuildTrunc(ir->b, tgid, ir->i32, ""), key);
	v = irb_map_lookup(ir, taken, key);
	skip = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "taken");
	cont = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "not_taken");
	LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, v, ""), cont, skip);
	LLVMPositionBuilderAtEnd(ir->b, skip);
	if (prov == PROV_URETPROBE) {
		LLVMValueRef marks = LLVMGetNamedGlobal(ir->mod,
							CG_MAP_RETMARK);
		LLVMValueRef mk = irb_alloca(ir, 24, "retmark"), m, gen, same;
		LLVMBasicBlockRef marked = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "marked");
		LLVMBasicBlockRef ret = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "entered_since");

		if (!marks)
			marks = irb_map_define(ir, CG_MAP_RETMARK,
					       BPF_MAP_TYPE_LRU_HASH, 24, 4,
					       CG_RETMARK_MAX);
		gen = LLVMBuildLoad2(ir->b, ir->i32, v, "");
		/* {pid_tgid, sp, ip: where it returns} (sysw_bpf_mark()) */
		LLVMBuildStore(ir->b, id, mk);
		LLVMBuildStore(ir->b, irb_ctx_load(ir, g->ctxp, CG_REGS_SP, 8),
			       irb_gep(ir, mk, 8));
		LLVMBuildStore(ir->b, irb_ctx_load(ir, g->ctxp, CG_REGS_IP, 8),
			       irb_gep(ir, mk, 16));
		m = irb_map_lookup(ir, marks, mk);
		LLVMBuildCondBr(ir->b, LLVMBuildIsNull(ir->b, m, ""), cont,
				marked);
		LLVMPositionBuilderAtEnd(ir->b, marked);
		same = LLVMBuildICmp(ir->b, LLVMIntEQ,
				     LLVMBuildLoad2(ir->b, ir->i32, m, ""),
				     gen, "");
		LLVMBuildCondBr(ir->b, same, ret, cont);
		LLVMPositionBuilderAtEnd(ir->b, ret);
	} else {
		LLVMBasicBlockRef ret = LLVMAppendBasicBlockInContext(
			ir->ctx, ir->fn, "patched");

		cg_skip_patched(g, v, ret, cont);
		LLVMPositionBuilderAtEnd(ir->b, ret);
	}
	LLVMBuildRet(ir->b, irb_const(ir, 0));
	LLVMPositionBuilderAtEnd(ir->b, cont);
}

static const char *cg_section(struct cg *g, enum sema_provider p)
{
	switch (p) {
	case PROV_BEGIN:
	case PROV_END:
		return "raw_tp";
	case PROV_UPROBE:
	case PROV_USDT:
		return "uprobe";
	case PROV_URETPROBE:
		return "uretprobe";
	case PROV_TRACEPOINT:
		return "tracepoint";
	case PROV_INTERVAL:
	case PROV_PROFILE:
	case PROV_SOFTWARE:
	case PROV_HARDWARE:
	case PROV_WATCHPOINT:
	case PROV_ASYNCWATCHPOINT:
		return "perf_event";
	default:
		return NULL;
	}
}

/* A new program of probe, named p<probe>_<program>. */
static struct cg_prog *cg_prog_new(struct cg *g, struct ast_node *probe)
{
	struct cg_object *o = g->obj;
	struct cg_prog *p;
	char name[64];

	if (o->nprogs == g->cap_progs) {
		struct cg_prog *np;

		g->cap_progs = g->cap_progs ? 2 * g->cap_progs : 16;
		np = arena_alloc(&g->c->arena, g->cap_progs * sizeof(*np));
		if (o->nprogs)
			memcpy(np, o->progs, o->nprogs * sizeof(*np));
		o->progs = np;
	}
	p = &o->progs[o->nprogs];
	memset(p, 0, sizeof(*p));
	snprintf(name, sizeof(name), "p%d_%d", probe->probe.index,
		 o->nprogs);
	p->name = arena_strdup(&g->c->arena, name);
	return p;
}

/*
 * watchpoint:FUNC+argN: after the body's program (body), the uprobe at
 * FUNC (m) that reports the address (cg_watch.c).
 */
static void cg_watch_program(struct cg *g, struct ast_node *probe,
			     struct ast_node *ap, const struct probes_match *m,
			     int body)
{
	struct cg_prog *p = cg_prog_new(g, probe);
	enum sema_provider prov = ap->sema->ap->provider;

	g->obj->progs[body].watch_later = true;
	p->internal = true;
	p->section = "uprobe";
	p->probe = probe;
	p->ap = ap;
	p->provider = PROV_UPROBE;
	p->matches = m;
	p->nmatches = 1;
	p->probe_name = m->name;
	g->prog = g->obj->nprogs++;
	g->ctxp = irb_func_begin(&g->ir, p->name, p->section);
	cg_watch_setup_body(g, body, (int)ap->ap.func_offset,
			    prov == PROV_WATCHPOINT);
	irb_func_end(&g->ir);
}

static void cg_program(struct cg *g, struct sema_probe *sp,
		       struct ast_node *probe, struct ast_node *ap,
		       const struct probes_match *m, int nm)
{
	struct cg_object *o = g->obj;
	struct sema_ap *sap = ap->sema ? ap->sema->ap : NULL;
	enum sema_provider prov = sap ? sap->provider : sp->provider;
	const char *section = cg_section(g, prov);
	struct cg_prog *p;

	/* libbpf finds the iterator's BTF id (bpf_iter_FUNC) from it */
	if (prov == PROV_ITER)
		section = arena_printf(&g->c->arena, "iter/%s", ap->ap.func);
	if (!section && g->ir.target == CG_TARGET_BPF) {
		/* the ap being lowered, for its offset */
		g->ap = ap;
		section = cg_kernel_section(g, prov, m, nm);
	}
	if (!section) {
		diag_error(&g->c->diag, &ap->loc,
			   "%s probes are not supported yet",
			   ap->ap.provider ? ap->ap.provider : "these");
		g->err = -EINVAL;
		return;
	}
	p = cg_prog_new(g, probe);
	p->section = section;
	p->probe = probe;
	p->ap = ap;
	p->provider = prov;
	p->matches = m;
	p->nmatches = nm;
	p->probe_name = nm == 1 && m[0].name ? m[0].name : sp->name;
	if ((prov == PROV_BEGIN || prov == PROV_END) &&
	    compat_has(COMPAT_BEGIN_LOWERCASE))
		p->probe_name = prov == PROV_BEGIN ? "begin" : "end";
	if (prov == PROV_USDT && nm == 1 && m[0].pid > 0 && m[0].target &&
	    strncmp(m[0].target, "/proc/", 6))
		/* bpftrace names a -p process's USDT probe by the path
		 * through its mount namespace (its uprobes it does not) */
		p->probe_name = arena_printf(&g->c->arena,
					     "usdt:/proc/%d/root%s:%s:%s",
					     m[0].pid, m[0].target, m[0].ns,
					     m[0].func);

	g->probe = sp;
	g->ap = ap;
	g->sap = sap;
	g->prog = o->nprogs++;
	g->match = nm == 1 ? m : NULL;
	g->args_type = sap ? sap->args_type : sp->args_type;
	if (prov == PROV_TRACEPOINT && nm == 1 && m->target && m->func) {
		struct type *t = NULL;

		/* this tracepoint's own layout (a wildcard has several) */
		if (!tp_args(&g->c->arena, m->target, m->func, &t) && t)
			g->args_type = t;
	}
	if (g->ir.target == CG_TARGET_NATIVE)
		irb_native_set_regs_ctx(&g->ir, prov == PROV_USDT);
	g->ctxp = irb_func_begin(&g->ir, p->name, section);
	g->sleepable = false;
	g->vars = arena_alloc(&g->c->arena,
			      (sp->nvars + 1) * sizeof(*g->vars));
	for (int i = 0; i < sp->nvars; i++) {
		struct sema_var *v = sp->vars[i];
		size_t sz = v->type && v->type->size ? v->type->size : 8;

		g->vars[i] = irb_alloca(&g->ir, sz, v->name);
		irb_memset(&g->ir, g->vars[i], 0, (sz + 7) & ~(size_t)7);
	}
	if (prov != PROV_BEGIN && prov != PROV_END && prov != PROV_ITER) {
		/* after exit(), probes still attached do nothing; an
		 * iterator runs on to its end, as bpftrace's (its output
		 * is the whole of the iteration's) */
		int mark = irb_scope_begin(&g->ir);
		LLVMValueRef gp = cg_globals_ptr(g);
		LLVMBasicBlockRef cont = cg_if_nonnull(g, gp);
		LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(
			g->ir.ctx, g->ir.fn, "exited");
		LLVMValueRef ex = LLVMBuildLoad2(
			g->ir.b, g->ir.i64,
			irb_gep(&g->ir, gp, CG_GLOBALS_EXIT), "");

		irb_unlikely(&g->ir,
			     LLVMBuildCondBr(g->ir.b,
					     LLVMBuildICmp(g->ir.b, LLVMIntNE,
							   ex,
							   irb_const(&g->ir,
								     0),
							   ""),
					     stop, cont),
			     true);
		LLVMPositionBuilderAtEnd(g->ir.b, stop);
		LLVMBuildRet(g->ir.b, irb_const(&g->ir, 0));
		LLVMPositionBuilderAtEnd(g->ir.b, cont);
		irb_scope_end(&g->ir, mark);
	}
	if (g->ir.target == CG_TARGET_BPF && g->opts &&
	    g->opts->skip_taken &&
	    g->opts->skip_taken(g->opts->want_ctx, probe))
		cg_skip_taken(g, prov);
	if (probe->probe.pred) {
		int mark = irb_scope_begin(&g->ir);
		LLVMValueRef c = cg_cond(g, probe->probe.pred);
		LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(
			g->ir.ctx, g->ir.fn, "pred_true");
		LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(
			g->ir.ctx, g->ir.fn, "pred_false");

		LLVMBuildCondBr(g->ir.b, c, yes, no);
		LLVMPositionBuilderAtEnd(g->ir.b, no);
		LLVMBuildRet(g->ir.b, irb_const(&g->ir, 0));
		LLVMPositionBuilderAtEnd(g->ir.b, yes);
		irb_scope_end(&g->ir, mark);
	}
	cg_stmts(g, probe->probe.body);
	if (g->sleepable) {
		o->progs[g->prog].section = prov == PROV_URETPROBE ?
						    "uretprobe.s" :
						    "uprobe.s";
		LLVMSetSection(g->ir.fn, o->progs[g->prog].section);
	}
	irb_func_end(&g->ir);
	g->probe = NULL;
	g->ap = NULL;
	g->sap = NULL;
}

/*
 * Does the subtree use `probe` or `func` (or `args`, whose layout differs
 * between tracepoints)? Then each match gets its own program.
 */
static int cg_uses_probe_fn(struct ast_node *n, void *ctx)
{
	if (n->kind == AST_BUILTIN && n->sema &&
	    (n->sema->builtin == BI_PROBE || n->sema->builtin == BI_FUNC ||
	     n->sema->builtin == BI_ARGS))
		return 1;
	return ast_visit_children(n, cg_uses_probe_fn, ctx);
}

static bool cg_uses_probe(struct ast_node *probe)
{
	return (probe->probe.pred &&
		cg_uses_probe_fn(probe->probe.pred, NULL)) ||
	       cg_uses_probe_fn(probe->probe.body, NULL);
}

/* The matches this object lowers (cg_opts.want_site), n of them. */
static int cg_want_sites(struct cg *g, struct ast_node *probe,
			 struct probes_match **m, int n)
{
	const struct cg_opts *o = g->opts;
	struct probes_match *keep;
	int k = 0;

	if (!o || o->sz < offsetof(struct cg_opts, want_site) +
				  sizeof(o->want_site) || !o->want_site)
		return n;
	keep = arena_alloc(&g->c->arena, (n + 1) * sizeof(*keep));
	for (int i = 0; i < n; i++)
		if (o->want_site(o->want_ctx, probe, &(*m)[i]))
			keep[k++] = (*m)[i];
	*m = keep;
	return k;
}

/* Expand the attach points and lower each probe. */
static void cg_probes(struct cg *g)
{
	for (struct ast_node *p = g->c->program->program.probes; p && !g->err;
	     p = p->next) {
		struct sema_probe *sp = g->sp->probes[p->probe.index];
		bool split = cg_uses_probe(p), standby = false;
		int first = g->obj->nprogs;

		if (g->opts && g->opts->want &&
		    !g->opts->want(g->opts->want_ctx, p)) {
			if (g->opts->sz < offsetof(struct cg_opts, standby) +
						  sizeof(g->opts->standby) ||
			    !g->opts->standby ||
			    !g->opts->standby(g->opts->want_ctx, p))
				continue;
			standby = true;
		}
		/* USDT arguments are per site */
		enum sema_provider prov = sp->provider;

		if (prov == PROV_USDT)
			split = true;
		/* a watchpoint per function: its own program to attach;
		 * fentry/fexit: a program at one function's BTF id;
		 * a tracepoint wildcard whose args move: one per match */
		for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
			if (ap->sema->ap->provider == PROV_WATCHPOINT ||
			    ap->sema->ap->provider == PROV_ASYNCWATCHPOINT ||
			    ap->sema->ap->provider == PROV_KFUNC ||
			    ap->sema->ap->provider == PROV_KRETFUNC ||
			    ap->sema->ap->args_split)
				split = true;

		for (struct ast_node *ap = p->probe.aps; ap && !g->err;
		     ap = ap->next) {
			struct probes_match *m = NULL;
			int n = 0, err;
			/* FUNC+argN: a uprobe reports the address */
			enum sema_provider ap_prov = ap->sema->ap->provider;
			bool watch = ap->ap.func &&
				     (ap_prov == PROV_WATCHPOINT ||
				      ap_prov == PROV_ASYNCWATCHPOINT);

			err = probes_expand(g->c, p, ap, &m, &n);
			if (err || diag_has_errors(&g->c->diag)) {
				g->err = err ? err : -EINVAL;
				return;
			}
			n = cg_want_sites(g, p, &m, n);
			if (!n)
				continue;
			if (!split || n == 1) {
				cg_program(g, sp, p, ap, m, n);
				if (watch && !g->err)
					cg_watch_program(g, p, ap, m,
							 g->obj->nprogs - 1);
				continue;
			}
			for (int i = 0; i < n && !g->err; i++) {
				cg_program(g, sp, p, ap, &m[i], 1);
				if (watch && !g->err)
					cg_watch_program(g, p, ap, &m[i],
							 g->obj->nprogs - 1);
			}
		}
		for (int i = first; i < g->obj->nprogs; i++)
			g->obj->progs[i].standby = standby;
	}
}

/* Native: each program's code, and the map layout, into the object. */
static int cg_emit_native(struct cg *g, bool optimise)
{
	struct cg_object *obj = g->obj;
	struct native_code *f = xcalloc(obj->nprogs + 1, sizeof(*f));
	const struct native_map *nm;
	char err[256] = "";
	int n, ret;

	for (int i = 0; i < obj->nprogs; i++)
		f[i].name = obj->progs[i].name;
	ret = irb_native_emit(&g->ir, optimise, f, obj->nprogs, err,
			      sizeof(err));
	if (ret) {
		fprintf(stderr, "ubt: native code: %s\n", err);
		free(f);
		return ret;
	}
	for (int i = 0; i < obj->nprogs; i++) {
		obj->progs[i].code = f[i].code;
		obj->progs[i].code_len = f[i].len;
		obj->progs[i].ctx_unused = f[i].ctx_unused;
	}
	free(f);
	nm = irb_native_maps(&g->ir, &n, &obj->native_area);
	obj->native_maps = arena_alloc(&g->c->arena, (n + 1) * sizeof(*nm));
	memcpy((void *)obj->native_maps, nm, n * sizeof(*nm));
	obj->nnative_maps = n;
	obj->native_task = irb_native_uses_task(&g->ir);
	return 0;
}

/*
 * The kernel loads no program of more than a million instructions
 * (BPF_COMPLEXITY_LIMIT_INSNS) and says only E2BIG: tell which probe is
 * too large, and by how much, before loading.
 */
#define CG_BPF_MAX_INSNS 1000000

static int cg_check_size(struct cg *g)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "ubt");
	const struct cg_object *obj = g->obj;
	struct bpf_object *bo;
	struct bpf_program *p;
	int err = 0;

	bo = bpf_object__open_mem(obj->image, obj->image_size, &oo);
	if (!bo)
		return 0;	/* loading reports it */
	bpf_object__for_each_program(p, bo) {
		size_t n = bpf_program__insn_cnt(p);
		const struct cg_prog *cp = NULL;

		if (n <= CG_BPF_MAX_INSNS)
			continue;
		for (int i = 0; i < obj->nprogs; i++)
			if (!strcmp(obj->progs[i].name, bpf_program__name(p)))
				cp = &obj->progs[i];
		diag_error(&g->c->diag, cp && cp->ap ? &cp->ap->loc : NULL,
			   "program too large: this probe is %zu BPF instructions, the kernel loads at most %d",
			   n, CG_BPF_MAX_INSNS);
		err = -E2BIG;
	}
	bpf_object__close(bo);
	return err;
}

/*
 * One build; task_room: a uprobe's big temporaries go to its task's
 * scratch room (irb_scratch.c). Without it, *again says that they did
 * not fit on the stack, or hardly (a loop's large context): build again
 * with it. The message of the stack exceeded waits for that answer.
 */
static int cg_build_once(struct compile *c, enum cg_target t,
			 const struct cg_opts *o, struct cg_object **out,
			 bool task_room, bool *again)
{
	struct cg g = { .c = c, .sp = c->sema };
	struct cg_object *obj;
	char *ir_text = NULL;
	int err;

	*out = NULL;
	if (!c->sema || !c->program)
		BUG("cg_build() before sema_run()");
	obj = arena_alloc(&c->arena, sizeof(*obj));
	obj->target = t;
	g.obj = obj;
	g.opts = o;
	err = irb_init(&g.ir, t, "ubt");
	if (err) {
		fprintf(stderr, "ubt: cannot set up LLVM for %s: %s\n",
			t == CG_TARGET_NATIVE ? "x86-64" : "BPF",
			strerror(-err));
		return err;
	}
	g.ir.task_room = task_room;
	g.ir.quiet_stack = !task_room;
	if (t == CG_TARGET_NATIVE) {
		irb_native_set_object(&g.ir, obj);
		if (o && o->sz >= offsetof(struct cg_opts, native_thread_maps) +
					  sizeof(o->native_thread_maps))
			irb_native_set_thread_maps(&g.ir,
						   o->native_thread_maps);
		if (o && o->sz >= offsetof(struct cg_opts, native_slot_maps) +
					  sizeof(o->native_slot_maps))
			irb_native_set_slot_maps(&g.ir, o->native_slot_maps);
	}
	err = cg_define_maps(&g);
	if (err)
		goto out;
	cg_probes(&g);
	if (g.err) {
		err = g.err;
		goto out;
	}
	if (t == CG_TARGET_BPF) {
		if (!task_room && g.ir.room_wanted) {
			*again = true;
			err = -EAGAIN;
			goto out;
		}
		err = irb_scratch_finish(&g.ir);
		if (err)
			goto out;
	}
	/* -d ir: the module of the build that stays, printed once */
	if (o && o->dump_ir && g.ir.room_skipped && !task_room)
		ir_text = LLVMPrintModuleToString(g.ir.mod);
	else if (o && o->dump_ir)
		irb_dump(&g.ir, o->dump_ir);
	if (t == CG_TARGET_NATIVE)
		err = cg_emit_native(&g, !(o && o->no_opt));
	else
		err = irb_emit(&g.ir, !(o && o->no_opt), &obj->image,
			       &obj->image_size) ?:
		      cg_check_size(&g);
	if (err && g.ir.stack_exceeded && g.ir.quiet_stack) {
		if (g.ir.room_skipped)
			*again = true;
		else
			fprintf(stderr, "ubt: cannot emit BPF code: %s\n",
				IRB_STACK_MSG);
	}
	if (ir_text) {
		if (!*again)
			fputs(ir_text, o->dump_ir);
		LLVMDisposeMessage(ir_text);
	}
	if (!err && o && o->dump_ir_opt)
		irb_dump(&g.ir, o->dump_ir_opt);
out:
	irb_release(&g.ir);
	if (err) {
		cg_object_free(obj);
		return err;
	}
	*out = obj;
	return 0;
}

int cg_build(struct compile *c, enum cg_target t, const struct cg_opts *o,
	     struct cg_object **out)
{
	bool again = false;
	int err = cg_build_once(c, t, o, out, false, &again);

	if (err && again) {
		/* the task's room needs task storage (irb_scratch.c) */
		if (!kfeat_has(KFEAT_TASK_STORAGE)) {
			fprintf(stderr, "ubt: cannot emit BPF code: %s; a "
				"uprobe's larger temporaries need task "
				"storage, and %s\n", IRB_STACK_MSG,
				kfeat_missing(KFEAT_TASK_STORAGE));
			return err;
		}
		err = cg_build_once(c, t, o, out, true, &again);
	}
	return err;
}

int cg_object_probes(const struct cg_object *obj)
{
	int n = 0;

	for (int i = 0; i < obj->nprogs; i++) {
		const struct cg_prog *p = &obj->progs[i];

		if (p->internal || p->standby)
			continue;
		/* a wildcard through one kprobe_multi link (cg_kernel.c)
		 * is one probe to bpftrace 0.17, as the limit counts it
		 * (shim/run/run_limits.c) */
		if (p->section && p->nmatches > 0 &&
		    (!strcmp(p->section, "kprobe.multi") ||
		     !strcmp(p->section, "kretprobe.multi")))
			n++;
		else
			n += p->nmatches;
	}
	return n;
}

void cg_object_free(struct cg_object *obj)
{
	if (!obj)
		return;
	free(obj->image);
	obj->image = NULL;
	for (int i = 0; i < obj->nprogs; i++) {
		free(obj->progs[i].code);
		obj->progs[i].code = NULL;
	}
}
