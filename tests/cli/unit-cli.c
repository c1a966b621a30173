/*
 * cli_parse(): what each command line puts into struct cli_opts. The
 * messages and exit codes of bad command lines are checked end to end by
 * tests/cli/cmdline.sh; this checks the fields the driver reads.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int test_n, test_failed;

__attribute__((format(printf, 2, 3)))
static void check(int cond, const char *fmt, ...)
{
	va_list ap;

	test_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", test_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		test_failed++;
}

/* Parse a NULL-terminated argument list (argv[0] is added). */
static int parse(struct cli_opts *o, char **err, ...)
{
	/* static: o->params points into it after we return */
	static char *argv[32];
	int argc = 1;
	size_t errlen;
	FILE *f;
	va_list ap;
	int rc;

	argv[0] = "ubt";
	va_start(ap, err);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	f = open_memstream(err, &errlen);
	if (!f)
		abort();
	rc = cli_parse(o, argc, argv, f);
	fclose(f);
	return rc;
}

static int streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

int main(void)
{
	struct cli_opts o;
	char *err;
	int rc;

	rc = parse(&o, &err, "script.bt", "42", "foo", NULL);
	check(rc == 0 && !*err, "script with parameters parses");
	check(streq(o.script, "script.bt") && !o.program,
	      "the first argument is the script");
	check(o.nparams == 2 && streq(o.params[0], "42") &&
	      streq(o.params[1], "foo"), "the rest are $1 and $2");
	check(o.action == CLI_RUN && o.format == FORMAT_TEXT &&
	      o.buffering == BUFFER_DEFAULT && o.mode == MODE_AUTO &&
	      !o.pid && !o.cmd && !o.output && !o.list && !o.verbose &&
	      !o.quiet && !o.helper_check && !o.unsafe && !o.debug &&
	      !o.dry_run && !o.parse_only, "defaults");
	free(err);

	rc = parse(&o, &err, "-e", "BEGIN {}", "a", "-v", "b", NULL);
	check(rc == 0 && streq(o.program, "BEGIN {}") && !o.script,
	      "-e sets the program");
	check(o.nparams == 2 && streq(o.params[0], "a") &&
	      streq(o.params[1], "b") && o.verbose == 1,
	      "with -e every argument is a parameter, options may follow");
	free(err);

	rc = parse(&o, &err, "-e", "x", "--", "-5", "--y", NULL);
	check(rc == 0 && o.nparams == 2 && streq(o.params[0], "-5") &&
	      streq(o.params[1], "--y"), "parameters after -- may start with -");
	free(err);

	rc = parse(&o, &err, "-", NULL);
	check(rc == 0 && streq(o.script, "-") && o.nparams == 0,
	      "- reads the program from stdin");
	free(err);

	rc = parse(&o, &err, "-p", "123", "-o", "out.txt", "-f", "json",
		   "-B", "none", "--mode", "user", "-q", "-vv", "-kkk",
		   "--unsafe", "--dry-run", "x.bt", NULL);
	check(rc == 0 && o.pid == 123 && streq(o.output, "out.txt") &&
	      o.format == FORMAT_JSON && o.buffering == BUFFER_NONE &&
	      o.mode == MODE_USER && o.quiet && o.verbose == 2 &&
	      o.helper_check == 2 && o.unsafe && o.dry_run,
	      "option values land in their fields");
	free(err);

	rc = parse(&o, &err, "-B", "line", "--mode=kernel", "-c", "ls -l",
		   "-e", "x", NULL);
	check(rc == 0 && o.buffering == BUFFER_LINE &&
	      o.mode == MODE_KERNEL && streq(o.cmd, "ls -l") && !o.pid,
	      "-B line, --mode=kernel, -c");
	free(err);

	rc = parse(&o, &err, "-d", "ast,ir", "-d", "native", "-e", "x", NULL);
	check(rc == 0 && o.debug == (DEBUG_AST | DEBUG_IR | DEBUG_NATIVE),
	      "-d stages add up");
	free(err);
	rc = parse(&o, &err, "-d", "all", "-e", "x", NULL);
	check(rc == 0 && o.debug == DEBUG_ALL, "-d all");
	free(err);
	check(streq(cli_debug_name(DEBUG_SEMA), "sema") &&
	      streq(cli_debug_name(DEBUG_BPF), "bpf") &&
	      !cli_debug_name(DEBUG_AST | DEBUG_IR), "cli_debug_name");

	rc = parse(&o, &err, "-l", "tracepoint:*", NULL);
	check(rc == 0 && o.list && streq(o.list_pattern, "tracepoint:*") &&
	      !o.script && o.nparams == 0, "-l PATTERN");
	free(err);
	rc = parse(&o, &err, "-l", NULL);
	check(rc == 0 && o.list && !o.list_pattern, "-l alone");
	free(err);
	rc = parse(&o, &err, "-l", "-e", "BEGIN {}", NULL);
	check(rc == 0 && o.list && streq(o.program, "BEGIN {}"),
	      "-l with -e lists the program's probes");
	free(err);

	rc = parse(&o, &err, "--parse-only", "-d", "ast", "x.bt", NULL);
	check(rc == 0 && o.parse_only && o.debug == DEBUG_AST,
	      "--parse-only -d ast");
	free(err);

	rc = parse(&o, &err, "-V", "-x", NULL);
	check(rc == 0 && o.action == CLI_VERSION, "-V");
	free(err);
	rc = parse(&o, &err, "--help", NULL);
	check(rc == 0 && o.action == CLI_HELP, "--help");
	free(err);

	/* The parser can be called again: getopt state is reset. */
	rc = parse(&o, &err, "-x", NULL);
	check(rc < 0 && !strncmp(err, "ubt: unknown option: -x\nUSAGE:\n", 31),
	      "a bad option gives one line and the usage");
	free(err);
	rc = parse(&o, &err, "-p", "7", "-e", "x", NULL);
	check(rc == 0 && o.pid == 7 && !*err,
	      "parsing again after an error starts afresh");
	free(err);

	printf("1..%d\n", test_n);
	return test_failed ? 1 : 0;
}
