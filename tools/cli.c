/*
 * The ubt command line: option parsing, --help and --version.
 *
 * Options and their meanings follow bpftrace's; a misuse prints one line
 * "ubt: <what failed>: <why>" and the usage hint, and the caller exits 2.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compat.h"
#include "diag.h"
#include "metrics.h"
#include "util.h"

enum {
	OPT_DRY_RUN = 256,
	OPT_ALL_PROCESSES,
	OPT_COMPAT,
	OPT_DEBUGINFO,
	OPT_INFO,
	OPT_INCLUDE,
	OPT_METRICS,
	OPT_METRICS_MAX_KEYS,
	OPT_METRICS_PREFIX,
	OPT_MODE,
	OPT_NO_WARNINGS,
	OPT_PARSE_ONLY,
	OPT_PROBE_FILTER,
	OPT_UNSAFE,
	OPT_USDT_FILE_ACTIVATION,
};

static const char cli_short_opts[] = ":B:c:d:e:f:hI:klo:p:qvV";

static const struct option cli_long_opts[] = {
	{ "all-processes", no_argument, NULL, OPT_ALL_PROCESSES },
	{ "cmd", required_argument, NULL, 'c' },	/* bpftrace 0.26's */
	{ "compat", required_argument, NULL, OPT_COMPAT },
	{ "debuginfo", required_argument, NULL, OPT_DEBUGINFO },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "help", no_argument, NULL, 'h' },
	{ "info", no_argument, NULL, OPT_INFO },
	{ "list", no_argument, NULL, 'l' },
	{ "include", required_argument, NULL, OPT_INCLUDE },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "metrics-max-keys", required_argument, NULL,
	  OPT_METRICS_MAX_KEYS },
	{ "metrics-prefix", required_argument, NULL, OPT_METRICS_PREFIX },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "no-warnings", no_argument, NULL, OPT_NO_WARNINGS },
	{ "output", required_argument, NULL, 'o' },
	{ "parse-only", no_argument, NULL, OPT_PARSE_ONLY },
	{ "pid", required_argument, NULL, 'p' },
	{ "probe-filter", required_argument, NULL, OPT_PROBE_FILTER },
	{ "quiet", no_argument, NULL, 'q' },
	{ "unsafe", no_argument, NULL, OPT_UNSAFE },
	{ "usdt-file-activation", no_argument, NULL,
	  OPT_USDT_FILE_ACTIVATION },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static const char *const cli_debug_names[] = {
	"ast", "sema", "ir", "bpf", "native",
};

void cli_help(FILE *f)
{
	fputs("USAGE:\n"
	      "    ubt [options] filename [args...]\n"
	      "    ubt [options] - <stdin input>\n"
	      "    ubt [options] -e 'program' [args...]\n"
	      "\n"
	      "OPTIONS:\n"
	      "    -B MODE        output buffering mode ('none', 'line', 'full')\n"
	      "    -f FORMAT      output format ('text', 'json')\n"
	      "    -o, --output file\n"
	      "                   redirect ubt output to file\n"
	      "    -e 'program'   execute this program (the last one given)\n"
	      "    -h, --help     show this help message\n"
	      "    -I DIR         add the directory to the include search path\n"
	      "    --include FILE add an #include file before the C definitions\n"
	      "    -l, --list [search]\n"
	      "                   list probes\n"
	      "    -p, --pid PID  attach to process PID (its user probes may run inside it)\n"
	      "    -c, --cmd 'CMD'\n"
	      "                   run CMD and attach to the resulting process\n"
	      "    --mode MODE    where user probes run ('auto', 'kernel', 'user')\n"
	      "    --compat VERSION\n"
	      "                   behave and print as bpftrace '0.17' (default) or the 'newest' release ('list': the differences)\n"
	      "    --debuginfo DIR[:DIR]\n"
	      "                   look for stripped binaries' debug files in DIR first\n"
	      "    --probe-filter REGEX\n"
	      "                   only run probes whose name matches REGEX (BEGIN and END always)\n"
	      "    --all-processes\n"
	      "                   without -p/-c: user-mode probes also in processes already running\n"
	      "    --metrics [ADDR:]PORT\n"
	      "                   serve the maps to Prometheus at http://ADDR:PORT/metrics (ADDR 127.0.0.1)\n"
	      "    --metrics-prefix PREFIX\n"
	      "                   metric names PREFIX + map name (default 'ubt_')\n"
	      "    --metrics-max-keys N\n"
	      "                   serve at most N keys of a map (default 10000)\n"
	      "    --unsafe       allow unsafe builtin functions\n"
	      "    -q, --quiet    keep messages quiet\n"
	      "    --info         print information about kernel BPF support\n"
	      "    --usdt-file-activation\n"
	      "                   activate usdt semaphores based on file path (always so)\n"
	      "    -k             emit a warning when a bpf helper returns an error (except read functions)\n"
	      "    -kk            check all bpf helper functions\n"
	      "    -V, --version  ubt version\n"
	      "    --no-warnings  disable all warning messages\n"
	      "\n"
	      "TROUBLESHOOTING OPTIONS:\n"
	      "    -v, --verbose  verbose messages\n"
	      "    -d STAGE       print debug info for STAGE ('ast', 'sema', 'ir', 'bpf', 'native', 'all')\n"
	      "    --dry-run      compile and load the program, but do not attach or run it\n"
	      "    --parse-only   check the program's syntax: print nothing, exit 0 if well-formed\n"
	      "\n"
	      "EXIT STATUS:\n"
	      "    0 success, 1 error in the program or at attach, 2 bad command line\n"
	      "\n"
	      "EXAMPLES:\n"
	      "ubt -l 'tracepoint:syscalls:*sleep*'\n"
	      "    list tracepoints containing \"sleep\"\n"
	      "ubt -e 'tracepoint:syscalls:sys_enter_nanosleep { printf(\"%d sleeping\\n\", pid); }'\n"
	      "    trace processes calling sleep\n"
	      "ubt -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'\n"
	      "    count syscalls by process name\n"
	      "ubt --parse-only script.bt\n"
	      "    check the syntax of script.bt\n",
	      f);
}

void cli_version(FILE *f)
{
	fprintf(f, "ubt v%s\n", PACKAGE_VERSION);
	/* What ubt's output is checked against (scripts that test for a
	 * bpftrace version find one here). */
	fputs("compatible with bpftrace v0.17.0\n", f);
}

void cli_usage_hint(FILE *f)
{
	fputs("Try 'ubt --help' for more information.\n", f);
}

const char *cli_debug_name(unsigned bit)
{
	for (size_t i = 0; i < ARRAY_SIZE(cli_debug_names); i++)
		if (bit == 1u << i)
			return cli_debug_names[i];
	return NULL;
}

/* "ubt: " and the message, then the usage (help) or the hint to it. */
static int cli_verror(FILE *err, bool help, const char *fmt, va_list ap)
{
	fputs("ubt: ", err);
	vfprintf(err, fmt, ap);
	fputc('\n', err);
	if (help)
		cli_help(err);
	else
		cli_usage_hint(err);
	return -EINVAL;
}

__attribute__((format(printf, 2, 3)))
static int cli_error(FILE *err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = cli_verror(err, false, fmt, ap);
	va_end(ap);
	return ret;
}

/* PID_MAX_LIMIT of 64-bit kernels: no pid_max is larger */
#define CLI_PID_LIMIT 4194304

/*
 * -p in the newest bpftrace's words (compat pid-errors): a number in any
 * base (0x, 0b, 0 octal) up to CLI_PID_LIMIT.
 */
static int cli_parse_pid_newest(const char *s, int *pid, FILE *err)
{
	const char *t = s;
	unsigned long long v;
	int base = 0;
	char *end;

	if (t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
		base = 2;
		t += 2;
	}
	errno = 0;
	v = isdigit((unsigned char)*t) ? strtoull(t, &end, base) : 0;
	if (!isdigit((unsigned char)*t) || end == t) {
		fprintf(err, "ERROR: Failed to parse pid: invalid integer: %s\n",
			s);
		return -EINVAL;
	}
	if (errno == ERANGE) {
		fprintf(err, "ERROR: Failed to parse pid: overflow error, maximum value is %llu: %s\n",
			ULLONG_MAX, s);
		return -EINVAL;
	}
	if (*end) {
		fprintf(err, "ERROR: Failed to parse pid: invalid trailing bytes: %s\n",
			s);
		return -EINVAL;
	}
	if (v > CLI_PID_LIMIT || !v) {
		fprintf(err, "ERROR: Pid out of range: %llu\n", v);
		return -EINVAL;
	}
	*pid = (int)v;
	return 0;
}

/*
 * -p: a decimal number in 1..CLI_PID_LIMIT; else bpftrace's error, and
 * no hint (bpftrace gives none).  Checked after the other options, which
 * may choose the compat level.
 */
static int cli_parse_pid(const char *s, int *pid, FILE *err)
{
	long max = CLI_PID_LIMIT;
	char *end;
	long v;

	if (compat_has(COMPAT_PID_ERRORS))
		return cli_parse_pid_newest(s, pid, err);
	errno = 0;
	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end) {
		fprintf(err, "ERROR: pid '%s' is not a valid decimal number\n",
			s);
		return -EINVAL;
	}
	if (errno || v < 1 || v > max) {
		fprintf(err, "ERROR: pid '%s' out of valid pid range [1,%ld]\n",
			s, max);
		return -EINVAL;
	}
	*pid = (int)v;
	return 0;
}

/* An option getopt does not know, or without its argument: the message,
 * then the usage (as bpftrace prints it). */
__attribute__((format(printf, 2, 3)))
static int cli_bad_option(FILE *err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = cli_verror(err, true, fmt, ap);
	va_end(ap);
	return ret;
}

/* -d: one stage or a comma-separated list of stages. */
static int cli_parse_debug(const char *arg, unsigned *bits, FILE *err)
{
	const char *p = arg;

	for (;;) {
		size_t n = strcspn(p, ",");
		size_t i;

		if (n == 3 && !strncmp(p, "all", 3)) {
			*bits |= DEBUG_ALL;
		} else {
			for (i = 0; i < ARRAY_SIZE(cli_debug_names); i++)
				if (strlen(cli_debug_names[i]) == n &&
				    !strncmp(p, cli_debug_names[i], n))
					break;
			if (i == ARRAY_SIZE(cli_debug_names))
				return cli_error(err,
						 "unknown debug stage '%.*s': expected 'ast', 'sema', 'ir', 'bpf', 'native' or 'all'",
						 (int)n, p);
			*bits |= 1u << i;
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

/*
 * The option a getopt error is about, as the user wrote it: "-p", "--mode".
 * A long option sets optopt to 0 (unknown) or to its value (>= 256, or
 * 'h'/'V' for --help/--version) and has been consumed whole, so it is
 * argv[optind - 1]; a short option may sit inside a cluster ("-qx").
 */
static const char *cli_opt_name(char **argv, char *buf, size_t size)
{
	const char *arg = argv[optind - 1];

	if (optopt > 0 && optopt < 256 &&
	    !((optopt == 'h' || optopt == 'V') && !strncmp(arg, "--", 2)))
		snprintf(buf, size, "-%c", optopt);
	else
		snprintf(buf, size, "%.*s", (int)strcspn(arg, "="), arg);
	return buf;
}

int cli_parse(struct cli_opts *o, int argc, char **argv, FILE *err)
{
	const char *pid_arg = NULL;
	char name[64];
	int c;

	*o = (struct cli_opts){
		.action = CLI_RUN,
		.format = FORMAT_TEXT,
		.buffering = BUFFER_DEFAULT,
		.mode = MODE_AUTO,
	};

	opterr = 0;
	optind = 0;	/* glibc: full reinitialisation */
	while ((c = getopt_long(argc, argv, cli_short_opts, cli_long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'B':
			if (!strcmp(optarg, "none"))
				o->buffering = BUFFER_NONE;
			else if (!strcmp(optarg, "line"))
				o->buffering = BUFFER_LINE;
			else if (!strcmp(optarg, "full"))
				o->buffering = BUFFER_FULL;
			else {
				/* bpftrace's words */
				fputs("ERROR: USAGE: -B must be either 'line', "
				      "'full', or 'none'.\n", err);
				return -EINVAL;
			}
			break;
		case 'c':
			if (!*optarg)
				return cli_error(err, "invalid command for -c: empty");
			o->cmd = optarg;
			break;
		case 'd':
			if (cli_parse_debug(optarg, &o->debug, err))
				return -EINVAL;
			break;
		case 'e':
			/* the last one, as bpftrace (0.17 and 0.26) */
			o->program = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "text"))
				o->format = FORMAT_TEXT;
			else if (!strcmp(optarg, "json"))
				o->format = FORMAT_JSON;
			else {
				/* bpftrace's words */
				fprintf(err, "ERROR: Invalid output format \"%s\"\n"
					"Valid formats: 'text', 'json'\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			o->action = CLI_HELP;
			return 0;
		case 'I':
			o->include_dirs = xrealloc(o->include_dirs,
						   (o->ninclude_dirs + 1) *
							   sizeof(char *));
			o->include_dirs[o->ninclude_dirs++] = optarg;
			break;
		case OPT_INCLUDE:
			o->includes = xrealloc(o->includes,
					       (o->nincludes + 1) *
						       sizeof(char *));
			o->includes[o->nincludes++] = optarg;
			break;
		case 'k':
			if (o->helper_check < 2)
				o->helper_check++;
			break;
		case 'l':
			o->list = true;
			break;
		case 'o':
			if (!*optarg)
				return cli_error(err, "invalid output file for -o: empty");
			o->output = optarg;
			break;
		case 'p':
			pid_arg = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'V':
			o->action = CLI_VERSION;
			return 0;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_ALL_PROCESSES:
			o->all_processes = true;
			break;
		case OPT_INFO:
			o->action = CLI_INFO;
			return 0;
		case OPT_NO_WARNINGS:
			diag_no_warnings = true;
			break;
		case OPT_USDT_FILE_ACTIVATION:
			/* semaphores are counted by file already: the kernel
			 * keeps them in every process of the binary */
			break;
		case OPT_COMPAT: {
			enum compat_level l;

			if (!strcmp(optarg, "list")) {
				o->action = CLI_COMPAT_LIST;
				return 0;
			}
			if (compat_parse(optarg, &l))
				return cli_error(err,
						 "invalid compat '%s': expected '0.17', 'newest' or 'list'",
						 optarg);
			compat_set(l);
			break;
		}
		case OPT_MODE:
			if (!strcmp(optarg, "auto"))
				o->mode = MODE_AUTO;
			else if (!strcmp(optarg, "kernel"))
				o->mode = MODE_KERNEL;
			else if (!strcmp(optarg, "user"))
				o->mode = MODE_USER;
			else
				return cli_error(err,
						 "invalid mode '%s': expected 'auto', 'kernel' or 'user'",
						 optarg);
			break;
		case OPT_METRICS: {
			const char *why;

			if (metrics_parse_listen(optarg, &why))
				return cli_error(err,
						 "invalid address for --metrics '%s': %s",
						 optarg, why);
			o->metrics = optarg;
			break;
		}
		case OPT_METRICS_PREFIX:
			if (!metrics_prefix_ok(optarg))
				return cli_error(err,
						 "invalid --metrics-prefix '%s': letters, digits and _ (not first)",
						 optarg);
			o->metrics_prefix = optarg;
			break;
		case OPT_METRICS_MAX_KEYS: {
			char *end;

			errno = 0;
			o->metrics_max_keys = strtoull(optarg, &end, 10);
			if (!*optarg || *end || errno || *optarg == '-' ||
			    !o->metrics_max_keys)
				return cli_error(err,
						 "invalid --metrics-max-keys '%s': expected a positive number",
						 optarg);
			break;
		}
		case OPT_DEBUGINFO:
			o->debuginfo = xrealloc(o->debuginfo,
						(o->ndebuginfo + 1) *
							sizeof(char *));
			o->debuginfo[o->ndebuginfo++] = optarg;
			break;
		case OPT_PROBE_FILTER:
			o->probe_filter = optarg;
			break;
		case OPT_PARSE_ONLY:
			o->parse_only = true;
			break;
		case OPT_UNSAFE:
			o->unsafe = true;
			break;
		case ':':
			return cli_bad_option(err,
					      "option requires an argument: %s",
					      cli_opt_name(argv, name,
							   sizeof(name)));
		case '?':
		default:
			cli_opt_name(argv, name, sizeof(name));
			if (optopt && name[1] == '-')
				return cli_bad_option(err,
						      "option takes no argument: %s",
						      name);
			return cli_bad_option(err, "unknown option: %s", name);
		}
	}

	if ((pid_arg || o->helper_check) && compat_from_env())
		return -EINVAL;
	if (pid_arg && cli_parse_pid(pid_arg, &o->pid, err))
		return -EINVAL;
	/* the newest: one -k checks map lookups too, -kk is refused */
	if (o->helper_check && compat_has(COMPAT_HELPER_CHECK)) {
		if (o->helper_check > 1) {
			fprintf(err, "ERROR: USAGE: -kk has been deprecated. Use a single -k for runtime warnings for errors in map lookups and probe reads.\n");
			return -EINVAL;
		}
		o->helper_check = 2;
	}
	if (o->cmd && o->pid)
		return cli_error(err, "cannot use both -c and -p");
	/* processes already running: only system-wide probes take them */
	if (o->all_processes && (o->cmd || o->pid))
		return cli_error(err, "cannot use --all-processes with %s",
				 o->cmd ? "-c" : "-p");
	if ((o->metrics_prefix || o->metrics_max_keys) && !o->metrics)
		return cli_error(err, "cannot use %s without --metrics",
				 o->metrics_prefix ? "--metrics-prefix" :
						     "--metrics-max-keys");
	if (o->parse_only) {
		unsigned later = o->debug & ~(unsigned)DEBUG_AST;

		if (o->list)
			return cli_error(err,
					 "cannot use both -l and --parse-only");
		if (o->dry_run)
			return cli_error(err,
					 "cannot use both --dry-run and --parse-only");
		if (later)
			return cli_error(err,
					 "cannot use -d %s with --parse-only: it stops after parsing",
					 cli_debug_name(later & -later));
	}

	argv += optind;
	argc -= optind;
	if (o->program) {
		/* every argument after the options is a positional parameter */
	} else if (o->list) {
		if (argc > 1)
			return cli_error(err,
					 "too many arguments for -l: '%s'",
					 argv[1]);
		o->list_pattern = argc ? argv[0] : NULL;
		argc = 0;
	} else if (argc) {
		o->script = argv[0];
		argv++;
		argc--;
	} else {
		return cli_error(err,
				 "no program given: use -e 'program' or a script file");
	}
	o->params = (const char **)argv;
	o->nparams = argc;
	return 0;
}

void cli_release(struct cli_opts *o)
{
	/* params point into argv; only the include lists are allocated */
	free(o->include_dirs);
	free(o->includes);
	free(o->debuginfo);
	*o = (struct cli_opts){ 0 };
}
