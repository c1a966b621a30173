/*
 * A process of another mount namespace (a container, unshare -m), or
 * of another root (chroot): its own dlopen() would look the runtime up
 * by path in its namespace or root, where
 * another file (or none) may sit at ubt's runtime's path, one that the
 * process's owner may even have written.  So there the runtime is never
 * looked up by path: ubt opens its checked file (rtpath.h) and hands the
 * descriptor to the process (user_comm_send()), which dlopen()s
 * "/proc/self/fd/N" (user_inject.c): the file mapped is ubt's, the same
 * inode as in ubt's namespace (so the same mappings' path for ubt, and
 * the loader knows it again at a later attach).  That needs a procfs at
 * /proc in the process's root in which it sees itself; without one its
 * probes run in the kernel (place/place_mntns.c says why).
 */
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "user_int.h"

int user_mntns_other(pid_t pid)
{
	char self_ns[64], ns[64], path[64];
	struct stat sr, pr;
	ssize_t a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	a = readlink("/proc/self/ns/mnt", self_ns, sizeof(self_ns));
	if (a <= 0)
		return a < 0 ? -errno : -EINVAL;
	b = readlink(path, ns, sizeof(ns));
	if (b <= 0)
		return b < 0 ? -errno : -EINVAL;
	if (a != b || memcmp(self_ns, ns, (size_t)a))
		return 1;
	/* the same namespace, another root (chroot): paths differ too */
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if (stat("/proc/self/root", &sr) || stat(path, &pr))
		return -errno;
	return sr.st_dev != pr.st_dev || sr.st_ino != pr.st_ino;
}

/* Field 22 of a stat file (the start time), 0 if unreadable. */
static unsigned long long start_time(int dir, const char *path)
{
	unsigned long long t = 0;
	char buf[1024], *p;
	ssize_t n;
	int fd;

	fd = openat(dir, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* comm may hold spaces and parentheses */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			 "%*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &t) != 1)
		return 0;
	return t;
}

/* pid's ids in its PID namespaces, outermost first (NSpid:), or 0. */
static int ns_pids(pid_t pid, long *ids, int max)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *p = line + 6, *end;

			while (n < max) {
				long v = strtol(p, &end, 10);

				if (end == p)
					break;
				ids[n++] = v;
				p = end;
			}
			break;
		}
	fclose(f);
	return n;
}

bool user_mntns_proc(pid_t pid)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	unsigned long long t;
	char path[64];
	struct statfs sf;
	long ids[32];
	int root, proc, n;
	bool seen = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	t = start_time(AT_FDCWD, path);
	n = ns_pids(pid, ids, 32);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!t || !n || root < 0) {
		if (root >= 0)
			close(root);
		return false;
	}
	proc = (int)syscall(SYS_openat2, root, "/proc", &how, sizeof(how));
	close(root);
	if (proc < 0)
		return false;
	/* where it looks for "self": the pid of the namespace of that
	 * procfs, one of its ids if it sees itself there */
	if (!fstatfs(proc, &sf) && sf.f_type == PROC_SUPER_MAGIC)
		for (int i = 0; i < n && !seen; i++) {
			snprintf(path, sizeof(path), "%ld/stat", ids[i]);
			seen = start_time(proc, path) == t;
		}
	close(proc);
	return seen;
}

int user_mntns_by_fd(pid_t pid)
{
	int other = user_mntns_other(pid);

	if (other <= 0)
		return other;
	return user_mntns_proc(pid) ? 1 : -ENOENT;
}
