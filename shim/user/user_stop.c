/*
 * The target's threads stopped and let go: seized (user_seize()), all
 * stopped at once (user_stop_all()), released while ubt prepares and
 * stopped again (user_release(), user_restop()), the stop's time counted,
 * ubt's own priority while they wait (user_boost(), user_rt()).
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

/*
 * Every thread stopped (the jumps are written now): forget the blocks of
 * an earlier attach in every thread first.  Nothing reads them before.
 */
int user_stop_all(struct ubt_user *u)
{
	int err = pt_stop_all(&u->pt);

	if (err) {
		user_err(u, 0, "%s", u->pt.err);
		return err;
	}
	return user_reset_tls(u);
}

/*
 * Did an operation fail because the process went away?  An exiting process
 * fails reads and writes of its memory before it turns into a zombie: give
 * it a moment.
 */
bool user_process_gone(struct ubt_user *u, int e)
{
	int i;

	if (u->exited)
		return true;
	for (i = 0; i < 20; i++) {
		if (pt_gone(u->pid))
			return true;
		if (e != -EIO && e != -ESRCH && e != -EFAULT)
			return false;
		usleep(1000);
	}
	return false;
}

/*
 * While the target waits for ubt, ubt should not wait long for a CPU
 * behind other processes: it runs at nice -20 until the target runs
 * again (not real-time: the work done meanwhile is not bounded).
 * Nothing happens without the right.
 */
static void user_boost(struct ubt_user *u)
{
	if (u->boosted)
		return;
	errno = 0;
	u->old_nice = getpriority(PRIO_PROCESS, 0);
	if (errno || setpriority(PRIO_PROCESS, 0, -20))
		return;
	u->boosted = true;
}

/*
 * The final stop (user_resume()): ubt's thread runs SCHED_FIFO while the
 * target's threads are stopped, so that no woken thread of the target
 * (nor anything else) preempts it between letting one thread go and the
 * next, and it runs at once when a thread reports its stop.  Its work
 * there is bounded (it sleeps while it waits; pt_stop_threads() bounds
 * the rounds).  Nothing happens without the right.
 */
void user_rt(struct ubt_user *u, bool on)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (on && !u->rt) {
		u->old_policy = sched_getscheduler(0);
		if (u->old_policy < 0 ||
		    sched_getparam(0, &u->old_param) ||
		    sched_setscheduler(0, SCHED_FIFO, &sp))
			return;
		u->rt = true;
	} else if (!on && u->rt) {
		sched_setscheduler(0, u->old_policy, &u->old_param);
		u->rt = false;
	}
}

/*
 * Run ubt on the CPU thread tid runs on, when that thread is an ordinary
 * (not real-time) one: the remote calls then go back and forth between
 * the two on one CPU, without waking another (on a virtual machine a CPU
 * left idle can take a millisecond to wake up again).
 */
static void user_follow(struct ubt_user *u, pid_t tid)
{
	char path[64], buf[1024], *f;
	int fd, i, cpu = -1, policy = -1;
	cpu_set_t set;
	ssize_t n;

	if (u->pinned)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", u->pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	f = strrchr(buf, ')');
	/* fields from 3 (state) on; 39 is processor, 41 policy */
	for (i = 2; f && i <= 41; i++) {
		f = strchr(f + 1, ' ');
		if (f && i + 1 == 39)
			cpu = atoi(f + 1);
		if (f && i + 1 == 41)
			policy = atoi(f + 1);
	}
	if (cpu < 0 || cpu >= CPU_SETSIZE ||
	    (policy != SCHED_OTHER && policy != SCHED_BATCH &&
	     policy != SCHED_IDLE) ||
	    sched_getaffinity(0, sizeof(u->old_cpus), &u->old_cpus) ||
	    !CPU_ISSET(cpu, &u->old_cpus))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	u->pinned = !sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Add the stop that ends now: from when the first thread stopped (-p), or
 * from the start of the attach (-c: stopped from its first instruction).
 */
void user_count_stop(struct ubt_user *u)
{
	uint64_t t0 = u->stop_t0;

	if (!u->child && u->pt.stop_start_ns > t0)
		t0 = u->pt.stop_start_ns;
	u->stop_ns += mono_ns() - t0 - u->pt.released_ns;
	u->ctl_stops++;
	u->ctl_calls += u->pt.calls;
	u->ctl_call_stops += u->pt.call_stops;
	if (u->pt.call_max_ns > u->ctl_call_max_ns) {
		u->ctl_call_max_ns = u->pt.call_max_ns;
		u->ctl_call_max_at = u->ctl_calls - u->pt.calls +
				     u->pt.call_max_at;
		u->ctl_call_max_done = u->pt.call_max_done;
	}
	u->pt.calls = u->pt.call_stops = 0;
	u->pt.call_max_ns = 0;
}

/*
 * -p: the thread that runs ubt's remote calls waits for a CPU between
 * them, behind whatever else runs there: as ubt, it runs at nice -20
 * while it is held (its own value back in user_unhold()), so that on a
 * busy machine its stop is the calls' time, not the scheduler's.
 * Nothing happens without the right.
 */
static void user_boost_thread(struct ubt_user *u, pid_t tid)
{
	int nice;

	if (u->child_boosted)
		return;
	errno = 0;
	nice = getpriority(PRIO_PROCESS, tid);
	if (errno || nice <= -20 || setpriority(PRIO_PROCESS, tid, -20))
		return;
	u->child_nice = nice;
	u->child_boost_id = tid;
	u->child_boosted = true;
}

/*
 * -p: stop only thread tid (0: none known) for the remote calls, else
 * every thread.  The stop starts here.
 */
int user_seize(struct ubt_user *u, pid_t tid)
{
	user_boost(u);
	user_follow(u, tid ?: u->pid);
	u->stop_t0 = mono_ns();
	if (tid && !pt_seize_thread(&u->pt, u->pid, tid)) {
		user_boost_thread(u, tid);
		return 0;
	}
	if (tid)	/* it exited meanwhile */
		user_unseize(u);
	return pt_seize(&u->pt, u->pid);
}

void user_hold_spawn(struct ubt_user *u)
{
	user_boost(u);
	u->pt.renice = u->boosted;
	u->pt.nice = u->old_nice;
}

/*
 * -c: ubt and the command on ubt's CPU, as user_follow() does for -p, but
 * without moving ubt (sched_setaffinity() of a running thread to another
 * CPU waits for that CPU: 0.1-0.3 ms here); the command, stopped, moves
 * when it next runs, and gets its own set back before its first
 * instruction (user_unhold()).
 */
static void user_pull(struct ubt_user *u)
{
	int cpu = sched_getcpu();
	cpu_set_t one;

	if (u->pinned || cpu < 0 || cpu >= CPU_SETSIZE ||
	    sched_getaffinity(0, sizeof(u->old_cpus), &u->old_cpus) ||
	    sched_getaffinity(u->pid, sizeof(u->child_cpus), &u->child_cpus) ||
	    !CPU_ISSET(cpu, &u->child_cpus))
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return;
	u->pinned = true;
	u->child_pinned = !sched_setaffinity(u->pid, sizeof(one), &one);
}

void user_hold(struct ubt_user *u)
{
	int nice;

	user_pull(u);
	/* nothing but ubt's remote calls changes its mappings now */
	pt_maps_keep(u->pid);
	/*
	 * Its remote calls wait for a CPU too: as ubt, it runs at nice -20
	 * until ubt lets it go, its own value back before its first
	 * instruction (user_unhold()).
	 */
	errno = 0;
	nice = getpriority(PRIO_PROCESS, u->pid);
	if (errno || setpriority(PRIO_PROCESS, u->pid, -20))
		return;
	u->child_nice = nice;
	u->child_boosted = true;
}

/*
 * -p: the runtime is in place; let the target run while ubt does what
 * does not need it stopped (loading BPF, building the probes' code).
 * Only writing the jumps needs every thread stopped: user_restop().
 */
void user_release(struct ubt_user *u)
{
	uint64_t sc = u->pt.syscall_insn;

	if (u->pt.ctl >= 0 && u->pt.ctl < u->pt.nth)
		u->ctl_tid = u->pt.th[u->pt.ctl].tid;
	pt_detach(&u->pt);
	user_note_exit(u);
	user_count_stop(u);
	user_unboost(u);
	pt_release(&u->pt);
	pt_init(&u->pt);
	u->pt.syscall_insn = sc;	/* libc and the vdso stay */
	u->released = true;
}

bool user_image_changed(struct ubt_user *u)
{
	uint8_t head[offsetof(struct rt_ctl, fn)];
	char path[64];
	ssize_t n;
	int fd;

	if (u->new_image)
		return true;
	if (u->child || !u->target_base)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)u->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;	/* gone: no new image to attach to */
	n = pread(fd, head, sizeof(head), (off_t)u->target_base);
	close(fd);
	/* our control block, or a new image where it was */
	return n != (ssize_t)sizeof(head) || memcmp(head, u->m.base,
						    sizeof(head));
}

/*
 * Stop the target again: one thread for remote calls only, or (all) every
 * thread at once, since the jumps are to be written: a spinning thread
 * takes a while to notice the interrupt, and a thread stopped first waits
 * for the others (so they are interrupted together, not one after another).
 */
int user_restop(struct ubt_user *u, bool all)
{
	uint8_t head[offsetof(struct rt_ctl, fn)];
	int err;

	if (u->new_image) {
		user_err(u, 0, "pid %d ran execve() during attach", u->pid);
		return -ESTALE;
	}
	if (!u->released)
		return 0;
	err = user_seize(u, all ? 0 : user_blocked_thread(u) ?: u->ctl_tid);
	if (err) {
		user_note_exit(u);
		user_err(u, 0, "cannot stop pid %d again: %s", u->pid, u->pt.err);
		return err;
	}
	/* an execve() meanwhile: a new image, without the memfd */
	if (pt_read(&u->pt, u->target_base, head, sizeof(head)) ||
	    memcmp(head, u->m.base, sizeof(head))) {
		user_release(u);
		u->new_image = true;
		user_err(u, 0, "pid %d ran execve() during attach", u->pid);
		return -ESTALE;
	}
	u->released = false;
	return 0;
}
