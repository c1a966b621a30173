/*
 * AST helpers and the AST dump used by `ubt -d ast` and the frontend tests.
 *
 * Dump format: one node per line, two spaces of indentation per level, the
 * node kind first, then its attributes; child nodes follow, indented. Lists
 * that need a label (predicate, else, keys, ...) get a label line of their
 * own. The format is stable: tests compare it byte for byte.
 */
#include <inttypes.h>
#include <string.h>

#include "ast.h"
#include "util.h"

struct ast_node *ast_new(struct arena *a, enum ast_kind kind,
			 const struct ast_loc *loc)
{
	struct ast_node *n = arena_alloc(a, sizeof(*n));

	n->kind = kind;
	if (loc)
		n->loc = *loc;
	return n;
}

struct ast_node *ast_append(struct ast_node *a, struct ast_node *b)
{
	struct ast_node *p = a;

	if (!a)
		return b;
	while (p->next)
		p = p->next;
	p->next = b;
	return a;
}

int ast_list_len(const struct ast_node *n)
{
	int len = 0;

	for (; n; n = n->next)
		len++;
	return len;
}

static const char *const kind_names[AST_KIND_COUNT] = {
	[AST_PROGRAM] = "program",
	[AST_PROBE] = "probe",
	[AST_ATTACH_POINT] = "attach_point",
	[AST_C_DEFINITION] = "c_definition",
	[AST_CONFIG] = "config",
	[AST_CONFIG_ITEM] = "config_item",
	[AST_MAP_DECL] = "map_decl",
	[AST_MACRO] = "macro",
	[AST_IMPORT] = "import",
	[AST_EXPR_STMT] = "expr_stmt",
	[AST_ASSIGN] = "assign",
	[AST_LET] = "let",
	[AST_IF] = "if",
	[AST_WHILE] = "while",
	[AST_UNROLL] = "unroll",
	[AST_FOR_MAP] = "for_map",
	[AST_FOR_RANGE] = "for_range",
	[AST_JUMP] = "jump",
	[AST_BLOCK] = "block",
	[AST_DISCARD] = "discard",
	[AST_INT] = "int",
	[AST_BOOL] = "bool",
	[AST_STRING] = "string",
	[AST_BUILTIN] = "builtin",
	[AST_IDENT] = "ident",
	[AST_POSITIONAL] = "positional",
	[AST_VAR] = "var",
	[AST_MAP] = "map",
	[AST_CALL] = "call",
	[AST_SIZEOF] = "sizeof",
	[AST_OFFSETOF] = "offsetof",
	[AST_BINOP] = "binop",
	[AST_UNOP] = "unop",
	[AST_TERNARY] = "ternary",
	[AST_FIELD] = "field",
	[AST_INDEX] = "index",
	[AST_TUPLE] = "tuple",
	[AST_TUPLE_INDEX] = "tuple_index",
	[AST_CAST] = "cast",
	[AST_BLOCK_EXPR] = "block_expr",
	[AST_RECORD] = "record",
	[AST_RECORD_FIELD] = "record_field",
};

const char *ast_kind_name(enum ast_kind k)
{
	if ((unsigned)k >= AST_KIND_COUNT || !kind_names[k])
		BUG("bad AST kind %d", (int)k);
	return kind_names[k];
}

const char *ast_op_str(enum ast_op op)
{
	switch (op) {
	case OP_NONE: return "";
	case OP_ADD: return "+";
	case OP_SUB: return "-";
	case OP_MUL: return "*";
	case OP_DIV: return "/";
	case OP_MOD: return "%";
	case OP_BAND: return "&";
	case OP_BOR: return "|";
	case OP_BXOR: return "^";
	case OP_SHL: return "<<";
	case OP_SHR: return ">>";
	case OP_LAND: return "&&";
	case OP_LOR: return "||";
	case OP_EQ: return "==";
	case OP_NE: return "!=";
	case OP_LT: return "<";
	case OP_LE: return "<=";
	case OP_GT: return ">";
	case OP_GE: return ">=";
	case OP_NEG: return "-";
	case OP_POS: return "+";
	case OP_LNOT: return "!";
	case OP_BNOT: return "~";
	case OP_DEREF: return "*";
	case OP_ADDR: return "&";
	case OP_PRE_INC: return "++";
	case OP_PRE_DEC: return "--";
	case OP_POST_INC: return "++";
	case OP_POST_DEC: return "--";
	}
	BUG("bad operator %d", (int)op);
}

struct ast_loc ast_loc_span(const struct ast_loc *a, const struct ast_loc *b)
{
	struct ast_loc l = *a;

	l.last_line = b->last_line;
	l.last_column = b->last_column;
	return l;
}

bool ast_is_builtin(const char *name)
{
	static const char *const names[] = {
		"pid", "tid", "uid", "gid", "nsecs", "elapsed", "numaid",
		"cpu", "ncpus", "curtask", "rand", "cgroup", "comm", "kstack",
		"ustack", "func", "probe", "retval", "args", "ctx", "username",
		"cpid", "jiffies", "usermode", "__builtin_cpid",
	};

	if (!strncmp(name, "arg", 3) && name[3]) {
		const char *p = name + 3;

		while (*p >= '0' && *p <= '9')
			p++;
		if (!*p)
			return true;
	}
	if (!strncmp(name, "sarg", 4) && name[4]) {
		const char *p = name + 4;

		while (*p >= '0' && *p <= '9')
			p++;
		if (!*p)
			return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

int ast_visit_children(struct ast_node *n, ast_visit_fn fn, void *ctx)
{
	struct ast_node *lists[8] = { 0 };
	struct ast_node *singles[8] = { 0 };
	int nl = 0, ns = 0, err;

	if (!n)
		return 0;
	switch (n->kind) {
	case AST_PROGRAM:
		lists[nl++] = n->program.c_defs;
		singles[ns++] = n->program.config;
		lists[nl++] = n->program.map_decls;
		lists[nl++] = n->program.macros;
		lists[nl++] = n->program.imports;
		lists[nl++] = n->program.probes;
		break;
	case AST_PROBE:
		lists[nl++] = n->probe.aps;
		singles[ns++] = n->probe.pred;
		singles[ns++] = n->probe.body;
		break;
	case AST_CONFIG:
		lists[nl++] = n->config.items;
		break;
	case AST_CONFIG_ITEM:
		singles[ns++] = n->config.value;
		break;
	case AST_MACRO:
		lists[nl++] = n->macro.params;
		singles[ns++] = n->macro.body;
		break;
	case AST_EXPR_STMT:
	case AST_DISCARD:
		singles[ns++] = n->stmt.expr;
		break;
	case AST_ASSIGN:
		singles[ns++] = n->assign.lhs;
		singles[ns++] = n->assign.rhs;
		break;
	case AST_LET:
		singles[ns++] = n->let.var;
		singles[ns++] = n->let.decl_typeof;
		singles[ns++] = n->let.init;
		break;
	case AST_IF:
		singles[ns++] = n->if_.cond;
		singles[ns++] = n->if_.then;
		singles[ns++] = n->if_.else_;
		break;
	case AST_WHILE:
	case AST_UNROLL:
		singles[ns++] = n->loop.cond;
		singles[ns++] = n->loop.body;
		break;
	case AST_FOR_MAP:
	case AST_FOR_RANGE:
		singles[ns++] = n->for_.var;
		singles[ns++] = n->for_.map;
		singles[ns++] = n->for_.start;
		singles[ns++] = n->for_.end;
		singles[ns++] = n->for_.body;
		break;
	case AST_JUMP:
		singles[ns++] = n->jump.value;
		break;
	case AST_BLOCK:
	case AST_BLOCK_EXPR:
		lists[nl++] = n->block.stmts;
		singles[ns++] = n->block.expr;
		break;
	case AST_MAP:
		lists[nl++] = n->map.keys;
		break;
	case AST_CALL:
		lists[nl++] = n->call.args;
		break;
	case AST_SIZEOF:
	case AST_OFFSETOF:
		singles[ns++] = n->size.expr;
		break;
	case AST_BINOP:
	case AST_UNOP:
		singles[ns++] = n->op.left;
		singles[ns++] = n->op.right;
		break;
	case AST_TERNARY:
		singles[ns++] = n->ternary.cond;
		if (n->ternary.then != n->ternary.cond)	/* not a ?: b */
			singles[ns++] = n->ternary.then;
		singles[ns++] = n->ternary.else_;
		break;
	case AST_FIELD:
		singles[ns++] = n->field.expr;
		break;
	case AST_INDEX:
		singles[ns++] = n->index.expr;
		singles[ns++] = n->index.index;
		break;
	case AST_TUPLE:
	case AST_RECORD:
		lists[nl++] = n->tuple.elems;
		break;
	case AST_TUPLE_INDEX:
		singles[ns++] = n->tindex.expr;
		break;
	case AST_CAST:
		singles[ns++] = n->cast.to_typeof;
		singles[ns++] = n->cast.expr;
		break;
	case AST_RECORD_FIELD:
		singles[ns++] = n->rfield.value;
		break;
	default:
		break;
	}
	/* program order: lists and singles are visited in source order */
	if (n->kind == AST_PROGRAM) {
		for (struct ast_node *p = lists[0]; p; p = p->next)
			if ((err = fn(p, ctx)))
				return err;
		if (singles[0] && (err = fn(singles[0], ctx)))
			return err;
		for (int i = 1; i < nl; i++)
			for (struct ast_node *p = lists[i]; p; p = p->next)
				if ((err = fn(p, ctx)))
					return err;
		return 0;
	}
	for (int i = 0; i < nl; i++)
		for (struct ast_node *p = lists[i]; p; p = p->next)
			if ((err = fn(p, ctx)))
				return err;
	for (int i = 0; i < ns; i++)
		if (singles[i] && (err = fn(singles[i], ctx)))
			return err;
	return 0;
}

struct ast_depth {
	int depth, max;
	struct ast_node *deep;
};

static int ast_depth_visit(struct ast_node *n, void *ctx)
{
	struct ast_depth *d = ctx;
	int err;

	if (++d->depth > d->max) {
		d->deep = n;
		return 1;
	}
	err = ast_visit_children(n, ast_depth_visit, d);
	d->depth--;
	return err;
}

struct ast_node *ast_too_deep(struct ast_node *n, int max)
{
	struct ast_depth d = { .max = max };

	if (n)
		ast_depth_visit(n, &d);
	return d.deep;
}

/* ---- dump ---- */

static void dump_indent(FILE *f, int depth)
{
	for (int i = 0; i < depth; i++)
		fputs("  ", f);
}

static void dump_quoted(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = s[i];

		switch (ch) {
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		default:
			if (ch < 0x20 || ch >= 0x7f)
				fprintf(f, "\\x%02x", ch);
			else
				fputc(ch, f);
		}
	}
	fputc('"', f);
}

/* A type as written in the program: uint8, string[16], struct foo *, ... */
static void dump_type(FILE *f, const struct type *t)
{
	if (!t) {
		fputs("none", f);
		return;
	}
	switch (t->kind) {
	case TY_INT:
		fprintf(f, "%sint%zu", t->is_signed ? "" : "u", t->size * 8);
		break;
	case TY_BOOL:
		fputs("bool", f);
		break;
	case TY_STRING:
	case TY_INET:
	case TY_BUFFER:
		fputs(t->kind == TY_STRING ? "string" :
		      t->kind == TY_INET ? "inet" : "buffer", f);
		if (t->size)
			fprintf(f, "[%zu]", t->size);
		break;
	case TY_POINTER:
		dump_type(f, t->elem);
		fputs(t->elem && t->elem->kind == TY_POINTER ? "*" : " *", f);
		break;
	case TY_ARRAY:
		dump_type(f, t->elem);
		if (t->nelems)
			fprintf(f, "[%zu]", t->nelems);
		else
			fputs("[]", f);
		break;
	case TY_NAMED:
	case TY_RECORD:
	case TY_ENUM:
		fputs(t->name ? t->name : "?", f);
		break;
	case TY_MIN: case TY_MAX: case TY_SUM: case TY_AVG: case TY_STATS:
	case TY_COUNT: {
		static const char *const n[] = {
			[TY_COUNT] = "count_t", [TY_SUM] = "sum_t",
			[TY_AVG] = "avg_t", [TY_MIN] = "min_t",
			[TY_MAX] = "max_t", [TY_STATS] = "stats_t",
		};
		fprintf(f, "%s%s", t->is_signed ? "" : "u", n[t->kind]);
		break;
	}
	case TY_TIMESTAMP:
		fputs("timestamp", f);
		break;
	case TY_MAC:
		fputs("macaddr_t", f);
		break;
	case TY_CGROUP_PATH:
		fputs("cgroup_path_t", f);
		break;
	case TY_STRERROR:
		fputs("strerror_t", f);
		break;
	case TY_VOID:
		fputs("void", f);
		break;
	default:
		fprintf(f, "type%d", (int)t->kind);
		break;
	}
}

static void dump_node(FILE *f, const struct ast_node *n, int depth);

static void dump_list(FILE *f, const struct ast_node *n, int depth)
{
	for (; n; n = n->next)
		dump_node(f, n, depth);
}

static void dump_label(FILE *f, const char *label, const struct ast_node *n,
		       int depth)
{
	if (!n)
		return;
	dump_indent(f, depth);
	fprintf(f, "%s\n", label);
	dump_list(f, n, depth + 1);
}

static void dump_ap(FILE *f, const struct ast_attach_point *ap)
{
	fprintf(f, " %s", ap->raw ? ap->raw : "?");
	if (ap->provider)
		fprintf(f, " provider=%s", ap->provider);
	if (ap->target)
		fprintf(f, " target=%s", ap->target);
	if (ap->ns)
		fprintf(f, " ns=%s", ap->ns);
	if (ap->lang)
		fprintf(f, " lang=%s", ap->lang);
	if (ap->func) {
		fputs(" func=", f);
		if (ap->quoted_func)
			dump_quoted(f, ap->func, strlen(ap->func));
		else
			fputs(ap->func, f);
	}
	if (ap->address)
		fprintf(f, " address=0x%" PRIx64, ap->address);
	if (ap->func_offset)
		fprintf(f, " offset=%" PRIu64, ap->func_offset);
	if (ap->freq)
		fprintf(f, " freq=%" PRIu64, ap->freq);
	if (ap->unit)
		fprintf(f, " unit=%s", ap->unit);
	if (ap->len)
		fprintf(f, " len=%" PRIu64, ap->len);
	if (ap->mode)
		fprintf(f, " mode=%s", ap->mode);
	if (ap->need_expansion)
		fputs(" wildcard", f);
}

static void dump_node(FILE *f, const struct ast_node *n, int depth)
{
	static const char *const jumps[] = { "break", "continue", "return" };

	dump_indent(f, depth);
	fputs(ast_kind_name(n->kind), f);
	switch (n->kind) {
	case AST_PROGRAM:
		fputc('\n', f);
		dump_list(f, n->program.c_defs, depth + 1);
		if (n->program.config)
			dump_node(f, n->program.config, depth + 1);
		dump_list(f, n->program.imports, depth + 1);
		dump_list(f, n->program.map_decls, depth + 1);
		dump_list(f, n->program.macros, depth + 1);
		dump_list(f, n->program.probes, depth + 1);
		return;
	case AST_PROBE:
		fputc('\n', f);
		dump_list(f, n->probe.aps, depth + 1);
		dump_label(f, "predicate", n->probe.pred, depth + 1);
		dump_node(f, n->probe.body, depth + 1);
		return;
	case AST_ATTACH_POINT:
		dump_ap(f, &n->ap);
		fputc('\n', f);
		return;
	case AST_C_DEFINITION:
	case AST_IMPORT:
		fputc(' ', f);
		dump_quoted(f, n->cdef.text, strlen(n->cdef.text));
		fputc('\n', f);
		return;
	case AST_CONFIG:
		fputc('\n', f);
		dump_list(f, n->config.items, depth + 1);
		return;
	case AST_CONFIG_ITEM:
		fprintf(f, " %s\n", n->config.key);
		dump_node(f, n->config.value, depth + 1);
		return;
	case AST_MAP_DECL:
		fprintf(f, " %s %s", n->map_decl.name, n->map_decl.bpf_type);
		if (n->map_decl.max_entries >= 0)
			fprintf(f, " %" PRId64, n->map_decl.max_entries);
		fputc('\n', f);
		return;
	case AST_MACRO:
		fprintf(f, " %s%s\n", n->macro.name,
			n->macro.is_fn ? " (fn)" : "");
		dump_label(f, "params", n->macro.params, depth + 1);
		dump_node(f, n->macro.body, depth + 1);
		return;
	case AST_EXPR_STMT:
	case AST_DISCARD:
		fputc('\n', f);
		dump_node(f, n->stmt.expr, depth + 1);
		return;
	case AST_ASSIGN:
		fprintf(f, " %s=\n", ast_op_str(n->assign.op));
		dump_node(f, n->assign.lhs, depth + 1);
		dump_node(f, n->assign.rhs, depth + 1);
		return;
	case AST_LET:
		fprintf(f, " %s", n->let.var->ident.name);
		if (n->let.decl_type) {
			fputs(" : ", f);
			dump_type(f, n->let.decl_type);
		}
		fputc('\n', f);
		if (n->let.decl_typeof) {
			dump_indent(f, depth + 1);
			fputs("typeof\n", f);
			dump_node(f, n->let.decl_typeof, depth + 2);
		}
		if (n->let.init)
			dump_node(f, n->let.init, depth + 1);
		return;
	case AST_IF:
		fputc('\n', f);
		dump_node(f, n->if_.cond, depth + 1);
		dump_node(f, n->if_.then, depth + 1);
		if (n->if_.else_) {
			dump_indent(f, depth + 1);
			fputs("else\n", f);
			dump_node(f, n->if_.else_, depth + 2);
		}
		return;
	case AST_WHILE:
	case AST_UNROLL:
		fputc('\n', f);
		dump_node(f, n->loop.cond, depth + 1);
		dump_node(f, n->loop.body, depth + 1);
		return;
	case AST_FOR_MAP:
		fprintf(f, " %s\n", n->for_.var->ident.name);
		dump_node(f, n->for_.map, depth + 1);
		dump_node(f, n->for_.body, depth + 1);
		return;
	case AST_FOR_RANGE:
		fprintf(f, " %s\n", n->for_.var->ident.name);
		dump_node(f, n->for_.start, depth + 1);
		dump_node(f, n->for_.end, depth + 1);
		dump_node(f, n->for_.body, depth + 1);
		return;
	case AST_JUMP:
		fprintf(f, " %s\n", jumps[n->jump.kind]);
		if (n->jump.value)
			dump_node(f, n->jump.value, depth + 1);
		return;
	case AST_BLOCK:
	case AST_BLOCK_EXPR:
		fputc('\n', f);
		dump_list(f, n->block.stmts, depth + 1);
		if (n->block.expr) {
			dump_indent(f, depth + 1);
			fputs("value\n", f);
			dump_node(f, n->block.expr, depth + 2);
		}
		return;
	case AST_INT:
		if (n->num.is_negative)
			fprintf(f, " %" PRId64 "\n", (int64_t)n->num.value);
		else
			fprintf(f, " %" PRIu64 "\n", n->num.value);
		return;
	case AST_BOOL:
		fprintf(f, " %s\n", n->num.value ? "true" : "false");
		return;
	case AST_STRING:
		fputc(' ', f);
		dump_quoted(f, n->str.value, n->str.len);
		fputc('\n', f);
		return;
	case AST_BUILTIN:
	case AST_IDENT:
	case AST_VAR:
		fprintf(f, " %s\n", n->ident.name);
		return;
	case AST_POSITIONAL:
		if (n->pos.num < 0)
			fputs(" $#\n", f);
		else
			fprintf(f, " $%d\n", n->pos.num);
		return;
	case AST_MAP:
		fprintf(f, " %s\n", n->map.name);
		dump_label(f, "keys", n->map.keys, depth + 1);
		return;
	case AST_CALL:
		fprintf(f, " %s\n", n->call.name);
		dump_list(f, n->call.args, depth + 1);
		return;
	case AST_SIZEOF:
	case AST_OFFSETOF:
		if (n->size.of_type) {
			fputs(" type ", f);
			dump_type(f, n->size.of_type);
		}
		if (n->size.field)
			fprintf(f, " field %s", n->size.field);
		fputc('\n', f);
		if (n->size.expr)
			dump_node(f, n->size.expr, depth + 1);
		return;
	case AST_BINOP:
		fprintf(f, " %s\n", ast_op_str(n->op.op));
		dump_node(f, n->op.left, depth + 1);
		dump_node(f, n->op.right, depth + 1);
		return;
	case AST_UNOP:
		fprintf(f, " %s%s\n", ast_op_str(n->op.op),
			n->op.op == OP_POST_INC || n->op.op == OP_POST_DEC ?
				" (post)" : "");
		dump_node(f, n->op.left, depth + 1);
		return;
	case AST_TERNARY:
		fputc('\n', f);
		dump_node(f, n->ternary.cond, depth + 1);
		dump_node(f, n->ternary.then, depth + 1);
		dump_node(f, n->ternary.else_, depth + 1);
		return;
	case AST_FIELD:
		fprintf(f, " %s%s\n", n->field.arrow ? "->" : ".",
			n->field.field);
		dump_node(f, n->field.expr, depth + 1);
		return;
	case AST_INDEX:
		fputc('\n', f);
		dump_node(f, n->index.expr, depth + 1);
		dump_node(f, n->index.index, depth + 1);
		return;
	case AST_TUPLE:
	case AST_RECORD:
		fputc('\n', f);
		dump_list(f, n->tuple.elems, depth + 1);
		return;
	case AST_TUPLE_INDEX:
		fprintf(f, " %d\n", n->tindex.index);
		dump_node(f, n->tindex.expr, depth + 1);
		return;
	case AST_CAST:
		if (n->cast.to_typeof) {
			fputs(" typeof\n", f);
			dump_node(f, n->cast.to_typeof, depth + 1);
			dump_node(f, n->cast.expr, depth + 1);
			return;
		}
		fputc(' ', f);
		dump_type(f, n->cast.to);
		fputc('\n', f);
		dump_node(f, n->cast.expr, depth + 1);
		return;
	case AST_RECORD_FIELD:
		fprintf(f, " %s\n", n->rfield.name);
		dump_node(f, n->rfield.value, depth + 1);
		return;
	case AST_KIND_COUNT:
		break;
	}
	BUG("bad AST kind %d", (int)n->kind);
}

void ast_dump(FILE *f, const struct ast_node *program)
{
	if (program)
		dump_node(f, program, 0);
}
