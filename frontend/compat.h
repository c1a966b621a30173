/*
 * Which bpftrace ubt behaves as: 0.17 (the default: Debian 12's) or the
 * newest release ubt knows (0.26).  Each place where the two differ asks
 * compat_has() for its difference by name; the table in compat.c lists
 * them all, one entry each (man page, COMPATIBILITY).
 */
#ifndef UBT_COMPAT_H
#define UBT_COMPAT_H

#include <stdbool.h>
#include <stdio.h>

enum compat_level {
	COMPAT_0_17,
	COMPAT_NEWEST,
};

/* One entry per difference; true in the newest mode. */
enum compat_diff {
	COMPAT_ATTACHED_MSG,	/* "Attached N probes" on stderr */
	COMPAT_BEGIN_END_EXIT,	/* only BEGIN/END probes: the run ends */
	COMPAT_BOOL,		/* comparisons, ! are bool; true/false */
	COMPAT_STATS_RECORD,	/* stats() values print as records */
	COMPAT_POINTER_HEX,	/* pointer values print in hex */
	COMPAT_BEGIN_LOWERCASE,	/* probe is "begin"/"end" */
	COMPAT_ENUM_NAMES,	/* enum values print by name */
	COMPAT_RECORD_KEY,	/* records in map keys spaced as values */
	COMPAT_STR_LENGTH,	/* str(p, n): n bytes with the NUL */
	COMPAT_DIV_ZERO,	/* x / 0 and x % 0 are 1, with a warning */
	COMPAT_HIST_HEADER,	/* "@h:" before a histogram, no space */
	COMPAT_UNREACHABLE,	/* a warning after return/break/exit() */
	COMPAT_EMPTY_COUNT,	/* an empty keyless count() is not "0" */
	COMPAT_INT_LITERALS,	/* literals past INT64_MAX, ~N are uint64 */
	COMPAT_BLOCK_SCOPE,	/* $x = ... in a block: gone after it */
	COMPAT_KPROBE_MODULE,	/* kprobe:MODULE:FUNC is accepted */
	COMPAT_NAMED_PARAMS,	/* --NAME=VALUE are not positional */
	COMPAT_POSITIONAL_STR,	/* a non-numeric $N is a string */
	COMPAT_PID_ERRORS,	/* -p errors in v0.26's words */
	COMPAT_HELPER_CHECK,	/* -k is 0.17's -kk, in v0.26's words */
	COMPAT_INT_TYPES,	/* a literal: the smallest int type */
	COMPAT_CACHE_SYMBOLS,	/* BPFTRACE_CACHE_USER_SYMBOLS=PER_PID */
	COMPAT_JSON_RECORDS,	/* JSON structs {"a": 1}, floats null */
	COMPAT_MISSING_PROBES,	/* "No matches for ...", missing_probes */
	COMPAT_LIST_MORE,	/* -l interval:*, profile:*, -l FILE */
	COMPAT_CAT_ERROR,	/* cat(): "failed to open file 'F' (E)" */
	COMPAT_ZERO_SIZE,	/* a uprobe on a size-0 symbol: --unsafe */
	COMPAT_TOKEN_COLUMNS,	/* an error starts at its own token */
	COMPAT_STR_TRAILER,	/* str(): max_strlen characters, ".." */
	COMPAT_FLEX_ARRAY,	/* a[i] on an array of size 0 */
	COMPAT_ARRAY_BOUNDS,	/* a[i] past the end: a warning */
	COMPAT_FENTRY_NAMES,	/* -l: fentry:, fexit: */
	COMPAT_MAX_STRLEN,	/* max_strlen is 1024 by default */
	COMPAT_INFO_LAYOUT,	/* --info as the newest prints it */
	COMPAT_SIGN_WARNINGS,	/* fewer warnings of signed operands */
	COMPAT_USTACK_LINES,	/* ustack frames with @file:line */
	COMPAT_NDIFFS,
};

/* "0.17" or "newest" (also "0.26"); 0 or -EINVAL. */
int compat_parse(const char *s, enum compat_level *level);
/* The level in force: set by --compat, else UBT_COMPAT, else the
 * program's config = { compat = ... }, else 0.17. */
void compat_set(enum compat_level level);
/* From UBT_COMPAT unless set already; 0 or -EINVAL (message printed). */
int compat_from_env(void);
/* From the program's config block unless set already. */
int compat_from_config(const char *value);
/* The same from the program's text, before it is parsed: the parser's
 * locations follow it too (token-columns). */
void compat_prescan(const char *src);
enum compat_level compat_level(void);
bool compat_has(enum compat_diff d);
const char *compat_name(enum compat_diff d);
/* The table, one line per difference (ubt --compat=list). */
void compat_list(FILE *f);

#endif
