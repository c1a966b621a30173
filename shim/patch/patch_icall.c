/*
 * An indirect call (`call *%rax`, `call *8(%rbx)`, `call *p(%rip)`) that
 * ends a patch window.  Copied as it is, it would return into the
 * trampoline, where no unwinder finds the function's frame.  It runs as
 *
 *	lea -8(%rsp),%rsp; movl $lo,(%rsp); movl $hi,4(%rsp)
 *	jmp *OPERAND
 *
 * with the call's own return address pushed: the callee returns into the
 * function, after the window.  `jmp *` is `call *` with ModRM.reg 4
 * instead of 2, the same operand encoding.  An operand based on %rsp
 * reads 8 bytes higher once the return address is pushed: its
 * displacement grows by 8 (re-encoded as disp8 or disp32).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "patch_icall.h"

static bool icall_rsp(ZydisRegister r)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64,
						r) == ZYDIS_REGISTER_RSP;
}

static const ZydisDecodedOperand *icall_operand(
	const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	int i;

	for (i = 0; i < in->operand_count; i++)
		if (ops[i].visibility == ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
			return &ops[i];
	return NULL;
}

int patch_icall_check(const ZydisDecodedInstruction *in,
		      const ZydisDecodedOperand *ops, char *why, size_t n)
{
	const ZydisDecodedOperand *op = icall_operand(in, ops);

	if (in->opcode_map != ZYDIS_OPCODE_MAP_DEFAULT || in->opcode != 0xff ||
	    !in->raw.modrm.offset || in->raw.modrm.reg != 2 || !op ||
	    in->length > 15) {
		snprintf(why, n, "the indirect call is not a near call "
			 "through a register or memory");
		return -EINVAL;
	}
	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
	    icall_rsp(op->reg.value)) {
		snprintf(why, n, "the indirect call jumps to %%rsp");
		return -EINVAL;
	}
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	    (icall_rsp(op->mem.index) ||
	     (icall_rsp(op->mem.base) && op->mem.disp.value > INT32_MAX - 8))) {
		snprintf(why, n, "the indirect call's operand cannot be "
			 "moved below its return address");
		return -EINVAL;
	}
	return 0;
}

/* The jmp with the same operand, its %rsp displacement 8 higher. */
static uint32_t icall_jmp(const ZydisDecodedInstruction *in,
			  const ZydisDecodedOperand *op, const uint8_t *src,
			  uint8_t *out)
{
	uint32_t m = in->raw.modrm.offset, n;
	int64_t disp;

	memcpy(out, src, in->length);
	out[m] = (uint8_t)((src[m] & ~0x38) | (4 << 3));
	if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || !icall_rsp(op->mem.base))
		return in->length;
	/* ModRM, SIB (base %rsp), then disp0/8/32: re-encode the disp */
	disp = op->mem.disp.value + 8;
	n = m + 2;
	if (disp >= INT8_MIN && disp <= INT8_MAX) {
		out[m] = (uint8_t)((out[m] & 0x3f) | 0x40);
		out[n++] = (uint8_t)(int8_t)disp;
	} else {
		int32_t d32 = (int32_t)disp;

		out[m] = (uint8_t)((out[m] & 0x3f) | 0x80);
		memcpy(out + n, &d32, 4);
		n += 4;
	}
	return n;	/* nothing follows the displacement of an FF /2 */
}

uint32_t patch_icall_emit(const ZydisDecodedInstruction *in,
			  const ZydisDecodedOperand *ops, const uint8_t *src,
			  uint64_t ra, uint8_t *out, int *rip_disp)
{
	static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
	const ZydisDecodedOperand *op = icall_operand(in, ops);
	uint32_t lo = (uint32_t)ra, hi = (uint32_t)(ra >> 32);

	memcpy(out, lea, 5);		/* lea -8(%rsp),%rsp */
	out[5] = 0xc7;			/* movl $lo,(%rsp) */
	out[6] = 0x04;
	out[7] = 0x24;
	memcpy(out + 8, &lo, 4);
	out[12] = 0xc7;			/* movl $hi,4(%rsp) */
	out[13] = 0x44;
	out[14] = 0x24;
	out[15] = 0x04;
	memcpy(out + 16, &hi, 4);
	*rip_disp = -1;
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
	    op->mem.base == ZYDIS_REGISTER_RIP)
		*rip_disp = 20 + in->raw.disp.offset;
	return 20 + icall_jmp(in, op, src, out + 20);
}
