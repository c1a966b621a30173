/* The two-stage SIGINT/SIGTERM of a run, SIGUSR1 and SIGPIPE
 * (signals.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include "signals.h"

static volatile sig_atomic_t signals_req;	/* requests counted */
static volatile sig_atomic_t signals_relayed;	/* the guard's count */
static volatile sig_atomic_t signals_sig;	/* the first one */
static volatile sig_atomic_t signals_usr1;
static volatile sig_atomic_t signals_hup;
static bool signals_hup_wanted;		/* signals_clear_on_hup() */
static volatile sig_atomic_t signals_pipe;
static volatile sig_atomic_t signals_mode;	/* enum below */
static pid_t signals_relay = -1;	/* the guard, in the worker */
static int signals_out = -1;		/* the program's output */

enum {
	SIGNALS_OFF,	/* default actions */
	SIGNALS_EARLY,	/* caught, nothing attached yet */
	SIGNALS_RUN,	/* caught, the run ends the ordinary way */
};

/*
 * A request ends the run; a second one ends ubt at once.  The worker
 * (shim/user/guard.c) may get one request twice: from the terminal or a
 * process-group kill, and relayed by the guard, which got it too.  The
 * guard numbers what it relays (sigqueue()), so the two are counted
 * apart: at once is a second direct one or a second relayed one.
 */
static void signals_on(int sig, siginfo_t *si, void *ctx)
{
	bool relayed = signals_relay > 0 && si && si->si_code == SI_QUEUE &&
		       si->si_pid == signals_relay;
	int n;

	(void)ctx;
	if (!signals_sig)
		signals_sig = sig;
	if (relayed) {
		n = si->si_value.sival_int;
		if (n > signals_relayed)
			signals_relayed = n;
	} else {
		signals_req++;
	}
	/*
	 * Nothing attached, no command started, no process touched yet (the
	 * frontend, the expansion, the code being built): end at once, as
	 * bpftrace does while it compiles, instead of after the build.
	 */
	if (signals_req >= 2 || signals_relayed >= 2 ||
	    signals_mode == SIGNALS_EARLY) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

/* Only a write to the program's output that can never succeed (its
 * reader gone) ends the run: not one to a pipe of ubt's own. */
static void signals_on_pipe(int sig)
{
	struct pollfd p = { .fd = signals_out, .events = POLLOUT };
	int e = errno;

	(void)sig;
	if (signals_out >= 0 && poll(&p, 1, 0) == 1 &&
	    (p.revents & (POLLERR | POLLHUP)))
		signals_pipe = 1;
	errno = e;
}

static void signals_on_usr1(int sig)
{
	(void)sig;
	signals_usr1 = 1;
}

static void signals_on_hup(int sig)
{
	(void)sig;
	signals_hup = 1;
}

static void signals_install(void)
{
	struct sigaction sa = { .sa_sigaction = signals_on,
				.sa_flags = SA_RESTART | SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = signals_on_pipe;
	sigaction(SIGPIPE, &sa, NULL);
	if (signals_hup_wanted) {
		sa.sa_handler = signals_on_hup;
		sigaction(SIGHUP, &sa, NULL);
	}
}

void signals_clear_on_hup(void)
{
	signals_hup_wanted = true;
}

void signals_early(void)
{
	signals_mode = SIGNALS_EARLY;
	signals_install();
}

void signals_check(void)
{
	if (signals_mode == SIGNALS_EARLY && signals_stopping())
		signals_end_by(signals_sig ? signals_sig : SIGINT);
}

void signals_catch(void)
{
	struct sigaction sa = { .sa_handler = signals_on_usr1,
				.sa_flags = SA_RESTART };

	/* one that came while nothing was attached ends ubt now */
	signals_check();
	signals_mode = SIGNALS_RUN;
	signals_usr1 = 0;
	signals_hup = 0;
	signals_install();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

void signals_restore(void)
{
	/* the worker ends: a request relayed late must not kill it after
	 * the run (its exit status is ubt's) */
	signal(SIGINT, signals_relay > 0 ? SIG_IGN : SIG_DFL);
	signal(SIGTERM, signals_relay > 0 ? SIG_IGN : SIG_DFL);
	/* one that comes late must not kill ubt while it ends */
	signal(SIGUSR1, SIG_IGN);
	if (signals_hup_wanted)
		signal(SIGHUP, SIG_IGN);
	signals_mode = SIGNALS_OFF;
}

void signals_set_output(int fd)
{
	signals_out = fd;
}

void signals_set_relay(pid_t from)
{
	signals_relay = from;
}

bool signals_take_usr1(void)
{
	if (!signals_usr1)
		return false;
	signals_usr1 = 0;
	return true;
}

bool signals_take_hup(void)
{
	if (!signals_hup)
		return false;
	signals_hup = 0;
	return true;
}

bool signals_stopping(void)
{
	return signals_req || signals_relayed || signals_pipe;
}

bool signals_pipe_broken(void)
{
	return signals_pipe;
}

void signals_stop(void)
{
	if (!signals_req)
		signals_req = 1;
}

void signals_end_by(int sig)
{
	/* the worker's status is passed on by the guard, which dies so */
	if (signals_relay > 0)
		_exit(128 + sig);
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}
