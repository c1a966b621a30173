/*
 * Placement: which registers of the entry state a probe reads (argN, sarg,
 * reg("..."), retval, args, ustack, ...).  A function whose entry
 * instruction, left in place before the jump, changes only registers the
 * probe does not read runs that probe in user mode (patch_site_sees()).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "ast.h"
#include "patch.h"
#include "sema.h"
#include "place.h"

/* PATCH_REG_* of reg("name") by its struct pt_regs offset (sema) */
static uint32_t place_reg_bit(int64_t off)
{
	static const struct {
		int off;
		uint32_t bit;
	} regs[] = {
		{ 0, PATCH_REG(15) },	{ 8, PATCH_REG(14) },
		{ 16, PATCH_REG(13) },	{ 24, PATCH_REG(12) },
		{ 32, PATCH_REG_RBP },	{ 40, PATCH_REG_RBX },
		{ 48, PATCH_REG(11) },	{ 56, PATCH_REG(10) },
		{ 64, PATCH_REG_R9 },	{ 72, PATCH_REG_R8 },
		{ 80, PATCH_REG_RAX },	{ 88, PATCH_REG_RCX },
		{ 96, PATCH_REG_RDX },	{ 104, PATCH_REG_RSI },
		{ 112, PATCH_REG_RDI },	{ 152, PATCH_REG_RSP },
		/* ip: the function's address, whatever ran before */
		{ 128, 0 },		{ 136, 0 },	{ 160, 0 },
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (regs[i].off == off)
			return regs[i].bit;
	return PATCH_REGS_ALL;	/* orig_ax, flags: not known here */
}

static const uint32_t place_arg_bit[6] = {
	PATCH_REG_RDI, PATCH_REG_RSI, PATCH_REG_RDX,
	PATCH_REG_RCX, PATCH_REG_R8,  PATCH_REG_R9,
};

static int place_reads_fn(struct ast_node *n, void *ctx)
{
	uint32_t *reads = ctx;

	if (n->kind == AST_BUILTIN && n->sema) {
		switch (n->sema->builtin) {
		case BI_ARG:
			*reads |= n->sema->arg >= 0 && n->sema->arg < 6 ?
					  place_arg_bit[n->sema->arg] :
					  PATCH_REGS_ALL;
			break;
		case BI_SARG:
			*reads |= PATCH_REG_RSP;
			break;
		case BI_RETVAL:
			*reads |= PATCH_REG_RAX;
			break;
		case BI_USTACK:
			*reads |= PATCH_REG_RSP | PATCH_REG_RBP;
			break;
		case BI_ARGS:	/* DWARF arguments: registers and stack */
		case BI_CTX:
		case BI_KSTACK:
			*reads |= PATCH_REGS_ALL;
			break;
		default:
			break;
		}
	}
	if (n->kind == AST_CALL && n->sema) {
		if (n->sema->func == FN_REG)
			*reads |= place_reg_bit(n->sema->iargs[0]);
		else if (n->sema->func == FN_USTACK)
			*reads |= PATCH_REG_RSP | PATCH_REG_RBP;
	}
	return ast_visit_children(n, place_reads_fn, ctx);
}

uint32_t place_entry_reads(struct ast_node *p)
{
	uint32_t reads = 0;
	bool entry = false;

	/*
	 * A return probe reads the registers at the return, none of the
	 * entry's: the function runs from the trampoline as it would have
	 * after its entry instruction.  usdt: the argument registers, as
	 * before (a USDT site is inside a function, where nothing may change
	 * a register anyway).
	 */
	for (struct ast_node *ap = p->probe.aps; ap; ap = ap->next)
		if (ap->ap.provider && !strcmp(ap->ap.provider, "uprobe"))
			entry = true;
		else if (!ap->ap.provider ||
			 strcmp(ap->ap.provider, "uretprobe"))
			return PATCH_REGS_ARGS;
	if (!entry)
		return 0;
	if (p->probe.pred)
		place_reads_fn(p->probe.pred, &reads);
	if (p->probe.body)
		place_reads_fn(p->probe.body, &reads);
	return reads;
}
