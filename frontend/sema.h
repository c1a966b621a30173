/*
 * Semantic analysis: the passes that turn the parsed AST into the typed
 * AST codegen lowers. sema_run() chains them (frontend/sema.c):
 *
 *   sema_config    config = { ... }, BPFTRACE_MAX_STRLEN / BPFTRACE_STRLEN
 *   sema_resolve   builtins, functions, maps, scratch variables, probe kinds
 *   sema_context   probe-context checks (retval, args, cpid, func, ...)
 *   sema_types     types of every expression, variable, map key and value
 *   sema_available kprobe/kretprobe/kfunc/kretfunc/rawtracepoint probes
 *                  on a kernel without what they need (kprov.h)
 *                  type-check, then give "... probes are not available on
 *                  this kernel" at the attach point, a HINT naming it
 *
 * and stops at the first pass that reports errors (diagnostics in c->diag).
 *
 * After sema_run() returns 0:
 *   - every expression node has ->type set (never NULL or TY_NONE);
 *     calls without a value (printf, print, exit, clear, ...) have
 *     TY_VOID; statements have no type; AST_IDENT nodes that remain are
 *     arguments only (stack modes: kstack(perf));
 *   - AST_IDENT nodes naming a builtin have become AST_BUILTIN;
 *   - every AST_BUILTIN, AST_CALL, AST_MAP, AST_VAR, AST_PROBE and
 *     AST_ATTACH_POINT node has ->sema set (struct sema_node below);
 *   - c->sema points at the program tables (struct sema_program).
 *
 * Integer typing follows bpftrace 0.17: integer literals are int64
 * (uint64 above INT64_MAX); arithmetic, comparisons, bitwise and shift
 * operators yield 64-bit results, unsigned when either operand is
 * unsigned (&& and || give int64, ! gives uint64, unary - and ~ keep the
 * operand's type); scratch variables keep the exact type first assigned
 * (a (uint8) cast stays uint8) and widen when a wider integer is
 * assigned later; map values and map keys that are integers are 64 bits
 * (signedness kept). Codegen converts a value to its destination's type
 * on every store (ints extended by the source's signedness). Strings are
 * TY_STRING with ->size the buffer size including the NUL ("abc" is
 * string[4], comm string[16], str() string[max_strlen]); a variable, map
 * value or key holding strings of several sizes has the largest, tuples
 * element by element. Literal strings longer than max_strlen are errors
 * (not format strings).
 *
 * Positional parameters (AST_POSITIONAL) are int64 ($N parsed as a
 * number, 0 when not given; a non-numeric $N is an error as in bpftrace
 * 0.17), except as the argument of str($N), where the node is TY_STRING
 * of the parameter's text ("" when not given) and the call has the same
 * type. $# is int64.
 *
 * Functions follow bpftrace 0.17's signatures: hist(x) takes one
 * argument, exit() none; print(@map[, top[, div]]) prints a whole map
 * (sema_node.map set) and print(expr) one value (sema_node.map NULL).
 */
#ifndef UBT_SEMA_H
#define UBT_SEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ast.h"
#include "compile.h"
#include "types.h"

/* Builtin variables. */
enum sema_builtin {
	BI_NONE,
	BI_PID,
	BI_TID,
	BI_UID,
	BI_GID,
	BI_COMM,
	BI_NSECS,
	BI_ELAPSED,
	BI_CPU,
	BI_CPID,
	BI_ARG,		/* arg0..arg5: sema_node.arg is the index */
	BI_SARG,	/* sarg0..: stack arguments, sema_node.arg */
	BI_RETVAL,
	BI_FUNC,	/* TY_USYM (16) in uprobes/usdt, TY_KSYM (8) elsewhere */
	BI_PROBE,	/* TY_PROBE: the attach point's name (sema_ap.name) */
	BI_RAND,
	BI_ARGS,	/* pointer (is_ctx) to sema_probe.args_type */
	BI_USERNAME,
	BI_CURTASK,
	BI_CGROUP,
	BI_KSTACK,
	BI_USTACK,
	BI_CTX,
	BI_JIFFIES,
	BI_NUMAID,
	BI_NCPUS,
	BI_USERMODE,
	BI_PPID,	/* the parent's pid (task->real_parent->pid) */
	BI_PCOMM,	/* the parent's comm (task->real_parent->comm) */
	BI_COUNT_,
};

/* nsecs(mode)'s clocks besides monotonic (the builtin nsecs). */
enum sema_nsecs_mode { NSECS_BOOT, NSECS_TAI, NSECS_SW_TAI };

/* Functions. */
enum sema_func {
	FN_NONE,
	/* aggregations (frontend/func_agg.c) */
	FN_COUNT,
	FN_SUM,
	FN_AVG,
	FN_MIN,
	FN_MAX,
	FN_STATS,
	FN_HIST,
	FN_LHIST,
	FN_TSERIES,	/* frontend/func_tseries.c */
	/* output and map control (frontend/func_print.c) */
	FN_PRINTF,
	FN_PRINT,
	FN_TIME,
	FN_EXIT,
	FN_CLEAR,
	FN_ZERO,
	FN_DELETE,
	FN_HAS_KEY,
	FN_LEN,
	/* strings and values (frontend/func_str.c) */
	FN_STR,
	FN_BUF,
	FN_STRNCMP,
	FN_STRCONTAINS,
	FN_KSYM,
	FN_USYM,
	FN_NTOP,
	FN_KSTACK,
	FN_USTACK,
	FN_UPTR,
	FN_KPTR,
	FN_SIZEOF_,	/* unused: sizeof is AST_SIZEOF */
	FN_SYSTEM,
	FN_CAT,
	FN_SIGNAL,
	FN_OVERRIDE,
	FN_UNWATCH,
	/* registers and addresses (frontend/func_sym.c) */
	FN_REG,
	FN_KADDR,
	FN_UADDR,
	/* addresses and byte order (frontend/func_net.c) */
	FN_PTON,
	FN_MACADDR,
	FN_BSWAP,
	/* text from the system's state (frontend/func_sys.c) */
	FN_STRFTIME,
	FN_CGROUP_PATH,
	FN_STRERROR,
	FN_SYSCALL_NAME,
	FN_PATH,
	/* output besides printf's family (frontend/func_out.c) */
	FN_JOIN,
	FN_DEBUGF,
	/* printf()'s as located messages (bpftrace v0.25; func_print.c) */
	FN_ERRORF,
	FN_WARNF,
	/* bpftrace after 0.17 (frontend/func_new.c) */
	FN_NSECS,	/* nsecs(boot|tai|sw_tai) */
	FN_STRLEN,
	FN_SIGNAL_NAME,
	FN_COUNT_,
};

/* Probe providers, canonical (aliases resolved: "u" -> uprobe, ...). */
enum sema_provider {
	PROV_NONE,
	PROV_BEGIN,
	PROV_END,
	PROV_UPROBE,
	PROV_URETPROBE,
	PROV_USDT,
	PROV_TRACEPOINT,
	PROV_INTERVAL,
	PROV_PROFILE,
	PROV_SOFTWARE,
	PROV_HARDWARE,
	PROV_WATCHPOINT,
	PROV_ASYNCWATCHPOINT,
	PROV_ITER,		/* iter:task, iter:task_file: run once */
	/* kernel probes: where the kernel lacks what they need (kprov.h),
	 * type-checked, then a located error "... probes are not available
	 * on this kernel" */
	PROV_KPROBE,
	PROV_KRETPROBE,
	PROV_KFUNC,
	PROV_KRETFUNC,
	PROV_RAWTRACEPOINT,
	PROV_COUNT_,
};

/* A bpftrace map (@name), one per name in the whole program. */
struct sema_map {
	int id;			/* 0.. in order of first appearance */
	const char *name;	/* "@", "@name" */
	/*
	 * NULL for keyless maps; the key expression's type for one key;
	 * a TY_TUPLE of the key expressions' types (fields at natural
	 * alignment, ->size the padded total) for several keys. Integer
	 * keys are 64-bit.
	 */
	struct type *key;
	int nkeys;		/* 0 keyless, else how many key expressions */
	/*
	 * The value type: TY_COUNT .. TY_LHIST for aggregations (hist_bits,
	 * lhist_min/max/step set; is_signed for sum/min/max/avg/stats of
	 * signed values), TY_INT (64-bit), TY_STRING, TY_TUPLE, TY_USYM, ...
	 */
	struct type *value;
	enum sema_func agg;	/* FN_COUNT..FN_TSERIES, or FN_NONE */
	const char *bpf_type;	/* from `let @m = hash(N);`, else NULL */
	int64_t max_entries;	/* from the declaration, else 0 (default) */
	uint64_t probes;	/* bit i set: used in probe index i (i < 64) */
	bool used_in_begin_end;	/* used in a BEGIN or END probe */
	bool key_set;		/* key shape known (nkeys/key valid) */
	struct ast_node *first;	/* first use, for messages */
};

/* A scratch variable ($name), local to one probe. */
struct sema_var {
	const char *name;	/* "$x" */
	/* the type first assigned (a (uint8) cast stays uint8); a wider
	 * integer or a longer string assigned later widens it */
	struct type *type;
	bool declared;		/* let $x: type: the type never widens */
	bool hidden;		/* a let variable after its block (v0.25's
				 * scoping): unknown by name */
	int slot;		/* index in sema_probe.vars */
	struct ast_node *first;	/* first assignment */
};

/*
 * A format-string call: printf(), time(), system(), cat(). The event
 * record codegen writes is the argument values in order; args is a
 * TY_TUPLE of the argument types (each field at natural alignment).
 * For printf, the conversions are frontend/format.h's.
 */
struct sema_fmt {
	int id;			/* 0.. in order of appearance */
	enum sema_func func;	/* FN_PRINTF, FN_TIME, FN_SYSTEM, FN_CAT */
	const char *fmt;	/* the format, escapes processed; time() default
				 * "%H:%M:%S\n" */
	struct type *args;	/* TY_TUPLE (nfields may be 0) */
	int nargs;
	struct ast_node *call;	/* AST_CALL */
};

/* One probe (AST_PROBE). */
struct sema_probe {
	int index;		/* == probe.index */
	struct ast_node *node;	/* AST_PROBE */
	/*
	 * The provider of the first attach point (every attach point's own
	 * is in its sema_ap; builtins are checked against each of them).
	 */
	enum sema_provider provider;
	bool is_return;		/* uretprobe, kretprobe, kretfunc */
	/*
	 * The record args points to (TY_RECORD), set when the probe uses
	 * args: for tracepoints the tracefs format (fields at their offsets
	 * in the tracepoint record; for a wildcard, the fields every match
	 * has alike); for uprobes the function's parameters from DWARF
	 * (frontend/sema_dwarf.c), each field at the offset of its argument
	 * register in struct pt_regs. Both are read from the context as
	 * args.f and args->f. The first attach point's; each attach point
	 * has its own in sema_ap (every field used exists in all of them
	 * with the same type, maybe at different offsets). NULL elsewhere.
	 */
	struct type *args_type;
	const char *name;	/* "uprobe:/bin/bash:readline": the `probe`
				 * builtin's value, first attach point */
	struct sema_var **vars;	/* scratch variables, by slot */
	int nvars;
};

/* Per-attach-point info (AST_ATTACH_POINT ->sema->ap). */
struct sema_ap {
	const char *name;	/* the `probe` builtin's value for this attach
				 * point (before wildcard expansion) */
	enum sema_provider provider;
	bool is_return;
	bool available;		/* false: the kernel lacks what it needs */
	struct type *args_type;	/* its args record, or NULL */
	bool args_failed;	/* internal: args error reported once */
	/* tracepoint wildcard: a field of args lies at different offsets
	 * in its matches, so each match gets its own program (codegen) */
	bool args_split;
};

/*
 * What sema attached to one node (->sema). Which fields are meaningful
 * depends on the node's kind; the rest are zero.
 */
struct sema_node {
	/* AST_BUILTIN */
	enum sema_builtin builtin;
	int arg;		/* BI_ARG/BI_SARG index */
	/* AST_CALL */
	enum sema_func func;
	struct sema_fmt *fmt;	/* printf/time/system/cat */
	/* AST_MAP, and AST_CALL of aggregations (the map assigned to) and of
	 * clear/zero/delete/print/has_key/len (the map argument) */
	struct sema_map *map;
	/* AST_VAR */
	struct sema_var *var;
	/* AST_PROBE, AST_ATTACH_POINT, AST_BUILTIN, AST_CALL, AST_MAP,
	 * AST_VAR: the probe they are in */
	struct sema_probe *probe;
	/* AST_ATTACH_POINT */
	struct sema_ap *ap;
	/* AST_CALL: lhist min/max/step; print(@m, top, div) top and div
	 * (0 when not given); strncmp n; kstack/ustack limit; pton's 16
	 * bytes; AST_UNROLL: its count (also of unroll($N)). AST_IDENT:
	 * the value of an enum constant or #define; AST_SIZEOF and
	 * AST_OFFSETOF: the size or offset, in iargs[0] */
	int64_t iargs[3];
	/* AST_BINOP: == or != of two strings (compared as C strings, up to
	 * the shorter buffer) */
	bool is_string_op;
};

/* The program tables, c->sema after sema_run(). */
struct sema_program {
	struct sema_map **maps;	/* by id */
	int nmaps;
	struct sema_probe **probes;	/* by probe index */
	int nprobes;
	struct sema_fmt **fmts;	/* by id */
	int nfmts;
	int max_strlen;		/* == c->max_strlen */
	int64_t max_map_keys;	/* key limit of a map declared without
				 * one (max_map_keys, default 4096) */
	bool uses_elapsed;	/* the elapsed builtin appears */
	bool has_end;		/* there is an END probe */
	/* config = { print_maps_on_exit = false } */
	bool no_maps_on_exit;
	/* config = { stack_mode = perf }, BPFTRACE_STACK_MODE (v0.25): the
	 * mode of kstack/ustack without one (enum stack_mode, stack.h) */
	int stack_mode;
	/* config = { missing_probes = ... } (compat missing-probes): an
	 * attach point nothing matches is an error, or is dropped with a
	 * warning, or silently */
	enum { MISSING_ERROR, MISSING_WARN, MISSING_IGNORE } missing_probes;
	/* compat str-trailer: what follows a string that fills its type
	 * (str_trunc_trailer, BPFTRACE_STR_TRUNC_TRAILER, ".."); NULL in
	 * 0.17 and when max_strlen is 1024 or more (v0.26 reads no more) */
	const char *str_trailer;
	/* config = { cpp_demangle = false }: C++ symbols print mangled */
	bool no_cpp_demangle;
	bool no_debug_info;	/* config show_debug_info = false: user
				 * stacks without file:line (compat
				 * ustack-lines) */
	/* config = { unstable_tseries = ... } (enum tseries_unstable,
	 * frontend/tseries.h); its warning given */
	int unstable_tseries;
	bool tseries_warned;
};

/* Run every pass; 0, or -EINVAL with errors in c->diag. */
int sema_run(struct compile *c);

/* The passes, in order (each in its own file). */
int sema_config(struct compile *c);	/* frontend/sema_config.c */
int sema_macro(struct compile *c);	/* frontend/sema_macro.c */
int sema_getopt(struct compile *c);	/* frontend/sema_getopt.c */
int sema_resolve(struct compile *c);	/* frontend/sema_resolve.c */
int sema_context(struct compile *c);	/* frontend/sema_context.c */
int sema_types(struct compile *c);	/* frontend/sema_types.c */
int sema_available(struct compile *c);	/* frontend/sema_context.c */

/* The aggregation function whose value type t is (TY_COUNT -> FN_COUNT,
 * ...), FN_NONE for a type that is not an aggregation. */
enum sema_func sema_agg_of(const struct type *t);

/* -d sema: the typed AST and the program tables (frontend/sema_dump.c). */
void sema_dump(FILE *f, struct compile *c);

/* Names, for dumps and messages. */
const char *sema_builtin_name(enum sema_builtin b);
const char *sema_func_name(enum sema_func f);
const char *sema_provider_name(enum sema_provider p);
/* Its probes' context is a struct pt_regs (reg(), usermode's %cs). */
bool sema_provider_regs(enum sema_provider p);
/* iter:NAME: does the kernel have that iterator? */
bool sema_iter_exists(const char *name);
/* "uprobe", "u" -> PROV_UPROBE; PROV_NONE when unknown. */
enum sema_provider sema_provider_lookup(const char *name);

/* Lookups for codegen and the shim. */
struct sema_map *sema_map_find(const struct compile *c, const char *name);
static inline struct sema_node *sema_of(const struct ast_node *n)
{
	return n->sema;
}

#endif
