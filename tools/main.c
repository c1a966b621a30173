/* ubt: parse the command line and hand it to the driver. */
#include <signal.h>
#include <stdio.h>

#include "cli.h"
#include "compat.h"
#include "driver.h"
#include "info.h"
#include "signals.h"

_Static_assert(UBT_EXIT_PIPE == 128 + SIGPIPE, "UBT_EXIT_PIPE");

int main(int argc, char **argv)
{
	struct cli_opts o;
	int rc;

	if (cli_parse(&o, argc, argv, stderr))
		return UBT_EXIT_USAGE;
	switch (o.action) {
	case CLI_HELP:
		cli_help(stdout);
		return UBT_EXIT_OK;
	case CLI_VERSION:
		cli_version(stdout);
		return UBT_EXIT_OK;
	case CLI_INFO:
		if (compat_from_env())
			return UBT_EXIT_USAGE;
		info_print(stdout);
		return UBT_EXIT_OK;
	case CLI_COMPAT_LIST:
		compat_list(stdout);
		return UBT_EXIT_OK;
	case CLI_RUN:
		break;
	}
	rc = driver_run(&o);
	cli_release(&o);
	/* as bpftrace, which SIGPIPE kills (after the detach, here) */
	if (rc == UBT_EXIT_PIPE)
		signals_end_by(SIGPIPE);
	if (fflush(stdout) && rc == UBT_EXIT_OK) {
		perror("ubt: cannot write output");
		rc = UBT_EXIT_ERROR;
	}
	return rc;
}
