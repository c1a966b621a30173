/*
 * Frontend stanza runner: reads every .test file in tests/frontend and runs
 * each stanza as one TAP test. The format is described in tests/README.md.
 *
 *   frontend-test [--bless] [DIR-or-FILE...]
 *   frontend-test --dump [-p] 'program'     (print what a stanza would see)
 *
 * --bless rewrites the expected output of every stanza with the actual
 * output (review the diff before committing it).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "compile.h"
#include "util.h"

enum stanza_kind {
	K_PARSE,	/* parse succeeds; expected: AST dump */
	K_PARSE_ERROR,	/* parse fails; expected: diagnostics */
	K_SEMA_ERROR,	/* compile_frontend(STAGE_SEMA) fails; expected: diagnostics */
	K_SEMA_OK,	/* compile_frontend(STAGE_SEMA) succeeds; expected: diagnostics (warnings) */
	K_SEMA_AST,	/* compile_frontend(STAGE_SEMA) succeeds; expected: AST dump */
};

static const struct {
	const char *name;
	enum stanza_kind kind;
} kinds[] = {
	{ "parse", K_PARSE },
	{ "parse-error", K_PARSE_ERROR },
	{ "sema-error", K_SEMA_ERROR },
	{ "sema-ok", K_SEMA_OK },
	{ "sema-ast", K_SEMA_AST },
};

struct stanza {
	const char *file;
	int line;		/* of the ### header */
	enum stanza_kind kind;
	char *title;
	char *header;		/* allocated; title points into it */
	char *params[32];
	char *opts[32];		/* allocated option lines */
	int nopts;
	int nparams;
	int pid;
	bool has_cmd, unsafe;
	const char *kernel_lacks;	/* %kernel-lacks: UBT_KERNEL_LACKS */
	bool newest;			/* %compat newest */
	char *program;
	char *expected;
	/* for --bless: the byte range of the expected text in the file */
	size_t exp_start, exp_end;
};

struct strbuf {
	char *s;
	size_t len, cap;
};

static void sb_add(struct strbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct strbuf b = { 0 };
	char tmp[65536];
	size_t n;

	if (!f)
		return NULL;
	sb_add(&b, "", 0);
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		sb_add(&b, tmp, n);
	fclose(f);
	*len = b.len;
	return b.s;
}

/* Remove trailing newlines (and spaces at the very end). */
static void trim_end(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

/*
 * Run one stanza: returns the actual output (AST dump or diagnostics) and
 * whether the result (success/failure) was the expected one.
 */
static char *run_stanza(const struct stanza *st, bool *result_ok)
{
	struct compile c;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	int err;

	if (!f) {
		perror("open_memstream");
		exit(99);
	}
	compile_init(&c, "stdin", st->program);
	c.params = (const char **)st->params;
	c.nparams = st->nparams;
	c.pid = st->pid;
	c.has_cmd = st->has_cmd;
	c.unsafe = st->unsafe;
	if (st->kernel_lacks)
		setenv("UBT_KERNEL_LACKS", st->kernel_lacks, 1);
	else
		unsetenv("UBT_KERNEL_LACKS");
	compat_set(st->newest ? COMPAT_NEWEST : COMPAT_0_17);
	if (st->kind == K_PARSE || st->kind == K_PARSE_ERROR)
		err = compile_frontend(&c, STAGE_PARSE);
	else
		err = compile_frontend(&c, STAGE_SEMA);
	switch (st->kind) {
	case K_PARSE:
	case K_SEMA_AST:
		*result_ok = err == 0;
		if (err)
			diag_print(&c.diag, f);
		else
			ast_dump(f, c.program);
		break;
	case K_PARSE_ERROR:
	case K_SEMA_ERROR:
		*result_ok = err != 0;
		diag_print(&c.diag, f);
		break;
	case K_SEMA_OK:
		*result_ok = err == 0;
		diag_print(&c.diag, f);
		break;
	}
	fclose(f);
	compile_release(&c);
	trim_end(out);
	return out;
}

/* Split a file into stanzas. Returns the count; exits 99 on format errors. */
static int parse_file(const char *path, char *text, struct stanza **out)
{
	struct stanza *sts = NULL;
	int n = 0, lineno = 0;
	char *p = text;
	struct stanza *cur = NULL;
	struct strbuf prog = { 0 }, exp = { 0 };
	int state = 0;	/* 0 before a stanza, 1 options/program, 2 expected */

#define FINISH()							\
	do {								\
		if (cur) {						\
			if (state != 2) {				\
				fprintf(stderr, "%s:%d: stanza without '---'\n", \
					path, cur->line);		\
				exit(99);				\
			}						\
			cur->program = prog.s ? prog.s : xstrdup("");	\
			cur->expected = exp.s ? exp.s : xstrdup("");	\
			trim_end(cur->expected);			\
			cur->exp_end = p - text;			\
			memset(&prog, 0, sizeof(prog));			\
			memset(&exp, 0, sizeof(exp));			\
		}							\
	} while (0)

	while (*p) {
		char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		size_t next = eol ? len + 1 : len;

		lineno++;
		if (!strncmp(p, "###", 3)) {
			char *h, *colon;
			size_t k;

			FINISH();
			sts = xrealloc(sts, (n + 1) * sizeof(*sts));
			cur = &sts[n++];
			memset(cur, 0, sizeof(*cur));
			cur->file = path;
			cur->line = lineno;
			h = strndup(p + 3, len - 3);
			cur->header = h;
			while (*h == ' ')
				h++;
			colon = strchr(h, ':');
			if (colon)
				*colon = '\0';
			for (k = 0; k < ARRAY_SIZE(kinds); k++)
				if (!strcmp(kinds[k].name, h))
					break;
			if (k == ARRAY_SIZE(kinds)) {
				fprintf(stderr, "%s:%d: unknown stanza kind '%s'\n",
					path, lineno, h);
				exit(99);
			}
			cur->kind = kinds[k].kind;
			cur->title = colon ? colon + 1 : h;
			while (*cur->title == ' ')
				cur->title++;
			state = 1;
		} else if (state == 0) {
			/* comments and blank lines between stanzas */
		} else if (state == 1 && p[0] == '%' && !prog.s) {
			char *opt = strndup(p + 1, len - 1);
			char *arg = strchr(opt, ' ');

			if (cur->nopts < (int)ARRAY_SIZE(cur->opts))
				cur->opts[cur->nopts++] = opt;

			if (arg)
				*arg++ = '\0';
			if (!strcmp(opt, "param") && arg &&
			    cur->nparams < (int)ARRAY_SIZE(cur->params)) {
				cur->params[cur->nparams++] = arg;
			} else if (!strcmp(opt, "param-empty")) {
				cur->params[cur->nparams++] = "";
			} else if (!strcmp(opt, "pid") && arg) {
				cur->pid = atoi(arg);
			} else if (!strcmp(opt, "cmd")) {
				cur->has_cmd = true;
			} else if (!strcmp(opt, "unsafe")) {
				cur->unsafe = true;
			} else if (!strcmp(opt, "kernel-lacks") && arg) {
				cur->kernel_lacks = arg;
			} else if (!strcmp(opt, "compat") && arg &&
				   !strcmp(arg, "newest")) {
				cur->newest = true;
			} else {
				fprintf(stderr, "%s:%d: unknown option '%%%s'\n",
					path, lineno, opt);
				exit(99);
			}
		} else if (state == 1 && len == 3 && !strncmp(p, "---", 3)) {
			state = 2;
			cur->exp_start = p + next - text;
			/* the program ends without its last newline */
			if (prog.s && prog.len && prog.s[prog.len - 1] == '\n')
				prog.s[--prog.len] = '\0';
		} else if (state == 1) {
			sb_add(&prog, p, next);
			if (!eol)
				sb_add(&prog, "", 0);
		} else if (p[0] != '#') {
			/* expected output; '#' lines are comments */
			sb_add(&exp, p, next);
		}
		p += next;
	}
	FINISH();
#undef FINISH
	*out = sts;
	return n;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_diag_lines(const char *label, const char *s)
{
	printf("#   %s:\n", label);
	while (*s) {
		const char *eol = strchr(s, '\n');
		int n = eol ? (int)(eol - s) : (int)strlen(s);

		printf("#     |%.*s\n", n, s);
		s += eol ? n + 1 : n;
	}
}

static int testno, failures;

static void run_file(const char *path, bool bless)
{
	size_t len;
	char *text = read_file(path, &len);
	struct stanza *sts;
	struct strbuf nb = { 0 };
	size_t done = 0;
	int n;

	if (!text) {
		fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
		exit(99);
	}
	n = parse_file(path, text, &sts);
	for (int i = 0; i < n; i++) {
		struct stanza *st = &sts[i];
		bool result_ok;
		char *actual = run_stanza(st, &result_ok);
		bool ok = result_ok && !strcmp(actual, st->expected);
		const char *base = strrchr(path, '/');

		base = base ? base + 1 : path;
		testno++;
		printf("%s %d - %s:%d %s\n", ok ? "ok" : "not ok", testno,
		       base, st->line, st->title);
		if (!ok) {
			failures++;
			if (!result_ok)
				printf("#   the %s unexpectedly\n",
				       st->kind == K_PARSE_ERROR ||
				       st->kind == K_SEMA_ERROR ?
					       "program was accepted" :
					       "program was rejected");
			print_diag_lines("expected", st->expected);
			print_diag_lines("actual", actual);
		}
		if (bless) {
			sb_add(&nb, text + done, st->exp_start - done);
			sb_add(&nb, actual, strlen(actual));
			sb_add(&nb, "\n", 1);
			/* keep the blank line that separates stanzas */
			if (i + 1 < n)
				sb_add(&nb, "\n", 1);
			done = st->exp_end;
		}
		free(actual);
	}
	for (int i = 0; i < n; i++) {
		free(sts[i].header);
		free(sts[i].program);
		free(sts[i].expected);
		for (int j = 0; j < sts[i].nopts; j++)
			free(sts[i].opts[j]);
	}
	free(sts);
	if (bless && n) {
		FILE *f;

		sb_add(&nb, text + done, len - done);
		f = fopen(path, "w");
		if (!f || fwrite(nb.s, 1, nb.len, f) != nb.len || fclose(f)) {
			fprintf(stderr, "cannot write %s\n", path);
			exit(99);
		}
	}
	free(nb.s);
	free(text);
}

static int dump_program(int argc, char **argv)
{
	struct stanza st = { .kind = K_PARSE };
	bool result_ok;
	char *out;
	int i = 0;

	if (argc > 0 && !strcmp(argv[0], "-s")) {
		st.kind = K_SEMA_AST;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: frontend-test --dump [-s] 'program' [params]\n");
		return 2;
	}
	st.program = argv[i++];
	for (; i < argc && st.nparams < (int)ARRAY_SIZE(st.params); i++)
		st.params[st.nparams++] = argv[i];
	out = run_stanza(&st, &result_ok);
	printf("%s\n", out);
	free(out);
	return result_ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *srcdir = getenv("top_srcdir");
	char **paths = NULL;
	int npaths = 0;
	bool bless = false;
	int i = 1;

	if (argc > 1 && !strcmp(argv[1], "--dump"))
		return dump_program(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--bless")) {
		bless = true;
		i++;
	}
	if (i == argc) {
		static char *def[1];
		char *dir;

		dir = xmalloc(strlen(srcdir ? srcdir : ".") + 32);
		sprintf(dir, "%s/tests/frontend", srcdir ? srcdir : ".");
		def[0] = dir;
		argv = def;
		argc = 1;
		i = 0;
	}
	for (; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;

		if (!d) {
			paths = xrealloc(paths, (npaths + 1) * sizeof(*paths));
			paths[npaths++] = xstrdup(argv[i]);
			continue;
		}
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);

			if (l < 6 || strcmp(e->d_name + l - 5, ".test"))
				continue;
			paths = xrealloc(paths, (npaths + 1) * sizeof(*paths));
			paths[npaths] = xmalloc(strlen(argv[i]) + l + 2);
			sprintf(paths[npaths++], "%s/%s", argv[i], e->d_name);
		}
		closedir(d);
	}
	if (!npaths) {
		printf("1..0 # SKIP no stanza files\n");
		return 99;
	}
	qsort(paths, npaths, sizeof(*paths), cmp_name);
	for (i = 0; i < npaths; i++) {
		run_file(paths[i], bless);
		free(paths[i]);
	}
	free(paths);
	printf("1..%d\n", testno);
	return failures ? 1 : 0;
}
