/*
 * Detaching: every site still ubt's restored (in the process and in the
 * children forked since), the runtime told to go idle, the threads
 * released; and the leftovers of a ubt that died, restored.
 */
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
#include "owner.h"
#include "patch.h"
#include "ptrace.h"
#include "rtpath.h"
#include "tramp.h"
#include "user.h"
#include "util.h"
#include "user_int.h"

/* Is our memfd still mapped where we put it (no exec since)? */
static bool still_ours(struct ubt_user *u, pid_t pid)
{
	struct pt_map *m;
	bool found = false;
	int n, i;

	if (pt_maps(pid, &m, &n))
		return false;
	for (i = 0; i < n; i++)
		if (m[i].start == u->target_base &&
		    strstr(m[i].path, "/memfd:ubt"))
			found = true;
	free(m);
	return found;
}

/*
 * Put back the original bytes of every site in the process p has stopped
 * (the target, or a child it forked: the same addresses), only bytes that
 * are still ours: another tracer's int3 placed over the jump since then
 * stays, over the original instruction it expects.  The target's own
 * restore (child false) marks the sites and their records done.
 */
static int restore_sites_in(struct ubt_user *u, struct pt *pt, bool child)
{
	int i, err = 0;

	if (!still_ours(u, pt->pid))
		return 0;	/* the process ran execve(): a new image */

	for (i = 0; i < u->nsites; i++) {
		struct user_site *us = &u->sites[i];
		struct rt_site *site;
		uint8_t cur[PATCH_MAX_WINDOW];

		if (child ? !us->rec : !us->installed)
			continue;	/* never written, or restored */
		if (pt_read(pt, us->s.addr, cur, us->s.len)) {
			err = user_err(u, -EIO, "read the code at %#llx in pid %d",
				   (unsigned long long)us->s.addr, pt->pid);
			continue;
		}
		for (uint32_t k = 0; k < us->s.len; k++)
			if (cur[k] == us->jmp[k])
				cur[k] = us->s.orig[k];
		if (pt_write(pt, us->s.addr, cur, us->s.len)) {
			err = user_err(u, -EIO, "restore the code at %#llx in "
					    "pid %d",
				   (unsigned long long)us->s.addr, pt->pid);
			continue;
		}
		if (child)
			continue;
		us->installed = false;
		site = user_record(u, us->rec);
		if (site)
			site->state = RT_SITE_DONE;
	}
	return err;
}

static int restore_sites(struct ubt_user *u)
{
	return restore_sites_in(u, &u->pt, false);
}

/*
 * The semaphores ubt incremented, decremented in the process of pt (every
 * thread stopped): the target, or a child it forked meanwhile, which
 * inherited them. One another tracer brought to 0 meanwhile stays there.
 */
static int restore_semaphores(struct ubt_user *u, struct pt *pt)
{
	int err = 0;

	for (int i = 0; i < u->nsems; i++) {
		uint16_t v;

		if (pt_read(pt, u->sems[i], &v, sizeof(v))) {
			err = user_err(u, -EIO, "read the semaphore at %#llx",
				       (unsigned long long)u->sems[i]);
			continue;
		}
		if (!v)
			continue;
		v--;
		if (pt_write(pt, u->sems[i], &v, sizeof(v)))
			err = user_err(u, -EIO, "restore the semaphore at %#llx",
				       (unsigned long long)u->sems[i]);
	}
	return err;
}

/*
 * A child forked during the session holds the memfd's mappings and
 * descriptor as its parent did (fork copies them): taken out as from the
 * target (user_unmap.c), unless its thread is inside ubt's code (a fork
 * from a function a return probe wraps: the wrapped call returns through
 * the runtime); then they stay, read-only-executable, -v says so, and the
 * next ubt's detach in that child removes them, as in the target.
 */
static void child_unmap(struct ubt_user *u, struct pt *pt,
			const uint64_t *bpf, int nbpf)
{
	char why[sizeof(u->unmap_why)];

	if (user_unmap_child(u, pt, bpf, nbpf, why, sizeof(why))) {
		if (!pt_gone(pt->pid))
			fprintf(stderr, "ubt: warning: pid %d: ubt's memory in "
				"the process: %s\n", (int)pt->pid, u->err);
		return;
	}
	if (why[0] && !u->unmap_why[0])
		snprintf(u->unmap_why, sizeof(u->unmap_why), "%s", why);
}

/*
 * Children the target forked while patched carry the jumps too (the
 * runtime lists them in ctl->children): restore each that still maps our
 * memfd, once the target is restored (it forks no patched child since);
 * passes until no new child shows up, since children fork too.
 */
static int restore_children(struct ubt_user *u, const uint64_t *bpf,
			    int nbpf)
{
	pid_t done[RT_MAX_CHILDREN * 4];
	int ndone = 0, err = 0;
	bool again = true;

	for (int pass = 0; again && pass < 4; pass++) {
		again = false;
		for (int i = 0; i < RT_MAX_CHILDREN; i++) {
			pid_t c = (pid_t)__atomic_load_n(&u->m.ctl->children[i],
							 __ATOMIC_ACQUIRE);
			struct pt pt;
			int k;

			if (c <= 0 || c == u->pid)
				continue;
			for (k = 0; k < ndone && done[k] != c; k++)
				;
			if (k < ndone || ndone == (int)(sizeof(done) /
						       sizeof(done[0])))
				continue;
			done[ndone++] = c;
			again = true;
			if (pt_gone(c) || !still_ours(u, c))
				continue;
			pt_init(&pt);
			if (!pt_seize(&pt, c)) {
				int e = restore_sites_in(u, &pt, true);

				e = restore_semaphores(u, &pt) ?: e;
				/* restored: ubt's memory out of it too */
				if (!e)
					child_unmap(u, &pt, bpf, nbpf);
				if (e && !pt_gone(c))
					err = e;
				pt_detach(&pt);
			}
			pt_release(&pt);
		}
	}
	u->children = ndone;
	return err;
}

/* Every site restored: ubt's mappings out of the target (user_unmap.c). */
static void detach_unmap(struct ubt_user *u)
{
	if (u->vm_child) {
		/* its threads are not the target's: not looked at */
		snprintf(u->unmap_why, sizeof(u->unmap_why), "pid %d: ubt's "
			 "memory stays in the process (read-only-executable, "
			 "the probes idle): pid %d shares it and may be "
			 "inside", (int)u->pid, (int)u->vm_child);
		return;
	}
	if (u->vm_asked) {
		/* the thread reads the control block until it sees detached */
		snprintf(u->unmap_why, sizeof(u->unmap_why), "pid %d: ubt's "
			 "memory stays in the process (read-only-executable, "
			 "the probes idle): thread %d waits inside it to make "
			 "a child with clone(CLONE_VM)", (int)u->pid,
			 (int)u->vm_asked);
		return;
	}
	if (still_ours(u, u->pid) && user_unmap(u) &&
	    !user_process_gone(u, -EIO))
		fprintf(stderr, "ubt: warning: pid %d: ubt's memory in the "
			"process: %s\n", (int)u->pid, u->err);
}

static int detach_target(struct ubt_user *u)
{
	bool vm_stopped = false;
	struct pt vm;
	int err;

	u->detached = true;
	/* a hand-over (user_on_restore()): events until the stop */
	if (!u->restore_fn || !u->resumed)
		__atomic_store_n(&u->m.ctl->detached, 1, __ATOMIC_RELEASE);
	if (!u->resumed) {
		/* still stopped: restore, then let it go */
		err = user_restop(u, false);
		if (err) {
			u->resumed = true;
			return user_process_gone(u, err) || u->new_image ? 0
								    : err;
		}
		err = u->nsites ? user_stop_all(u) : 0;
		err = err ?: restore_sites(u);
		err = err ?: restore_semaphores(u, &u->pt);
		if (!err && !u->pt.one)
			detach_unmap(u);
		return user_resume(u) ?: err;
	}
	if (!u->nsites && !u->target_base)
		return 0;
	/*
	 * Another tracer may hold it for a moment (a second ubt attaching
	 * refuses, and lets go): wait for it rather than leave the jumps.
	 */
	for (uint64_t t0 = mono_ns();;) {
		pt_release(&u->pt);
		pt_init(&u->pt);
		u->pt.hold_ns = USER_HOLD_NS;	/* no thread stopped long */
		err = pt_seize(&u->pt, u->pid);
		if (err != -EPERM || mono_ns() - t0 > USER_DETACH_WAIT_NS)
			break;
		usleep(5000);
	}
	if (err) {
		__atomic_store_n(&u->m.ctl->detached, 1, __ATOMIC_RELEASE);
		user_note_exit(u);
		if (user_process_gone(u, err))
			return 0;	/* gone: nothing left to restore */
		return user_err(u, 0, "cannot stop pid %d to restore its code: "
				"%s (its jumps stay, the probes idle, until "
				"the next ubt attached to it removes them)",
				u->pid, u->pt.err);
	}
	/* a child in its memory runs its code too: stopped meanwhile */
	pt_init(&vm);
	if (u->vm_child && !pt_seize(&vm, u->vm_child))
		vm_stopped = true;
	err = restore_sites(u);
	err = restore_semaphores(u, &u->pt) ?: err;
	if (u->restore_fn && u->resumed) {
		__atomic_store_n(&u->m.ctl->detached, 1, __ATOMIC_RELEASE);
		if (!err)
			u->restore_fn(u, u->restore_ctx);
	}
	if (!err)
		detach_unmap(u);
	if (vm_stopped)
		pt_detach(&vm);
	pt_release(&vm);
	pt_detach(&u->pt);
	user_note_exit(u);
	if (err && user_process_gone(u, -EIO))
		err = 0;	/* it exited meanwhile */
	return err;
}

void user_on_restore(struct ubt_user *u,
		     void (*fn)(struct ubt_user *u, void *ctx), void *ctx)
{
	u->restore_fn = fn;
	u->restore_ctx = ctx;
}

int user_detach(struct ubt_user *u)
{
	uint64_t *bpf;
	int err, nbpf = 0;

	if (u->detached || !u->m.ctl)
		return 0;
	/* the BPF maps' mappings, which children inherit too */
	bpf = xcalloc((size_t)u->nxmaps + 1, sizeof(*bpf));
	for (int i = 0; i < u->nxmaps; i++)
		bpf[nbpf++] = u->xmaps[i].addr;
	bpf[nbpf++] = u->comm_at;
	err = detach_target(u);
	if (u->nsites) {
		int e = restore_children(u, bpf, nbpf);

		if (!err && e)
			err = e;
	}
	free(bpf);
	u->nsems = 0;
	/* the code is the file's again: a thread that announced a
	 * clone(CLONE_VM) (runtime/rt_vfork.c) makes its child now */
	__atomic_store_n(&u->m.ctl->vm_ack, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &u->m.ctl->vm_ack, 1 /* FUTEX_WAKE */, INT_MAX,
		NULL, NULL, 0);
	/* every site restored: a later ubt need not search this memfd */
	if (!err)
		__atomic_store_n(&u->m.ctl->sites_clean, 1, __ATOMIC_RELEASE);
	return err;
}

static int restore_dead_one(pid_t pid, uint32_t owner, char *err, size_t len)
{
	struct pt pt;
	int n;

	pt_init(&pt);
	if (pt_seize(&pt, pid)) {
		snprintf(err, len, "%s", pt.err);
		pt_release(&pt);
		return -ESRCH;
	}
	n = owner_restore(&pt, owner);
	pt_detach(&pt);
	pt_release(&pt);
	if (n < 0)
		snprintf(err, len, "%s", strerror(-n));
	return n;
}

int user_restore_dead(pid_t pid, uint32_t owner, char *err, size_t len)
{
	pid_t kids[RT_MAX_CHILDREN];
	int n, k;

	/* the children first: they are listed in the target's memfd */
	k = owner_children(pid, owner, kids, RT_MAX_CHILDREN);
	for (int i = 0; i < k; i++)
		if (!pt_gone(kids[i]))
			restore_dead_one(kids[i], owner, err, len);
	n = restore_dead_one(pid, owner, err, len);
	return n;
}
