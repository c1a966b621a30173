/*
 * Placement of the maps user-mode and kernel probes share at user speed
 * (codegen/cg_xmap.h): which ordinary maps may live in a table both sides
 * map, so that the probes using them need not all run in the kernel
 * (place.c's one-side rule), and which of them the run makes so.
 *
 * A map qualifies when it is not an aggregation, not declared of another
 * type than hash, has no key or one integer key (or bool, enum, pointer),
 * holds an integer (likewise), and
 * every use of it is a read, an assignment (=, op=, ++, --), delete() or
 * has_key() of one key, or print(), clear() or zero() of the whole map; UBT_NO_XMAP in the environment
 * turns it off (the old rule, for tests of both paths).  The rest keeps
 * the old rule, the reason shown by -v after the probe's.
 */
#include "kfeat.h"
#include "place_int.h"
#include "place.h"

struct xmap_scan {
	const char **why;	/* by sema map id */
	struct compile *c;
};

static bool xmap_int(const struct type *t)
{
	return t && (t->kind == TY_INT || t->kind == TY_BOOL ||
		     t->kind == TY_ENUM || t->kind == TY_POINTER) &&
	       t->size >= 1 && t->size <= 8;
}

static void xmap_refuse(struct xmap_scan *s, const struct sema_map *sm,
			const char *what)
{
	if (sm && !s->why[sm->id])
		s->why[sm->id] = what;
}

static int xmap_visit(struct ast_node *n, void *ctx)
{
	struct xmap_scan *s = ctx;
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (n->kind == AST_FOR_MAP && n->for_.map && n->for_.map->sema)
		xmap_refuse(s, n->for_.map->sema->map, "a for loop over it");
	if (n->kind == AST_CALL && sm) {
		enum sema_func f = n->sema->func;

		if (f == FN_DELETE && n->call.args &&
		    n->call.args->kind == AST_MAP &&
		    n->call.args->map.nkeys == sm->nkeys && !n->call.args->next)
			;
		else if (f == FN_HAS_KEY && sm->nkeys == 1 && n->call.args &&
			 n->call.args->next && !n->call.args->next->next)
			;	/* has_key(@m, k): one key */
		else if ((f == FN_PRINT || f == FN_CLEAR || f == FN_ZERO) &&
			 n->call.args && n->call.args->kind == AST_MAP &&
			 !n->call.args->map.keys)
			;	/* ubt reads, empties or zeroes the table
				 * when it reads the event (shim/kernel/xmap.c) */
		else
			xmap_refuse(s, sm,
				    arena_printf(&s->c->arena, "%s() of it",
						 sema_func_name(f)));
	}
	return ast_visit_children(n, xmap_visit, ctx);
}

const char **place_xmap_scan(struct compile *c, bool syswide)
{
	struct sema_program *sp = c->sema;
	struct xmap_scan s = { .c = c };
	bool off = getenv("UBT_NO_XMAP") != NULL;

	s.why = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(*s.why));
	for (int i = 0; i < sp->nmaps; i++) {
		const struct sema_map *sm = sp->maps[i];

		s.why[i] = NULL;
		if (off)
			s.why[i] = "UBT_NO_XMAP is set";
		else if (syswide)
			s.why[i] = "the probes are system-wide (no -p/-c)";
		else if (place_agg_map(sm))
			s.why[i] = "an aggregation";
		else if (sp->nprobes > 64)
			s.why[i] = "more than 64 probes";
		else if (sm->bpf_type && strcmp(sm->bpf_type, "hash"))
			s.why[i] = arena_printf(&c->arena, "a %s map",
						sm->bpf_type);
		else if (sm->key && (sm->nkeys != 1 || !xmap_int(sm->key)))
			s.why[i] = "its key is not one integer";
		else if (!xmap_int(sm->value))
			s.why[i] = "its value is not an integer";
		else if (!kfeat_has(KFEAT_MMAPABLE))
			s.why[i] = kfeat_missing(KFEAT_MMAPABLE);
	}
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, xmap_visit, &s);
	return s.why;
}

bool *place_xmap_maps(struct compile *c, const struct run_decision *d,
		      bool syswide)
{
	struct sema_program *sp = c->sema;
	const char **why = place_xmap_scan(c, syswide);
	bool *x = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(*x));

	for (int i = 0; i < sp->nmaps; i++) {
		bool user = false, kern = false;

		x[i] = false;
		if (why[i])
			continue;
		for (int j = 0; j < sp->nprobes && j < 64; j++) {
			if (!(sp->maps[i]->probes & (1ull << j)))
				continue;
			user |= d[j].where != RUN_KERNEL;
			kern |= d[j].where != RUN_USER;
		}
		x[i] = user && kern;
	}
	return x;
}
