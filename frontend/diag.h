/*
 * Diagnostics: errors and warnings in the user's program, collected with
 * byte-range locations and printed once by the caller, in bpftrace's format:
 *
 *   stdin:1:12-16: ERROR: Unknown function: nosuchfunc
 *   BEGIN { nosuchfunc(); }
 *           ~~~~~~~~~~
 *   HINT: ...
 */
#ifndef UBT_DIAG_H
#define UBT_DIAG_H

#include <stdbool.h>
#include <stdio.h>

#include "arena.h"

/*
 * A source location. Field names match bison's YYLTYPE so that the parser
 * can use it directly (%define api.location.type {struct ast_loc}).
 * Lines and columns are 1-based; last_column is one past the last
 * character, as bison counts it.
 */
struct ast_loc {
	int first_line, first_column;
	int last_line, last_column;
};

enum diag_level {
	DIAG_ERROR,
	DIAG_WARNING,
	DIAG_NOTE,	/* clang's notes: counted as neither */
};

struct diag {
	struct diag *next;
	enum diag_level level;
	struct ast_loc loc;	/* first_line == 0: no location */
	const char *msg;
	const char *sev;	/* clang's diagnostics ("error", "note"):
				 * printed in clang's format */
	const char *hints[4];
	int nhints;
};

struct diag_list {
	struct arena *arena;
	const char *filename;	/* "stdin" for -e, else the script path */
	const char *source;	/* whole program text, for the source line */
	long *line_start;	/* offset of each line in source, [0] line 1,
				 * [nlines] one past the end */
	int nlines;
	struct diag *head, **tail;
	int nerrors, nwarnings;
};

void diag_init(struct diag_list *d, struct arena *a, const char *filename,
	       const char *source);
/* Add a located error; returns the diag so hints can be attached. */
struct diag *diag_error(struct diag_list *d, const struct ast_loc *loc,
			const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct diag *diag_warning(struct diag_list *d, const struct ast_loc *loc,
			  const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void diag_hint(struct diag_list *d, struct diag *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Add one of clang's diagnostics on the program's C definitions, printed
 * as clang (and so bpftrace) prints it: "FILE:LINE:COL: SEV: msg", then
 * the source line and a '~' under the column; without loc (a place
 * outside the program), msg alone, the caller having put clang's location
 * and severity in it.
 */
struct diag *diag_clang(struct diag_list *d, enum diag_level level,
			const char *sev, const struct ast_loc *loc,
			const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Line `line` (1-based) of the source, without its newline, and its
 * length; NULL when there is no such line. Constant time. */
const char *diag_source_line(const struct diag_list *d, int line,
			     size_t *len);
/* Print all diagnostics in order, bpftrace's format (warnings not when
 * diag_no_warnings is set). */
void diag_print(const struct diag_list *d, FILE *f);
/* --no-warnings: no warning is printed (program, runtime, warnf()) */
extern bool diag_no_warnings;
static inline bool diag_has_errors(const struct diag_list *d)
{
	return d->nerrors > 0;
}

#endif
