/*
 * --metrics counts each probe's hits (ubt_probe_hits_total): before the
 * semantic passes, every probe but BEGIN/END gets an aggregation of its
 * own as its first statement, and its filter moves into an `if` around
 * the rest, so that a hit is counted whether or not the filter passes:
 *
 *	P /F/ { S }   becomes   P { @__ubt_hits_N = count(); if (F) { S } }
 *
 * N is the probe's index.  Being an ordinary keyless count(), the count
 * runs wherever the probe runs (a thread-local increment in user mode, a
 * per-CPU one in the kernel) and merges as every map does; the printout
 * leaves these maps out (hits_map_hidden()).  Map names that begin with
 * the prefix are ubt's own then: a program using one is refused.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "hits.h"

#define HITS_PREFIX "@__ubt_hits_"

/* Set by hits_add(): without --metrics the names are the program's. */
static bool hits_on;

bool hits_map_hidden(const char *name)
{
	return hits_on && name &&
	       !strncmp(name, HITS_PREFIX, strlen(HITS_PREFIX));
}

int hits_probe_of(const char *name)
{
	int n = 0;

	if (!hits_map_hidden(name))
		return -1;
	name += strlen(HITS_PREFIX);
	if (!*name)
		return -1;
	for (; *name; name++) {
		if (*name < '0' || *name > '9' || n > 1000000)
			return -1;
		n = n * 10 + (*name - '0');
	}
	return n;
}

/* A map of the program that takes a name of ours: an error there. */
static int hits_check_names(struct ast_node *n, void *ctx)
{
	struct compile *c = ctx;

	if (n->kind == AST_MAP && hits_map_hidden(n->map.name)) {
		diag_error(&c->diag, &n->loc,
			   "map names beginning with %s are ubt's own with "
			   "--metrics", HITS_PREFIX);
		return 1;
	}
	return ast_visit_children(n, hits_check_names, ctx);
}

static bool hits_skip(const struct ast_node *probe)
{
	const struct ast_node *ap = probe->probe.aps;

	return !ap || !ap->ap.provider || !strcmp(ap->ap.provider, "BEGIN") ||
	       !strcmp(ap->ap.provider, "END");
}

static void hits_probe(struct compile *c, struct ast_node *probe)
{
	struct arena *a = &c->arena;
	const struct ast_loc *loc = &probe->loc;
	struct ast_node *map = ast_new(a, AST_MAP, loc);
	struct ast_node *call = ast_new(a, AST_CALL, loc);
	struct ast_node *count = ast_new(a, AST_ASSIGN, loc);
	struct ast_node *body = probe->probe.body;

	map->map.name = arena_printf(a, HITS_PREFIX "%d", probe->probe.index);
	call->call.name = "count";
	count->assign.lhs = map;
	count->assign.rhs = call;
	count->assign.op = OP_NONE;
	count->assign.op_loc = *loc;
	if (probe->probe.pred) {
		struct ast_node *iff = ast_new(a, AST_IF, &probe->probe.pred->loc);
		struct ast_node *then = ast_new(a, AST_BLOCK, &body->loc);

		then->block.stmts = body->block.stmts;
		iff->if_.cond = probe->probe.pred;
		iff->if_.then = then;
		probe->probe.pred = NULL;
		body->block.stmts = iff;
	}
	count->next = body->block.stmts;
	body->block.stmts = count;
}

int hits_add(struct compile *c)
{
	struct ast_node *prog = c->program;

	if (!prog)
		return 0;
	hits_on = true;
	if (ast_visit_children(prog, hits_check_names, c))
		return -EINVAL;
	for (struct ast_node *p = prog->program.probes; p; p = p->next)
		if (!hits_skip(p) && p->probe.body)
			hits_probe(c, p);
	return 0;
}
