/* User mode facade: attach, runtime placement, probe installation, detach. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "errbuf.h"
#include "owner.h"
#include "patch.h"
#include "ptrace.h"
#include "rtpath.h"
#include "tramp.h"
#include "user.h"
#include "util.h"
#include "user_int.h"

int user_err(struct ubt_user *u, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = errbuf_vset(u->err, sizeof(u->err), err, fmt, ap);
	va_end(ap);
	return err;
}

const char *user_error(const struct ubt_user *u)
{
	return u->err;
}

pid_t user_pid(const struct ubt_user *u)
{
	return u->pid;
}

int64_t user_tls_offset(const struct ubt_user *u)
{
	return u->tls_offset;
}

uint64_t user_stop_ns(const struct ubt_user *u)
{
	return u->stop_ns;
}

bool user_resumed(const struct ubt_user *u)
{
	return u->resumed;
}

int user_pause_text(const struct ubt_user *u, char *buf, size_t len)
{
	const struct user_pause *p = &u->pause;

	if (!p->total)
		return 0;
	return snprintf(buf, len, "%.3f ms, every thread (%d): %d jump(s) "
			"written, %d thread(s) moved, %d let go while others "
			"were late, %d retried stop(s); stop %.3f, check %.3f, "
			"write %.3f, resume %.3f ms", p->total / 1e6,
			p->threads, p->jumps, p->moved, p->holds, p->retries,
			p->stop / 1e6, p->check / 1e6, p->write / 1e6,
			p->resume / 1e6);
}

int user_ctl_text(const struct ubt_user *u, char *buf, size_t len)
{
	if (!u->ctl_stops || !u->ctl_calls)
		return 0;
	return snprintf(buf, len, "%d stop(s), %d remote call(s) with %d "
			"system call stop(s), the longest %.3f ms (call %d%s)",
			u->ctl_stops, u->ctl_calls, u->ctl_call_stops,
			u->ctl_call_max_ns / 1e6, u->ctl_call_max_at,
			u->ctl_call_max_done ? ", through the helper" : "");
}

/* ptrace reaped the process's exit (a -c child): keep its status. */
void user_note_exit(struct ubt_user *u)
{
	if (u->pt.exited && !u->exited) {
		u->exited = true;
		u->exit_status = u->pt.exit_status;
	}
}

int user_read_maps(struct ubt_user *u, uint64_t off, uint64_t len,
		   int (*cb)(const void *data, uint32_t block, void *arg),
		   void *arg)
{
	uint32_t n, i;
	void *buf;
	int err = 0;

	if (!u->m.base)
		return -EINVAL;
	if (off > u->m.l.map_size || len > u->m.l.map_size - off)
		return -ERANGE;
	n = memfd_nblocks_used(&u->m);
	buf = xmalloc(len ? len : 1);
	for (i = 0; i < n && !err; i++) {
		err = memfd_map_read(&u->m, i, off, buf, len);
		if (!err)
			err = cb(buf, i, arg);
	}
	free(buf);
	return err;
}

int user_read_events(struct ubt_user *u,
		     int (*cb)(uint32_t type, const void *data, uint32_t len,
			       void *arg),
		     void *arg)
{
	uint32_t n, i;
	int total = 0, err = 0, r;

	if (!u->m.base)
		return -EINVAL;
	n = memfd_nblocks_used(&u->m);
	for (i = 0; i < n; i++) {
		u->ev_block = i;
		r = memfd_ring_consume(&u->m, i, cb, arg);
		if (r >= 0)
			total += r;
		else if (!err)
			err = r;
	}
	return err ? err : total;
}

uint32_t user_event_block(const struct ubt_user *u)
{
	return u->ev_block;
}

uint64_t user_lost_events(const struct ubt_user *u)
{
	return u->m.base ? memfd_ring_dropped(&u->m) : 0;
}

uint64_t user_unrecorded_threads(const struct ubt_user *u)
{
	return u->m.ctl ? memfd_no_block(&u->m) : 0;
}

int user_unmapped(const struct ubt_user *u)
{
	return u->unmapped;
}

int user_strays(const struct ubt_user *u)
{
	return u->strays;
}

const char *user_unmap_why(const struct ubt_user *u)
{
	return u->unmap_why;
}

const char *user_park_note(const struct ubt_user *u)
{
	return u->park_note;
}

int user_leftovers(const struct ubt_user *u)
{
	return u->leftovers;
}

int user_dead_unmapped(const struct ubt_user *u)
{
	return u->dead_unmapped;
}

const char *user_dead_why(const struct ubt_user *u)
{
	return u->dead_why;
}

int user_moved_threads(const struct ubt_user *u)
{
	return u->moved;
}

struct memfd *user_memfd(struct ubt_user *u)
{
	return &u->m;
}

bool user_exit_status(const struct ubt_user *u, int *status)
{
	if (u->exited)
		*status = u->exit_status;
	return u->exited;
}

void user_unhold(struct ubt_user *u)
{
	pt_maps_keep(0);
	if (u->child_boosted)
		setpriority(PRIO_PROCESS, u->child_boost_id ?: u->pid,
			    u->child_nice);
	u->child_boosted = false;
	u->child_boost_id = 0;
	if (u->child_pinned)
		sched_setaffinity(u->pid, sizeof(u->child_cpus),
				  &u->child_cpus);
	u->child_pinned = false;
}

void user_unboost(struct ubt_user *u)
{
	if (u->pinned)
		sched_setaffinity(0, sizeof(u->old_cpus), &u->old_cpus);
	u->pinned = false;
	user_unhold(u);
	if (!u->boosted)
		return;
	setpriority(PRIO_PROCESS, 0, u->old_nice);
	u->boosted = false;
}

void user_wraps(const struct ubt_user *u, int *stub, int *near, int *far)
{
	*stub = *near = *far = 0;
	for (int i = 0; u && i < u->nsites; i++) {
		*stub += u->sites[i].wrap == 2;
		*near += u->sites[i].wrap == 1;
		*far += u->sites[i].wrap < 0;
	}
}
