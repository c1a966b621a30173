/*
 * The ubt driver: runs one program as the command line asks, in clear
 * steps: read -> frontend -> (codegen) -> (load, attach, run).
 */
#ifndef UBT_DRIVER_H
#define UBT_DRIVER_H

#include "cli.h"

/* Returns the process exit code: UBT_EXIT_OK, UBT_EXIT_ERROR, ... */
int driver_run(const struct cli_opts *o);

/*
 * Read the program named by o (-e text, a script file or "-" for stdin)
 * into a malloc'ed NUL-terminated string; *filename is the name used in
 * diagnostics ("stdin" for -e and "-"). 0 or -errno, after printing
 * "ubt: cannot read FILE: why".
 */
int driver_read_program(const struct cli_opts *o, char **source,
			const char **filename);

#endif
