/*
 * rt_call_kept: call *%rax with every register but %rax kept (the stack
 * aligned, the caller-saved registers saved around it): how the
 * trampolines' slow path and the hooks ubt places as probe code (exec,
 * vfork) reach C code of the runtime with the probed function's
 * arguments live.  A leaf of its own, so that rt.c and rt_vfork.c both
 * call it without calling each other.
 */
__asm__(".text\n"
	".globl rt_call_kept\n"
	".hidden rt_call_kept\n"
	".type rt_call_kept,@function\n"
	"rt_call_kept:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	and $-16, %rsp\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	push %rdx\n"
	"	push %rcx\n"
	"	push %r8\n"
	"	push %r9\n"
	"	push %r10\n"
	"	push %r11\n"
	"	call *%rax\n"
	"	pop %r11\n"
	"	pop %r10\n"
	"	pop %r9\n"
	"	pop %r8\n"
	"	pop %rcx\n"
	"	pop %rdx\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size rt_call_kept, .-rt_call_kept\n");
