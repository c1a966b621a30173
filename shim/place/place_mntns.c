/*
 * A -p (or system-wide) process of another mount namespace (a
 * container) or of another root (chroot): the runtime is never looked
 * up by path there, where
 * another file (or none) may sit at ubt's runtime's path.  It is handed
 * to the process as a descriptor and loaded as /proc/self/fd/N
 * (user/user_mntns.c), which needs a procfs at /proc in its root where
 * it sees itself; without one its probes run in the kernel, decided
 * before anything is written into it.  Both namespaces and roots the
 * same: nothing to check.
 */
#include "place_int.h"
#include "user.h"

const char *place_mntns_why(struct compile *c, const struct run_opts *o,
			    pid_t pid)
{
	(void)o;
	if (user_mntns_by_fd(pid) != -ENOENT)
		return NULL;	/* user mode, or the attach says why */
	return arena_printf(&c->arena,
			    "pid %d has another root (mount namespace or "
			    "chroot) without a /proc of its own: the runtime "
			    "is loaded there as /proc/self/fd/N, never by its "
			    "path",
			    (int)pid);
}
