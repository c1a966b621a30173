/*
 * rt_call_kept: call *%rax with every register but %rax kept (the stack
 * aligned, the caller-saved registers saved around it): how the
 * trampolines' slow path and the hooks ubt places as probe code (exec,
 * vfork) reach C code of the runtime with the probed function's
 * arguments live.  A leaf of its own, so that rt.c and rt_vfork.c both
 * call it without calling each other.
 */
#include "rt_asm.h"

__asm__(".text\n"
	".globl rt_call_kept\n"
	".hidden rt_call_kept\n"
	".type rt_call_kept,@function\n"
	"rt_call_kept:\n"
	RT_ASM_SAVE_ARGS
	"	call *%rax\n"
	RT_ASM_RESTORE_ARGS
	"	ret\n"
	".size rt_call_kept, .-rt_call_kept\n");
