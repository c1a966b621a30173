/*
 * probes-list [-v] [-p PID] [PATTERN]: probes_list() as `ubt -l` calls
 * it, for tests/probes-list.sh until the driver has -l.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"

int main(int argc, char **argv)
{
	bool verbose = false;
	int pid = 0, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			pid = atoi(argv[++i]);
		else
			break;
	}
	if (i < argc - 1) {
		fputs("usage: probes-list [-v] [-p PID] [PATTERN]\n", stderr);
		return 2;
	}
	return probes_list(i < argc ? argv[i] : NULL, pid, verbose, stdout,
			   stderr);
}
