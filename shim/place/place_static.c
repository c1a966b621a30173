/*
 * A static executable (every Go program, a -static C one) has no libc
 * in the process: user mode loads its runtime with the process's own
 * dlopen(), so such a process's probes run in the kernel, decided before
 * anything is written into it (-v and --dry-run say why; --mode user
 * refuses).  The executable is the -p process's /proc/PID/exe, or the
 * -c command's first word; one without a program interpreter (PT_INTERP)
 * is static.
 */
#include "patch.h"
#include "place_int.h"

const char *place_static_why(struct compile *c, const struct run_opts *o)
{
	char exe[PATH_MAX];

	if (o->pid > 0)
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)o->pid);
	else if (!o->cmd || !place_cmd_exe(o->cmd, exe, sizeof(exe)))
		return NULL;	/* system-wide: each process when taken */
	if (patch_elf_interp(exe) != 0)
		return NULL;	/* dynamic, or not for this check to say */
	if (o->pid > 0)
		return arena_printf(&c->arena,
				    "pid %d runs a static executable (no "
				    "program interpreter): no libc in the "
				    "process to load the runtime",
				    (int)o->pid);
	return arena_printf(&c->arena,
			    "%s is a static executable (no program "
			    "interpreter): no libc in the process to load "
			    "the runtime", exe);
}
