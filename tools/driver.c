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
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ast.h"
#include "compat.h"
#include "compile.h"
#include "diag.h"
#include "driver.h"
#include "env.h"
#include "metrics.h"
#include "probes.h"
#include "run.h"
#include "sema.h"
#include "signals.h"
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
	compile_named_params(c);
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
	c->count_hits = o->metrics != NULL;
	c->probe_filter = o->probe_filter;
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

#define DRIVER_LINK_WHY \
	"a symbolic link of another user in a directory anyone can write to"
#define DRIVER_MAX_LINKS 40	/* the kernel's MAXSYMLINKS */

/* Sticky and world-writable (as /tmp): anyone may create files there. */
static bool driver_shared_dir(const struct stat *ds)
{
	return (ds->st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH);
}

/*
 * May the link lnk, in the directory ds, be followed?  The kernel's
 * fs.protected_symlinks rule (may_follow_link()): a link of ours, one
 * outside a sticky world-writable directory, or one of the directory's
 * owner; not another user's link where anyone can plant one.
 */
static bool driver_may_follow(const struct stat *lnk, const struct stat *ds)
{
	return lnk->st_uid == geteuid() || !driver_shared_dir(ds) ||
	       lnk->st_uid == ds->st_uid;
}

/*
 * Resolve path for -o one component at a time from directory fds (no
 * name looked up twice), following each symbolic link only where
 * driver_may_follow() lets it, every component and every link's own
 * components alike.  On success *dirfd is the final directory and
 * *name (malloc'ed) the last component, not a link (or absent); the
 * caller frees and closes.  -errno, with *why when the reason is ours.
 */
static int driver_walk_output(const char *path, int *dirfd, char **name,
			      const char **why)
{
	char *rest = xstrdup(path), *comp, *next;
	int dfd, links = 0, err;
	struct stat ds, st;

	dfd = open(path[0] == '/' ? "/" : ".",
		   O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		err = -errno;
		free(rest);
		return err;
	}
	comp = rest;
	for (;;) {
		char target[PATH_MAX];
		ssize_t n;
		int fd;

		while (*comp == '/')
			comp++;
		next = strchr(comp, '/');
		if (next)
			*next++ = 0;
		while (next && *next == '/')
			next++;
		if (!*comp || !strcmp(comp, ".")) {
			if (!next || !*next) {
				/* "dir/" or "dir/.": no file named */
				err = -EISDIR;
				goto fail;
			}
			comp = next;
			continue;
		}
		if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW)) {
			err = -errno;
			if (err == -ENOENT && (!next || !*next))
				break;	/* a new file */
			goto fail;
		}
		if (!S_ISLNK(st.st_mode)) {
			if (!next || !*next)
				break;
			fd = openat(dfd, comp, O_PATH | O_DIRECTORY |
					       O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				err = -errno;
				goto fail;
			}
			close(dfd);
			dfd = fd;
			comp = next;
			continue;
		}
		if (fstat(dfd, &ds)) {
			err = -errno;
			goto fail;
		}
		if (!driver_may_follow(&st, &ds)) {
			*why = DRIVER_LINK_WHY;
			err = -EPERM;
			goto fail;
		}
		if (++links > DRIVER_MAX_LINKS) {
			err = -ELOOP;
			goto fail;
		}
		n = readlinkat(dfd, comp, target, sizeof(target) - 1);
		if (n < 0 || n == 0) {
			err = n ? -errno : -ENOENT;
			goto fail;
		}
		target[n] = 0;
		/* the link's target, then what followed it */
		{
			size_t len = (size_t)n + 2 + (next ? strlen(next) : 0);
			char *joined = xmalloc(len);

			snprintf(joined, len, "%s%s%s", target,
				 next && *next ? "/" : "", next ? next : "");
			free(rest);
			rest = comp = joined;
		}
		if (target[0] == '/') {
			fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0) {
				err = -errno;
				goto fail;
			}
			close(dfd);
			dfd = fd;
		}
	}
	*name = xstrdup(comp);
	free(rest);
	*dirfd = dfd;
	return 0;
fail:
	free(rest);
	close(dfd);
	return err;
}

/*
 * fopen(path, "w") for -o, except that no symbolic link another user
 * could have planted is followed, in any component (driver_walk_output()),
 * and in a directory anyone can create files in (sticky and
 * world-writable, such as /tmp) no file that belongs to another user
 * (but the directory's owner) is written: someone may have put them
 * there for root to write through.  The kernel refuses both itself with
 * fs.protected_symlinks and fs.protected_regular, which not every
 * machine sets.  An existing file is emptied only once it is known to
 * be fit.  NULL with errno, and *why when the reason is ours.
 */
static FILE *driver_fopen_output(const char *path, const char **why)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW;
	bool shared;
	struct stat ds, st;
	char *name;
	FILE *f;
	int fd, dfd, err;

	*why = NULL;
	err = driver_walk_output(path, &dfd, &name, why);
	if (err) {
		errno = -err;
		return NULL;
	}
	if (fstat(dfd, &ds)) {
		err = errno;
		close(dfd);
		free(name);
		errno = err;
		return NULL;
	}
	shared = driver_shared_dir(&ds);
	if (shared)
		flags |= O_NONBLOCK;	/* never wait on someone's FIFO */
	fd = openat(dfd, name, flags, 0666);
	err = errno;
	close(dfd);
	free(name);
	if (fd < 0) {
		/* a link put there since the walk looked */
		if (err == ELOOP)
			*why = DRIVER_LINK_WHY;
		errno = err;
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
	signals_set_output(fileno(f));
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

/* -l -e PROGRAM: the probes each attach point of the program names, as
 * bpftrace 0.26 lists them (0.17 listed every probe). */
static int driver_list_program(const struct cli_opts *o)
{
	struct compile c;
	struct ast_node *p, *ap;
	int rc = UBT_EXIT_OK;

	compile_init(&c, "stdin", o->program);
	if (compile_frontend(&c, STAGE_PARSE)) {
		diag_print(&c.diag, stderr);
		compile_release(&c);
		return UBT_EXIT_ERROR;
	}
	for (p = c.program->program.probes; p; p = p->next)
		for (ap = p->probe.aps; ap; ap = ap->next)
			if (probes_list(ap->ap.raw, o->pid, o->verbose, stdout,
					stderr))
				rc = UBT_EXIT_ERROR;
	compile_release(&c);
	return rc;
}

/*
 * compat list-more: -l FILE lists the probes of the script FILE; a
 * pattern with a dot and no ':' or '*' that names no file draws v0.26's
 * warning, then lists as a pattern.
 */
static int driver_list_file(const struct cli_opts *o)
{
	const char *pat = o->list_pattern;
	struct cli_opts fo = *o;
	char *text = NULL;
	FILE *f = fopen(pat, "r");
	int rc;

	if (!f) {
		if (strchr(pat, '.') && !strpbrk(pat, ":*"))
			fprintf(stderr,
				"WARNING: It appears that '%s' is a filename but the file does not exist. Treating '%s' as a search pattern.\n",
				pat, pat);
		if (driver_check_pattern(pat))
			return UBT_EXIT_ERROR;
		return probes_list(pat, o->pid, o->verbose, stdout, stderr) ?
			       UBT_EXIT_ERROR : UBT_EXIT_OK;
	}
	if (driver_slurp(f, &text)) {
		fprintf(stderr, "ubt: cannot read %s: %s\n", pat,
			strerror(errno));
		fclose(f);
		return UBT_EXIT_ERROR;
	}
	fclose(f);
	fo.program = text;
	rc = driver_list_program(&fo);
	free(text);
	return rc;
}

int driver_run(const struct cli_opts *o)
{
	struct compile c;
	const char *filename;
	char *source;
	FILE *out = NULL;
	int rc;

	if (compat_from_env() || env_read())
		return UBT_EXIT_ERROR;
	probes_set_debuginfo(o->debuginfo, o->ndebuginfo);
	if (o->list && !o->program && o->list_pattern &&
	    compat_has(COMPAT_LIST_MORE))
		return driver_list_file(o);
	if (o->list && driver_check_pattern(o->list_pattern))
		return UBT_EXIT_ERROR;
	if (o->list && o->program)
		return driver_list_program(o);
	if (o->list)
		return probes_list(o->list_pattern, o->pid, o->verbose, stdout,
				   stderr) ? UBT_EXIT_ERROR : UBT_EXIT_OK;
	/*
	 * SIGINT/SIGTERM from here on are caught, even where ignored (a
	 * shell's background job): one that comes before the probes are
	 * attached ends ubt at once, even during a long compile (as
	 * bpftrace), any later one ends the run the ordinary way.
	 */
	if (!o->parse_only) {
		/* --metrics: SIGHUP clears the maps, the run goes on */
		if (o->metrics)
			signals_clear_on_hup();
		signals_early();
	}
	rc = driver_check_pid(o);
	if (rc)
		return rc;
	if (driver_read_program(o, &source, &filename))
		return UBT_EXIT_ERROR;

	compile_init(&c, filename, source);
	driver_setup_compile(&c, o);
	/*
	 * Loading BPF, ptrace and /proc/PID/mem of any process: root's
	 * (--dry-run too, which goes as far as loading), said once instead
	 * of libbpf's complaints (bpftrace: "only ... as the root user").
	 */
	if (!o->parse_only && geteuid()) {
		fprintf(stderr, "ubt: cannot run the program: ubt needs to "
			"run as root\n");
		rc = UBT_EXIT_ERROR;
		goto out;
	}
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
	if (c.sema && c.sema->no_debug_info)
		env_no_debug_info();
	if (c.sema)
		env_str_trailer(c.sema->str_trailer);
	rc = driver_execute(&c, o, out);
out:
	if (out && out != stdout && fclose(out) && !rc) {
		fprintf(stderr, "ubt: cannot write output file %s: %s\n",
			o->output, strerror(errno));
		rc = UBT_EXIT_ERROR;
	}
	compile_release(&c);
	free(source);
	/* the output's reader went away: the run ended, detached */
	if (signals_pipe_broken())
		rc = UBT_EXIT_PIPE;
	/* a signal that came while nothing ran (--dry-run, an error) */
	signals_check();
	return rc;
}
