/*
 * Trampolines.  The patched function entry jumps (jmp, not call) to its
 * trampoline, which lives in a code slice within +-2 GiB of the module:
 *
 *   entry probe:  call the probe code with the function's arguments still
 *                 in their registers, run the relocated window, jump back.
 *                 Probe code tramp_inline() can move is copied into the
 *                 trampoline instead of called (the same for return probe
 *                 code): a call and its ret cost more than a small body.
 *   inside a function (an offset): the same, stepping over the red zone,
 *                 saving the flags and %r11 and aligning the stack first.
 *   return probe: call-wrapping.  The caller's return address moves to a
 *                 per-thread shadow stack in the thread's block, the
 *                 trampoline has the relocated function called, then calls
 *                 the return probe code and returns to the original
 *                 caller, which keeps the return-stack predictor right.
 *                 The push and pop are inline; the unusual cases (no
 *                 block yet, a full stack, stale entries left by longjmp
 *                 or an exception) go to the runtime's rt_wrap_enter /
 *                 rt_wrap_exit.  The call is made in the runtime:
 *                 by the site's own stub (call rel32; jmp rel32, in
 *                 RT_FN_WRAP_STUBS) when the runtime lies within 2 GiB
 *                 (user_inject.c places it so for the first return
 *                 probe's module), else by rt_wrap_call, reached with a
 *                 rel32 or through a literal (%rbx = the shadow entry,
 *                 which also keeps
 *                 the caller's %rbx and where to continue), whose unwind
 *                 information lets C++ exceptions, pthread_exit() and
 *                 backtrace() pass the wrapped frame: an unwound call
 *                 leaves a stale entry and its return probe does not run.
 *
 * Probe code contract (what the native code generator emits):
 *   - position independent, no relocations, preserve_most convention
 *     (may clobber only %r11, flags, and no vector or x87 registers);
 *   - reaches its thread block as *(u64 *)%fs:tls_offset, which the
 *     trampoline guarantees is non-NULL before the call;
 *   - entry probe: the function's arguments in %rdi %rsi %rdx %rcx %r8 %r9;
 *     at the probe code's entry the function's return address is at
 *     16(%rsp) and its stack arguments start at 24(%rsp);
 *   - return probe: the return value in %rax and %rdi (%rdx also in %rsi);
 *   - probe inside a function: every register as the function had it (the
 *     trampoline also saves the flags and %r11 there); the stack layout
 *     is the trampoline's, aligned to 16 bytes at the call;
 *   - with spec.regs (a USDT site, inside a function): %rdi points to a
 *     struct pt_regs of every general register, the flags, the site's
 *     address (ip) and its %rsp, which the trampoline restores from.
 * The trampoline saves %rax itself (%al carries the vector count of a
 * variadic call), so probe code may clobber %rax too.
 *
 * What the probed function's caller sees: %r11 and the flags clobbered (at
 * the entry, before the function runs); after a wrapped call every other
 * register as the function left it (%rdi and %rsi too: gcc's -fipa-ra
 * keeps values there across calls to functions that leave them alone).
 */
#ifndef UBT_TRAMP_H
#define UBT_TRAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "patch.h"

struct tramp_spec {
	uint64_t at;		/* target address of the trampoline */
	int64_t tls_offset;	/* %fs offset of the block pointer */
	uint64_t fn_slow;	/* runtime: rt_slow */
	uint64_t fn_enter;	/* runtime: rt_wrap_enter */
	uint64_t fn_exit;	/* runtime: rt_wrap_exit */
	uint64_t fn_call;	/* runtime: rt_wrap_call */
	uint64_t fn_low;	/* runtime: rt_wrap_low, or 0 */
	/*
	 * A return probe: the runtime's stub slot for this trampoline
	 * (RT_FN_WRAP_STUBS), or 0.  When the trampoline reaches it,
	 * tramp_build() jumps there instead of to rt_wrap_call and puts the
	 * slot's bytes (call rel32 .reloc; jmp rel32 .cont) in stub_bytes
	 * (RT_WRAP_STUB bytes; the first stays 0 when the slot is not used),
	 * which the caller writes to the slot before the jump goes in.
	 */
	uint64_t stub;
	uint8_t *stub_bytes;
	uint64_t entry_code;	/* target address of entry probe code, or 0 */
	uint64_t ret_code;	/* target address of return probe code, or 0 */
	/* a site inside a function whose entry code takes a struct pt_regs
	 * of every register in %rdi (USDT arguments) */
	bool regs;
	/*
	 * The probe code's bytes (ubt's copy), or NULL: a body that
	 * tramp_inline() accepts runs inside the trampoline instead of
	 * being called (the call and its ret cost more than a small body).
	 */
	const uint8_t *entry_bytes, *ret_bytes;
	size_t entry_len, ret_len;
};

/*
 * Probe code of at most this many bytes (and instructions) is inlined:
 * enough for the latency idiom's return probe (a clock read, a keyed
 * lookup, a hist and a delete, with their slow paths: ~600 bytes).
 */
#define TRAMP_INLINE_MAX 1024
#define TRAMP_INLINE_INSNS 320

/*
 * Copy probe code (the contract above) into out, to run in place of a
 * call of it: each ret becomes a jump to the end of the copy (the last
 * one falls through), short branches become rel32 ones.  The copy needs
 * the stack as the call would leave it (8 bytes below, for the return
 * address).  *reads: the argument registers it reads (TRAMP_READS_*).
 * Returns its length; -EINVAL when the code cannot be moved
 * (a RIP-relative operand, a relative call, a branch out of the code, an
 * instruction Zydis does not decode, more than TRAMP_INLINE_MAX bytes);
 * -ENOSPC when cap is too small.
 */
int tramp_inline(const uint8_t *code, size_t len, uint8_t *out, size_t cap,
		 unsigned *reads);
/* *reads of tramp_inline(): the code reads %rdi, %rsi (a return probe's
 * return value): unless it does, the trampoline leaves them alone */
#define TRAMP_READS_RDI 1u
#define TRAMP_READS_RSI 2u
/* the code uses the stack pointer (else it runs wherever %rsp is) */
#define TRAMP_USES_RSP 4u

/*
 * Build the trampoline for site s into out (cap bytes), to run at
 * spec->at.  Returns the length, or -errno (-ERANGE: out of rel32 reach,
 * s->reason says why).  *reloc_at is the address of the relocated window.
 */
int tramp_build(const struct tramp_spec *spec, struct patch_site *s,
		uint8_t *out, size_t cap, uint64_t *reloc_at,
		struct patch_reloc *r);

#endif
