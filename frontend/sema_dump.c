/*
 * -d sema: the typed AST (every expression with its type, in bpftrace
 * 0.17's spelling) and the program tables codegen reads.
 */
#include <stdio.h>
#include <string.h>

#include "sema.h"
#include "sema_int.h"
#include "util.h"

struct dump_ctx {
	struct sema_ctx x;
	FILE *f;
	int depth;
};

static bool is_expr(enum ast_kind k)
{
	return k >= AST_INT && k <= AST_RECORD && k != AST_RECORD_FIELD;
}

static void label(struct dump_ctx *d, const struct ast_node *n)
{
	FILE *f = d->f;

	fputs(ast_kind_name(n->kind), f);
	switch (n->kind) {
	case AST_PROBE:
		if (n->sema && n->sema->probe)
			fprintf(f, " %d %s", n->sema->probe->index,
				n->sema->probe->name);
		break;
	case AST_ATTACH_POINT:
		fprintf(f, " %s", n->ap.raw ? n->ap.raw : "");
		if (n->sema && n->sema->ap)
			fprintf(f, " (%s%s)",
				sema_provider_name(n->sema->ap->provider),
				n->sema->ap->available ? "" : ", not available");
		break;
	case AST_INT:
		fprintf(f, " %lld", (long long)n->num.value);
		break;
	case AST_STRING:
		fputs(" \"", f);
		for (size_t i = 0; i < n->str.len; i++) {
			unsigned char c = n->str.value[i];

			if (c == '\n')
				fputs("\\n", f);
			else if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c < ' ' || c >= 0x7f)
				fprintf(f, "\\x%02x", c);
			else
				fputc(c, f);
		}
		fputc('"', f);
		break;
	case AST_BUILTIN:
	case AST_IDENT:
	case AST_VAR:
		fprintf(f, " %s", n->ident.name);
		if (n->kind == AST_VAR && n->sema && n->sema->var)
			fprintf(f, " (slot %d)", n->sema->var->slot);
		break;
	case AST_POSITIONAL:
		if (n->pos.num < 0)
			fputs(" $#", f);
		else
			fprintf(f, " $%d", n->pos.num);
		break;
	case AST_MAP:
		fprintf(f, " %s", n->map.name);
		if (n->sema && n->sema->map)
			fprintf(f, " (map %d)", n->sema->map->id);
		break;
	case AST_CALL:
		fprintf(f, " %s", n->call.name);
		if (n->sema && n->sema->fmt)
			fprintf(f, " (fmt %d)", n->sema->fmt->id);
		break;
	case AST_BINOP:
	case AST_UNOP:
		fprintf(f, " %s", ast_op_str(n->op.op));
		break;
	case AST_ASSIGN:
		fprintf(f, " %s=", n->assign.op ? ast_op_str(n->assign.op) : "");
		break;
	case AST_FIELD:
		fprintf(f, " %s%s", n->field.arrow ? "->" : ".", n->field.field);
		break;
	case AST_TUPLE_INDEX:
		fprintf(f, " .%d", n->tindex.index);
		break;
	case AST_CAST:
		fprintf(f, " (%s)",
			sema_tstr(&d->x, n->type ? n->type : n->cast.to));
		break;
	default:
		break;
	}
	if (is_expr(n->kind) && n->kind != AST_IDENT)
		fprintf(f, " :: %s", sema_tstr(&d->x, n->type));
	fputc('\n', f);
}

static int node(struct ast_node *n, void *ctx)
{
	struct dump_ctx *d = ctx;

	if (n->kind == AST_CONFIG || n->kind == AST_C_DEFINITION)
		return 0;
	for (int i = 0; i < d->depth; i++)
		fputc(' ', d->f);
	label(d, n);
	d->depth++;
	ast_visit_children(n, node, d);
	d->depth--;
	return 0;
}

void sema_dump(FILE *f, struct compile *c)
{
	struct dump_ctx d = {
		.x = { .c = c, .a = &c->arena, .d = &c->diag },
		.f = f,
	};
	struct sema_program *p = c->sema;

	if (!c->program)
		return;
	node(c->program, &d);
	if (!p)
		return;
	fprintf(f, "max_strlen %d\n", p->max_strlen);
	for (int i = 0; i < p->nmaps; i++) {
		struct sema_map *m = p->maps[i];

		fprintf(f, "map %d %s [%s] %s\n", m->id, m->name,
			m->nkeys ? sema_tstr(&d.x, m->key) : "",
			sema_tstr(&d.x, m->value));
	}
	for (int i = 0; i < p->nprobes; i++) {
		struct sema_probe *sp = p->probes[i];

		for (int j = 0; j < sp->nvars; j++)
			fprintf(f, "probe %d var %d %s %s\n", sp->index,
				sp->vars[j]->slot, sp->vars[j]->name,
				sema_tstr(&d.x, sp->vars[j]->type));
	}
	for (int i = 0; i < p->nfmts; i++)
		fprintf(f, "fmt %d %s %s\n", p->fmts[i]->id,
			sema_func_name(p->fmts[i]->func),
			sema_tstr(&d.x, p->fmts[i]->args));
}
