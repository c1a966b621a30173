/*
 * irb_base: what every target's IR building shares and that calls no
 * target's helper: the module, scratch slots (allocas reused across
 * scopes, or slots of the BPF scratch room irb_scratch.c set up) and
 * constants. irb.c (the BPF target and the dispatch) and
 * irb_native.c both build on it.
 */
#include <stdlib.h>
#include <string.h>

#include "irb.h"
#include "util.h"

void irb_module_init(struct irb *ir, enum cg_target t, const char *name,
		     const char *triple, LLVMTargetMachineRef tm)
{
	LLVMTargetDataRef td;
	char *dl;

	memset(ir, 0, sizeof(*ir));
	ir->target = t;
	ir->ctx = LLVMContextCreate();
	ir->mod = LLVMModuleCreateWithNameInContext(name, ir->ctx);
	LLVMSetTarget(ir->mod, triple);
	td = LLVMCreateTargetDataLayout(tm);
	dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(ir->mod, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	ir->b = LLVMCreateBuilderInContext(ir->ctx);
	ir->i1 = LLVMInt1TypeInContext(ir->ctx);
	ir->i8 = LLVMInt8TypeInContext(ir->ctx);
	ir->i16 = LLVMInt16TypeInContext(ir->ctx);
	ir->i32 = LLVMInt32TypeInContext(ir->ctx);
	ir->i64 = LLVMInt64TypeInContext(ir->ctx);
	ir->ptr = LLVMPointerTypeInContext(ir->ctx, 0);
	ir->void_ = LLVMVoidTypeInContext(ir->ctx);
}


LLVMValueRef irb_alloca_type(struct irb *ir, LLVMTypeRef ty, const char *name)
{
	LLVMBuilderRef eb = LLVMCreateBuilderInContext(ir->ctx);
	LLVMValueRef first = LLVMGetFirstInstruction(ir->entry);
	LLVMValueRef a;

	if (first)
		LLVMPositionBuilderBefore(eb, first);
	else
		LLVMPositionBuilderAtEnd(eb, ir->entry);
	a = LLVMBuildAlloca(eb, ty, name ? name : "");
	LLVMSetAlignment(a, 8);
	LLVMDisposeBuilder(eb);
	return a;
}

static void irb_lifetime(struct irb *ir, bool start, LLVMValueRef p,
			 size_t size)
{
	const char *name = start ? "llvm.lifetime.start" : "llvm.lifetime.end";
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, &ir->ptr, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(ir->ctx, id, &ir->ptr, 1);
	LLVMValueRef args[2] = { LLVMConstInt(ir->i64, size, 0), p };

	LLVMBuildCall2(ir->b, ft, fn, args, 2, "");
}

int irb_scope_begin(struct irb *ir)
{
	ir->scope++;
	return ir->ntemps;
}

/*
 * Buffers are given again, but only IRB_SLOT_USES times each. Without
 * reuse, each statement's temporaries are stack slots of their own, and
 * LLVM's stack colouring merges them in time quadratic in their number
 * (70000 statements: minutes); with one buffer for all, instcombine
 * rescans its users quadratically instead. Bounded reuse keeps both
 * linear enough: 70000 statements compile in seconds.
 */
#define IRB_SLOT_USES 64

static void irb_slot_push(struct irb_slot **v, int *n, int *cap,
			  struct irb_slot s)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = s;
}

/*
 * A spare buffer of `size` bytes of the current function, or NULL. Only
 * the most recently freed few are looked at: a miss costs a new slot, not
 * a walk over every temporary of the program.
 */
static bool irb_spare_take(struct irb *ir, size_t size, bool stack,
			   struct irb_slot *out)
{
	int lo = ir->nspare > 64 ? ir->nspare - 64 : 0;

	for (int i = ir->nspare - 1; i >= lo; i--) {
		struct irb_slot *s = &ir->spare[i];

		if (s->size != size ||
		    LLVMGetBasicBlockParent(LLVMGetInstructionParent(s->a)) !=
			    ir->fn ||
		    (stack && !LLVMIsAAllocaInst(s->a)))
			continue;
		*out = *s;
		*s = ir->spare[--ir->nspare];
		return true;
	}
	return false;
}

static void irb_scratch_renew(struct irb *ir, struct irb_slot *s);

void irb_scope_end(struct irb *ir, int mark)
{
	LLVMBasicBlockRef bb = LLVMGetInsertBlock(ir->b);

	BUG_ON(ir->scope <= 0 || mark > ir->ntemps);
	ir->scope--;
	/* after a terminator (exit(), return) no lifetime ends here: the
	 * buffers are not given again */
	if (bb && !LLVMGetBasicBlockTerminator(bb)) {
		for (int i = mark; i < ir->ntemps; i++) {
			struct irb_slot *s = &ir->temps[i];

			if (LLVMIsAAllocaInst(s->a))
				irb_lifetime(ir, false, s->a, s->size);
			else if (s->uses >= IRB_SLOT_USES)
				irb_scratch_renew(ir, s);
			if (s->uses < IRB_SLOT_USES)
				irb_slot_push(&ir->spare, &ir->nspare,
					      &ir->capspare, *s);
		}
	}
	ir->ntemps = mark;
}

static struct irb_scratch_fn *irb_scratch_find(struct irb *ir,
					       LLVMValueRef fn)
{
	for (int i = ir->nsfn - 1; i >= 0; i--)
		if (ir->sfn[i].fn == fn)
			return &ir->sfn[i];
	return NULL;
}

/* made in the block after the lookup's null check: the address is used
 * anywhere in the function, and never computed from a null pointer */
LLVMValueRef irb_scratch_at(struct irb *ir, size_t off)
{
	struct irb_scratch_fn *s = irb_scratch_find(ir, ir->fn);
	LLVMBuilderRef eb = LLVMCreateBuilderInContext(ir->ctx);
	LLVMValueRef idx = LLVMConstInt(ir->i64, off, 0), p;

	BUG_ON(!s);
	LLVMPositionBuilderBefore(eb, LLVMGetBasicBlockTerminator(s->ok));
	p = LLVMBuildGEP2(eb, ir->i8, s->base, &idx, 1, "scratch");
	LLVMDisposeBuilder(eb);
	s->used = true;
	return p;
}

bool irb_scratch_here(struct irb *ir)
{
	return irb_scratch_find(ir, ir->fn) != NULL;
}

bool irb_scratch_offset(struct irb *ir, LLVMValueRef p, size_t *off)
{
	struct irb_scratch_fn *s;

	if (!LLVMIsAGetElementPtrInst(p))
		return false;
	s = irb_scratch_find(ir, LLVMGetBasicBlockParent(
					 LLVMGetInstructionParent(p)));
	if (!s || LLVMGetOperand(p, 0) != s->base)
		return false;
	*off = LLVMConstIntGetZExtValue(LLVMGetOperand(p, 1));
	return true;
}

/*
 * A scratch slot given IRB_SLOT_USES times: the same bytes again, at a
 * new address with no users yet. Unlike the stack's, the room is not
 * shared out by LLVM: a new slot each time would grow it past its limit
 * in a probe of thousands of statements.
 */
static void irb_scratch_renew(struct irb *ir, struct irb_slot *s)
{
	size_t off;

	if (!irb_scratch_offset(ir, s->a, &off))
		return;
	s->a = irb_scratch_at(ir, off);
	s->uses = 0;
}

/* A new buffer: on the stack, or bump-allocated in the scratch room of
 * the program (its callbacks' buffers never overlap the caller's). */
static LLVMValueRef irb_buffer_new(struct irb *ir, size_t size,
				   const char *name, bool stack)
{
	size_t off = ir->scratch_top;

	if (stack || ir->target != CG_TARGET_BPF || size <= IRB_STACK_SMALL ||
	    !irb_scratch_find(ir, ir->fn))
		return irb_alloca_type(ir, LLVMArrayType2(ir->i64, size / 8),
				       name);
	ir->scratch_top += size;
	if (ir->scratch_top > ir->scratch_max[ir->scratch_room])
		ir->scratch_max[ir->scratch_room] = ir->scratch_top;
	return irb_scratch_at(ir, off);
}

static LLVMValueRef irb_buffer(struct irb *ir, size_t size,
				const char *name, bool stack)
{
	/* whole u64 words so that the stack stays 8-byte aligned */
	size_t words = (size + 7) / 8;
	struct irb_slot s = { .uses = 0 };

	if (!words)
		words = 1;
	if (!ir->scope)
		return irb_buffer_new(ir, words * 8, name, stack);
	/* a temporary in the open scope: its lifetime starts here */
	if (!irb_spare_take(ir, words * 8, stack, &s)) {
		s.a = irb_buffer_new(ir, words * 8, name, stack);
		s.size = words * 8;
	}
	s.uses++;
	irb_slot_push(&ir->temps, &ir->ntemps, &ir->captemps, s);
	if (LLVMIsAAllocaInst(s.a))
		irb_lifetime(ir, true, s.a, s.size);
	return s.a;
}

LLVMValueRef irb_alloca(struct irb *ir, size_t size, const char *name)
{
	return irb_buffer(ir, size, name, false);
}

LLVMValueRef irb_alloca_stack(struct irb *ir, size_t size, const char *name)
{
	return irb_buffer(ir, size, name, true);
}

LLVMValueRef irb_gep(struct irb *ir, LLVMValueRef p, size_t off)
{
	LLVMValueRef idx = LLVMConstInt(ir->i64, off, 0);

	if (!off)
		return p;
	return LLVMBuildGEP2(ir->b, ir->i8, p, &idx, 1, "");
}

LLVMValueRef irb_const(struct irb *ir, uint64_t v)
{
	return LLVMConstInt(ir->i64, v, 0);
}

void irb_unlikely(struct irb *ir, LLVMValueRef br, bool then)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(ir->ctx);
	LLVMMetadataRef md[3] = {
		LLVMMDStringInContext2(ir->ctx, "branch_weights", 14),
		LLVMValueAsMetadata(LLVMConstInt(i32, then ? 1 : 2000, 0)),
		LLVMValueAsMetadata(LLVMConstInt(i32, then ? 2000 : 1, 0)),
	};
	unsigned kind = LLVMGetMDKindIDInContext(ir->ctx, "prof", 4);

	LLVMSetMetadata(br, kind,
			LLVMMetadataAsValue(ir->ctx,
					    LLVMMDNodeInContext2(ir->ctx, md,
								 3)));
}

