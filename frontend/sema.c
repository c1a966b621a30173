/*
 * Semantic analysis: the chain of passes. Each pass is a file
 * (sema_config.c, sema_resolve.c, sema_context.c, sema_types.c,
 * sema_available in sema_context.c); the helpers they share are in
 * sema_util.c, the builtin and function tables in sema_tables.c.
 */
#include "cdefs.h"
#include "sema.h"
#include "sema_int.h"

int sema_run(struct compile *c)
{
	int err = 0;

	err = err ?: cdefs_parse(c);
	err = err ?: sema_config(c);
	err = err ?: sema_macro(c);
	err = err ?: sema_getopt(c);
	err = err ?: sema_resolve(c);
	err = err ?: sema_context(c);
	err = err ?: sema_types(c);
	err = err ?: sema_available(c);
	return err;
}
