/* ubt: parse the command line and hand it to the driver. */
#include <stdio.h>

#include "cli.h"
#include "driver.h"
#include "info.h"

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
		info_print(stdout);
		return UBT_EXIT_OK;
	case CLI_RUN:
		break;
	}
	rc = driver_run(&o);
	cli_release(&o);
	if (fflush(stdout) && rc == UBT_EXIT_OK) {
		perror("ubt: cannot write output");
		rc = UBT_EXIT_ERROR;
	}
	return rc;
}
