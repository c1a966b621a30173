/*
 * The frontend driver: compile_init/release and compile_frontend(), which
 * chains the passes. parse_program() is in parser.y, so that the parser
 * fuzzer links the parser alone.
 */
#include <errno.h>
#include <string.h>

#include "cdefs.h"
#include "compat.h"
#include "compile.h"
#include "hits.h"
#include "probe_filter.h"
#include "sema.h"
#include "util.h"

void compile_init(struct compile *c, const char *filename, const char *source)
{
	memset(c, 0, sizeof(*c));
	arena_init(&c->arena);
	c->filename = filename ? filename : "stdin";
	c->source = source ? source : "";
	diag_init(&c->diag, &c->arena, c->filename, c->source);
	c->mode = MODE_AUTO;
	c->max_strlen = 0;	/* the default: sema_config.c */
}

void compile_release(struct compile *c)
{
	cdefs_free(c->cdefs);
	arena_release(&c->arena);
	memset(c, 0, sizeof(*c));
}

int compile_frontend(struct compile *c, enum compile_stage stop)
{
	int err;

	compat_prescan(c->source);
	err = parse_program(c);

	if (!err)
		err = probe_filter_apply(c);
	if (!err && c->count_hits)
		err = hits_add(c);
	if (err || stop == STAGE_PARSE)
		return err;
	/* Semantic passes, in order, each stopping the chain on errors. */
	err = err ?: sema_run(c);
	return err;
}
