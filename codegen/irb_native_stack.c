/*
 * irb for the native target: what ustack and reg("bp") need of the
 * probe function itself (its caller's frame pointer) and the runtime's
 * stack walk (RT_FN_USTACK).
 */
#include <string.h>

#include <llvm-c/Core.h>

#include "irb.h"
#include "irb_native.h"
#include "irb_native_int.h"
#include "native.h"
#include "rt_abi.h"

LLVMValueRef irb_native_entry_fp(struct irb *ir)
{
	static const char k[] = "frame-pointer", v[] = "all";
	static const char name[] = "llvm.frameaddress";
	unsigned id = LLVMLookupIntrinsicID(name, sizeof(name) - 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(ir->ctx, id, &ir->ptr, 1);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, &ir->ptr,
						      1);
	LLVMValueRef zero = LLVMConstInt(LLVMInt32TypeInContext(ir->ctx), 0,
					 0);
	LLVMValueRef fa, v64;

	/*
	 * The probe function keeps a frame: push %rbp; mov %rsp,%rbp at its
	 * entry, so that the saved %rbp at its frame address is the probed
	 * function's %rbp as the trampoline called us (preserve_most keeps
	 * every other register, the trampoline does not touch %rbp).
	 */
	LLVMRemoveStringAttributeAtIndex(ir->fn, LLVMAttributeFunctionIndex, k,
					 sizeof(k) - 1);
	LLVMAddAttributeAtIndex(ir->fn, LLVMAttributeFunctionIndex,
				LLVMCreateStringAttribute(ir->ctx, k,
							  sizeof(k) - 1, v,
							  sizeof(v) - 1));
	fa = LLVMBuildCall2(ir->b, ft, fn, &zero, 1, "frame");
	v64 = LLVMBuildLoad2(ir->b, ir->i64, fa, "entry_fp");
	LLVMSetAlignment(v64, 8);
	return v64;
}

LLVMValueRef irb_native_ustack(struct irb *ir, LLVMValueRef out, int limit,
			       LLVMValueRef ip, LLVMValueRef sp,
			       LLVMValueRef fp)
{
	LLVMValueRef a[5] = {
		out, irb_const(ir, (uint64_t)limit), ip, sp, fp,
	};

	return nat_call(ir, RT_FN_USTACK, ir->i64, a, 5);
}

LLVMValueRef irb_native_map_named(struct irb *ir, const char *name)
{
	(void)ir;
	for (int i = 0; i < irb_nat.nmaps; i++)
		if (irb_nat.refs[i].idx >= 0 && irb_nat.maps[i].name &&
		    !strcmp(irb_nat.maps[i].name, name))
			return irb_nat.refs[i].ref;
	return NULL;
}

LLVMValueRef irb_native_func_ip(struct irb *ir)
{
	static const char text[] = "movabsq $$0x5eadf00d5eadf00d, $0";
	LLVMTypeRef ft = LLVMFunctionType(ir->i64, NULL, 0, 0);
	LLVMValueRef a;

	_Static_assert(NATIVE_FUNC_SENTINEL == 0x5eadf00d5eadf00dull,
		       "the sentinel in the asm text");
	/* opaque to LLVM: folded into other constants, the sentinel would
	 * not be found where native_patch_func() looks for it */
	a = LLVMGetInlineAsm(ft, (char *)text, sizeof(text) - 1, "=r", 2,
			     0, 0, LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(ir->b, ft, a, NULL, 0, "func_ip");
}
