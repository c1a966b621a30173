/*
 * Internal to the semantic passes: the pass context, the builtin and
 * function vtables (one file per family: builtins.c, func_agg.c,
 * func_print.c, func_str.c; looked up in sema_tables.c) and shared
 * helpers (sema_util.c).
 */
#ifndef UBT_SEMA_INT_H
#define UBT_SEMA_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "sema.h"
#include "types.h"

struct sema_ctx {
	struct compile *c;
	struct arena *a;
	struct diag_list *d;
	struct sema_program *prog;
	struct sema_probe *probe;	/* the probe being walked */
	/*
	 * The types pass walks the program until map and variable types
	 * stop changing, silently; then once more with final set, when
	 * errors are reported.
	 */
	bool final;
	int unresolved;		/* expressions still without a type */
	int changed;		/* types that changed during this walk */
	int loop_depth;
	/* let variables by block: those of blocks left are hidden */
	int block_depth;
	struct sema_var **lets;
	int *let_depth;
	int nlets, lets_cap;
	/* the return type of the inlined fn being typed (its block
	 * expression, sema_macro.c), NULL outside */
	struct type *fn_ret;
	/* sema_types: the aggregation call directly assigned to agg_map */
	struct ast_node *agg_call;
	struct sema_map *agg_map;
	/* where bpftrace 0.17 locates errors about a map or variable used
	 * as an argument of print/clear/zero/delete or a map key: the
	 * enclosing call or map (NULL: the node itself) */
	const struct ast_loc *use_loc;
	struct ast_loc use_loc_buf;
	bool seen_begin, seen_end;	/* sema_config */
	/* sema_context: the attach point whose provider is checked */
	struct ast_node *ap;
	enum sema_provider provider;
	/* sema_dwarf: the types and enumerators looked up in debug info,
	 * by name */
	struct sema_typememo *typememo;
	struct sema_enummemo *enummemo;
};

/* A builtin variable (builtins.c). */
struct sema_builtin_ops {
	const char *name;		/* "pid"; "arg" matches arg0..arg9 */
	enum sema_builtin id;
	/* sema_types: the type of n (AST_BUILTIN, ->sema->builtin set) */
	struct type *(*type)(struct sema_ctx *x, struct ast_node *n);
	/* sema_context: may the builtin be used in x->probe? 0 or -EINVAL
	 * with a diagnostic */
	int (*check)(struct sema_ctx *x, struct ast_node *n);
};

/* Function flags. */
enum {
	FN_F_AGG = 1 << 0,	/* must be assigned directly to a map */
	FN_F_MAP_ARG = 1 << 1,	/* first argument: a map the function types */
	FN_F_VOID = 1 << 2,	/* no value: statement only */
	FN_F_UNSAFE = 1 << 3,	/* needs --unsafe */
	FN_F_IDENT_ARGS = 1 << 4,	/* kstack(perf): identifier args */
	FN_F_FMT = 1 << 5,	/* first argument is a format string */
};

/* A function (func_*.c). */
struct sema_func_ops {
	const char *name;
	enum sema_func id;
	int min_args, max_args;	/* max_args -1: unbounded */
	unsigned flags;
	/*
	 * sema_types: check the arguments (already typed) and return the
	 * call's type, or NULL after an error. For aggregations map is the
	 * map the call is assigned to.
	 */
	struct type *(*type)(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *map);
	/* sema_context: optional */
	int (*check)(struct sema_ctx *x, struct ast_node *call);
};

/* Tables, NULL-terminated by name == NULL. */
extern const struct sema_builtin_ops sema_builtins[];
extern const struct sema_func_ops sema_funcs_agg[];
extern const struct sema_func_ops sema_funcs_print[];
extern const struct sema_func_ops sema_funcs_str[];
extern const struct sema_func_ops sema_funcs_watch[];
extern const struct sema_func_ops sema_funcs_sym[];
extern const struct sema_func_ops sema_funcs_net[];
extern const struct sema_func_ops sema_funcs_sys[];
extern const struct sema_func_ops sema_funcs_out[];
extern const struct sema_func_ops sema_funcs_new[];
extern const struct sema_func_ops sema_funcs_tseries[];
/* pid(ns)/tid(ns) made the builtins (func_new.c): 1, 0 (not one), -errno */
int sema_new_builtin_call(struct sema_ctx *x, struct ast_node *n);
/* probetype, leader_comm, leader_tid rewritten in place (func_new.c) */
bool sema_new_ident(struct sema_ctx *x, struct ast_node *n);
/* assert(cond, msg) rewritten in place (func_new.c): 1, 0, -errno */
int sema_new_assert(struct sema_ctx *x, struct ast_node *n);
/* ppid(task), is_err(x) rewritten in place (func_macro.c): 1, 0, -errno */
int sema_macro_call(struct sema_ctx *x, struct ast_node *n);

const struct sema_builtin_ops *sema_builtin_find(const char *name, int *arg);
const struct sema_builtin_ops *sema_builtin_ops(enum sema_builtin id);
const struct sema_func_ops *sema_func_find(const char *name);
const struct sema_func_ops *sema_func_ops(enum sema_func id);

/* Helpers (sema_util.c). */
struct sema_node *sema_node(struct sema_ctx *x, struct ast_node *n);
/* Report an error (only on the final walk of the types pass; always in
 * the other passes). Returns the diag, or NULL when not reported. */
struct diag *sema_error(struct sema_ctx *x, const struct ast_loc *loc,
			const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct diag *sema_warning(struct sema_ctx *x, const struct ast_loc *loc,
			  const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sema_hint(struct sema_ctx *x, struct diag *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *sema_tstr(struct sema_ctx *x, const struct type *t);
/* bpftrace's class of a type in messages: "integer", "string", ... */
struct type *sema_uint64(struct sema_ctx *x);
struct type *sema_int64(struct sema_ctx *x);
/* A tuple of the given element types, fields at natural alignment. */
struct type *sema_tuple(struct sema_ctx *x, struct type **elems, int n);
size_t sema_type_align(const struct type *t);
/* Is n an integer literal (possibly a numeric positional parameter)?
 * Sets *v to its value. */
bool sema_int_literal(struct sema_ctx *x, const struct ast_node *n,
		      int64_t *v);
/* Is n a string literal (or a positional parameter)? */
bool sema_str_literal(struct sema_ctx *x, const struct ast_node *n,
		      const char **s);
/* Check that call has min..max arguments, with bpftrace's messages. */
int sema_check_nargs(struct sema_ctx *x, struct ast_node *call, int min,
		     int max);
/* bpftrace 0.17's location for errors about a call's first argument:
 * from the call's name to the end of that argument. */
struct ast_loc sema_call_arg_loc(const struct ast_node *call);
/* Byte offset of (line, column) in the source, or -1. */
long sema_src_offset(const struct compile *c, int line, int col);
/* Positional parameter n (1-based) or NULL. */
const char *sema_param(struct sema_ctx *x, int n);
bool sema_is_number(const char *s, int64_t *v);
/* s is an integer that only uint64 holds (past INT64_MAX)? */
bool sema_is_uint64(const char *s);
/* The map named by an argument (AST_MAP), or NULL. */
struct sema_map *sema_map_of(struct ast_node *n);
/* Record a format-string call in the program table (once per call). */
struct sema_fmt *sema_fmt_get(struct sema_ctx *x, struct ast_node *call,
			      enum sema_func f, const char *fmt);

/* sema_dwarf.c: the args record of a uprobe attach point from DWARF;
 * 0, or -EINVAL after an error. */
int sema_uprobe_args(struct sema_ctx *x, struct ast_node *ap,
		     struct type **out);
/* sema_kernel.c: the args record of a kfunc, kretfunc or rawtracepoint
 * attach point from BTF; 0, or -EINVAL after an error. */
int sema_kernel_args(struct sema_ctx *x, struct ast_node *ap,
		     struct type **out);
/* retval's type in a kretfunc probe: the function's return type. */
struct type *sema_kernel_retval(struct sema_ctx *x, struct ast_node *n);
/*
 * The type a C type name (TY_NAMED's name: "struct foo", "enum bar",
 * "foo_t") means in the probed binaries' DWARF (when the probe being
 * typed is a uprobe) or the kernel's BTF, DWARF first when user_first;
 * NULL when neither defines it.
 */
struct type *sema_debuginfo_type(struct sema_ctx *x, const char *name,
				 bool user_first);
/* Look in the program's DWARF first for what ptr points to (a user
 * pointer, or no address space in a uprobe)? ptr may be NULL. */
bool sema_debuginfo_user_first(struct sema_ctx *x, const struct type *ptr);
/* The value of an enumerator: the probed binaries' DWARF in a uprobe,
 * then the kernel's BTF. 0, or -ENOENT. */
int sema_debuginfo_enum(struct sema_ctx *x, const char *name,
			int64_t *value);
/* A kernel enumerator's type as a value: an integer that carries its
 * enum's enumerators (types.h); NULL for other names. */
struct type *sema_debuginfo_enum_type(struct sema_ctx *x, const char *name);

/*
 * sema_typelookup.c: the type a name ("struct foo", "union foo", "enum
 * foo", a typedef) names: the script's C definitions first (a script's
 * struct overrides the kernel's and the program's, as in bpftrace), then
 * debug info (sema_debuginfo_type(), DWARF first when user_first); NULL
 * when none defines it.
 */
struct type *sema_lookup_type(struct sema_ctx *x, const char *name,
			      bool user_first);

/* sema_types.c: type an expression (sets and returns n->type; NULL when
 * unknown or after an error). */
struct type *sema_type_expr(struct sema_ctx *x, struct ast_node *n);

#endif
