/*
 * Descriptors that killed ubts left in the target: the memfd a worker
 * made there ("ubt.PID", user_target_memfd()) stays open when the worker
 * dies between its remote memfd_create() and the mmap() of it, with no
 * mapping that uses it.  When every session is killed, no detach ever
 * comes to close them: so each attach lists them while the target runs
 * (user_strays_find(): /proc alone) and closes them in the stop that
 * writes its jumps (user_strays_close(): a stat and a remote close()
 * each, nothing when there is none); each detach does both again
 * (user_unmap.c).
 *
 * One is closed only when all of these hold:
 *  - it is a memfd named "ubt.PID" and process PID is gone (a live ubt's
 *    worker, in the middle of its attach, is alive; a memfd of the
 *    target's own is not named so unless it wants to be);
 *  - no mapping in the target uses it;
 *  - it is not this session's;
 *  - at the close, every thread stopped, the descriptor is still that
 *    memfd (same inode): the target may have closed it and opened
 *    something else under the same number meanwhile.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "user_int.h"

/*
 * Did a ubt worker that is gone make the memfd named by link?  Its name
 * is "ubt.PID"; a live process of that pid (the worker, or another one
 * since) keeps it.
 */
static bool strays_dead_workers(const char *link)
{
	char path[32], *end;
	long pid;

	if (strncmp(link, "/memfd:ubt.", 11))
		return false;
	pid = strtol(link + 11, &end, 10);
	if (pid <= 0 || end == link + 11 || strcmp(end, " (deleted)"))
		return false;
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	return access(path, F_OK) && errno == ENOENT;
}

/* Is memfd inode ino mapped in pid (any ubt memfd mapping)?  Unsure: yes. */
static bool strays_mapped(pid_t pid, uint64_t ino)
{
	char path[64], line[PATH_MAX + 128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long m;

		found = strstr(line, "/memfd:ubt") &&
			sscanf(line, "%*x-%*x %*s %*x %*s %llu", &m) == 1 &&
			m == ino;
	}
	fclose(f);
	return found;
}

void user_strays_find(struct ubt_user *u, uint64_t own)
{
	char dir[64], path[64 + sizeof(((struct dirent *)0)->d_name)], link[64];
	struct dirent *de;
	struct stat st;
	DIR *d;

	u->nstray = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)u->pid);
	d = opendir(dir);
	if (!d)
		return;
	while (u->nstray < USER_STRAYS_MAX && (de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		ssize_t n;

		if (*end || fd <= 0 || end == de->d_name)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (!strays_dead_workers(link) || stat(path, &st) ||
		    (uint64_t)st.st_ino == own ||
		    strays_mapped(u->pid, (uint64_t)st.st_ino))
			continue;
		u->stray[u->nstray++] = (struct user_stray){
			.fd = (int)fd, .ino = (uint64_t)st.st_ino };
	}
	closedir(d);
}

int user_strays_close(struct ubt_user *u)
{
	int closed = 0;

	for (int i = 0; i < u->nstray; i++) {
		char path[64];
		struct stat st;
		int64_t ret;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)u->pid,
			 u->stray[i].fd);
		if (stat(path, &st) || (uint64_t)st.st_ino != u->stray[i].ino)
			continue;
		if (!user_rsys(u, SYS_close, (uint64_t)u->stray[i].fd, 0, 0, 0,
			       0, 0, &ret) && !ret)
			closed++;
	}
	u->nstray = 0;
	u->strays += closed;
	return closed;
}
