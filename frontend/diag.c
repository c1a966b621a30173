#include <stdarg.h>
#include <string.h>

#include "compat.h"
#include "diag.h"
#include "util.h"

/* Where each line starts, so that printing a diagnostic or finding a
 * location's offset does not scan the program from its start. */
static void diag_index_lines(struct diag_list *d)
{
	const char *src = d->source;
	long n = 1, i = 0;

	if (!src)
		return;
	for (const char *p = src; (p = strchr(p, '\n')); p++)
		n++;
	d->line_start = arena_alloc(d->arena,
				    (n + 1) * sizeof(*d->line_start));
	d->line_start[0] = 0;
	for (const char *p = src; (p = strchr(p, '\n')); p++)
		d->line_start[++i] = p - src + 1;
	/* as if a newline followed the last line */
	d->line_start[n] = (long)strlen(src) + 1;
	d->nlines = (int)n;
}

void diag_init(struct diag_list *d, struct arena *a, const char *filename,
	       const char *source)
{
	memset(d, 0, sizeof(*d));
	d->arena = a;
	d->filename = filename;
	d->source = source;
	d->tail = &d->head;
	diag_index_lines(d);
}

static struct diag *diag_add(struct diag_list *d, enum diag_level level,
			     const struct ast_loc *loc, const char *fmt,
			     va_list ap)
{
	struct diag *g = arena_alloc(d->arena, sizeof(*g));

	g->level = level;
	if (loc)
		g->loc = *loc;
	g->msg = arena_vprintf(d->arena, fmt, ap);
	*d->tail = g;
	d->tail = &g->next;
	if (level == DIAG_ERROR)
		d->nerrors++;
	else if (level == DIAG_WARNING)
		d->nwarnings++;
	return g;
}

struct diag *diag_error(struct diag_list *d, const struct ast_loc *loc,
			const char *fmt, ...)
{
	va_list ap;
	struct diag *g;

	va_start(ap, fmt);
	g = diag_add(d, DIAG_ERROR, loc, fmt, ap);
	va_end(ap);
	return g;
}

struct diag *diag_warning(struct diag_list *d, const struct ast_loc *loc,
			  const char *fmt, ...)
{
	va_list ap;
	struct diag *g;

	va_start(ap, fmt);
	g = diag_add(d, DIAG_WARNING, loc, fmt, ap);
	va_end(ap);
	return g;
}

struct diag *diag_clang(struct diag_list *d, enum diag_level level,
			const char *sev, const struct ast_loc *loc,
			const char *fmt, ...)
{
	va_list ap;
	struct diag *g;

	va_start(ap, fmt);
	g = diag_add(d, level, loc, fmt, ap);
	va_end(ap);
	g->sev = sev;
	return g;
}

void diag_hint(struct diag_list *d, struct diag *g, const char *fmt, ...)
{
	va_list ap;

	if (g->nhints >= (int)ARRAY_SIZE(g->hints))
		return;
	va_start(ap, fmt);
	g->hints[g->nhints++] = arena_vprintf(d->arena, fmt, ap);
	va_end(ap);
}

const char *diag_source_line(const struct diag_list *d, int line,
			     size_t *len)
{
	if (!d->line_start || line < 1 || line > d->nlines)
		return NULL;
	*len = (size_t)(d->line_start[line] - d->line_start[line - 1] - 1);
	return d->source + d->line_start[line - 1];
}

/*
 * Where bpftrace 0.17 starts a location on line (len bytes): its lexer
 * moves a location's start only at white space (and at a new line), so a
 * token written right after another starts where that one did ("print(
 * foo(1))" puts foo's error at print).  The line is read as its lexer
 * reads it: no step inside a string or a comment.  col is the token's own
 * column (1-based); the newest bpftrace starts there (compat entry
 * token-columns).
 */
static int diag_017_column(const char *line, size_t len, int col)
{
	enum { CODE, STR, COMMENT } st = CODE;
	int begin = 1;

	/* a location that starts at white space (a probe's) stays */
	if (col >= 1 && (size_t)col <= len &&
	    (line[col - 1] == ' ' || line[col - 1] == '\t'))
		return col;

	for (size_t i = 0; i + 1 < (size_t)col && i < len; i++) {
		char c = line[i];

		switch (st) {
		case CODE:
			if (c == ' ' || c == '\t')
				begin = (int)i + 2;
			else if (c == '"')
				st = STR;
			else if (c == '/' && i + 1 < len && line[i + 1] == '*')
				st = COMMENT, i++;
			else if (c == '/' && i + 1 < len && line[i + 1] == '/')
				return col;	/* the token is in a comment */
			break;
		case STR:
			if (c == '\\')
				i++;
			else if (c == '"')
				st = CODE;
			break;
		case COMMENT:
			if (c == '*' && i + 1 < len && line[i + 1] == '/')
				st = CODE, i++;
			break;
		}
	}
	return begin;
}

/*
 * bpftrace's format: "FILE:LINE:COL-COL: ERROR: msg", the source line with
 * tabs shown as four spaces, a '~' underline; "FILE:LINE-LINE: ..." without
 * the source for a multi-line range; "ERROR: msg" without a location.
 */
static void diag_print_one(const struct diag_list *d, const struct diag *g,
			   FILE *f)
{
	const char *level = g->level == DIAG_ERROR ? "ERROR" : "WARNING";
	const struct ast_loc *l = &g->loc;
	const char *line;
	size_t len, i, n;
	int first, last;
	char *out;

	if (g->sev) {
		if (l->first_line <= 0) {
			fprintf(f, "%s\n", g->msg);
			goto hints;
		}
		fprintf(f, "%s:%d:%d: %s: %s\n", d->filename, l->first_line,
			l->first_column, g->sev, g->msg);
		goto source;
	}
	if (l->first_line <= 0) {
		fprintf(f, "%s: %s\n", level, g->msg);
		goto hints;
	}
	if (l->last_line > l->first_line) {
		fprintf(f, "%s:%d-%d: %s: %s\n", d->filename, l->first_line,
			l->last_line, level, g->msg);
		goto hints;
	}
	first = l->first_column;
	line = diag_source_line(d, l->first_line, &len);
	if (line && !compat_has(COMPAT_TOKEN_COLUMNS))
		first = diag_017_column(line, len, first);
	fprintf(f, "%s:%d:%d-%d: %s: %s\n", d->filename, l->first_line,
		first, l->last_column, level, g->msg);
	if (!line)
		goto hints;
	goto underline;
source:
	line = diag_source_line(d, l->first_line, &len);
	if (!line)
		goto hints;
	first = l->first_column;
underline:
	last = l->last_column;
	/* underline what is on the line, at least one character */
	if (last > (int)len + 1)
		last = (int)len + 1;
	if (last <= first)
		last = first + 1;
	/*
	 * Each of the two lines is written at once: stderr is unbuffered,
	 * and a long line written a character at a time costs a system
	 * call per character.
	 */
	out = xmalloc(4 * len + (size_t)(last - first) + (size_t)first + 2);
	n = 0;
	for (i = 0; i < len; i++) {
		if (line[i] == '\t') {
			memcpy(out + n, "    ", 4);
			n += 4;
		} else {
			out[n++] = line[i];
		}
	}
	out[n++] = '\n';
	fwrite(out, 1, n, f);
	n = 0;
	for (i = 1; i < (size_t)first; i++) {
		if (i <= len && line[i - 1] == '\t') {
			memcpy(out + n, "    ", 4);
			n += 4;
		} else {
			out[n++] = ' ';
		}
	}
	for (i = first; i < (size_t)last; i++)
		out[n++] = '~';
	out[n++] = '\n';
	fwrite(out, 1, n, f);
	free(out);
hints:
	for (int h = 0; h < g->nhints; h++)
		fprintf(f, "HINT: %s\n", g->hints[h]);
}

bool diag_no_warnings;

void diag_print(const struct diag_list *d, FILE *f)
{
	for (const struct diag *g = d->head; g; g = g->next)
		if (g->level != DIAG_WARNING || !diag_no_warnings)
			diag_print_one(d, g, f);
}
