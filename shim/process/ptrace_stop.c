/*
 * Every thread of the target brought to a stop without holding one long
 * (pt_stop_threads()), and every thread let go without one waiting for
 * another (pt_let_go()).
 *
 * A thread that waits for a CPU on a busy machine takes milliseconds to
 * reach its stop after PTRACE_INTERRUPT; the threads stopped first would
 * wait for it all that time.  With p->hold_ns, a thread stopped longer
 * than that while others are still on their way runs again, and is
 * interrupted again once the late ones have stopped (a retry: having run
 * meanwhile, it is on a CPU and stops at once).  With p->hold_fail (an
 * attach), a stop that has not come together within PT_HOLD_MAX_NS gives
 * up: -EAGAIN, every thread let go by the caller's pt_detach(); nothing
 * was written.  Without it (a detach, which must restore the code), the
 * threads are then waited for with the others held.
 *
 * For tests (tests/README.md), UBT_TEST_STOP_LATE=N makes a thread late
 * N times in stops with p->hold_ns: when every thread has stopped, one
 * runs again for PT_LATE_NS before it is interrupted again, as a thread
 * descheduled under load would.
 */
#include "procstat.h"
#include "ptrace_int.h"

/*
 * A thread that has not stopped after this long is looked at: a zombie
 * (a thread-group leader that exited before the other threads: waitpid()
 * reports it only once they are gone) is dropped; after PT_STOP_MAX_NS
 * the stop fails instead of waiting forever.
 */
#define PT_STOP_CHECK_NS (100 * 1000000ULL)
#define PT_STOP_MAX_NS (5000 * 1000000ULL)

/*
 * Holding threads (p->hold_ns): after every PT_HOLD_ROUNDS rounds that let
 * a thread go, the time a stopped thread waits for the late ones doubles,
 * up to PT_HOLD_CAP_NS (a thread that needs its CPU back gets it sooner
 * than a whole scheduling period); the attempt is made again until
 * PT_HOLD_MAX_NS: then an attach gives up (p->hold_fail), a detach waits
 * for every thread with the others held.  PT_HOLD_MAX_NS grows by
 * PT_HOLD_THREAD_NS a thread: each round stops every thread again, and a
 * thousand threads on a few busy CPUs take a second or more to come
 * together (1500 threads gave up after 2 s, 2 rounds, under a load of
 * 10 on 2 CPUs).
 */
#define PT_HOLD_ROUNDS 16
#define PT_HOLD_CAP_NS (4 * 1000000ULL)
#define PT_HOLD_MAX_NS (2000 * 1000000ULL)
#define PT_HOLD_THREAD_NS (4 * 1000000ULL)

/* UBT_TEST_STOP_LATE: how long a thread made late runs */
#define PT_LATE_NS (8 * 1000000ULL)

struct pt_thread *pt_find_thread(struct pt *p, pid_t tid)
{
	int i;

	for (i = 0; i < p->nth; i++)
		if (p->th[i].tid == tid)
			return &p->th[i];
	return NULL;
}

struct pt_thread *pt_add_thread(struct pt *p, pid_t tid)
{
	if (p->nth == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->th = xrealloc(p->th, p->cap * sizeof(*p->th));
	}
	p->th[p->nth] = (struct pt_thread){ .tid = tid };
	return &p->th[p->nth++];
}

void pt_drop_thread(struct pt *p, pid_t tid)
{
	struct pt_thread *t = pt_find_thread(p, tid);

	if (!t)
		return;
	if (p->ctl == p->nth - 1)
		p->ctl = (int)(t - p->th);
	*t = p->th[--p->nth];
}

/*
 * Wait until thread t is in a ptrace stop (nohang: 1 if it is not yet).
 * Follows clones (new threads are added, and waited for by the caller's
 * loop).  -ESRCH if it died.
 */
int pt_wait_stop(struct pt *p, struct pt_thread *t, bool nohang)
{
	pid_t tid = t->tid;
	int st;

	for (;;) {
		pid_t w = waitpid(tid, &st, __WALL | (nohang ? WNOHANG : 0));

		if (!w)
			return 1;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			pt_drop_thread(p, tid);
			return -ESRCH;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == p->pid) {
				p->exited = true;
				p->exit_status = st;
			}
			pt_drop_thread(p, tid);
			return -ESRCH;
		}
		if (!WIFSTOPPED(st))
			continue;
		t = pt_find_thread(p, tid);
		if (!t)
			return -ESRCH;
		switch (st >> 16) {
		case PTRACE_EVENT_CLONE: {
			unsigned long msg = 0;

			ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg);
			if (msg && !pt_find_thread(p, (pid_t)msg))
				pt_add_thread(p, (pid_t)msg);
			/*
			 * Still inside clone(): registers read here and
			 * written back, or a remote call run from here,
			 * would make pthread_create() see a failed clone
			 * of a thread that runs (two threads on one stack,
			 * a thread count off by one: the process ends
			 * early).  Let it return, and stop it there.
			 */
			if (ptrace(PTRACE_CONT, tid, 0, 0) == 0)
				ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			continue;
		}
		case PTRACE_EVENT_STOP:
			/* a group stop (SIGSTOP): hold() never lets it go */
			if (WSTOPSIG(st) != SIGTRAP)
				t->group_stop = true;
			break;
		case PTRACE_EVENT_EXEC:
			break;
		case 0:
			/* a signal arrived first: keep it for detach */
			t->pending_sig = WSTOPSIG(st);
			break;
		default:
			break;
		}
		t = pt_find_thread(p, tid);
		t->stopped = true;
		t->released = false;
		t->stop_ns = mono_ns();
		if (!p->stop_start_ns)
			p->stop_start_ns = t->stop_ns;
		return 0;
	}
}

/* Is thread tid a zombie (or gone)?  It never stops then. */
static bool thread_dead(pid_t tid)
{
	char st = procstat_state(tid);

	return !st || st == 'Z' || st == 'X';
}

/* UBT_TEST_STOP_LATE's count, read once; the times left. */
static int late_left(void)
{
	static int left = -1;

	if (left < 0) {
		const char *v = getenv("UBT_TEST_STOP_LATE");

		left = v ? atoi(v) : 0;
		if (left < 0)
			left = 0;
	}
	return left--;
}

/*
 * Every thread stopped (p->hold_ns, UBT_TEST_STOP_LATE): one (not one
 * whose registers ubt has, nor one in a group stop) runs again, to be
 * interrupted PT_LATE_NS later.  true if one does.
 */
static bool make_late(struct pt *p, uint64_t now)
{
	for (int i = p->nth - 1; i >= 0; i--) {
		struct pt_thread *t = &p->th[i];

		if (!t->stopped || t->have_regs || t->group_stop)
			continue;
		if (late_left() <= 0)
			return false;
		if (ptrace(PTRACE_CONT, t->tid, 0, t->pending_sig) < 0)
			return false;
		t->pending_sig = 0;
		t->stopped = false;
		t->late_at = now + PT_LATE_NS;
		p->lates++;
		return true;
	}
	return false;
}

/* Threads made late whose time is up are interrupted; *wake: the next. */
static void interrupt_late(struct pt *p, uint64_t now, uint64_t *wake)
{
	for (int i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (!t->late_at)
			continue;
		if (now >= t->late_at) {
			ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
			t->late_at = 0;
		} else if (t->late_at < *wake) {
			*wake = t->late_at;
		}
	}
}

/*
 * p->hold_ns: the threads stopped longer than that while others are not
 * stopped yet run again (their registers were not read yet: nothing to
 * restore; a thread in a group stop, SIGSTOP, stays).  Then, when only
 * such threads are left, they are interrupted again (a retry).
 */
static void hold(struct pt *p, uint64_t now, uint64_t hold_ns,
		 uint64_t *wake)
{
	int i, pending = 0;
	bool again = false;

	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (!t->stopped && !t->released)
			pending++;
	}
	for (i = 0; i < p->nth && pending; i++) {
		struct pt_thread *t = &p->th[i];

		if (!t->stopped || t->have_regs || t->group_stop)
			continue;
		if (now - t->stop_ns < hold_ns) {
			if (t->stop_ns + hold_ns < *wake)
				*wake = t->stop_ns + hold_ns;
			continue;
		}
		if (ptrace(PTRACE_CONT, t->tid, 0, t->pending_sig) < 0)
			continue;	/* it died: waitpid() says so */
		if (now - t->stop_ns > p->held_ns)
			p->held_ns = now - t->stop_ns;
		p->holds++;
		t->pending_sig = 0;
		t->stopped = false;
		t->released = true;
	}
	if (pending)
		return;
	for (i = 0; i < p->nth; i++)
		if (p->th[i].released) {
			ptrace(PTRACE_INTERRUPT, p->th[i].tid, 0, 0);
			p->th[i].released = false;
			again = true;
		}
	if (again)
		p->retries++;
}

/* The released threads stop too (no more holding). */
static void interrupt_released(struct pt *p)
{
	for (int i = 0; i < p->nth; i++)
		if (p->th[i].released) {
			ptrace(PTRACE_INTERRUPT, p->th[i].tid, 0, 0);
			p->th[i].released = false;
		}
}

/* The first thread not stopped yet (an attach that gives up names it). */
static pid_t first_late(const struct pt *p)
{
	for (int i = 0; i < p->nth; i++)
		if (!p->th[i].stopped && !p->th[i].released)
			return p->th[i].tid;
	return p->nth ? p->th[0].tid : 0;
}

/* How long a stop with holds tries to come together (PT_HOLD_MAX_NS). */
static uint64_t hold_max(const struct pt *p)
{
	return PT_HOLD_MAX_NS + (uint64_t)p->nth * PT_HOLD_THREAD_NS;
}

/* When a stop fails: PT_STOP_MAX_NS, later by the holds' extra time. */
static uint64_t stop_max(const struct pt *p)
{
	return PT_STOP_MAX_NS + (p->hold_ns ? hold_max(p) - PT_HOLD_MAX_NS : 0);
}

int pt_stop_threads(struct pt *p)
{
	uint64_t t0 = mono_ns(), checked = t0;
	sigset_t chld, old;
	int i, left = 1, rounds = 0;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	while (left) {
		int nth = p->nth, moved = 0;
		uint64_t now, wake;

		left = 0;
		for (i = 0; i < p->nth; i++) {
			if (p->th[i].stopped)
				continue;
			if (pt_wait_stop(p, &p->th[i], true) != 1) {
				moved = 1;	/* the array may have changed */
				break;
			}
			left = 1;
		}
		if (moved || p->nth != nth) {
			left = 1;
			continue;
		}
		now = mono_ns();
		if (!left && p->hold_ns && now - t0 < hold_max(p) &&
		    make_late(p, now))
			left = 1;
		if (!left)
			break;
		wake = now + 1000000;
		interrupt_late(p, now, &wake);
		if (p->hold_ns && now - t0 < hold_max(p)) {
			int before = p->holds, sh = rounds / PT_HOLD_ROUNDS;
			uint64_t h = p->hold_ns << (sh < 8 ? sh : 8);

			hold(p, now, h < PT_HOLD_CAP_NS ? h : PT_HOLD_CAP_NS,
			     &wake);
			if (p->holds != before)
				rounds++;
		} else if (p->hold_ns && p->hold_fail) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			snprintf(p->err, sizeof(p->err), "thread %d did not "
				 "stop within %llu ms of the others (%d tries, "
				 "every thread let go while one was late)",
				 (int)first_late(p),
				 (unsigned long long)(hold_max(p) / 1000000),
				 p->retries + 1);
			return -EAGAIN;
		} else {
			interrupt_released(p);
		}
		if (now - checked > PT_STOP_CHECK_NS) {
			checked = now;
			for (i = 0; i < p->nth; i++)
				if (!p->th[i].stopped &&
				    thread_dead(p->th[i].tid)) {
					pt_drop_thread(p, p->th[i].tid);
					moved = 1;
					break;
				}
			if (moved)
				continue;
		}
		if (now - t0 > stop_max(p)) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			return -ETIMEDOUT;
		}
		sigtimedwait(&chld, NULL,
			     &(struct timespec){ .tv_nsec = (long)(wake > now ?
						 wake - now : 1000) });
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p->nth ? 0 : -ESRCH;
}

/* Let stopped thread i go (its registers back first): out of the list. */
static int detach_one(struct pt *p, int i)
{
	struct pt_thread *t = &p->th[i];
	int ret = 0;

	if (t->have_regs && ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) < 0)
		ret = -errno;
	ptrace(PTRACE_DETACH, t->tid, 0, t->pending_sig);
	pt_drop_thread(p, t->tid);
	return ret;
}

/*
 * A thread seized (or let go by hold(), or made late) but not in a ptrace
 * stop yet cannot be detached (PTRACE_DETACH fails: it would stay ubt's
 * tracee, stopped for the rest of the session): it is interrupted, and
 * detached when it reports its stop; the stopped ones go at once, so none
 * waits for another.
 */
int pt_let_go(struct pt *p, int keep)
{
	pid_t keep_tid = keep >= 0 && keep < p->nth ? p->th[keep].tid : 0;
	uint64_t t0 = mono_ns();
	sigset_t chld, old;
	int i, ret = 0;

	for (i = 0; i < p->nth; i++) {
		struct pt_thread *t = &p->th[i];

		if (!t->stopped && t->tid != keep_tid) {
			ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
			t->released = false;
			t->late_at = 0;
		}
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	for (;;) {
		int left = 0;

		for (i = 0; i < p->nth; i++) {
			struct pt_thread *t = &p->th[i];
			int w;

			if (t->tid == keep_tid)
				continue;
			if (t->stopped) {
				ret = detach_one(p, i) ?: ret;
				i = -1;		/* the list changed */
				continue;
			}
			w = pt_wait_stop(p, t, true);
			if (w == 1) {
				left++;
				continue;
			}
			i = -1;		/* stopped, gone or a new thread */
			left = 0;
		}
		if (!left || mono_ns() - t0 > PT_STOP_MAX_NS)
			break;
		sigtimedwait(&chld, NULL,
			     &(struct timespec){ .tv_nsec = 1000000 });
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* the kept one (if any) first, as the only one */
	for (i = 0; i < p->nth; i++)
		if (p->th[i].tid == keep_tid) {
			struct pt_thread k = p->th[i];

			p->th[0] = k;
			p->nth = 1;
			p->ctl = 0;
			return ret;
		}
	if (keep_tid)
		p->ctl = -1;
	return ret;
}
