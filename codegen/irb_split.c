/*
 * Splitting of long basic blocks before instruction selection.
 *
 * LLVM selects and schedules instructions one basic block at a time, and
 * its list scheduler (SUnit heights in ScheduleDAGRRList) costs time
 * quadratic in the size of the block: a probe of 10000 map assignments,
 * one straight block after optimisation, spent 20 s there. Cutting every
 * block into pieces of at most IRB_SPLIT_MAX instructions, joined by
 * unconditional branches that cost no instruction (fall-through), keeps
 * that cost linear in the program. It runs after the optimisation
 * pipeline, which would merge the pieces again.
 */
#include <stdbool.h>

#include "irb.h"

/* Whether every use of bb is a branch to it (no blockaddress). */
static bool irb_split_only_branches(LLVMBasicBlockRef bb)
{
	LLVMValueRef v = LLVMBasicBlockAsValue(bb);

	for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
		if (!LLVMIsATerminatorInst(LLVMGetUser(u)))
			return false;
	}
	return true;
}

/* Make every branch to bb a branch to head. */
static void irb_split_redirect(LLVMBasicBlockRef bb, LLVMBasicBlockRef head)
{
	LLVMValueRef v = LLVMBasicBlockAsValue(bb);
	LLVMUseRef u;

	while ((u = LLVMGetFirstUse(v))) {
		LLVMValueRef term = LLVMGetUser(u);
		unsigned n = LLVMGetNumSuccessors(term);

		for (unsigned i = 0; i < n; i++) {
			if (LLVMGetSuccessor(term, i) == bb)
				LLVMSetSuccessor(term, i, head);
		}
	}
}

/*
 * Move the instructions of bb before `stop` into a new block placed before
 * bb, which branches to bb. The phis stay first (they move along, and the
 * predecessors now branch to the new block), and so do the allocas of an
 * entry block (the new block becomes the entry).
 */
static void irb_split_before(LLVMContextRef ctx, LLVMBuilderRef b,
			     LLVMBasicBlockRef bb, LLVMValueRef stop)
{
	LLVMBasicBlockRef head = LLVMInsertBasicBlockInContext(ctx, bb, "");
	LLVMValueRef i;

	irb_split_redirect(bb, head);
	LLVMPositionBuilderAtEnd(b, head);
	while ((i = LLVMGetFirstInstruction(bb)) != stop) {
		LLVMInstructionRemoveFromParent(i);
		LLVMInsertIntoBuilder(b, i);
	}
	LLVMBuildBr(b, bb);
}

static void irb_split_block(LLVMContextRef ctx, LLVMBuilderRef b,
			    LLVMBasicBlockRef bb, unsigned max)
{
	if (!irb_split_only_branches(bb))
		return;
	for (;;) {
		LLVMValueRef i = LLVMGetFirstInstruction(bb);
		unsigned n = 0;

		/* phis and allocas stay at the start of the first piece */
		while (i && (LLVMIsAPHINode(i) || LLVMIsAAllocaInst(i)))
			i = LLVMGetNextInstruction(i);
		for (; i && n < max; i = LLVMGetNextInstruction(i))
			n++;
		if (!i || LLVMIsATerminatorInst(i))
			return;
		irb_split_before(ctx, b, bb, i);
	}
}

void irb_split_blocks(LLVMModuleRef mod)
{
	LLVMContextRef ctx = LLVMGetModuleContext(mod);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);

	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn;
	     fn = LLVMGetNextFunction(fn)) {
		/* new blocks go before the one split: the walk sees each
		 * original block once */
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb;
		     bb = LLVMGetNextBasicBlock(bb))
			irb_split_block(ctx, b, bb, IRB_SPLIT_MAX);
	}
	LLVMDisposeBuilder(b);
}
