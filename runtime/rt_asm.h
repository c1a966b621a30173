/*
 * Assembly text shared by the runtime's hand-written entries (rt.c's
 * rt_wrap_enter, rt_kept.c's rt_call_kept): around a call into C, the
 * stack aligned and the caller-saved argument registers kept.
 */
#ifndef UBT_RT_ASM_H
#define UBT_RT_ASM_H

/* %rbp pushed, the stack aligned to 16, %rdi..%r11 pushed (8 words). */
#define RT_ASM_SAVE_ARGS		\
	"	push %rbp\n"		\
	"	mov %rsp, %rbp\n"	\
	"	and $-16, %rsp\n"	\
	"	push %rdi\n"		\
	"	push %rsi\n"		\
	"	push %rdx\n"		\
	"	push %rcx\n"		\
	"	push %r8\n"		\
	"	push %r9\n"		\
	"	push %r10\n"		\
	"	push %r11\n"

/* RT_ASM_SAVE_ARGS undone: the registers, the stack and %rbp back. */
#define RT_ASM_RESTORE_ARGS		\
	"	pop %r11\n"		\
	"	pop %r10\n"		\
	"	pop %r9\n"		\
	"	pop %r8\n"		\
	"	pop %rcx\n"		\
	"	pop %rdx\n"		\
	"	pop %rsi\n"		\
	"	pop %rdi\n"		\
	"	mov %rbp, %rsp\n"	\
	"	pop %rbp\n"

#endif
