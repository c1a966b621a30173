/*
 * An indirect call at the end of a patch window, relocated into the
 * trampoline (patch_icall.c): it pushes the call's own return address and
 * jumps through the same operand, so the callee returns into the function
 * itself, where unwinders and __builtin_return_address() find it.
 */
#ifndef UBT_PATCH_ICALL_H
#define UBT_PATCH_ICALL_H

#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

/* Longest relocated form: the push of the return address and the jmp. */
#define PATCH_ICALL_MAX 40

/* 0 if in (an indirect call) can be relocated; else -EINVAL, why set. */
int patch_icall_check(const ZydisDecodedInstruction *in,
		      const ZydisDecodedOperand *ops, char *why, size_t n);

/*
 * The relocated form of the indirect call in at src, returning to ra,
 * into out (PATCH_ICALL_MAX bytes): its length; *rip_disp is the offset
 * in out of a RIP-relative disp32 still to be fixed for the new place
 * (its end is the end of the code written), -1 when there is none.
 */
uint32_t patch_icall_emit(const ZydisDecodedInstruction *in,
			  const ZydisDecodedOperand *ops, const uint8_t *src,
			  uint64_t ra, uint8_t *out, int *rip_disp);

#endif
