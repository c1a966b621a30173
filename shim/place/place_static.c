/*
 * A static executable (every Go program, a -static C one) has no libc
 * in the process: user mode loads its runtime with the process's own
 * dlopen(), so such a process's probes run in the kernel, decided before
 * anything is written into it (-v and --dry-run say why; --mode user
 * refuses).  The executable is the -p process's /proc/PID/exe, or the
 * -c command's first word; one without a program interpreter (PT_INTERP)
 * is static.  System-wide, a process reported is checked when taken
 * (place_static_pid(), no ptrace): it is never taken, its probes stay in
 * the kernel, and its next hits report nothing again.
 */
#include "patch.h"
#include "place_int.h"

const char *place_static_pid(struct compile *c, pid_t pid)
{
	char exe[64];

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	if (patch_elf_interp(exe) != 0)
		return NULL;	/* dynamic, or not for this check to say */
	return arena_printf(&c->arena,
			    "pid %d runs a static executable (no program "
			    "interpreter): no libc in the process to load "
			    "the runtime",
			    (int)pid);
}

const char *place_static_why(struct compile *c, const struct run_opts *o)
{
	char exe[PATH_MAX];

	if (o->pid > 0)
		return place_static_pid(c, o->pid);
	if (!o->cmd || !place_cmd_exe(o->cmd, exe, sizeof(exe)))
		return NULL;	/* system-wide: each process when taken */
	if (patch_elf_interp(exe) != 0)
		return NULL;	/* dynamic, or not for this check to say */
	return arena_printf(&c->arena,
			    "%s is a static executable (no program "
			    "interpreter): no libc in the process to load "
			    "the runtime", exe);
}
