/*
 * Attaching to the target: every thread seized and stopped (-p) or the
 * command started under ptrace (-c), the owners of leftover sites checked,
 * the runtime placed (user_inject.c); user_free() releases what attach
 * made, the comm table included (user_comm_stop()).
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
#include <sys/stat.h>
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

/* Find the runtime before touching the target. */
static int find_runtime(struct ubt_user *u, const struct user_opts *o)
{
	char why[sizeof(u->err)];
	uint64_t sz, off;
	int err;

	err = user_runtime_path(o, u->rt_path, sizeof(u->rt_path), why,
			   sizeof(why));
	if (err) {
		user_err(u, 0, "%s", why);
		return err;
	}
	if (strlen(u->rt_path) + 1 > USER_DONE_OFF - USER_SCRATCH_OFF)
		return user_err(u, -ENAMETOOLONG, "%s", u->rt_path);
	err = patch_find_symbol(u->rt_path, "rt_init", &u->rt_init_vaddr, &sz,
				&off);
	if (err)
		return user_err(u, err, "runtime %s", u->rt_path);
	return 0;
}

/*
 * Jumps of other ubt processes: a live one owns the runtime here (one
 * runtime serves one tracer: refuse); a dead one's leftovers go before
 * the runtime is set up again, with every thread stopped (their probe
 * code would write into the new session's blocks), and then the memory
 * of every dead session whose jumps are all gone, unless a thread may
 * still use it.
 */
static int check_owners(struct ubt_user *u)
{
	struct owner_info oi;
	int n;

	/* memfds: dead sessions' memory, with their jumps gone already */
	if (owner_scan(u->pid, &oi) ||
	    (!oi.live_pid && !oi.dead_sites && !oi.dead_memfds && !oi.memfds))
		return 0;
	if (oi.live_pid)
		return user_err(u, -EBUSY, "another ubt (pid %u) runs probes in "
				       "this process",
			    oi.live_pid);
	if (u->pt.one && pt_stop_all(&u->pt))
		return user_err(u, 0, "%s", u->pt.err);
	n = owner_restore(&u->pt, 0);
	if (n < 0)
		return user_err(u, n, "remove a dead ubt's jumps");
	u->leftovers = n;
	/* their memory too, now that nothing jumps there (user_unmap.c) */
	n = user_unmap_dead(u);
	if (n < 0)
		return user_err(u, n, "remove a dead ubt's memory");
	return 0;
}

/*
 * For tests (tests/README.md): UBT_TEST_STALL_CALL=MS makes a remote
 * poll() of MS ms before the attach goes on, announced on stderr, so that
 * a test can kill the worker while its call is blocked in the target.
 */
static int test_stall(struct ubt_user *u)
{
	const char *v = getenv("UBT_TEST_STALL_CALL");
	int64_t ret;

	if (!v || atoi(v) <= 0)
		return 0;
	fprintf(stderr, "ubt: UBT_TEST_STALL_CALL: a remote poll() of %d ms\n",
		atoi(v));
	return user_rsys(u, SYS_poll, 0, 0, (uint64_t)atoi(v), 0, 0, 0, &ret);
}

/* Killed workers' descriptors, listed while the target may run. */
static struct ubt_user *attach(struct ubt_user *u, const struct user_opts *o,
			   char *err, size_t errlen)
{
	/*
	 * A -c command at its entry point: its one thread runs the calls
	 * (its loader is done), and a new image holds no ubt's jumps.
	 */
	int e = u->child ? 0 : user_choose_ctl(u);
	/*
	 * -p: /proc/PID/maps read once in this stop, again only after ubt's
	 * own calls (which forget it) or a wait while other threads load
	 * (ldlock_free()): the ranges read here are libraries', the stub's
	 * and ubt's, which the others' mappings do not move; a code area's
	 * range taken meanwhile is chosen again (user_install.c).  Each read
	 * took 20-70 us of the held thread's stop, a dozen of them.
	 */
	if (!e && !u->child)
		pt_maps_keep(u->pid);

	u->self_start = owner_start_time(getpid());
	if (!u->child)
		e = e ?: check_owners(u);
	if (!u->child)
		e = e ?: test_stall(u);
	e = e ?: user_check_libc(u);
	e = e ?: user_place_memfd(u, o);
	/*
	 * The memfd is shared now (user_target_map()): the remote calls that
	 * follow (the mprotect of its code range, the runtime's dlopen() and
	 * rt_init(), the code areas' mmaps) run without a system call stop
	 * each (ptrace_done.c), until the end of this stop.
	 */
	/* killed workers' descriptors (user_strays.c), listed before */
	if (!e && !u->child)
		user_strays_close(u);
	e = e ?: user_place_runtime(u, o);
	if (!e)
		user_comm_try(u);
	/* the code areas too, while this thread is stopped anyway (a failure
	 * is the install's to report); libc's for the exec hook */
	for (size_t i = 0; !e && i < USER_FIELD(o, struct user_opts, nmodules);
	     i++)
		user_prepare_slice(u, o->modules[i]);
	if (!e && u->libc[0])
		user_prepare_slice(u, u->libc);
	pt_done_word(&u->pt, 0, NULL);
	if (!u->child)
		pt_maps_keep(0);
	if (!e)
		return u;
	if (u->target_fd > 0) {
		char keep[sizeof(u->err)];
		int64_t ret;

		memcpy(keep, u->err, sizeof(keep));
		if (u->target_base)
			user_rsys(u, SYS_munmap, u->target_base, u->target_size, 0, 0,
			     0, 0, &ret);
		user_rsys(u, SYS_close, (uint64_t)u->target_fd, 0, 0, 0, 0, 0,
		     &ret);
		memcpy(u->err, keep, sizeof(keep));
	}
	pt_detach(&u->pt);
	if (u->child) {
		kill(u->pid, SIGKILL);
		waitpid(u->pid, NULL, 0);
	}
	if (!u->child && user_process_gone(u, e))
		snprintf(err, errlen, "cannot attach to pid %d: process exited "
				      "during attach", u->pid);
	else if (u->child)
		snprintf(err, errlen, "%s", u->err);
	else
		snprintf(err, errlen, "cannot attach to pid %d: %s", u->pid,
			 u->err);
	user_free(u);
	return NULL;
}

/*
 * Watch for CLONE_VM children from now on (user_vmwatch.c), then look for
 * one made before (the check that decided on user mode looked earlier):
 * one found refuses the attach, before anything is written.
 */
static int vm_watch(struct ubt_user *u, char *err, size_t errlen)
{
	pid_t other;

	if (user_vmwatch_start(u))
		snprintf(u->vmw_why, sizeof(u->vmw_why), "%.200s", u->err);
	other = user_vm_sharer(u->pid);
	if (!other)
		return 0;
	snprintf(err, errlen, "cannot attach to pid %d: pid %d shares its "
		 "memory (clone(CLONE_VM) without CLONE_VFORK): it runs on "
		 "the thread pointer, so on the per-thread blocks, of the "
		 "thread that made it", (int)u->pid, (int)other);
	user_vmwatch_stop(u);
	return -EBUSY;
}

struct ubt_user *user_attach_pid(pid_t pid, const struct user_opts *o,
			     char *err, size_t errlen)
{
	struct ubt_user *u = xcalloc(1, sizeof(*u));

	u->m.fd = -1;
	u->comm_map = u->comm_prog = u->comm_link = u->cred_prog = -1;
	for (int i = 0; i < USER_CRED_TPS; i++)
		u->cred_ev[i] = -1;
	pt_init(&u->pt);
	u->pid = pid;
	user_prepare_libc(u);	/* the ELF work, before stopping the target */
	user_clock_begin(&u->clk);	/* its first pair, likewise */
	u->comm_want = USER_FIELD(o, struct user_opts, task) && o->task;
	user_comm_try_prepare(u);	/* the BTF, likewise */
	if (vm_watch(u, err, errlen)) {
		user_comm_stop(u);
		user_vmwatch_stop(u);
		free(u);
		return NULL;
	}
	if (find_runtime(u, o)) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid,
			 u->err);
		user_comm_stop(u);
		user_vmwatch_stop(u);
		free(u);
		return NULL;
	}
	/*
	 * Killed workers' descriptors (user_strays.c), listed while the
	 * target runs (the walk of /proc/PID/fd took 0.3 ms of its stop); no
	 * memfd of ours yet, and a dead worker's adds none: each is checked
	 * again (user_strays_close()) before it is closed.
	 */
	user_strays_find(u, 0, true);
	if (user_seize(u, user_blocked_thread(u) ?: pid)) {
		snprintf(err, errlen, "cannot attach to pid %d: %s", pid,
			 u->pt.err);
		user_unboost(u);
		pt_release(&u->pt);
		user_comm_stop(u);
		user_vmwatch_stop(u);
		free(u);
		return NULL;
	}
	u = attach(u, o, err, errlen);
	if (u)
		user_release(u);
	return u;
}

struct ubt_user *user_attach_cmd(char *const argv[], const struct user_opts *o,
			     char *err, size_t errlen)
{
	struct ubt_user *u = xcalloc(1, sizeof(*u));

	u->m.fd = -1;
	u->comm_map = u->comm_prog = u->comm_link = u->cred_prog = -1;
	for (int i = 0; i < USER_CRED_TPS; i++)
		u->cred_ev[i] = -1;
	pt_init(&u->pt);
	u->child = true;
	user_clock_begin(&u->clk);
	user_prepare_libc_self(u);	/* before the command waits */
	if (find_runtime(u, o)) {
		snprintf(err, errlen, "%s", u->err);
		user_comm_stop(u);
		user_vmwatch_stop(u);
		free(u);
		return NULL;
	}
	user_hold_spawn(u);
	if (pt_spawn(&u->pt, argv)) {
		snprintf(err, errlen, "%s", u->pt.err);
		user_unboost(u);
		pt_release(&u->pt);
		user_comm_stop(u);
		user_vmwatch_stop(u);
		free(u);
		return NULL;
	}
	/* stopped from here: it ran its loader up to its entry point */
	u->stop_t0 = u->pt.stop_start_ns ?: mono_ns();
	u->pid = u->pt.pid;
	user_hold(u);
	u->comm_want = USER_FIELD(o, struct user_opts, task) && o->task;
	user_comm_try_prepare(u);
	/* nothing cloned yet: it waits at its entry point */
	if (user_vmwatch_start(u))
		snprintf(u->vmw_why, sizeof(u->vmw_why), "%.200s", u->err);
	return attach(u, o, err, errlen);
}

void user_free(struct ubt_user *u)
{
	if (!u)
		return;
	user_rt(u, false);
	user_unboost(u);
	user_comm_stop(u);
	user_vmwatch_stop(u);
	/* user_xmap.c's fds */
	for (int i = 0; i < u->nxmaps; i++)
		close(u->xmaps[i].fd);
	free(u->xmaps);
	pt_release(&u->pt);
	memfd_release(&u->m);
	free(u->sites);
	free(u->sems);
	free(u->sems_pend);
	free(u);
}
