/*
 * The ubt command line: bpftrace's options plus ubt's own, parsed into a
 * struct cli_opts. Nothing here runs anything; tools/driver.c does.
 */
#ifndef UBT_CLI_H
#define UBT_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "compile.h"

/* Exit codes of ubt (also documented in man/ubt.8). */
enum {
	UBT_EXIT_OK = 0,
	UBT_EXIT_ERROR = 1,	/* error in the program or at attach */
	UBT_EXIT_USAGE = 2,	/* bad command line */
	/* the output's reader went away: ubt dies of SIGPIPE (main()) */
	UBT_EXIT_PIPE = 128 + 13,
};

/* What to do after parsing the command line. */
enum cli_action {
	CLI_RUN,	/* compile (and, later, run) the program */
	CLI_HELP,	/* -h, --help: print cli_help() and exit 0 */
	CLI_VERSION,	/* -V, --version: print cli_version() and exit 0 */
	CLI_INFO,	/* --info: print info_print() and exit 0 */
	CLI_COMPAT_LIST,	/* --compat list: print compat_list(), exit 0 */
};

enum cli_format {
	FORMAT_TEXT,
	FORMAT_JSON,
};

enum cli_buffering {
	BUFFER_DEFAULT,	/* line buffered on a terminal, else full */
	BUFFER_NONE,
	BUFFER_LINE,
	BUFFER_FULL,
};

/* -d STAGE: a bit per stage; "all" sets every bit. */
enum cli_debug {
	DEBUG_AST = 1 << 0,
	DEBUG_SEMA = 1 << 1,
	DEBUG_IR = 1 << 2,
	DEBUG_BPF = 1 << 3,
	DEBUG_NATIVE = 1 << 4,
	DEBUG_ALL = (1 << 5) - 1,
};

struct cli_opts {
	enum cli_action action;

	/* the program: exactly one of these is set when action == CLI_RUN */
	const char *program;	/* -e PROGRAM */
	const char *script;	/* FILE, or "-" for stdin */

	/* positional parameters $1.. (the arguments after the program) */
	const char **params;
	int nparams;

	int pid;		/* -p PID, 0 if none */
	const char *cmd;	/* -c CMD, NULL if none */
	const char *output;	/* -o FILE, NULL for stdout */
	enum cli_format format;	/* -f text|json */
	enum cli_buffering buffering;	/* -B none|line|full */
	enum ubt_mode mode;	/* --mode auto|kernel|user */
	bool all_processes;	/* --all-processes */

	bool list;		/* -l [PATTERN] */
	const char *list_pattern;	/* NULL: list everything */

	int verbose;		/* -v */
	bool quiet;		/* -q */
	int helper_check;	/* -k: 1, -kk: 2 */
	bool unsafe;		/* --unsafe */
	unsigned debug;		/* -d STAGE: enum cli_debug bits */
	bool dry_run;		/* --dry-run */
	bool parse_only;	/* --parse-only */
	const char **include_dirs;	/* -I DIR (pointing into argv) */
	int ninclude_dirs;
	const char *probe_filter;	/* --probe-filter REGEX */
	const char **debuginfo;	/* --debuginfo DIR[:DIR] (into argv) */
	int ndebuginfo;
	const char **includes;	/* --include FILE */
	int nincludes;
	/* --metrics [ADDR:]PORT, --metrics-prefix, --metrics-max-keys */
	const char *metrics;
	const char *metrics_prefix;
	unsigned long long metrics_max_keys;
};

/*
 * Parse argv into *o. Returns 0 on success (see o->action), or -EINVAL
 * after printing a one-line error and the usage hint to err; the caller
 * then exits with UBT_EXIT_USAGE. o->params points into argv.
 * Uses getopt_long(), so it is not reentrant.
 */
int cli_parse(struct cli_opts *o, int argc, char **argv, FILE *err);
void cli_release(struct cli_opts *o);

/* The full --help text. */
void cli_help(FILE *f);
/* "ubt v0.1.0" */
void cli_version(FILE *f);
/* The one line printed after a command-line error. */
void cli_usage_hint(FILE *f);

/* Name of one DEBUG_* bit ("ast", ...); NULL for an unknown bit. */
const char *cli_debug_name(unsigned bit);

#endif
