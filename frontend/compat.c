/*
 * The compatibility switch (compat.h): one table, one entry for each way
 * the newest bpftrace differs from 0.17 that ubt follows.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "compat.h"
#include "util.h"

struct compat_entry {
	const char *name;	/* the difference's name (man page) */
	const char *what;	/* 0.17 -> newest */
};

static const struct compat_entry compat_table[COMPAT_NDIFFS] = {
	[COMPAT_ATTACHED_MSG] = {
		"attached-message",
		"\"Attaching N probes...\" on stdout before attaching -> "
		"\"Attached N probes\" on stderr after (JSON: with \"count\"); "
		"the test harness's __BPFTRACE_NOTIFY_PROBES_ATTACHED line "
		"on stderr -> on stdout",
	},
	[COMPAT_BEGIN_END_EXIT] = {
		"begin-end-exit",
		"a program of BEGIN and END probes only runs until Ctrl-C -> "
		"ends after BEGIN",
	},
	[COMPAT_BOOL] = {
		"bool",
		"comparisons, &&, || and ! are integers (1, 0; sizeof 8) -> "
		"bool (sizeof 1); bools print as true/false",
	},
	[COMPAT_STATS_RECORD] = {
		"stats-record",
		"stats() values print as \"count 3, average 2, total 6\" -> "
		"as a record: \"{ .count = 3, .average = 2, .total = 6 }\"",
	},
	[COMPAT_POINTER_HEX] = {
		"pointer-hex",
		"pointer values (map values, print(), tuple and record members) "
		"print in decimal -> in hex (0x33); JSON keeps numbers",
	},
	[COMPAT_BEGIN_LOWERCASE] = {
		"begin-lowercase",
		"the probe builtin of BEGIN and END (also spelled begin, end) "
		"is \"BEGIN\", \"END\" -> \"begin\", \"end\"",
	},
	[COMPAT_ENUM_NAMES] = {
		"enum-names",
		"enumerators, casts to an enum and enum fields (the script's "
		"C definitions, the kernel's BTF) are integers -> print by "
		"name in text (print(), maps, printf \"%s\"; JSON keeps "
		"numbers)",
	},
	[COMPAT_RECORD_KEY] = {
		"record-key",
		"a struct in a map key prints as \"@[{.m=2,.n=3}]\" -> "
		"\"@[{ .m = 2, .n = 3 }]\"",
	},
	[COMPAT_STR_LENGTH] = {
		"str-length",
		"str(p, n) keeps n characters -> n bytes with the NUL, "
		"n - 1 characters",
	},
	[COMPAT_DIV_ZERO] = {
		"div-zero",
		"x / 0 and x % 0 are 0 (BPF's) -> 1, with a located warning "
		"each time (\"Divide or modulo by 0 detected...\")",
	},
	[COMPAT_HIST_HEADER] = {
		"hist-header",
		"a hist()/lhist() map's line \"@h: \" ends in a space -> "
		"\"@h:\"",
	},
	[COMPAT_UNREACHABLE] = {
		"unreachable",
		"statements after return, break, continue or exit() pass "
		"silently -> \"WARNING: Unreachable statement.\" at the first",
	},
	[COMPAT_EMPTY_COUNT] = {
		"empty-count",
		"a keyless count() map that clear() or delete() emptied "
		"prints as \"@: 0\" -> as any empty map (no value)",
	},
	[COMPAT_INT_LITERALS] = {
		"int-literals",
		"an integer literal past INT64_MAX wraps to a negative int64 "
		"and ~N of a literal is signed, such a positional parameter "
		"is an error -> all three are uint64",
	},
	[COMPAT_BLOCK_SCOPE] = {
		"block-scope",
		"a variable first assigned in a block is known in the rest "
		"of the probe -> only until the end of that block (as let)",
	},
	[COMPAT_KPROBE_MODULE] = {
		"kprobe-module",
		"kprobe:MODULE:FUNCTION is refused (\"kprobe probe type "
		"requires 1 argument\") -> a function of that module",
	},
	[COMPAT_NAMED_PARAMS] = {
		"named-params",
		"every program argument is positional ($N, $#) and getopt() "
		"reads --NAME[=VALUE] among them -> such arguments (after --) "
		"are named only, and one no getopt() reads is an error "
		"(--help lists them)",
	},
	[COMPAT_POSITIONAL_STR] = {
		"positional-strings",
		"$N of a non-numeric argument is an error (\"Try using "
		"str($N)\") -> that string",
	},
	[COMPAT_PID_ERRORS] = {
		"pid-errors",
		"-p of a non-number or past the pid range: \"pid 'x' is not "
		"a valid decimal number\", \"pid 'N' out of valid pid range "
		"[1,4194304]\" -> \"Failed to parse pid: invalid integer: "
		"x\" (or \"invalid trailing bytes\"), \"Pid out of range: "
		"N\"; 0x and 0b prefixes are numbers",
	},
	[COMPAT_HELPER_CHECK] = {
		"helper-check",
		"-k warns of failed reads, -kk also of map lookups, as "
		"\"Failed to HELPER: ERROR (N)\" -> -k warns of both (-kk "
		"is refused), as \"WHAT\\nAdditional Info - helper: "
		"HELPER, retcode: N\" (WHAT: \"Can't lookup map element "
		"because it does not exist.\", or the error's text)",
	},
	[COMPAT_INT_TYPES] = {
		"int-types",
		"an integer literal is an int64 (sizeof(1) is 8) -> the "
		"smallest signed type that holds it (int8 to int64), as are "
		"variables, tuple members, map keys and values it is "
		"stored in; ++, -- and arithmetic give 64 bits (-- an "
		"int64, so a decremented unsigned one is signed); a signed "
		"and an unsigned integer stored in one place: the larger "
		"signed one, else a signed one twice the size; a for "
		"range's variable: the start's type, promoted with the "
		"end's",
	},
	[COMPAT_CACHE_SYMBOLS] = {
		"cache-symbols",
		"BPFTRACE_CACHE_USER_SYMBOLS is 0 or 1 -> also PER_PID, "
		"PER_PROGRAM or NONE (any case)",
	},
	[COMPAT_MISSING_PROBES] = {
		"missing-probes",
		"a tracepoint that does not exist: \"tracepoint not found: "
		"C:E\"; a uprobe's function: \"Could not resolve symbol: "
		"F:S\", a warning when the probe has other attach points -> "
		"\"No matches for tracepoint C:E.\" (uprobe F:S), an error "
		"unless config missing_probes = warn (\"... Skipping.\") or "
		"ignore drops it; a raw tracepoint: \"No BTF found for raw "
		"tracepoint [M:]E\" -> \"Probe has no valid attach "
		"points.\" (\"No matches for rawtracepoint M:E.\")",
	},
	[COMPAT_LIST_MORE] = {
		"list-more",
		"-l 'interval:*' and 'profile:*' list nothing, -l FILE is a "
		"pattern -> their units (interval:s: ...), the probes of "
		"the script FILE (a name with a dot that is no file: a "
		"warning, then a pattern); a full -l lists raw tracepoints "
		"too, -l A,B is two patterns, and a struct ending in "
		"\"} __attribute__((...));\" is listed (0.17 runs on into "
		"the next)",
	},
	[COMPAT_CAT_ERROR] = {
		"cat-error",
		"cat() of a file it cannot open: \"ERROR: failed to open "
		"file 'F': ERROR\" -> \"ERROR: failed to open file 'F' "
		"(ERROR)\"",
	},
	[COMPAT_ZERO_SIZE] = {
		"zero-size",
		"a uprobe on a function whose symbol has size 0 (_init) "
		"attaches -> is refused without --unsafe (\"Could not "
		"determine boundary for F (symbol has size 0).\")",
	},
	[COMPAT_TOKEN_COLUMNS] = {
		"token-columns",
		"an error's location starts where bpftrace 0.17's lexer "
		"last saw white space (\"print(foo(1))\": at print) -> "
		"at the token's own column (at foo)",
	},
	[COMPAT_STR_TRAILER] = {
		"str-trailer",
		"str(p) keeps max_strlen - 1 characters -> max_strlen "
		"(when it is below 1024), and a string that fills its "
		"type prints with \"..\" after it (BPFTRACE_STR_TRUNC_TRAILER, "
		"config str_trunc_trailer)",
	},
	[COMPAT_FLEX_ARRAY] = {
		"flex-array",
		"a[N] on an array of size 0 (a flexible array member, "
		"\"int y[0]\") is an error (\"the index N is out of bounds "
		"for array of size 0\") -> reads element N after it",
	},
	[COMPAT_ARRAY_BOUNDS] = {
		"array-bounds",
		"an index past an array's end that is not a literal reads "
		"0 -> reads 0 with a located warning each time it happens "
		"(\"Array access out of bounds. This can lead to unexpected "
		"results.\")",
	},
	[COMPAT_FENTRY_NAMES] = {
		"fentry-names",
		"-l lists kernel functions as kfunc:M:F and kretfunc:M:F -> "
		"as fentry:M:F and fexit:M:F",
	},
	[COMPAT_MAX_STRLEN] = {
		"max-strlen",
		"max_strlen (BPFTRACE_MAX_STRLEN, config max_strlen) is 64 "
		"unless set -> 1024",
	},
	[COMPAT_INFO_LAYOUT] = {
		"info-layout",
		"--info lists 0.17's helpers, features, map and probe "
		"types and ubt's own features -> the newest's: Build with "
		"libsystemd, blazesym and dwunwind, helpers dpath, "
		"get_tai_ns, get_func_ip and lookup_percpu_elem, features "
		"Instruction limit, btf and module btf, probe types "
		"kprobe_multi, uprobe_multi, kprobe_session and iter, two "
		"to a line",
	},
	[COMPAT_SIGN_WARNINGS] = {
		"sign-warnings",
		"comparisons and arithmetic of a signed and an unsigned "
		"integer warn (\"... of different signs ...\"), and / and % "
		"of a signed one that is not a literal (\"signed operands "
		"...\") -> only / and % of two integer types that differ "
		"(size or sign; a literal takes the other's sign), one "
		"signed",
	},
	[COMPAT_USTACK_LINES] = {
		"ustack-lines",
		"a user stack's frame prints as name+offset -> "
		"name+offset@file:line where the binary's DWARF has the "
		"address's line (unless config show_debug_info = false)",
	},
	[COMPAT_JSON_RECORDS] = {
		"json-records",
		"a struct or union value in JSON prints as "
		"{ \"a\": 1, \"b\": 2 } and leaves out its floating point "
		"members -> {\"a\": 1, \"b\": 2}, such a member null",
	},
};

enum compat_source { COMPAT_SRC_NONE, COMPAT_SRC_CONFIG, COMPAT_SRC_ENV,
		     COMPAT_SRC_CLI };

static enum compat_level compat_cur = COMPAT_0_17;
static enum compat_source compat_src = COMPAT_SRC_NONE;

int compat_parse(const char *s, enum compat_level *level)
{
	if (!strcmp(s, "0.17"))
		*level = COMPAT_0_17;
	else if (!strcmp(s, "newest") || !strcmp(s, "0.26"))
		*level = COMPAT_NEWEST;
	else
		return -EINVAL;
	return 0;
}

void compat_set(enum compat_level level)
{
	compat_cur = level;
	compat_src = COMPAT_SRC_CLI;
}

int compat_from_env(void)
{
	const char *s = getenv("UBT_COMPAT");
	enum compat_level l;

	if (!s || compat_src >= COMPAT_SRC_ENV)
		return 0;
	if (compat_parse(s, &l)) {
		fprintf(stderr,
			"ubt: invalid UBT_COMPAT '%s': expected '0.17' or 'newest'\n",
			s);
		return -EINVAL;
	}
	compat_cur = l;
	compat_src = COMPAT_SRC_ENV;
	return 0;
}

int compat_from_config(const char *value)
{
	enum compat_level l;

	if (compat_parse(value, &l))
		return -EINVAL;
	if (compat_src < COMPAT_SRC_CONFIG) {
		compat_cur = l;
		compat_src = COMPAT_SRC_CONFIG;
	}
	return 0;
}

/* Past white space and comments from s. */
static const char *compat_skip(const char *s)
{
	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
			s++;
		if (s[0] == '/' && s[1] == '/') {
			while (*s && *s != '\n')
				s++;
		} else if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");

			s = e ? e + 2 : s + strlen(s);
		} else {
			return s;
		}
	}
}

static bool compat_word(const char *s, const char *w, const char **end)
{
	size_t n = strlen(w);

	if (strncmp(s, w, n) || (s[n] && (isalnum((unsigned char)s[n]) ||
					  s[n] == '_')))
		return false;
	*end = s + n;
	return true;
}

/* The items of a config block from s (after its "{"): compat = V. */
static void compat_prescan_block(const char *s)
{
	const char *e;
	char v[8];
	size_t n;

	for (s = compat_skip(s); *s && *s != '}'; s = compat_skip(s)) {
		if (!compat_word(s, "compat", &e)) {
			s++;
			continue;
		}
		e = compat_skip(e);
		if (*e != '=')
			return;
		e = compat_skip(e + 1);
		if (*e == '"')
			e++;
		for (n = 0; n < sizeof(v) - 1 && (isalnum((unsigned char)e[n]) ||
						    e[n] == '.'); n++)
			v[n] = e[n];
		v[n] = '\0';
		compat_from_config(v);	/* a bad one: sema_config.c says so */
		return;
	}
}

void compat_prescan(const char *src)
{
	const char *s = src, *e;

	if (!src || compat_src >= COMPAT_SRC_CONFIG)
		return;
	/* every "config = {", outside comments and strings: a word
	 * starts at the start or after a character of no word */
	while (*s) {
		s = compat_skip(s);
		if (!*s)
			break;
		if (*s == '"') {
			for (s++; *s && *s != '"'; s++)
				if (*s == '\\' && s[1])
					s++;
			if (*s)
				s++;
			continue;
		}
		if ((s == src || !(isalnum((unsigned char)s[-1]) ||
				   s[-1] == '_' || s[-1] == '$' ||
				   s[-1] == '@')) &&
		    compat_word(s, "config", &e)) {
			e = compat_skip(e);
			if (*e == '=' && *(e = compat_skip(e + 1)) == '{') {
				compat_prescan_block(e + 1);
				return;
			}
		}
		s++;
	}
}

enum compat_level compat_level(void)
{
	return compat_cur;
}

bool compat_has(enum compat_diff d)
{
	return compat_cur == COMPAT_NEWEST && d < COMPAT_NDIFFS;
}

const char *compat_name(enum compat_diff d)
{
	return d < COMPAT_NDIFFS ? compat_table[d].name : "?";
}

void compat_list(FILE *f)
{
	for (int i = 0; i < COMPAT_NDIFFS; i++)
		fprintf(f, "%-18s %s\n", compat_table[i].name,
			compat_table[i].what);
}
