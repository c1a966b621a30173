#include <stdarg.h>
#include <string.h>

#include "diag.h"
#include "util.h"

void diag_init(struct diag_list *d, struct arena *a, const char *filename,
	       const char *source)
{
	memset(d, 0, sizeof(*d));
	d->arena = a;
	d->filename = filename;
	d->source = source;
	d->tail = &d->head;
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
	else
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

void diag_hint(struct diag_list *d, struct diag *g, const char *fmt, ...)
{
	va_list ap;

	if (g->nhints >= (int)ARRAY_SIZE(g->hints))
		return;
	va_start(ap, fmt);
	g->hints[g->nhints++] = arena_vprintf(d->arena, fmt, ap);
	va_end(ap);
}

/* Return line n (1-based) of src and its length, or NULL. */
static const char *source_line(const char *src, int n, size_t *len)
{
	const char *p = src;

	if (!src || n < 1)
		return NULL;
	while (--n > 0) {
		p = strchr(p, '\n');
		if (!p)
			return NULL;
		p++;
	}
	*len = strcspn(p, "\n");
	return p;
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
	size_t len, i;
	int first, last;

	if (l->first_line <= 0) {
		fprintf(f, "%s: %s\n", level, g->msg);
		goto hints;
	}
	if (l->last_line > l->first_line) {
		fprintf(f, "%s:%d-%d: %s: %s\n", d->filename, l->first_line,
			l->last_line, level, g->msg);
		goto hints;
	}
	fprintf(f, "%s:%d:%d-%d: %s: %s\n", d->filename, l->first_line,
		l->first_column, l->last_column, level, g->msg);
	line = source_line(d->source, l->first_line, &len);
	if (!line)
		goto hints;
	for (i = 0; i < len; i++) {
		if (line[i] == '\t')
			fputs("    ", f);
		else
			fputc(line[i], f);
	}
	fputc('\n', f);
	first = l->first_column;
	last = l->last_column;
	/* underline what is on the line, at least one character */
	if (last > (int)len + 1)
		last = (int)len + 1;
	if (last <= first)
		last = first + 1;
	for (i = 1; i < (size_t)first; i++)
		fputs(i <= len && line[i - 1] == '\t' ? "    " : " ", f);
	for (i = first; i < (size_t)last; i++)
		fputc('~', f);
	fputc('\n', f);
hints:
	for (int h = 0; h < g->nhints; h++)
		fprintf(f, "HINT: %s\n", g->hints[h]);
}

void diag_print(const struct diag_list *d, FILE *f)
{
	for (const struct diag *g = d->head; g; g = g->next)
		diag_print_one(d, g, f);
}
