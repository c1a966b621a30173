/*
 * The ubt driver: one program from the command line through the pipeline
 *
 *   read -> parse -> sema -> run (codegen, load, attach, print; shim/run/run.c)
 *
 * Each step is a function returning 0 or an exit code.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "driver.h"
#include "env.h"
#include "metrics.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "util.h"

/* Read a whole stream into a NUL-terminated malloc'ed buffer. */
static int driver_slurp(FILE *f, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = xmalloc(cap);

	for (;;) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (len + 1 < cap) {
			if (ferror(f)) {
				int err = errno ? errno : EIO;

				free(buf);
				return -err;
			}
			break;
		}
		cap *= 2;
		buf = xrealloc(buf, cap);
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int driver_read_program(const struct cli_opts *o, char **source,
			const char **filename)
{
	FILE *f;
	int err;

	if (o->program) {
		*source = xstrdup(o->program);
		*filename = "stdin";
		return 0;
	}
	BUG_ON(!o->script);
	if (!strcmp(o->script, "-")) {
		*filename = "stdin";
		err = driver_slurp(stdin, source);
		if (err)
			fprintf(stderr, "ubt: cannot read stdin: %s\n",
				strerror(-err));
		return err;
	}
	*filename = o->script;
	f = fopen(o->script, "r");
	if (!f) {
		err = -errno;
		fprintf(stderr, "ERROR: failed to open file '%s': %s\n",
			o->script, strerror(-err));
		return err;
	}
	err = driver_slurp(f, source);
	fclose(f);
	if (err)
		fprintf(stderr, "ubt: cannot read %s: %s\n", o->script,
			strerror(-err));
	return err;
}

/*
 * -p: the process must exist before anything else is done (it gives the
 * program its meaning), except for --parse-only, which only parses.
 */
static int driver_check_pid(const struct cli_opts *o)
{
	if (!o->pid || o->parse_only)
		return 0;
	if (kill(o->pid, 0) && errno == ESRCH) {
		fprintf(stderr, "ubt: cannot attach to pid %d: %s\n", o->pid,
			strerror(ESRCH));
		return UBT_EXIT_ERROR;
	}
	return 0;
}

/* The options that give the program its meaning. */
static void driver_setup_compile(struct compile *c, const struct cli_opts *o)
{
	c->params = o->params;
	c->nparams = o->nparams;
	c->pid = o->pid;
	c->has_cmd = o->cmd != NULL;
	c->cmd = o->cmd;
	c->unsafe = o->unsafe;
	c->helper_check = o->helper_check;
	c->mode = o->mode;
	c->include_dirs = o->include_dirs;
	c->ninclude_dirs = o->ninclude_dirs;
	c->includes = o->includes;
	c->nincludes = o->nincludes;
}

static int driver_print_diags(struct compile *c)
{
	diag_print(&c->diag, stderr);
	return diag_has_errors(&c->diag) ? UBT_EXIT_ERROR : 0;
}

/* Parse, printing the tree for -d ast. */
static int driver_parse(struct compile *c, const struct cli_opts *o)
{
	if (compile_frontend(c, STAGE_PARSE) || diag_has_errors(&c->diag)) {
		driver_print_diags(c);
		return UBT_EXIT_ERROR;
	}
	if (o->debug & DEBUG_AST) {
		ast_dump(stdout, c->program);
		fflush(stdout);
	}
	/*
	 * Warnings are printed once, by the last frontend step that runs:
	 * here for --parse-only, else after semantic analysis.
	 */
	if (o->parse_only)
		return driver_print_diags(c);
	return 0;
}

/*
 * Semantic analysis: the typed AST (frontend/sema.h); -d sema. Prints the
 * diagnostics of the whole frontend (parser warnings included) once.
 */
static int driver_sema(struct compile *c, const struct cli_opts *o)
{
	int err = compile_frontend(c, STAGE_SEMA);

	if (driver_print_diags(c) || err)
		return UBT_EXIT_ERROR;
	if (o->debug & DEBUG_SEMA) {
		sema_dump(stdout, c);
		fflush(stdout);
	}
	return 0;
}

/*
 * fopen(path, "w") for -o, except that in a directory anyone can create
 * files in (sticky and world-writable, such as /tmp) it follows no
 * symbolic link and writes no file that belongs to another user (but the
 * directory's owner): someone may have put them there for root to write
 * through.  The kernel refuses both itself with fs.protected_symlinks and
 * fs.protected_regular, which not every machine sets.  An existing file
 * is emptied only once it is known to be fit.  NULL with errno, and *why
 * when the reason is ours.
 */
static FILE *driver_fopen_output(const char *path, const char **why)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY;
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	bool shared = false;
	struct stat ds, st;
	FILE *f;
	int fd;

	*why = NULL;
	if (slash == dir)
		dir[1] = 0;	/* "/x": the root */
	else if (slash)
		*slash = 0;
	if (!stat(slash ? dir : ".", &ds) && (ds.st_mode & S_ISVTX) &&
	    (ds.st_mode & S_IWOTH))
		shared = true;
	free(dir);
	if (shared) {
		/* a link of ours or the directory's owner: nobody else can
		 * replace it (sticky); any other, or one made meanwhile, is
		 * not followed */
		if (lstat(path, &st) || !S_ISLNK(st.st_mode))
			flags |= O_NOFOLLOW;
		else if (st.st_uid != geteuid() && st.st_uid != ds.st_uid) {
			*why = "a symbolic link of another user in a "
			       "directory anyone can write to";
			errno = EPERM;
			return NULL;
		}
		flags |= O_NONBLOCK;	/* never wait on someone's FIFO */
	}
	fd = open(path, flags, 0666);
	if (fd < 0) {
		if (shared && errno == ELOOP)
			*why = "a symbolic link of another user in a "
			       "directory anyone can write to";
		return NULL;
	}
	if (fstat(fd, &st))
		goto fail;
	if (shared && st.st_uid != geteuid() && st.st_uid != ds.st_uid) {
		*why = "a file of another user in a directory anyone can "
		       "write to";
		errno = EPERM;
		goto fail;
	}
	if ((shared &&
	     fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) ||
	    (S_ISREG(st.st_mode) && ftruncate(fd, 0)))
		goto fail;
	f = fdopen(fd, "w");
	if (f)
		return f;
fail:
	{
		int e = errno;

		close(fd);
		errno = e;
	}
	return NULL;
}

/* -o FILE and -B MODE: where and how the program's output is written. */
static int driver_open_output(const struct cli_opts *o, FILE **out)
{
	const char *why;
	FILE *f = stdout;
	int mode;

	if (o->output) {
		f = driver_fopen_output(o->output, &why);
		if (!f) {
			fprintf(stderr, "ubt: cannot open output file %s: %s\n",
				o->output, why ? why : strerror(errno));
			return UBT_EXIT_ERROR;
		}
	}
	switch (o->buffering) {
	case BUFFER_NONE:
		mode = _IONBF;
		break;
	case BUFFER_LINE:
		mode = _IOLBF;
		break;
	case BUFFER_FULL:
		mode = _IOFBF;
		break;
	case BUFFER_DEFAULT:
	default:
		mode = isatty(fileno(f)) ? _IOLBF : _IOFBF;
		break;
	}
	setvbuf(f, NULL, mode, 0);
	*out = f;
	return 0;
}

/*
 * Code generation, load, attach, run until exit()/Ctrl-C/-c exit, print
 * maps, detach (shim/kernel/kernel.c). --dry-run stops before loading.
 */
static int driver_execute(struct compile *c, const struct cli_opts *o,
			  FILE *out)
{
	struct run_opts ro = {
		.sz = sizeof(ro),
		.pid = o->pid,
		.cmd = o->cmd,
		.mode = o->mode,
		.all_processes = o->all_processes,
		.dry_run = o->dry_run,
		.dump_ir = o->debug & DEBUG_IR,
		.dump_bpf = o->debug & DEBUG_BPF,
		.dump_native = o->debug & DEBUG_NATIVE,
		.verbose = o->verbose,
		.quiet = o->quiet,
		.out = out,
		.json = o->format == FORMAT_JSON,
	};
	struct metrics_opts mo = {
		.sz = sizeof(mo),
		.listen = o->metrics,
		.prefix = o->metrics_prefix,
		.max_keys = o->metrics_max_keys,
	};
	int rc;

	/* --metrics: the port bound before anything is attached */
	if (o->metrics && !o->dry_run &&
	    metrics_open(&mo, &ro.metrics))
		return UBT_EXIT_ERROR;
	if (ro.metrics && o->verbose)
		fprintf(stderr, "ubt: metrics at port %d, path /metrics\n",
			metrics_port(ro.metrics));
	rc = shim_run(c, &ro);
	metrics_free(ro.metrics);
	return rc;
}

/*
 * -l PATTERN: characters no attach point can hold are errors, as bpftrace
 * says them (the lexer's "invalid character", "unterminated string"); a
 * pattern that is no attach point otherwise simply matches nothing.
 */
static int driver_check_pattern(const char *pattern)
{
	struct compile c;
	struct diag_list bad;
	struct diag *g, **tail;

	if (!pattern)
		return 0;
	compile_init(&c, "stdin", pattern);
	compile_frontend(&c, STAGE_PARSE);
	bad = c.diag;
	bad.head = NULL;
	tail = &bad.head;
	for (g = c.diag.head; g; g = g->next) {
		if (strncmp(g->msg, "invalid character", 17) &&
		    strncmp(g->msg, "unterminated string", 19))
			continue;
		*tail = arena_alloc(&c.arena, sizeof(**tail));
		**tail = *g;
		(*tail)->next = NULL;
		tail = &(*tail)->next;
	}
	diag_print(&bad, stderr);
	compile_release(&c);
	return bad.head ? -EINVAL : 0;
}

int driver_run(const struct cli_opts *o)
{
	struct compile c;
	const char *filename;
	char *source;
	FILE *out = NULL;
	int rc;

	if (env_read())
		return UBT_EXIT_ERROR;
	if (o->list && driver_check_pattern(o->list_pattern))
		return UBT_EXIT_ERROR;
	if (o->list)
		return probes_list(o->list_pattern, o->pid, o->verbose, stdout,
				   stderr) ? UBT_EXIT_ERROR : UBT_EXIT_OK;
	rc = driver_check_pid(o);
	if (rc)
		return rc;
	if (driver_read_program(o, &source, &filename))
		return UBT_EXIT_ERROR;

	compile_init(&c, filename, source);
	driver_setup_compile(&c, o);
	if (!o->parse_only) {
		rc = driver_open_output(o, &out);
		if (rc)
			goto out;
	}
	rc = driver_parse(&c, o);
	if (rc || o->parse_only)
		goto out;
	rc = driver_sema(&c, o);
	if (rc)
		goto out;
	if (c.sema && c.sema->no_cpp_demangle)
		env_no_cpp_demangle();
	rc = driver_execute(&c, o, out);
out:
	if (out && out != stdout && fclose(out) && !rc) {
		fprintf(stderr, "ubt: cannot write output file %s: %s\n",
			o->output, strerror(errno));
		rc = UBT_EXIT_ERROR;
	}
	compile_release(&c);
	free(source);
	return rc;
}
