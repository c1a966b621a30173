/*
 * The AST. Every node lives in the compilation's arena. Lists are singly
 * linked through ->next. Passes annotate nodes in place (->type, and the
 * per-kind "resolved" fields), so the AST after sema is the typed AST that
 * codegen lowers.
 */
#ifndef UBT_AST_H
#define UBT_AST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"
#include "diag.h"
#include "types.h"

struct sema_node;

enum ast_kind {
	/* top level */
	AST_PROGRAM,
	AST_PROBE,
	AST_ATTACH_POINT,
	AST_C_DEFINITION,	/* #include / #define / struct, union, enum, typedef text */
	AST_CONFIG,		/* config = { ... }: list of AST_CONFIG_ITEM */
	AST_CONFIG_ITEM,
	AST_MAP_DECL,		/* let @name = hash(100); */
	AST_MACRO,		/* macro name(params) { block } */
	AST_IMPORT,		/* import "name"; */

	/* statements */
	AST_EXPR_STMT,
	AST_ASSIGN,		/* lhs op= rhs: lhs is a variable, map or field */
	AST_LET,		/* let $x[: type] [= init] */
	AST_IF,
	AST_WHILE,
	AST_UNROLL,
	AST_FOR_MAP,		/* for ($kv : @map) */
	AST_FOR_RANGE,		/* for ($i : start..end) */
	AST_JUMP,		/* break, continue, return [expr] */
	AST_BLOCK,		/* { stmts } as a statement */
	AST_DISCARD,		/* _ = expr; */

	/* expressions */
	AST_INT,
	AST_BOOL,
	AST_STRING,
	AST_BUILTIN,		/* pid, comm, arg0, args, retval, ... */
	AST_IDENT,		/* a bare identifier: enum value, type name, macro param */
	AST_POSITIONAL,		/* $1, $2 ... (num), $# (num == -1) */
	AST_VAR,		/* $name */
	AST_MAP,		/* @name or @name[keys] or @[keys] */
	AST_CALL,		/* name(args) */
	AST_SIZEOF,		/* sizeof(type) or sizeof(expr) */
	AST_OFFSETOF,		/* offsetof(type, field.path) */
	AST_BINOP,
	AST_UNOP,
	AST_TERNARY,
	AST_FIELD,		/* expr.field or expr->field */
	AST_INDEX,		/* expr[index] */
	AST_TUPLE,		/* (a, b, ...) */
	AST_TUPLE_INDEX,	/* expr.N */
	AST_CAST,		/* (type)expr */
	AST_BLOCK_EXPR,		/* { stmts; expr } */
	AST_RECORD,		/* (name = expr, ...) */
	AST_RECORD_FIELD,

	AST_KIND_COUNT,
};

/* Operators; the token text is ast_op_str(). */
enum ast_op {
	OP_NONE,
	/* binary */
	OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
	OP_BAND, OP_BOR, OP_BXOR, OP_SHL, OP_SHR,
	OP_LAND, OP_LOR,
	OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
	/* unary */
	OP_NEG, OP_POS, OP_LNOT, OP_BNOT, OP_DEREF, OP_ADDR,
	OP_PRE_INC, OP_PRE_DEC, OP_POST_INC, OP_POST_DEC,
};

enum ast_jump {
	JUMP_BREAK,
	JUMP_CONTINUE,
	JUMP_RETURN,
};

/*
 * A parsed attach point. The raw text is kept for messages and for probe
 * names; the fields are filled by ap_parse() (frontend/attach.c), which
 * splits "provider:target:func" as bpftrace does. Wildcard expansion
 * produces further ast_attach_point values during sema/shim.
 */
struct ast_attach_point {
	const char *raw;	/* as written, quotes removed */
	const char *provider;	/* canonical: "uprobe", "tracepoint", "BEGIN", ... */
	const char *target;	/* binary/library path, tracepoint category, ... */
	const char *ns;		/* usdt provider namespace */
	const char *func;	/* function, tracepoint/event name, usdt name */
	const char *lang;	/* uprobe:lib:cpp:"name" */
	uint64_t address;	/* uprobe:bin:0x1234 */
	uint64_t func_offset;	/* uprobe:bin:func+0x10 */
	uint64_t freq;		/* profile/interval/software/hardware count */
	const char *unit;	/* interval unit as written: s, ms, us, hz, ... */
	uint64_t len;		/* watchpoint length in bytes */
	const char *mode;	/* watchpoint mode: r, w, x, rw, ... */
	const char *src_file;	/* uprobe:bin@FILE:LINE (v0.26) */
	int src_line;
	int pid;		/* usdt/uprobe with -p; 0 = any */
	bool need_expansion;	/* contains wildcards */
	bool quoted_func;
};

/* The macro calls a node was expanded from, innermost first (v0.26's
 * "expanded from" notes). */
struct ast_expansion {
	struct ast_loc loc;			/* the call */
	const struct ast_expansion *up;		/* the call's own, or NULL */
};

/* Where a node ubt writes in place of a macro of v0.26's standard
 * library stands there (assert()'s errorf: stdlib/base.bt:6:5-37): its
 * messages at run time say so, as v0.26's. */
struct ast_stdloc {
	const char *file;
	struct ast_loc loc;
};

struct ast_node {
	enum ast_kind kind;
	struct ast_loc loc;
	const struct ast_expansion *from;	/* a macro's body: its calls */
	const struct ast_stdloc *stdloc;	/* printed at run time */
	struct ast_node *next;	/* next in a list (probes, statements, args, ...) */
	struct type *type;	/* filled by sema for expressions */
	struct sema_node *sema;	/* filled by sema: resolved builtin, call, map,
				 * variable, probe (frontend/sema.h) */

	union {
		struct {	/* AST_PROGRAM */
			struct ast_node *c_defs;	/* AST_C_DEFINITION list */
			struct ast_node *config;	/* AST_CONFIG or NULL */
			struct ast_node *map_decls;	/* AST_MAP_DECL list */
			struct ast_node *macros;	/* AST_MACRO list */
			struct ast_node *imports;	/* AST_IMPORT list */
			struct ast_node *probes;	/* AST_PROBE list */
		} program;
		struct {	/* AST_PROBE */
			struct ast_node *aps;	/* AST_ATTACH_POINT list */
			struct ast_node *pred;	/* expression or NULL */
			struct ast_node *body;	/* AST_BLOCK */
			int index;		/* order in the program, from 0 */
		} probe;
		struct ast_attach_point ap;	/* AST_ATTACH_POINT */
		struct {	/* AST_C_DEFINITION, AST_IMPORT */
			const char *text;
		} cdef;
		struct {	/* AST_CONFIG (items), AST_CONFIG_ITEM (key = value) */
			struct ast_node *items;
			const char *key;
			struct ast_node *value;	/* AST_INT, AST_STRING, AST_BOOL, AST_IDENT */
		} config;
		struct {	/* AST_MAP_DECL */
			const char *name;	/* with '@' */
			const char *bpf_type;	/* "hash", "lruhash", "percpuarray", ... */
			int64_t max_entries;
		} map_decl;
		struct {	/* AST_MACRO, also fn subprograms */
			const char *name;
			/* AST_VAR / AST_MAP / AST_IDENT list; of a fn, AST_LET
			 * ($a: type) */
			struct ast_node *params;
			struct ast_node *body;		/* AST_BLOCK_EXPR or AST_BLOCK */
			struct type *ret_type;		/* fn: the return type */
			bool is_fn;
		} macro;

		struct {	/* AST_EXPR_STMT, AST_DISCARD */
			struct ast_node *expr;
		} stmt;
		struct {	/* AST_ASSIGN: lhs op= rhs; op == OP_NONE for plain = */
			struct ast_node *lhs, *rhs;
			enum ast_op op;
			struct ast_loc op_loc;	/* of "=" or "op=" */
		} assign;
		struct {	/* AST_LET */
			struct ast_node *var;		/* AST_VAR */
			struct type *decl_type;	/* NULL when no ": type" */
			struct ast_node *init;		/* NULL when no "= expr" */
			/* ": typeof(expr)" (v0.25): the expression, typed,
			 * never evaluated; NULL otherwise */
			struct ast_node *decl_typeof;
		} let;
		struct {	/* AST_IF: else_ is AST_BLOCK, AST_IF (else if) or NULL */
			struct ast_node *cond, *then, *else_;
		} if_;
		struct {	/* AST_WHILE, AST_UNROLL (cond is the count) */
			struct ast_node *cond, *body;
		} loop;
		struct {	/* AST_FOR_MAP, AST_FOR_RANGE */
			struct ast_node *var;		/* AST_VAR */
			struct ast_node *map;		/* AST_MAP (FOR_MAP) */
			struct ast_node *start, *end;	/* FOR_RANGE */
			struct ast_node *body;
		} for_;
		struct {	/* AST_JUMP */
			enum ast_jump kind;
			struct ast_node *value;	/* return value or NULL */
		} jump;
		struct {	/* AST_BLOCK, AST_BLOCK_EXPR */
			struct ast_node *stmts;
			struct ast_node *expr;	/* BLOCK_EXPR: the value, last */
			/* BLOCK_EXPR of an inlined fn: its return type; its
			 * return statements leave the block with the value */
			struct type *fn_ret;
			/* AST_BLOCK: its last statement is an expression
			 * without ';', a value if the block is one (an if
			 * used as a value, v0.26) */
			bool valued;
		} block;

		struct {	/* AST_INT, AST_BOOL */
			uint64_t value;
			bool is_negative;	/* written as -N */
			const char *text;	/* as written, for messages */
		} num;
		struct {	/* AST_STRING */
			const char *value;	/* escapes processed */
			size_t len;		/* may contain NUL */
		} str;
		struct {	/* AST_BUILTIN, AST_IDENT, AST_VAR */
			const char *name;	/* as written, with '$' for VAR */
		} ident;
		struct {	/* AST_POSITIONAL */
			int num;		/* 1.. ; -1 for $# */
		} pos;
		struct {	/* AST_MAP */
			const char *name;	/* "@", "@name" */
			struct ast_node *keys;	/* list, NULL for keyless */
			int nkeys;
		} map;
		struct {	/* AST_CALL */
			const char *name;
			struct ast_node *args;
			int nargs;
		} call;
		struct {	/* AST_SIZEOF, AST_OFFSETOF */
			struct type *of_type;	/* sizeof(type), offsetof(type, ...) */
			struct ast_node *expr;	/* sizeof(expr), offsetof(expr, ...) */
			const char *field;	/* offsetof: "a.b.c" */
		} size;
		struct {	/* AST_BINOP, AST_UNOP */
			enum ast_op op;
			struct ast_node *left, *right;	/* UNOP: left only */
		} op;
		struct {	/* AST_TERNARY */
			struct ast_node *cond, *then, *else_;
		} ternary;
		struct {	/* AST_FIELD */
			struct ast_node *expr;
			const char *field;
			bool arrow;	/* written with -> */
		} field;
		struct {	/* AST_INDEX */
			struct ast_node *expr, *index;
		} index;
		struct {	/* AST_TUPLE, AST_RECORD */
			struct ast_node *elems;
			int nelems;
		} tuple;
		struct {	/* AST_TUPLE_INDEX */
			struct ast_node *expr;
			int index;
		} tindex;
		struct {	/* AST_CAST */
			struct type *to;	/* NULL with to_typeof */
			struct ast_node *expr;
			/* (typeof(e))expr (v0.25): e, typed, never
			 * evaluated; NULL otherwise */
			struct ast_node *to_typeof;
		} cast;
		struct {	/* AST_RECORD_FIELD */
			const char *name;
			struct ast_node *value;
		} rfield;
	};
};

struct ast_node *ast_new(struct arena *a, enum ast_kind kind,
			 const struct ast_loc *loc);
/* Append b to the list starting at a; returns the head. */
struct ast_node *ast_append(struct ast_node *a, struct ast_node *b);
int ast_list_len(const struct ast_node *n);
const char *ast_kind_name(enum ast_kind k);
const char *ast_op_str(enum ast_op op);
/* Merge two locations into the span from a's start to b's end. */
struct ast_loc ast_loc_span(const struct ast_loc *a, const struct ast_loc *b);

/* True for the names bpftrace treats as builtin variables (pid, arg0, ...). */
bool ast_is_builtin(const char *name);

/* Print the tree for -d ast and the frontend tests; stable format. */
void ast_dump(FILE *f, const struct ast_node *program);

/*
 * The passes after the parser walk the tree recursively: a program nested
 * deeper than this (an expression of thousands of operators, a chain of
 * thousands of "else if") is refused before they run out of stack.
 */
#define AST_MAX_DEPTH 5000
/* The first node more than max levels below n, or NULL. */
struct ast_node *ast_too_deep(struct ast_node *n, int max);

/* Generic walker: calls fn(node, ctx) on each child of n (not recursive). */
typedef int (*ast_visit_fn)(struct ast_node *n, void *ctx);
int ast_visit_children(struct ast_node *n, ast_visit_fn fn, void *ctx);

#endif
