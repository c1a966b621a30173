/*
 * The bpftrace-language grammar (bpftrace v0.25, plus older spellings).
 * Pure (reentrant) bison parser with struct ast_loc locations; the lexer is
 * frontend/lexer.l. Syntax errors use bison's verbose wording with token
 * aliases, as bpftrace does: "syntax error, unexpected ;, expecting }".
 */
%define api.pure full
%locations
%define api.location.type {struct ast_loc}
%define parse.error verbose
%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {struct compile *c}
/*
 * Shift/reduce conflicts, all resolved by shifting, as bpftrace's grammar
 * does: "@m [" starts the map's keys; "(NAME)" followed by - * & ++ -- is a
 * cast to the type NAME; "(NAME )", "sizeof(NAME)" and "offsetof(NAME," take
 * NAME as a type name (typedef) rather than an identifier.
 */
%expect 9

%code requires {
#include <stdint.h>

#include "ast.h"
#include "compile.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

struct nlist {
	struct ast_node *head, *tail;
	int n;
};

/* What the lexer is inside of (it is in start condition TOP otherwise). */
enum lex_mode {
	LM_BODY,	/* probe body: back to TOP at the closing brace */
	LM_PRED,	/* predicate: ends at '/' before '{' */
	LM_ITEM_BRACE,	/* config, macro, fn: back to TOP at the closing brace */
	LM_ITEM_SEMI,	/* let @map = ...; import "x"; back to TOP at ';' */
};

struct lex_state {
	struct compile *c;
	const char *src;	/* the program text being scanned */
	size_t src_len;
	size_t pos;		/* offset of the next character in src */
	int line, col;		/* position of the next character */
	int depth;		/* brace depth */
	enum lex_mode mode;
	int want_top;
	int cdef_depth;
	struct ast_loc tok_start, comment_start;
	char *buf;		/* string / C definition being collected */
	size_t len, cap;
	void *bufstate;
	/* the program's top-level lists, kept with their tails so that
	 * adding the 70000th probe does not walk the other 69999 */
	struct nlist c_defs, map_decls, macros, imports, probes;
};

struct block_body {
	struct nlist stmts;
	struct ast_node *last;	/* last statement without ';', or NULL */
};

int lex_init(struct lex_state *ls, struct compile *c, yyscan_t *scanner);
void lex_release(struct lex_state *ls, yyscan_t scanner);
}

%code provides {
int yylex(YYSTYPE *lvalp, YYLTYPE *llocp, yyscan_t scanner);
}

%union {
	struct ast_node *node;
	char *str;
	struct type *type;
	enum ast_op op;
	struct nlist list;
	struct block_body body;
}

%code {
#include <errno.h>
#include <string.h>

#include "attach.h"
#include "compat.h"
#include "util.h"

/*
 * The parser's stacks grow up to this many entries (bison's default is
 * 10000): "((((1))))" nests no deeper in the tree, which AST_MAX_DEPTH
 * bounds after parsing.
 */
#define YYMAXDEPTH 100000

static void yyerror(YYLTYPE *loc, yyscan_t scanner, struct compile *c,
		    const char *msg)
{
	(void)scanner;
	/* bison's words when its stacks are full */
	if (!strcmp(msg, "memory exhausted"))
		msg = "the program is nested too deeply for the parser";
	diag_error(&c->diag, loc, "%s", msg);
}

#define NEW(kind, loc) ast_new(&c->arena, (kind), &(loc))

/* the lexer's state, which also holds the parser's (flex's extra) */
struct lex_state *yyget_extra(yyscan_t yyscanner);
#define LS ((struct lex_state *)yyget_extra(scanner))

static struct nlist list1(struct ast_node *n)
{
	struct nlist l = { n, n, 1 };

	return l;
}

static struct nlist list_add(struct nlist l, struct ast_node *n)
{
	if (!l.head)
		return list1(n);
	l.tail->next = n;
	l.tail = n;
	l.n++;
	return l;
}

/* Add n to one of the program's lists (l), whose head is *head. */
static void top_add(struct nlist *l, struct ast_node **head,
		    struct ast_node *n)
{
	*l = list_add(*l, n);
	*head = l->head;
}

static struct nlist list_empty(void)
{
	struct nlist l = { NULL, NULL, 0 };

	return l;
}

static struct ast_node *binop(struct compile *c, enum ast_op op,
			      struct ast_node *l, struct ast_node *r,
			      const YYLTYPE *loc)
{
	struct ast_node *n = ast_new(&c->arena, AST_BINOP, loc);

	n->op.op = op;
	n->op.left = l;
	n->op.right = r;
	return n;
}

static struct ast_node *unop(struct compile *c, enum ast_op op,
			     struct ast_node *e, const YYLTYPE *loc)
{
	struct ast_node *n = ast_new(&c->arena, AST_UNOP, loc);

	n->op.op = op;
	n->op.left = e;
	return n;
}

/* ++ and -- apply to maps and variables only (bpftrace's wording). */
static int check_incdec(struct compile *c, struct ast_node *e,
			enum ast_op op, const YYLTYPE *loc)
{
	if (e->kind == AST_VAR || e->kind == AST_MAP)
		return 0;
	diag_error(&c->diag, loc,
		   "The %s operator must be applied to a map or variable",
		   op == OP_PRE_INC || op == OP_POST_INC ? "++" : "--");
	return -1;
}

/* Only maps and scratch variables can be assigned to. */
static int check_lvalue(struct compile *c, struct ast_node *e)
{
	if (e->kind == AST_VAR || e->kind == AST_MAP)
		return 0;
	diag_error(&c->diag, &e->loc,
		   "Only maps and variables can be assigned to");
	return -1;
}

static struct ast_node *block_stmt(struct compile *c, struct block_body b,
				   const YYLTYPE *loc)
{
	struct ast_node *n = ast_new(&c->arena, AST_BLOCK, loc);

	if (b.last)
		b.stmts = list_add(b.stmts, b.last);
	n->block.valued = b.last && b.last->kind == AST_EXPR_STMT;
	n->block.stmts = b.stmts.head;
	return n;
}

/* Does statement n give a value? An if whose every branch ends in an
 * expression without ';' (v0.26's if expressions). */
static bool stmt_has_value(const struct ast_node *n)
{
	const struct ast_node *last;

	if (!n)
		return false;
	if (n->kind == AST_IF)
		return stmt_has_value(n->if_.then) &&
		       stmt_has_value(n->if_.else_);
	if (n->kind != AST_BLOCK || !n->block.stmts)
		return false;
	for (last = n->block.stmts; last->next; last = last->next)
		;
	return last->kind == AST_EXPR_STMT ? n->block.valued :
					     stmt_has_value(last);
}

/* Statement n, which stmt_has_value(), as an expression: a block as a
 * block expression, an if as c ? then : else. */
static struct ast_node *stmt_value(struct compile *c, struct ast_node *n)
{
	struct ast_node *e, *prev = NULL, *last;

	if (n->kind == AST_IF) {
		e = ast_new(&c->arena, AST_TERNARY, &n->loc);
		e->ternary.cond = n->if_.cond;
		e->ternary.then = stmt_value(c, n->if_.then);
		e->ternary.else_ = stmt_value(c, n->if_.else_);
		return e;
	}
	for (last = n->block.stmts; last->next; last = last->next)
		prev = last;
	e = ast_new(&c->arena, AST_BLOCK_EXPR, &n->loc);
	e->block.expr = last->kind == AST_EXPR_STMT ? last->stmt.expr :
						      stmt_value(c, last);
	if (prev) {
		prev->next = NULL;
		e->block.stmts = n->block.stmts;
	}
	return e;
}

/* @m = { stmts; count() } (v0.26): { stmts; @m = count(); }, an
 * aggregation being assigned to its map directly. Any other n as it is. */
static struct ast_node *assign_block_agg(struct compile *c,
					 struct ast_node *n)
{
	static const char *const aggs[] = {
		"count", "sum", "avg", "min", "max", "stats", "hist", "lhist",
		"tseries",
	};
	struct ast_node *b = n->assign.rhs, *v = b->block.expr, *blk;
	bool agg = false;

	if (n->assign.lhs->kind != AST_MAP || b->kind != AST_BLOCK_EXPR ||
	    !v || v->kind != AST_CALL)
		return n;
	for (size_t i = 0; i < sizeof(aggs) / sizeof(aggs[0]); i++)
		agg = agg || !strcmp(v->call.name, aggs[i]);
	if (!agg)
		return n;
	n->assign.rhs = v;
	blk = ast_new(&c->arena, AST_BLOCK, &n->loc);
	blk->block.stmts = ast_append(b->block.stmts, n);
	return blk;
}

/* for ($k : @map) / for $k : @map: NULL after an error. */
static struct ast_node *for_map(struct compile *c, struct ast_node *var,
				struct ast_node *map, const YYLTYPE *mloc,
				struct ast_node *body, const YYLTYPE *loc)
{
	struct ast_node *n;

	if (map->kind != AST_MAP || map->map.keys) {
		diag_error(&c->diag, mloc,
			   "for loops iterate over a map (@name) or a range (start..end)");
		return NULL;
	}
	n = ast_new(&c->arena, AST_FOR_MAP, loc);
	n->for_.var = var;
	n->for_.map = map;
	n->for_.body = body;
	return n;
}

static struct ast_node *block_expr(struct compile *c, struct block_body b,
				   const YYLTYPE *loc)
{
	struct ast_node *n = ast_new(&c->arena, AST_BLOCK_EXPR, loc);

	if (b.last && b.last->kind == AST_EXPR_STMT) {
		n->block.expr = b.last->stmt.expr;
	} else if (b.last) {
		b.stmts = list_add(b.stmts, b.last);
	} else if (b.stmts.tail && b.stmts.tail->kind == AST_IF &&
		   stmt_has_value(b.stmts.tail)) {
		/* an if that ends the block is its value (v0.26) */
		struct ast_node *prev = NULL;

		for (struct ast_node *s = b.stmts.head; s != b.stmts.tail;
		     s = s->next)
			prev = s;
		n->block.expr = stmt_value(c, b.stmts.tail);
		if (prev)
			prev->next = NULL;
		else
			b.stmts.head = NULL;
	}
	n->block.stmts = b.stmts.head;
	return n;
}

static struct type *named_type(struct compile *c, const char *prefix,
			       const char *name)
{
	struct type *t = type_new(&c->arena, TY_NAMED, 0);

	t->name = prefix ? arena_printf(&c->arena, "%s %s", prefix, name) :
			   arena_strdup(&c->arena, name);
	return t;
}

static struct type *builtin_type(struct compile *c, const char *name)
{
	static const struct {
		const char *name;
		enum type_kind kind;
		size_t size;
		bool is_signed;
	} map[] = {
		{ "void", TY_VOID, 0, false },
		{ "min_t", TY_MIN, 8, true },
		{ "max_t", TY_MAX, 8, true },
		{ "sum_t", TY_SUM, 8, true },
		{ "count_t", TY_COUNT, 8, true },
		{ "avg_t", TY_AVG, 8, true },
		{ "stats_t", TY_STATS, 8, true },
		{ "umin_t", TY_MIN, 8, false },
		{ "umax_t", TY_MAX, 8, false },
		{ "usum_t", TY_SUM, 8, false },
		{ "ucount_t", TY_COUNT, 8, false },
		{ "uavg_t", TY_AVG, 8, false },
		{ "ustats_t", TY_STATS, 8, false },
		{ "timestamp", TY_TIMESTAMP, 8, false },
		{ "macaddr_t", TY_MAC, 6, false },
		{ "cgroup_path_t", TY_CGROUP_PATH, 16, false },
		{ "strerror_t", TY_STRERROR, 8, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		if (!strcmp(map[i].name, name)) {
			struct type *t = type_new(&c->arena, map[i].kind,
						  map[i].size);

			t->is_signed = map[i].is_signed;
			return t;
		}
	}
	BUG("unknown builtin type %s", name);
}

static struct type *int_type(struct compile *c, const char *name)
{
	if (!strcmp(name, "bool"))
		return type_new(&c->arena, TY_BOOL, 1);
	if (name[0] == 'u')
		return type_int(&c->arena, strtoul(name + 4, NULL, 10) / 8,
				false);
	return type_int(&c->arena, strtoul(name + 3, NULL, 10) / 8, true);
}

static struct type *sized_type(struct compile *c, const char *name,
			       uint64_t size)
{
	if (!strcmp(name, "string"))
		return type_string(&c->arena, size);
	if (!strcmp(name, "inet"))
		return type_new(&c->arena, TY_INET, size);
	return type_new(&c->arena, TY_BUFFER, size);
}

static struct type *array_type(struct compile *c, struct type *elem,
			       uint64_t n)
{
	struct type *t = type_new(&c->arena, TY_ARRAY, elem->size * n);

	t->elem = elem;
	t->nelems = n;
	return t;
}

static struct ast_node *negate(struct compile *c, struct ast_node *e,
			       const YYLTYPE *loc)
{
	if (e->kind == AST_INT && !e->num.is_negative) {
		e->num.value = -e->num.value;
		e->num.is_negative = e->num.value != 0;
		e->num.text = arena_printf(&c->arena, "-%s", e->num.text);
		e->loc = *loc;
		return e;
	}
	return unop(c, OP_NEG, e, loc);
}
}

%token T_END 0 "end of file"
%token T_COLON ":" T_SEMI ";" T_LBRACE "{" T_RBRACE "}"
%token T_LBRACKET "[" T_RBRACKET "]" T_LPAREN "(" T_RPAREN ")"
%token T_QUES "?" T_ENDPRED "end predicate" T_COMMA ","
%token T_PARAMCOUNT "$#" T_ASSIGN "="
%token T_EQ "==" T_NE "!=" T_LE "<=" T_GE ">=" T_LEFT "<<" T_RIGHT ">>"
%token T_LT "<" T_GT ">" T_LAND "&&" T_LOR "||" T_PLUS "+" T_INCREMENT "++"
%token T_MINUS "-" T_DECREMENT "--" T_MUL "*" T_DIV "/" T_MOD "%"
%token T_BAND "&" T_BOR "|" T_BXOR "^" T_LNOT "!" T_BNOT "~"
%token T_DOT "." T_DOTDOT ".." T_PTR "->"
%token T_IF "if" T_ELSE "else" T_WHILE "while" T_FOR "for" T_UNROLL "unroll"
%token T_RETURN "return" T_BREAK "break" T_CONTINUE "continue" T_LET "let"
%token T_TYPEOF "typeof"
%token T_SIZEOF "sizeof" T_OFFSETOF "offsetof" T_CONFIG "config"
%token T_MACRO "macro" T_IMPORT "import" T_FN "fn"
%token T_STRUCT "struct" T_UNION "union" T_ENUM "enum"
%token T_LEFTASSIGN "<<=" T_RIGHTASSIGN ">>=" T_PLUSASSIGN "+="
%token T_MINUSASSIGN "-=" T_MULASSIGN "*=" T_DIVASSIGN "/=" T_MODASSIGN "%="
%token T_BANDASSIGN "&=" T_BORASSIGN "|=" T_BXORASSIGN "^="
%token <str> T_IDENT "identifier" T_TYPE_IDENT "type name"
%token <str> T_BUILTIN "builtin"
%token <str> T_MAP "map" T_VAR "variable"
%token <str> T_INT_TYPE "integer type" T_SIZED_TYPE "sized type"
%token <str> T_BUILTIN_TYPE "builtin type"
%token <str> T_ATTACH_POINT "attach point"
%token <str> T_CPREPROC "preprocessor directive" T_CDEF "C definition"
%token <node> T_INT "integer" T_STRING "string" T_BOOL "boolean"
%token <node> T_PARAM "positional parameter"

%type <node> probe attach_point pred config config_item map_decl macro
%type <str> macro_name
%type <node> macro_param import simple_stmt compound_stmt if_stmt subprog
%type <node> fn_param
%type <node> else_part assign_stmt let_stmt jump_stmt loop_stmt
%type <node> if_value else_value
%type <node> expr value unary cond_expr lor_expr land_expr bor_expr
%type <node> bxor_expr band_expr eq_expr rel_expr shift_expr add_expr mul_expr postfix primary call map tuple record
%type <node> record_field var sizeof_expr offsetof_expr
%type <list> attach_points stmts config_items config_list macro_params
%type <list> macro_param_list args args_opt tuple_rest record_fields
%type <list> fn_params fn_param_list
%type <body> block block_body
%type <op> compound_op
%type <type> type let_type let_ident_ptr
%type <str> field_name field_path struct_kw

/*
 * "(NAME) + x" adds to a parenthesised identifier; "(NAME) -x", "(NAME) *x"
 * and "(NAME) &x" cast to the type NAME, as in bpftrace (counted in %expect).
 */
%precedence T_PLUS
%precedence T_RPAREN

%start program

%%

program:
		top_items T_END
		{
			if (!c->program->program.probes) {
				diag_error(&c->diag, &@2,
					   "syntax error, unexpected end of file, expecting attach point");
				YYABORT;
			}
		}
	;

top_items:
		%empty
		{
			YYLTYPE l = @$;

			c->program = NEW(AST_PROGRAM, l);
		}
	|	top_items top_item
	;

top_item:
		T_CPREPROC
		{
			struct ast_node *n = NEW(AST_C_DEFINITION, @1);

			n->cdef.text = $1;
			top_add(&LS->c_defs, &c->program->program.c_defs, n);
		}
	|	T_CDEF
		{
			struct ast_node *n = NEW(AST_C_DEFINITION, @1);

			n->cdef.text = $1;
			top_add(&LS->c_defs, &c->program->program.c_defs, n);
		}
	|	config
		{
			if (c->program->program.config) {
				diag_error(&c->diag, &@1,
					   "Only one config block is allowed");
				YYABORT;
			}
			if (c->program->program.probes) {
				diag_error(&c->diag, &@1,
					   "config block must come before any probe");
				YYABORT;
			}
			c->program->program.config = $1;
		}
	|	map_decl
		{
			top_add(&LS->map_decls, &c->program->program.map_decls,
				$1);
		}
	|	macro
		{
			top_add(&LS->macros, &c->program->program.macros, $1);
		}
	|	import
		{
			top_add(&LS->imports, &c->program->program.imports,
				$1);
		}
	|	probe
		{
			$1->probe.index = LS->probes.n;
			top_add(&LS->probes, &c->program->program.probes, $1);
		}
	|	subprog
		{
			top_add(&LS->macros, &c->program->program.macros, $1);
		}
	;

/* config = { name = value; ... } */
config:
		T_CONFIG T_ASSIGN T_LBRACE config_items T_RBRACE
		{
			$$ = NEW(AST_CONFIG, @$);
			$$->config.items = $4.head;
		}
	;

config_items:
		%empty			{ $$ = list_empty(); }
	|	config_list		{ $$ = $1; }
	|	config_list T_SEMI	{ $$ = $1; }
	;

config_list:
		config_item				{ $$ = list1($1); }
	|	config_list T_SEMI config_item		{ $$ = list_add($1, $3); }
	;

config_item:
		T_IDENT T_ASSIGN expr
		{
			$$ = NEW(AST_CONFIG_ITEM, @$);
			$$->config.key = $1;
			$$->config.value = $3;
		}
	;

/* let @name = hash(100); */
map_decl:
		T_LET T_MAP T_ASSIGN T_IDENT T_LPAREN args_opt T_RPAREN T_SEMI
		{
			$$ = NEW(AST_MAP_DECL, @$);
			$$->map_decl.name = $2;
			$$->map_decl.bpf_type = $4;
			$$->map_decl.max_entries = -1;
			if ($6.n > 1) {
				diag_error(&c->diag, &@6,
					   "%s() takes at most one argument", $4);
				YYABORT;
			}
			if ($6.n == 1) {
				struct ast_node *a = $6.head;

				if (a->kind != AST_INT || a->num.is_negative ||
				    a->num.value > INT64_MAX) {
					diag_error(&c->diag, &a->loc,
						   "%s() expects a positive integer literal",
						   $4);
					YYABORT;
				}
				$$->map_decl.max_entries = (int64_t)a->num.value;
			}
		}
	|	T_LET T_MAP T_SEMI
		{
			diag_error(&c->diag, &@$,
				   "map declaration needs a map type, e.g. let %s = hash(100);",
				   $2);
			YYABORT;
		}
	;

import:
		T_IMPORT T_STRING T_SEMI
		{
			$$ = NEW(AST_IMPORT, @$);
			$$->cdef.text = $2->str.value;
		}
	;

/* macro name($var, @map, expr) { body } */
macro:
		T_MACRO macro_name T_LPAREN macro_params T_RPAREN block
		{
			$$ = NEW(AST_MACRO, @$);
			$$->macro.name = $2;
			$$->macro.params = $4.head;
			$$->macro.body = block_expr(c, $6, &@6);
			if (!$$->macro.body->block.expr)
				$$->macro.body->kind = AST_BLOCK;
		}
	;

/* a macro may be named like a builtin: it overrides it (v0.26) */
macro_name:
		T_IDENT			{ $$ = $1; }
	|	T_BUILTIN		{ $$ = $1; }
	;

macro_params:
		%empty			{ $$ = list_empty(); }
	|	macro_param_list	{ $$ = $1; }
	;

macro_param_list:
		macro_param				{ $$ = list1($1); }
	|	macro_param_list T_COMMA macro_param	{ $$ = list_add($1, $3); }
	;

macro_param:
		T_VAR	{ $$ = NEW(AST_VAR, @1); $$->ident.name = $1; }
	|	T_MAP	{ $$ = NEW(AST_MAP, @1); $$->map.name = $1; }
	|	T_IDENT	{ $$ = NEW(AST_IDENT, @1); $$->ident.name = $1; }
	;

/*
 * fn name($a: type, ...): type { body }: an AST_MACRO with is_fn set,
 * its parameters `let $a: type` declarations (sema_macro.c inlines it)
 */
subprog:
		T_FN T_IDENT T_LPAREN fn_params T_RPAREN T_COLON let_type block
		{
			$$ = NEW(AST_MACRO, @$);
			$$->macro.name = $2;
			$$->macro.params = $4.head;
			$$->macro.body = block_stmt(c, $8, &@8);
			$$->macro.is_fn = true;
			$$->macro.ret_type = $7;
		}
	;

fn_params:
		%empty			{ $$ = (struct nlist){ 0 }; }
	|	fn_param_list		{ $$ = $1; }
	;

fn_param_list:
		fn_param			{ $$ = list1($1); }
	|	fn_param_list T_COMMA fn_param	{ $$ = list_add($1, $3); }
	;

fn_param:
		var T_COLON let_type
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $1;
			$$->let.decl_type = $3;
		}
	;

probe:
		attach_points pred block
		{
			$$ = NEW(AST_PROBE, @$);
			$$->probe.aps = $1.head;
			$$->probe.pred = $2;
			$$->probe.body = block_stmt(c, $3, &@3);
		}
	|	attach_points T_END
		{
			diag_error(&c->diag, &@$,
				   "unexpected end of file, expected {");
			YYABORT;
		}
	;

attach_points:
		attach_point				{ $$ = list1($1); }
	|	attach_points T_COMMA attach_point	{ $$ = list_add($1, $3); }
	;

attach_point:
		T_ATTACH_POINT
		{
			$$ = NEW(AST_ATTACH_POINT, @1);
			ap_parse(c, $$, $1);
		}
	;

pred:
		%empty				{ $$ = NULL; }
	|	T_DIV expr T_ENDPRED		{ $$ = $2; }
	;

block:
		T_LBRACE block_body T_RBRACE	{ $$ = $2; }
	;

/* The last statement of a block needs no ';'. */
block_body:
		stmts			{ $$.stmts = $1; $$.last = NULL; }
	|	stmts simple_stmt	{ $$.stmts = $1; $$.last = $2; }
	;

stmts:
		%empty				{ $$ = list_empty(); }
	|	stmts simple_stmt T_SEMI	{ $$ = list_add($1, $2); }
	|	stmts compound_stmt		{ $$ = list_add($1, $2); }
	;

simple_stmt:
		expr
		{
			$$ = NEW(AST_EXPR_STMT, @$);
			$$->stmt.expr = $1;
		}
	|	assign_stmt	{ $$ = $1; }
	|	let_stmt	{ $$ = $1; }
	|	jump_stmt	{ $$ = $1; }
	;

compound_stmt:
		block		{ $$ = block_stmt(c, $1, &@1); }
	|	if_stmt		{ $$ = $1; }
	|	loop_stmt	{ $$ = $1; }
	;

assign_stmt:
		postfix T_ASSIGN value
		{
			if ($1->kind == AST_IDENT && !strcmp($1->ident.name, "_")) {
				$$ = NEW(AST_DISCARD, @$);
				$$->stmt.expr = $3;
			} else if ($1->kind == AST_TUPLE_INDEX) {
				YYLTYPE l = ast_loc_span(&@1, &@3);

				diag_error(&c->diag, &l,
					   "Tuples are immutable once created. Consider creating a new tuple and assigning it instead.");
				YYABORT;
			} else {
				if (check_lvalue(c, $1))
					YYABORT;
				$$ = NEW(AST_ASSIGN, @$);
				$$->assign.lhs = $1;
				$$->assign.rhs = $3;
				$$->assign.op = OP_NONE;
				$$->assign.op_loc = @2;
				$$ = assign_block_agg(c, $$);
			}
		}
	|	postfix compound_op value
		{
			if ($1->kind == AST_TUPLE_INDEX) {
				YYLTYPE l = ast_loc_span(&@1, &@3);

				diag_error(&c->diag, &l,
					   "Tuples are immutable once created. Consider creating a new tuple and assigning it instead.");
				YYABORT;
			}
			if (check_lvalue(c, $1))
				YYABORT;
			$$ = NEW(AST_ASSIGN, @$);
			$$->assign.lhs = $1;
			$$->assign.rhs = $3;
			$$->assign.op = $2;
			$$->assign.op_loc = @2;
		}
	;

compound_op:
		T_LEFTASSIGN	{ $$ = OP_SHL; }
	|	T_RIGHTASSIGN	{ $$ = OP_SHR; }
	|	T_PLUSASSIGN	{ $$ = OP_ADD; }
	|	T_MINUSASSIGN	{ $$ = OP_SUB; }
	|	T_MULASSIGN	{ $$ = OP_MUL; }
	|	T_DIVASSIGN	{ $$ = OP_DIV; }
	|	T_MODASSIGN	{ $$ = OP_MOD; }
	|	T_BANDASSIGN	{ $$ = OP_BAND; }
	|	T_BORASSIGN	{ $$ = OP_BOR; }
	|	T_BXORASSIGN	{ $$ = OP_BXOR; }
	;

let_stmt:
		T_LET var
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $2;
		}
	|	T_LET var T_COLON let_type
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $2;
			$$->let.decl_type = $4;
		}
	|	T_LET var T_ASSIGN value
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $2;
			$$->let.init = $4;
		}
	|	T_LET var T_COLON let_type T_ASSIGN value
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $2;
			$$->let.decl_type = $4;
			$$->let.init = $6;
		}
	|	T_LET var T_COLON T_TYPEOF T_LPAREN expr T_RPAREN
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $2;
			$$->let.decl_typeof = $6;
		}
	|	T_LET var T_COLON T_TYPEOF T_LPAREN expr T_RPAREN T_ASSIGN value
		{
			$$ = NEW(AST_LET, @$);
			$$->let.var = $2;
			$$->let.decl_typeof = $6;
			$$->let.init = $9;
		}
	;

jump_stmt:
		T_BREAK
		{
			$$ = NEW(AST_JUMP, @$);
			$$->jump.kind = JUMP_BREAK;
		}
	|	T_CONTINUE
		{
			$$ = NEW(AST_JUMP, @$);
			$$->jump.kind = JUMP_CONTINUE;
		}
	|	T_RETURN
		{
			$$ = NEW(AST_JUMP, @$);
			$$->jump.kind = JUMP_RETURN;
		}
	|	T_RETURN value
		{
			$$ = NEW(AST_JUMP, @$);
			$$->jump.kind = JUMP_RETURN;
			$$->jump.value = $2;
		}
	;

/* if, while and unroll take any expression: (x) or, as bpftrace
 * v0.25 writes it, x without parentheses */
if_stmt:
		T_IF expr block else_part
		{
			$$ = NEW(AST_IF, @$);
			$$->if_.cond = $2;
			$$->if_.then = block_stmt(c, $3, &@3);
			$$->if_.else_ = $4;
		}
	;

else_part:
		%empty			{ $$ = NULL; }
	|	T_ELSE block		{ $$ = block_stmt(c, $2, &@2); }
	|	T_ELSE if_stmt		{ $$ = $2; }
	;

loop_stmt:
		T_WHILE expr block
		{
			$$ = NEW(AST_WHILE, @$);
			$$->loop.cond = $2;
			$$->loop.body = block_stmt(c, $3, &@3);
		}
	|	T_UNROLL expr block
		{
			$$ = NEW(AST_UNROLL, @$);
			$$->loop.cond = $2;
			$$->loop.body = block_stmt(c, $3, &@3);
		}
	|	T_FOR T_LPAREN var T_COLON expr T_RPAREN block
		{
			$$ = for_map(c, $3, $5, &@5, block_stmt(c, $7, &@7),
				     &@$);
			if (!$$)
				YYABORT;
		}
	|	T_FOR var T_COLON expr block
		{
			$$ = for_map(c, $2, $4, &@4, block_stmt(c, $5, &@5),
				     &@$);
			if (!$$)
				YYABORT;
		}
	|	T_FOR T_LPAREN var T_COLON expr T_DOTDOT expr T_RPAREN block
		{
			$$ = NEW(AST_FOR_RANGE, @$);
			$$->for_.var = $3;
			$$->for_.start = $5;
			$$->for_.end = $7;
			$$->for_.body = block_stmt(c, $9, &@9);
		}
	|	T_FOR var T_COLON expr T_DOTDOT expr block
		{
			$$ = NEW(AST_FOR_RANGE, @$);
			$$->for_.var = $2;
			$$->for_.start = $4;
			$$->for_.end = $6;
			$$->for_.body = block_stmt(c, $7, &@7);
		}
	;

var:
		T_VAR	{ $$ = NEW(AST_VAR, @1); $$->ident.name = $1; }
	;

/* C precedence, one level per rule, as in bpftrace's grammar. */
expr:
		cond_expr		{ $$ = $1; }
	;

cond_expr:
		lor_expr		{ $$ = $1; }
	|	lor_expr T_QUES expr T_COLON cond_expr
		{
			$$ = NEW(AST_TERNARY, @$);
			$$->ternary.cond = $1;
			$$->ternary.then = $3;
			$$->ternary.else_ = $5;
		}
	|	lor_expr T_QUES T_COLON cond_expr
		{
			/* a ?: b (v0.26): a ? a : b, a evaluated twice as
			 * there (one node, two uses) */
			$$ = NEW(AST_TERNARY, @$);
			$$->ternary.cond = $1;
			$$->ternary.then = $1;
			$$->ternary.else_ = $4;
		}
	;

lor_expr:
		land_expr		{ $$ = $1; }
	|	lor_expr T_LOR land_expr	{ $$ = binop(c, OP_LOR, $1, $3, &@$); }
	;

land_expr:
		bor_expr		{ $$ = $1; }
	|	land_expr T_LAND bor_expr	{ $$ = binop(c, OP_LAND, $1, $3, &@$); }
	;

bor_expr:
		bxor_expr		{ $$ = $1; }
	|	bor_expr T_BOR bxor_expr	{ $$ = binop(c, OP_BOR, $1, $3, &@$); }
	;

bxor_expr:
		band_expr		{ $$ = $1; }
	|	bxor_expr T_BXOR band_expr	{ $$ = binop(c, OP_BXOR, $1, $3, &@$); }
	;

band_expr:
		eq_expr			{ $$ = $1; }
	|	band_expr T_BAND eq_expr	{ $$ = binop(c, OP_BAND, $1, $3, &@$); }
	;

eq_expr:
		rel_expr		{ $$ = $1; }
	|	eq_expr T_EQ rel_expr	{ $$ = binop(c, OP_EQ, $1, $3, &@$); }
	|	eq_expr T_NE rel_expr	{ $$ = binop(c, OP_NE, $1, $3, &@$); }
	;

rel_expr:
		shift_expr		{ $$ = $1; }
	|	rel_expr T_LE shift_expr	{ $$ = binop(c, OP_LE, $1, $3, &@$); }
	|	rel_expr T_GE shift_expr	{ $$ = binop(c, OP_GE, $1, $3, &@$); }
	|	rel_expr T_LT shift_expr	{ $$ = binop(c, OP_LT, $1, $3, &@$); }
	|	rel_expr T_GT shift_expr	{ $$ = binop(c, OP_GT, $1, $3, &@$); }
	;

shift_expr:
		add_expr		{ $$ = $1; }
	|	shift_expr T_LEFT add_expr	{ $$ = binop(c, OP_SHL, $1, $3, &@$); }
	|	shift_expr T_RIGHT add_expr	{ $$ = binop(c, OP_SHR, $1, $3, &@$); }
	;

add_expr:
		mul_expr		{ $$ = $1; }
	|	add_expr T_PLUS mul_expr	{ $$ = binop(c, OP_ADD, $1, $3, &@$); }
	|	add_expr T_MINUS mul_expr	{ $$ = binop(c, OP_SUB, $1, $3, &@$); }
	;

mul_expr:
		unary			{ $$ = $1; }
	|	mul_expr T_MUL unary	{ $$ = binop(c, OP_MUL, $1, $3, &@$); }
	|	mul_expr T_DIV unary	{ $$ = binop(c, OP_DIV, $1, $3, &@$); }
	|	mul_expr T_MOD unary	{ $$ = binop(c, OP_MOD, $1, $3, &@$); }
	;

/* unary operators and casts */
unary:
		postfix			{ $$ = $1; }
	|	T_MINUS unary		{ $$ = negate(c, $2, &@$); }
	|	T_PLUS unary		{ $$ = unop(c, OP_POS, $2, &@$); }
	|	T_LNOT unary		{ $$ = unop(c, OP_LNOT, $2, &@$); }
	|	T_BNOT unary		{ $$ = unop(c, OP_BNOT, $2, &@$); }
	|	T_MUL unary		{ $$ = unop(c, OP_DEREF, $2, &@$); }
	|	T_BAND unary		{ $$ = unop(c, OP_ADDR, $2, &@$); }
	|	T_INCREMENT unary
		{
			if (check_incdec(c, $2, OP_PRE_INC, &@1))
				YYABORT;
			$$ = unop(c, OP_PRE_INC, $2, &@$);
		}
	|	T_DECREMENT unary
		{
			if (check_incdec(c, $2, OP_PRE_DEC, &@1))
				YYABORT;
			$$ = unop(c, OP_PRE_DEC, $2, &@$);
		}
	|	T_LPAREN type T_RPAREN unary
		{
			$$ = NEW(AST_CAST, @$);
			$$->cast.to = $2;
			$$->cast.expr = $4;
		}
	|	T_LPAREN T_IDENT T_RPAREN unary
		{
			$$ = NEW(AST_CAST, @$);
			$$->cast.to = named_type(c, NULL, $2);
			$$->cast.expr = $4;
		}
	|	T_LPAREN T_TYPEOF T_LPAREN expr T_RPAREN T_RPAREN unary
		{
			$$ = NEW(AST_CAST, @$);
			$$->cast.to_typeof = $4;
			$$->cast.expr = $7;
		}
	;

postfix:
		primary				{ $$ = $1; }
	|	postfix T_DOT field_name
		{
			$$ = NEW(AST_FIELD, @$);
			$$->field.expr = $1;
			$$->field.field = $3;
		}
	|	postfix T_PTR field_name
		{
			$$ = NEW(AST_FIELD, @$);
			$$->field.expr = $1;
			$$->field.field = $3;
			$$->field.arrow = true;
		}
	|	postfix T_DOT T_INT
		{
			if ($3->num.value > INT32_MAX) {
				diag_error(&c->diag, &@3, "Invalid tuple index: %s",
					   $3->num.text);
				YYABORT;
			}
			$$ = NEW(AST_TUPLE_INDEX, @$);
			$$->tindex.expr = $1;
			$$->tindex.index = (int)$3->num.value;
		}
	|	postfix T_LBRACKET expr T_RBRACKET
		{
			$$ = NEW(AST_INDEX, @$);
			$$->index.expr = $1;
			$$->index.index = $3;
		}
	|	postfix T_INCREMENT
		{
			if (check_incdec(c, $1, OP_POST_INC, &@1))
				YYABORT;
			$$ = unop(c, OP_POST_INC, $1, &@$);
		}
	|	postfix T_DECREMENT
		{
			if (check_incdec(c, $1, OP_POST_DEC, &@1))
				YYABORT;
			$$ = unop(c, OP_POST_DEC, $1, &@$);
		}
	;

primary:
		T_INT			{ $$ = $1; }
	|	T_STRING		{ $$ = $1; }
	|	T_BOOL			{ $$ = $1; }
	|	T_PARAM			{ $$ = $1; }
	|	T_PARAMCOUNT
		{
			$$ = NEW(AST_POSITIONAL, @$);
			$$->pos.num = -1;
		}
	|	T_IDENT
		{
			$$ = NEW(AST_IDENT, @$);
			$$->ident.name = $1;
		}
	|	T_BUILTIN
		{
			$$ = NEW(AST_BUILTIN, @$);
			$$->ident.name = $1;
		}
	|	var			{ $$ = $1; }
	|	map			{ $$ = $1; }
	|	call			{ $$ = $1; }
	|	sizeof_expr		{ $$ = $1; }
	|	offsetof_expr		{ $$ = $1; }
	|	T_LPAREN expr T_RPAREN
		{
			$$ = $2;
			/* v0.26: what is built on "(e)" starts at e, not at
			 * its "(" (compat token-columns; --compat,
			 * UBT_COMPAT or the config block's, all known
			 * before the program is parsed: compat_prescan()) */
			if (compat_has(COMPAT_TOKEN_COLUMNS)) {
				@$.first_line = @2.first_line;
				@$.first_column = @2.first_column;
			}
		}
	|	T_LPAREN block T_RPAREN	{ $$ = block_expr(c, $2, &@2); }
	|	T_LPAREN T_IDENT T_RPAREN
		{
			$$ = NEW(AST_IDENT, @2);
			$$->ident.name = $2;
		}
	|	tuple			{ $$ = $1; }
	|	record			{ $$ = $1; }
	|	T_LPAREN T_RPAREN	{ $$ = NEW(AST_TUPLE, @$); }
	;

/* Where a block expression { stmts; value } may stand for an expression. */
value:
		expr			{ $$ = $1; }
	|	block			{ $$ = block_expr(c, $1, &@$); }
	|	if_value		{ $$ = $1; }
	;

/* if/else as a value (v0.26): c ? { then } : { else } */
if_value:
		T_IF expr block else_value
		{
			$$ = NEW(AST_TERNARY, @$);
			$$->ternary.cond = $2;
			$$->ternary.then = block_expr(c, $3, &@3);
			$$->ternary.else_ = $4;
		}
	;

else_value:
		T_ELSE block		{ $$ = block_expr(c, $2, &@2); }
	|	T_ELSE if_value		{ $$ = $2; }
	;

map:
		T_MAP
		{
			$$ = NEW(AST_MAP, @$);
			$$->map.name = $1;
		}
	|	T_MAP T_LBRACKET args T_RBRACKET
		{
			$$ = NEW(AST_MAP, @$);
			$$->map.name = $1;
			$$->map.keys = $3.head;
			$$->map.nkeys = $3.n;
		}
	;

call:
		T_IDENT T_LPAREN args_opt T_RPAREN
		{
			$$ = NEW(AST_CALL, @$);
			$$->call.name = $1;
			$$->call.args = $3.head;
			$$->call.nargs = $3.n;
		}
	|	T_BUILTIN T_LPAREN args_opt T_RPAREN
		{
			/* kstack(), ustack(), cgroup(), ... */
			$$ = NEW(AST_CALL, @$);
			$$->call.name = $1;
			$$->call.args = $3.head;
			$$->call.nargs = $3.n;
		}
	;

args_opt:
		%empty		{ $$ = list_empty(); }
	|	args		{ $$ = $1; }
	;

args:
		value			{ $$ = list1($1); }
	|	args T_COMMA value	{ $$ = list_add($1, $3); }
	;

tuple:
		T_LPAREN expr T_COMMA tuple_rest T_RPAREN
		{
			struct nlist l = list1($2);

			if ($4.head) {
				l.tail->next = $4.head;
				l.tail = $4.tail;
				l.n += $4.n;
			}
			$$ = NEW(AST_TUPLE, @$);
			$$->tuple.elems = l.head;
			$$->tuple.nelems = l.n;
		}
	;

tuple_rest:
		%empty			{ $$ = list_empty(); }
	|	args			{ $$ = $1; }
	|	args T_COMMA		{ $$ = $1; }
	;

record:
		T_LPAREN record_fields T_RPAREN
		{
			$$ = NEW(AST_RECORD, @$);
			$$->tuple.elems = $2.head;
			$$->tuple.nelems = $2.n;
		}
	|	T_LPAREN record_fields T_COMMA T_RPAREN
		{
			$$ = NEW(AST_RECORD, @$);
			$$->tuple.elems = $2.head;
			$$->tuple.nelems = $2.n;
		}
	;

record_fields:
		record_field				{ $$ = list1($1); }
	|	record_fields T_COMMA record_field	{ $$ = list_add($1, $3); }
	;

record_field:
		T_IDENT T_ASSIGN value
		{
			$$ = NEW(AST_RECORD_FIELD, @$);
			$$->rfield.name = $1;
			$$->rfield.value = $3;
		}
	;

sizeof_expr:
		T_SIZEOF T_LPAREN type T_RPAREN
		{
			$$ = NEW(AST_SIZEOF, @$);
			$$->size.of_type = $3;
		}
	|	T_SIZEOF T_LPAREN T_IDENT T_RPAREN
		{
			$$ = NEW(AST_SIZEOF, @$);
			$$->size.of_type = named_type(c, NULL, $3);
		}
	|	T_SIZEOF T_LPAREN expr T_RPAREN
		{
			$$ = NEW(AST_SIZEOF, @$);
			$$->size.expr = $3;
		}
	;

offsetof_expr:
		T_OFFSETOF T_LPAREN type T_COMMA field_path T_RPAREN
		{
			$$ = NEW(AST_OFFSETOF, @$);
			$$->size.of_type = $3;
			$$->size.field = $5;
		}
	|	T_OFFSETOF T_LPAREN T_IDENT T_COMMA field_path T_RPAREN
		{
			$$ = NEW(AST_OFFSETOF, @$);
			$$->size.of_type = named_type(c, NULL, $3);
			$$->size.field = $5;
		}
	|	T_OFFSETOF T_LPAREN expr T_COMMA field_path T_RPAREN
		{
			$$ = NEW(AST_OFFSETOF, @$);
			$$->size.expr = $3;
			$$->size.field = $5;
		}
	;

field_path:
		field_name			{ $$ = $1; }
	|	field_path T_DOT field_name
		{
			$$ = arena_printf(&c->arena, "%s.%s", $1, $3);
		}
	;

field_name:
		T_IDENT			{ $$ = $1; }
	|	T_BUILTIN		{ $$ = $1; }
	|	T_TYPE_IDENT		{ $$ = $1; }
	|	T_INT_TYPE		{ $$ = $1; }
	|	T_SIZED_TYPE		{ $$ = $1; }
	|	T_BUILTIN_TYPE		{ $$ = $1; }
	|	T_IF			{ $$ = "if"; }
	|	T_ELSE			{ $$ = "else"; }
	|	T_WHILE			{ $$ = "while"; }
	|	T_FOR			{ $$ = "for"; }
	|	T_UNROLL		{ $$ = "unroll"; }
	|	T_RETURN		{ $$ = "return"; }
	|	T_BREAK			{ $$ = "break"; }
	|	T_CONTINUE		{ $$ = "continue"; }
	|	T_LET			{ $$ = "let"; }
	|	T_TYPEOF		{ $$ = "typeof"; }
	|	T_SIZEOF		{ $$ = "sizeof"; }
	|	T_OFFSETOF		{ $$ = "offsetof"; }
	|	T_CONFIG		{ $$ = "config"; }
	|	T_MACRO			{ $$ = "macro"; }
	|	T_IMPORT		{ $$ = "import"; }
	|	T_STRUCT		{ $$ = "struct"; }
	|	T_UNION			{ $$ = "union"; }
	|	T_ENUM			{ $$ = "enum"; }
	;

struct_kw:
		T_STRUCT	{ $$ = "struct"; }
	|	T_UNION		{ $$ = "union"; }
	|	T_ENUM		{ $$ = "enum"; }
	;

type:
		T_INT_TYPE			{ $$ = int_type(c, $1); }
	|	T_INT_TYPE T_LBRACKET T_INT T_RBRACKET
		{
			$$ = array_type(c, int_type(c, $1), $3->num.value);
		}
	|	T_INT_TYPE T_LBRACKET T_RBRACKET
		{
			$$ = array_type(c, int_type(c, $1), 0);
		}
	|	T_SIZED_TYPE			{ $$ = sized_type(c, $1, 0); }
	|	T_SIZED_TYPE T_LBRACKET T_INT T_RBRACKET
		{
			$$ = sized_type(c, $1, $3->num.value);
		}
	|	T_BUILTIN_TYPE			{ $$ = builtin_type(c, $1); }
	|	struct_kw T_IDENT		{ $$ = named_type(c, $1, $2); }
	|	struct_kw T_TYPE_IDENT		{ $$ = named_type(c, $1, $2); }
	|	struct_kw T_IDENT T_LBRACKET T_INT T_RBRACKET
		{
			$$ = array_type(c, named_type(c, $1, $2), $4->num.value);
		}
	|	T_TYPE_IDENT			{ $$ = named_type(c, NULL, $1); }
	|	type T_MUL			{ $$ = type_pointer(&c->arena, $1); }
	;

let_type:
		type			{ $$ = $1; }
	|	T_IDENT			{ $$ = named_type(c, NULL, $1); }
	|	let_ident_ptr		{ $$ = $1; }
	;

let_ident_ptr:
		T_IDENT T_MUL
		{
			$$ = type_pointer(&c->arena, named_type(c, NULL, $1));
		}
	|	let_ident_ptr T_MUL	{ $$ = type_pointer(&c->arena, $1); }
	;

%%

static void parse_check_depth(struct compile *c)
{
	struct ast_node *n = ast_too_deep(c->program, AST_MAX_DEPTH);
	struct diag *g;

	if (!n)
		return;
	g = diag_error(&c->diag, &n->loc,
		       "the program is nested too deeply: more than %d levels",
		       AST_MAX_DEPTH);
	if (n->kind == AST_IF)
		diag_hint(&c->diag, g,
			  "each \"else if\" is one level deeper than the if before it");
}

int parse_program(struct compile *c)
{
	struct lex_state ls;
	yyscan_t scanner;
	int err;

	c->program = NULL;
	err = lex_init(&ls, c, &scanner);
	if (err)
		return err;
	err = yyparse(scanner, c);
	lex_release(&ls, scanner);
	if (!err && !diag_has_errors(&c->diag))
		parse_check_depth(c);
	if (err || diag_has_errors(&c->diag)) {
		if (!diag_has_errors(&c->diag))
			diag_error(&c->diag, NULL, "parser failed");
		return -EINVAL;
	}
	return 0;
}
