/*
 * Named types for sema: the one place that knows where a type name can
 * be defined. The program's own C definitions come first (cdefs.c), as
 * in bpftrace: a struct the script defines overrides the kernel's BTF
 * and the traced program's DWARF, which are asked after them
 * (sema_debuginfo_type() in sema_dwarf.c).
 */
#include "cdefs.h"
#include "sema_int.h"

struct type *sema_lookup_type(struct sema_ctx *x, const char *name,
			      bool user_first)
{
	struct type *t = cdefs_type(x->c, name);

	if (t)
		return t;
	return sema_debuginfo_type(x, name, user_first);
}
