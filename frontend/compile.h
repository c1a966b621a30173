/*
 * One compilation: the arena, the diagnostics, the program and the options
 * that affect meaning. The frontend passes run in order, each in its own
 * file, chained as  err = err ?: pass(c);  and stop at the first pass that
 * reports errors.
 */
#ifndef UBT_COMPILE_H
#define UBT_COMPILE_H

#include <stdbool.h>

#include "arena.h"
#include "ast.h"
#include "diag.h"

struct cdefs;
struct sema_program;

/* How far compile_frontend() goes. */
enum compile_stage {
	STAGE_PARSE,	/* lexer and parser only */
	STAGE_SEMA,	/* plus the semantic passes: a typed AST */
};

enum ubt_mode {
	MODE_AUTO,
	MODE_KERNEL,
	MODE_USER,
};

struct compile {
	struct arena arena;
	struct diag_list diag;
	const char *filename;	/* "stdin" for -e */
	const char *source;
	struct ast_node *program;

	/* context that gives the program meaning */
	const char **params;	/* positional parameters $1.. */
	int nparams;
	/* named parameters, getopt()'s (compile_named_params()) */
	const char **named;
	int nnamed;
	int pid;		/* -p, 0 if none */
	bool has_cmd;		/* -c given: cpid is valid */
	const char *cmd;	/* the -c command line, NULL if none */
	bool unsafe;
	int helper_check;	/* -k: 1, -kk: 2 (codegen/cg_helper.c) */
	enum ubt_mode mode;
	int max_strlen;		/* default 64 */
	const char **includes;	/* --include FILE, for C definitions */
	int nincludes;
	const char **include_dirs;	/* -I DIR */
	int ninclude_dirs;
	bool count_hits;	/* --metrics: count each probe's hits (hits.h) */
	const char *probe_filter;	/* --probe-filter REGEX or NULL */

	/* the C definitions, parsed (frontend/cdefs.h) */
	struct cdefs *cdefs;

	/* filled by sema_run() (frontend/sema.h) */
	struct sema_program *sema;
};

void compile_init(struct compile *c, const char *filename, const char *source);
void compile_release(struct compile *c);

/*
 * Set c->named from c->params, once: in the newest mode (compat
 * named-params) the --NAME[=VALUE] parameters move there; in 0.17 they
 * are all both (frontend/sema_getopt.c).
 */
void compile_named_params(struct compile *c);

/* Parse c->source into c->program; 0 or -EINVAL with diagnostics. */
int parse_program(struct compile *c);
/*
 * Run the frontend up to and including stop: parse, then the semantic
 * passes. 0, or -EINVAL with the errors in c->diag (not printed).
 */
int compile_frontend(struct compile *c, enum compile_stage stop);

#endif
