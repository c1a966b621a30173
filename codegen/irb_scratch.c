/*
 * irb_scratch: the BPF scratch room, where a program's big temporaries
 * (strings, tuples, map keys and values, output records) live instead of
 * its 512-byte stack, which the verifier counts for a program and the
 * loop callbacks it calls together.
 *
 * The room is the value of a per-CPU array map, CG_MAP_SCRATCH, one
 * entry per program that needs it, as large as the largest program's.
 * Every BPF function starts with a prologue that looks its program's
 * entry up:
 *
 *   entry:        allocas; key = <program>; base = lookup(key);
 *                 if (!base) goto scratch_none
 *   scratch_ok:   the slots' addresses (irb_base.c: base + offset)
 *   body:         the function
 *   scratch_none: return 0
 *
 * A program and its callbacks share the entry; their slots are
 * bump-allocated from it, so that a callback's never overlap the ones of
 * the function that runs it. A slot is given again only within its
 * function, after its scope ended (irb_base.c), as a stack slot is. The
 * same program cannot run twice at once on one CPU (the kernel refuses
 * the recursion), other programs have entries of their own.
 *
 * irb_scratch_finish() runs when every function is built: it numbers the
 * entries of the programs that used the room, defines the map and drops
 * the prologue of the functions that did not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "irb.h"
#include "util.h"

void irb_scratch_prologue(struct irb *ir, bool callback)
{
	LLVMTypeRef params[2] = { ir->ptr, ir->ptr };
	LLVMTypeRef ft = LLVMFunctionType(ir->ptr, params, 2, 0);
	LLVMValueRef callee = LLVMConstIntToPtr(
		LLVMConstInt(ir->i64, BPF_FUNC_map_lookup_elem, 0), ir->ptr);
	unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
	struct irb_scratch_fn s = { .fn = ir->fn };
	LLVMBasicBlockRef body;
	LLVMValueRef key, args[2];

	if (!callback) {
		ir->scratch_prog++;
		ir->scratch_top = 0;
	}
	s.prog = ir->scratch_prog;
	if (!ir->scratch_map)
		ir->scratch_map = LLVMAddGlobal(ir->mod, ir->i64,
						"ubt_scratch_stand_in");
	s.ok = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "scratch_ok");
	s.fail = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
					       "scratch_none");
	body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "body");

	LLVMPositionBuilderAtEnd(ir->b, ir->entry);
	key = irb_alloca_type(ir, ir->i32, "scratch_key");
	/* the entry's number is set by irb_scratch_finish() */
	s.key_store = LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, 0, 0), key);
	args[0] = ir->scratch_map;
	args[1] = key;
	s.base = LLVMBuildCall2(ir->b, ft, callee, args, 2, "scratch_base");
	/* map values are 8-byte aligned: said, LLVM copies and clears the
	 * slots by words, not byte by byte */
	LLVMAddCallSiteAttribute(s.base, LLVMAttributeReturnIndex,
				 LLVMCreateEnumAttribute(ir->ctx, align, 8));
	s.cmp = LLVMBuildICmp(ir->b, LLVMIntEQ, s.base,
			      LLVMConstNull(ir->ptr), "");
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, s.cmp, s.fail, s.ok), true);
	LLVMPositionBuilderAtEnd(ir->b, s.fail);
	LLVMBuildRet(ir->b, LLVMConstInt(ir->i64, 0, 0));
	LLVMPositionBuilderAtEnd(ir->b, s.ok);
	LLVMBuildBr(ir->b, body);
	LLVMPositionBuilderAtEnd(ir->b, body);

	if (ir->nsfn == ir->capsfn) {
		ir->capsfn = ir->capsfn ? 2 * ir->capsfn : 16;
		ir->sfn = xrealloc(ir->sfn, ir->capsfn * sizeof(*ir->sfn));
	}
	ir->sfn[ir->nsfn++] = s;
}

/* A function that made no slot: its entry goes straight on. */
static void irb_scratch_drop(struct irb *ir, struct irb_scratch_fn *s)
{
	LLVMBasicBlockRef entry = LLVMGetInstructionParent(s->base);
	LLVMValueRef key = LLVMGetOperand(s->key_store, 1);

	LLVMInstructionEraseFromParent(LLVMGetBasicBlockTerminator(entry));
	LLVMInstructionEraseFromParent(s->cmp);
	LLVMInstructionEraseFromParent(s->base);
	LLVMInstructionEraseFromParent(s->key_store);
	LLVMInstructionEraseFromParent(key);
	LLVMDeleteBasicBlock(s->fail);
	LLVMPositionBuilderAtEnd(ir->b, entry);
	LLVMBuildBr(ir->b, s->ok);
}

int irb_scratch_finish(struct irb *ir)
{
	int *keys, nkeys = 0;
	LLVMValueRef map;

	if (!ir->scratch_map)
		return 0;
	if (ir->scratch_max > IRB_SCRATCH_MAX) {
		fprintf(stderr,
			"ubt: cannot emit BPF code: a probe needs %zu bytes of temporaries, more than the %d a per-CPU map value holds\n",
			ir->scratch_max, IRB_SCRATCH_MAX);
		return -E2BIG;
	}
	keys = xmalloc((ir->scratch_prog + 1) * sizeof(*keys));
	for (int i = 0; i <= ir->scratch_prog; i++)
		keys[i] = -1;
	for (int i = 0; i < ir->nsfn; i++) {
		struct irb_scratch_fn *s = &ir->sfn[i];

		if (!s->used) {
			irb_scratch_drop(ir, s);
			continue;
		}
		if (keys[s->prog] < 0)
			keys[s->prog] = nkeys++;
		LLVMSetOperand(s->key_store, 0,
			       LLVMConstInt(ir->i32, keys[s->prog], 0));
	}
	free(keys);
	if (nkeys) {
		map = irb_map_define(ir, CG_MAP_SCRATCH,
				     BPF_MAP_TYPE_PERCPU_ARRAY, 4,
				     ir->scratch_max, nkeys);
		LLVMReplaceAllUsesWith(ir->scratch_map, map);
	}
	LLVMDeleteGlobal(ir->scratch_map);
	ir->scratch_map = NULL;
	ir->nsfn = 0;
	return 0;
}
