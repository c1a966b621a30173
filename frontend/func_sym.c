/*
 * Registers and addresses: reg("name") (a register of the probe's
 * context), kaddr("symbol") (a kernel symbol's address), uaddr("symbol")
 * (a symbol of the probed binary: a pointer to it in the process).
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
#include "probes.h"
#include "sema_int.h"
#include "util.h"

/* x86-64 struct pt_regs, by bpftrace's register names */
static const struct {
	const char *name;
	int off;
} sym_regs[] = {
	{ "r15", 0 },	{ "r14", 8 },	  { "r13", 16 },   { "r12", 24 },
	{ "bp", 32 },	{ "bx", 40 },	  { "r11", 48 },   { "r10", 56 },
	{ "r9", 64 },	{ "r8", 72 },	  { "ax", 80 },	   { "cx", 88 },
	{ "dx", 96 },	{ "si", 104 },	  { "di", 112 },   { "orig_ax", 120 },
	{ "ip", 128 },	{ "cs", 136 },	  { "flags", 144 }, { "sp", 152 },
	{ "ss", 160 },
};

static int sema_reg_offset(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(sym_regs); i++)
		if (!strcmp(sym_regs[i].name, name))
			return sym_regs[i].off;
	return -1;
}

static struct type *want_literal(struct sema_ctx *x, struct ast_node *call,
				 const char **s)
{
	if (!sema_str_literal(x, call->call.args, s)) {
		sema_error(x, &call->loc,
			   "%s() expects a string literal (%s provided)",
			   call->call.name, type_class(call->call.args->type));
		return NULL;
	}
	return sema_uint64(x);
}

static struct type *ty_reg(struct sema_ctx *x, struct ast_node *call,
			   struct sema_map *m)
{
	struct type *t;
	const char *s;
	int off;

	(void)m;
	t = want_literal(x, call, &s);
	if (!t)
		return NULL;
	off = sema_reg_offset(s);
	if (off < 0) {
		sema_error(x, &call->loc,
			   "'%s' is not a valid register on this architecture (x86_64)",
			   s);
		return NULL;
	}
	sema_node(x, call)->iargs[0] = off;
	return t;
}

/* reg() reads a struct pt_regs: probes whose context is one */
static int ck_reg(struct sema_ctx *x, struct ast_node *call)
{
	if (sema_provider_regs(x->provider))
		return 0;
	sema_error(x, &call->loc, "reg can not be used with \"%s\" probes",
		   x->ap && x->ap->ap.provider ? x->ap->ap.provider :
						  sema_provider_name(x->provider));
	return -EINVAL;
}

static struct type *ty_kaddr(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	const char *s;
	struct type *t;

	(void)m;
	t = want_literal(x, call, &s);
	if (t)
		t->addrspace = AS_KERNEL;
	return t;
}

static bool sym_user_provider(enum sema_provider p)
{
	return p == PROV_UPROBE || p == PROV_URETPROBE || p == PROV_USDT;
}

/*
 * uaddr("name"): the symbol in every attach point's binary (all of the
 * same size); a pointer to an integer of that size (1, 2 or 4 bytes,
 * else 8) in user memory.  codegen adds the binary's load address.
 */
static struct type *ty_uaddr(struct sema_ctx *x, struct ast_node *call,
			     struct sema_map *m)
{
	struct ast_node *probe = x->probe ? x->probe->node : NULL;
	uint64_t size = 0, addr, sz;
	bool first = true;
	const char *s;
	struct type *t;

	(void)m;
	if (!want_literal(x, call, &s))
		return NULL;
	for (struct ast_node *ap = probe ? probe->probe.aps : NULL; ap;
	     ap = ap->next) {
		const char **paths;
		int n;

		/* elsewhere ck_uaddr refuses it, and as bpftrace, the
		 * symbol is not found either */
		if (!ap->ap.provider || (strcmp(ap->ap.provider, "uprobe") &&
					 strcmp(ap->ap.provider, "uretprobe") &&
					 strcmp(ap->ap.provider, "usdt")) ||
		    !ap->ap.target ||
		    probes_resolve_target(x->a, ap->ap.target, x->c->pid,
					  &paths, &n) ||
		    n < 1 || probes_elf_symbol(paths[0], s, &addr, &sz)) {
			sema_error(x, &call->loc,
				   "Could not resolve symbol: %s:%s",
				   ap->ap.target ? ap->ap.target : "", s);
			return NULL;
		}
		if (!first && sz != size) {
			sema_error(x, &call->loc,
				   "Symbol size mismatch between probes. Symbol \"%s\" has size %llu for probe \"%s\" but size %llu for probe \"%s\"",
				   s, (unsigned long long)size,
				   probe->probe.aps->ap.raw,
				   (unsigned long long)sz, ap->ap.raw);
			return NULL;
		}
		size = sz;
		first = false;
	}
	t = type_pointer(x->a, type_int(x->a, size == 1 || size == 2 ||
						      size == 4 ? size : 8,
					true));
	t->addrspace = AS_USER;
	return t;
}

static int ck_uaddr(struct sema_ctx *x, struct ast_node *call)
{
	if (sym_user_provider(x->provider))
		return 0;
	sema_error(x, &call->loc, "uaddr can not be used with \"%s\" probes",
		   x->ap && x->ap->ap.provider ? x->ap->ap.provider :
						  sema_provider_name(x->provider));
	return -EINVAL;
}

const struct sema_func_ops sema_funcs_sym[] = {
	{ .name = "kaddr", .id = FN_KADDR, .min_args = 1, .max_args = 1,
	  .type = ty_kaddr },
	{ .name = "reg", .id = FN_REG, .min_args = 1, .max_args = 1,
	  .type = ty_reg, .check = ck_reg },
	{ .name = "uaddr", .id = FN_UADDR, .min_args = 1, .max_args = 1,
	  .type = ty_uaddr, .check = ck_uaddr },
	{ 0 },
};
