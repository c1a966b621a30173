/*
 * Registers and addresses: reg("name") (a register of the probe's
 * context), kaddr("symbol") (a kernel symbol's address).
 */
#include <errno.h>
#include <string.h>

#include "sema.h"
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
	switch (x->provider) {
	case PROV_KPROBE:
	case PROV_KRETPROBE:
	case PROV_UPROBE:
	case PROV_URETPROBE:
	case PROV_USDT:
	case PROV_PROFILE:
	case PROV_INTERVAL:
	case PROV_SOFTWARE:
	case PROV_HARDWARE:
	case PROV_WATCHPOINT:
	case PROV_ASYNCWATCHPOINT:
		return 0;
	default:
		sema_error(x, &call->loc, "reg can not be used with \"%s\" probes",
			   x->ap && x->ap->ap.provider ? x->ap->ap.provider :
							  sema_provider_name(x->provider));
		return -EINVAL;
	}
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

const struct sema_func_ops sema_funcs_sym[] = {
	{ .name = "kaddr", .id = FN_KADDR, .min_args = 1, .max_args = 1,
	  .type = ty_kaddr },
	{ .name = "reg", .id = FN_REG, .min_args = 1, .max_args = 1,
	  .type = ty_reg, .check = ck_reg },
	{ 0 },
};
