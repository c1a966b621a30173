/*
 * A -p process in another mount namespace (a container): the runtime is
 * loaded with the process's own dlopen(), by path, in its namespace,
 * where another file (or none) may sit at ubt's runtime's path.  The
 * path is resolved as the process sees it (openat2() under
 * /proc/PID/root, RESOLVE_IN_ROOT: its symbolic links inside its root)
 * and must be ubt's runtime itself (same device and inode), else the
 * process's probes run in the kernel, decided before anything is written
 * into it.  Both namespaces the same: nothing to check.
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>

#include "place_int.h"
#include "rtpath.h"

/* Is the file at path in pid's root the file st? */
static bool place_same_in_root(pid_t pid, const char *path,
			       const struct stat *st)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	struct stat t;
	int dir, fd;
	bool same;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return false;
	fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	close(dir);
	if (fd < 0)
		return false;
	same = !fstat(fd, &t) && t.st_dev == st->st_dev &&
	       t.st_ino == st->st_ino;
	close(fd);
	return same;
}

const char *place_mntns_why(struct compile *c, const struct run_opts *o,
			    pid_t pid)
{
	char self_ns[64], ns[64], path[64], rt[PATH_MAX], why[512];
	struct stat st;
	ssize_t a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	a = readlink("/proc/self/ns/mnt", self_ns, sizeof(self_ns) - 1);
	b = readlink(path, ns, sizeof(ns) - 1);
	if (a <= 0 || b <= 0)
		return NULL;	/* not for this check to say */
	if (a == b && !memcmp(self_ns, ns, (size_t)a))
		return NULL;
	if (rtpath_find(o->runtime_path, rt, sizeof(rt), why, sizeof(why)) ||
	    stat(rt, &st))
		return NULL;	/* the attach says why */
	if (place_same_in_root(pid, rt, &st))
		return NULL;
	return arena_printf(&c->arena,
			    "pid %d is in another mount namespace, where %s "
			    "is not ubt's runtime (another file, or none): "
			    "user mode loads the runtime by that path there",
			    (int)pid, rt);
}
