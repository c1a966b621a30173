/* The two-stage SIGINT/SIGTERM of a run, and SIGUSR1 (signals.h). */
#include <signal.h>
#include <stddef.h>
#include <time.h>
#include "signals.h"

static volatile sig_atomic_t signals_req;
static volatile sig_atomic_t signals_usr1;
static struct timespec signals_at;	/* of the first one */

/*
 * A second SIGINT/SIGTERM ends ubt at once, unless it comes within
 * SIGNALS_SAME_NS of the first: one request that reached ubt twice (a
 * signal to the process group, or to the guard, which passes it on, and
 * to the worker: shim/user/guard.c).
 */
#define SIGNALS_SAME_NS 200000000LL

static void signals_on(int sig)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (signals_req &&
	    (now.tv_sec - signals_at.tv_sec) * 1000000000LL +
			    (now.tv_nsec - signals_at.tv_nsec) >=
		    SIGNALS_SAME_NS) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	if (!signals_req)
		signals_at = now;
	signals_req = 1;
}

static void signals_on_usr1(int sig)
{
	(void)sig;
	signals_usr1 = 1;
}

void signals_catch(void)
{
	struct sigaction sa = { .sa_handler = signals_on,
				.sa_flags = SA_RESTART };

	signals_req = 0;
	signals_usr1 = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = signals_on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
}

void signals_restore(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	/* one that comes late must not kill ubt while it ends */
	signal(SIGUSR1, SIG_IGN);
}

bool signals_take_usr1(void)
{
	if (!signals_usr1)
		return false;
	signals_usr1 = 0;
	return true;
}

bool signals_stopping(void)
{
	return signals_req;
}

void signals_stop(void)
{
	signals_req = 1;
}
