/*
 * Descriptors that killed ubts left in the target.  The memfd a worker
 * makes there ("ubt.PID", user_target_memfd()) stays open when the worker
 * dies: unmapped when it died between its remote memfd_create() and the
 * mmap() of it, mapped when it died later (worker and guard killed).
 * When every session is killed, no detach ever comes to close them: so
 * each attach lists them and closes them (user_strays_close(): a stat
 * each, and a remote close_range() for each run of consecutive ones,
 * nothing when there is none) in its first stop, where its remote calls
 * run, when that stop holds every thread (a process of one thread);
 * else in the stop of every thread that writes its jumps, where a
 * remote call costs 0.2-0.5 ms (under load) with the threads all
 * waiting, but only after killed sessions.  Each detach
 * closes the unmapped ones again, after its unmap (user_unmap.c), which
 * takes the mapped ones with their mappings.
 *
 * One is closed only when all of these hold:
 *  - it is a memfd named "ubt.PID" and process PID is gone or a zombie
 *    (a live ubt's worker, in the middle of its attach, is alive; a
 *    memfd of the target's own is not named so unless it wants to be);
 *  - it is not this session's;
 *  - no mapping in the target uses it, or (at an attach) its control
 *    view is mapped and says the runtime that used it is this session's
 *    now, and no thread is inside the runtime (strays_unused()); its
 *    mappings stay, for a detach to remove (the attach's
 *    user_unmap_dead() took the mappings and descriptors of dead
 *    sessions out already, unless a thread may still use them);
 *  - at the close the descriptor is still that memfd (same inode), in
 *    case the target closed it and opened something else under the
 *    same number meanwhile;
 *  - no thread of the target runs: with one running, a descriptor it
 *    closed (in a sweep of all of them) and opened again under the same
 *    number between that look and the close would be lost.  So a first
 *    stop that holds one thread of several closes nothing; the commit
 *    stop, which holds them all, does.
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

#include "procstat.h"
#include "user_int.h"

/*
 * Did a ubt worker that is gone make the memfd named by link?  Its name
 * is "ubt.PID"; a live process of that pid (the worker, or another one
 * since) keeps it.
 */
static bool strays_dead_workers(const char *link)
{
	char path[32], *end, st;
	long pid;

	if (strncmp(link, "/memfd:ubt.", 11))
		return false;
	pid = strtol(link + 11, &end, 10);
	if (pid <= 0 || end == link + 11 || strcmp(end, " (deleted)"))
		return false;
	/* a zombie is gone too: a killed worker whose parent, the guard,
	 * was killed with it waits for init to reap it */
	st = procstat_state((pid_t)pid);
	if (st == 'Z' || st == 'X')
		return true;
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	return access(path, F_OK) && errno == ENOENT;
}

/* What the target's mappings say: ubt memfds by inode, the runtime's code. */
struct strays_maps {
	uint64_t *ino, *ctl;	/* ctl: where its offset 0 is mapped, or 0 */
	int n, cap;
};

static void strays_maps_load(struct ubt_user *u, struct strays_maps *sm)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)u->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		char perms[8];
		int at = 0, k;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &lo, &hi,
			   perms, &off, &ino, &at) < 5 || !at)
			continue;
		line[strcspn(line, "\n")] = 0;
		if (perms[2] == 'x' && u->rt_path[0] &&
		    !strcmp(line + at, u->rt_path) && u->stray_nrt < 4) {
			u->stray_rt[u->stray_nrt][0] = lo;
			u->stray_rt[u->stray_nrt++][1] = hi;
		}
		if (!strstr(line + at, "/memfd:ubt"))
			continue;
		for (k = 0; k < sm->n && sm->ino[k] != ino; k++)
			;
		if (k == sm->n) {
			if (sm->n == sm->cap) {
				sm->cap = sm->cap ? 2 * sm->cap : 16;
				sm->ino = xrealloc(sm->ino, (size_t)sm->cap *
						   sizeof(*sm->ino));
				sm->ctl = xrealloc(sm->ctl, (size_t)sm->cap *
						   sizeof(*sm->ctl));
			}
			sm->ino[k] = ino;
			sm->ctl[k] = 0;
			sm->n++;
		}
		if (!off)
			sm->ctl[k] = lo;
	}
	fclose(f);
}

void user_strays_find(struct ubt_user *u, uint64_t own, bool mapped)
{
	char dir[64], path[64 + sizeof(((struct dirent *)0)->d_name)], link[64];
	struct strays_maps sm = { 0 };
	struct dirent *de;
	struct stat st;
	DIR *d;

	u->nstray = 0;
	u->stray_nrt = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)u->pid);
	d = opendir(dir);
	if (!d)
		return;
	strays_maps_load(u, &sm);
	while (u->nstray < USER_STRAYS_MAX && (de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		uint64_t ctl = 0;
		ssize_t n;
		int k;

		if (*end || fd <= 0 || end == de->d_name)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (!strays_dead_workers(link) || stat(path, &st) ||
		    (uint64_t)st.st_ino == own)
			continue;
		for (k = 0; k < sm.n && sm.ino[k] != (uint64_t)st.st_ino; k++)
			;
		if (k < sm.n) {
			/* mapped: its control view must be readable later */
			if (!mapped || !sm.ctl[k] || !u->stray_nrt)
				continue;
			ctl = sm.ctl[k];
		}
		u->stray[u->nstray++] = (struct user_stray){
			.fd = (int)fd, .ino = (uint64_t)st.st_ino, .ctl = ctl };
	}
	closedir(d);
	free(sm.ino);
	free(sm.ctl);
}

/*
 * May the descriptor of a dead session's mapped memfd (its control view
 * at ctl) go?  Only the runtime uses it, to map chunks of blocks for the
 * control block its pointer names (runtime/rt_chunk.c): that pointer is
 * this session's now (rt_init() ran) if the dead one's control block
 * names the same pointer (the same runtime, loaded once); and no thread
 * is inside the runtime, where it could hold the old one still.
 */
static bool strays_unused(struct ubt_user *u, uint64_t ctl)
{
	struct rt_ctl c;

	if (u->pt.one || !u->m.ctl || !u->m.ctl->ctl_at ||
	    pt_read(&u->pt, ctl, &c, sizeof(c)) || c.sz != sizeof(c) ||
	    c.version != RT_ABI_VERSION || c.ctl_at != u->m.ctl->ctl_at)
		return false;
	for (int i = 0; i < u->pt.nth; i++) {
		struct user_regs_struct r;

		if (pt_regs(&u->pt, i, &r))
			return false;
		for (int k = 0; k < u->stray_nrt; k++)
			if (r.rip >= u->stray_rt[k][0] &&
			    r.rip < u->stray_rt[k][1])
				return false;
	}
	return true;
}

static int strays_by_fd(const void *a, const void *b)
{
	const struct user_stray *x = a, *y = b;

	return (x->fd > y->fd) - (x->fd < y->fd);
}

/*
 * Descriptors lo..hi, every one checked, closed: one remote
 * close_range() (Linux 5.9), else one close() each.  How many closed.
 */
static int strays_close_run(struct ubt_user *u, int lo, int hi)
{
	uint64_t args[6] = { (uint64_t)lo, (uint64_t)hi, 0, 0, 0, 0 };
	int64_t ret;
	int closed = 0;

	if (lo < hi && !pt_syscall(&u->pt, SYS_close_range, args, &ret) &&
	    !ret)
		return hi - lo + 1;
	for (int fd = lo; fd <= hi; fd++)
		if (!user_rsys(u, SYS_close, (uint64_t)fd, 0, 0, 0, 0, 0,
			       &ret) && !ret)
			closed++;
	return closed;
}

int user_strays_close(struct ubt_user *u)
{
	int closed = 0, lo = -1, hi = -1, keep = 0;

	/* other threads running: every one waits for the commit stop */
	if (u->pt.one && u->nstray && procstat_threads(u->pid) != 1)
		return 0;

	/* consecutive descriptors (killed workers' in a row) in one call */
	qsort(u->stray, (size_t)u->nstray, sizeof(u->stray[0]), strays_by_fd);
	for (int i = 0; i < u->nstray; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)u->pid,
			 u->stray[i].fd);
		if (stat(path, &st) || (uint64_t)st.st_ino != u->stray[i].ino)
			continue;
		/* a mapped one waits for every thread to be stopped */
		if (u->stray[i].ctl && !strays_unused(u, u->stray[i].ctl)) {
			if (u->pt.one)
				u->stray[keep++] = u->stray[i];
			continue;
		}
		if (lo >= 0 && u->stray[i].fd == hi + 1) {
			hi++;
			continue;
		}
		if (lo >= 0)
			closed += strays_close_run(u, lo, hi);
		lo = hi = u->stray[i].fd;
	}
	if (lo >= 0)
		closed += strays_close_run(u, lo, hi);
	u->nstray = keep;
	u->strays += closed;
	return closed;
}
