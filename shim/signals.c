/* The two-stage SIGINT/SIGTERM of a run (signals.h). */
#include <signal.h>
#include <stddef.h>
#include "signals.h"

static volatile sig_atomic_t signals_req;

static void signals_on(int sig)
{
	if (signals_req) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	signals_req = 1;
}

void signals_catch(void)
{
	struct sigaction sa = { .sa_handler = signals_on,
				.sa_flags = SA_RESTART };

	signals_req = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void signals_restore(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

bool signals_stopping(void)
{
	return signals_req;
}

void signals_stop(void)
{
	signals_req = 1;
}
