/*
 * Maps user mode keeps in a slot of each thread's block (codegen/native.h
 * "per-thread slot"): the latency idiom's @s[tid] at the cost of a load
 * and a store.
 *
 * A map qualifies when every use of it has the key tid alone (a read, an
 * assignment, ++/--, delete(); no print(), clear(), zero(), len(),
 * has_key() or for), its value is an integer, and every probe that uses
 * it runs in user mode (decisions d) in a process ubt attached to (-p,
 * -c; not system-wide, whose processes start in the kernel).  Thread T's
 * probes then only ever touch @s[T], so a slot per thread holds exactly
 * what the map would: recursion included (the inner call's store
 * overwrites the outer's, its delete leaves the outer return 0), as the
 * map does.  The end-of-run printout finds the entries left (a call that
 * never returned, a thread that exited) in the slots, or in the map's
 * per-thread table where the runtime put a gone thread's entry when its
 * block was taken again (runtime/rt_tslot.c).
 */
#include "place_int.h"
#include "place.h"
#include "rt_abi.h"

static bool slot_tid_key(const struct ast_node *k)
{
	return k && !k->next && k->kind == AST_BUILTIN && k->sema &&
	       k->sema->builtin == BI_TID;
}

static bool slot_int(const struct type *t)
{
	return t && (t->kind == TY_INT || t->kind == TY_BOOL ||
		     t->kind == TY_ENUM || t->kind == TY_POINTER) &&
	       t->size >= 1 && t->size <= 8;
}

/* A use other than @m[tid] and delete(@m[tid]) rules the map out. */
static int slot_visit(struct ast_node *n, void *ctx)
{
	bool *ok = ctx;
	struct sema_map *sm = n->sema ? n->sema->map : NULL;

	if (n->kind == AST_MAP && sm && !slot_tid_key(n->map.keys))
		ok[sm->id] = false;
	if (n->kind == AST_CALL && sm && n->sema->func != FN_DELETE)
		ok[sm->id] = false;
	if (n->kind == AST_FOR_MAP && n->for_.map && n->for_.map->sema &&
	    n->for_.map->sema->map)
		ok[n->for_.map->sema->map->id] = false;
	return ast_visit_children(n, slot_visit, ctx);
}

bool *place_slot_maps(struct compile *c, const struct run_decision *d,
		      bool syswide)
{
	struct sema_program *sp = c->sema;
	bool *ok = arena_alloc(&c->arena, (sp->nmaps + 1) * sizeof(*ok));
	int n = 0;

	for (int i = 0; i < sp->nmaps; i++) {
		const struct sema_map *sm = sp->maps[i];

		ok[i] = !syswide && !place_agg_map(sm) && sp->nprobes <= 64 &&
			!sm->used_in_begin_end && sm->nkeys == 1 &&
			!(sm->bpf_type && strcmp(sm->bpf_type, "hash")) &&
			slot_int(sm->value) && sm->probes;
		for (int j = 0; ok[i] && j < sp->nprobes; j++)
			if ((sm->probes & (1ull << j)) &&
			    d[j].where != RUN_USER)
				ok[i] = false;
	}
	ok[sp->nmaps] = false;
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		ast_visit_children(p, slot_visit, ok);
	/* the runtime's list of slots has RT_TSLOT_MAX places */
	for (int i = 0; i < sp->nmaps; i++)
		if (ok[i] && ++n > RT_TSLOT_MAX)
			ok[i] = false;
	return ok;
}
