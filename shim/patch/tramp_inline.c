/*
 * Probe code copied into its trampoline instead of called (tramp.h): the
 * call and its ret cost more than a small body itself on some CPUs.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "tramp.h"

enum ti_kind {
	TI_COPY,	/* copied as it is */
	TI_JCC,		/* re-encoded as jcc rel32 */
	TI_JMP,		/* re-encoded as jmp rel32 */
	TI_RET,		/* a jmp rel32 to the end, or nothing when last */
};

struct ti_insn {
	uint16_t off, len;	/* in the probe code */
	uint16_t to;		/* in the copy */
	uint16_t target;	/* TI_JCC, TI_JMP: offset in the probe code */
	uint8_t cc;		/* TI_JCC: the condition (low nibble) */
	enum ti_kind kind;
};

static int ti_classify(const ZydisDecodedInstruction *in,
		       const ZydisDecodedOperand *ops, struct ti_insn *t,
		       size_t len)
{
	ZyanU64 abs;

	if (in->mnemonic == ZYDIS_MNEMONIC_RET) {
		if (in->operand_count_visible)
			return -EINVAL;		/* ret $imm */
		t->kind = TI_RET;
		return 0;
	}
	if (!(in->attributes & ZYDIS_ATTRIB_IS_RELATIVE)) {
		t->kind = TI_COPY;
		return 0;
	}
	/* RIP-relative memory, call rel32, loop, jrcxz: not here */
	if (ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
	    !ops[0].imm.is_relative)
		return -EINVAL;
	if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(in, &ops[0], t->off, &abs)) ||
	    abs >= len)
		return -EINVAL;
	t->target = (uint16_t)abs;
	if (in->mnemonic == ZYDIS_MNEMONIC_JMP &&
	    in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	    (in->opcode == 0xeb || in->opcode == 0xe9)) {
		t->kind = TI_JMP;
		return 0;
	}
	if (in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && in->opcode >= 0x70 &&
	    in->opcode <= 0x7f) {
		t->kind = TI_JCC;
		t->cc = in->opcode & 0xf;
		return 0;
	}
	if (in->opcode_map == ZYDIS_OPCODE_MAP_0F && in->opcode >= 0x80 &&
	    in->opcode <= 0x8f) {
		t->kind = TI_JCC;
		t->cc = in->opcode & 0xf;
		return 0;
	}
	return -EINVAL;
}

/* TRAMP_READS_* of the argument registers the instruction reads */
static unsigned ti_reads(const ZydisDecodedInstruction *in,
			 const ZydisDecodedOperand *ops)
{
	unsigned m = 0;

	for (int i = 0; i < in->operand_count; i++) {
		ZydisRegister r[2] = { ZYDIS_REGISTER_NONE,
				       ZYDIS_REGISTER_NONE };

		/* the stack pointer, read or written (push, pop, call too:
		 * their hidden operands) */
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64,
						     ops[i].reg.value) ==
			    ZYDIS_REGISTER_RSP)
			m |= TRAMP_USES_RSP;
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ))
			r[0] = ops[i].reg.value;
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			r[0] = ops[i].mem.base;
			r[1] = ops[i].mem.index;
		}
		for (int j = 0; j < 2; j++) {
			if (r[j] == ZYDIS_REGISTER_NONE)
				continue;
			switch (ZydisRegisterGetLargestEnclosing(
				ZYDIS_MACHINE_MODE_LONG_64, r[j])) {
			case ZYDIS_REGISTER_RDI:
				m |= TRAMP_READS_RDI;
				break;
			case ZYDIS_REGISTER_RSI:
				m |= TRAMP_READS_RSI;
				break;
			case ZYDIS_REGISTER_RSP:
				m |= TRAMP_USES_RSP;
				break;
			default:
				break;
			}
		}
	}
	return m;
}

/* The copy's offset of the instruction at probe code offset off, or -1. */
static int ti_to(const struct ti_insn *t, int n, uint16_t off)
{
	for (int i = 0; i < n; i++)
		if (t[i].off == off)
			return t[i].to;
	return -1;
}

static void ti_rel32(uint8_t *p, int from_end, int to)
{
	int32_t r = to - from_end;

	memcpy(p, &r, 4);
}

int tramp_inline(const uint8_t *code, size_t len, uint8_t *out, size_t cap,
		 unsigned *reads)
{
	struct ti_insn t[TRAMP_INLINE_INSNS];
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	ZydisDecoder d;
	size_t off = 0;
	int n = 0, end = 0, i;

	*reads = 0;
	if (!code || !len || len > TRAMP_INLINE_MAX)
		return -EINVAL;
	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (off < len) {
		if (n == TRAMP_INLINE_INSNS ||
		    !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code + off,
							  len - off, &in, ops)))
			return -EINVAL;
		t[n] = (struct ti_insn){ .off = (uint16_t)off,
					 .len = in.length };
		if (ti_classify(&in, ops, &t[n], len))
			return -EINVAL;
		/* (a ret's own use of %rsp goes with it) */
		if (t[n].kind != TI_RET)
			*reads |= ti_reads(&in, ops);
		off += in.length;
		n++;
	}
	/* control leaves only through a ret or a jmp: never falls off */
	if (t[n - 1].kind != TI_RET && t[n - 1].kind != TI_JMP)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		t[i].to = (uint16_t)end;
		switch (t[i].kind) {
		case TI_COPY:
			end += t[i].len;
			break;
		case TI_JCC:
			end += 6;
			break;
		case TI_JMP:
			end += 5;
			break;
		case TI_RET:
			end += i == n - 1 ? 0 : 5;
			break;
		}
	}
	if ((size_t)end > cap)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		uint8_t *p = out + t[i].to;
		int to = t[i].kind == TI_RET ? end : ti_to(t, n, t[i].target);

		if (to < 0)
			return -EINVAL;	/* a branch into an instruction */
		switch (t[i].kind) {
		case TI_COPY:
			memcpy(p, code + t[i].off, t[i].len);
			break;
		case TI_JCC:
			p[0] = 0x0f;
			p[1] = (uint8_t)(0x80 | t[i].cc);
			ti_rel32(p + 2, t[i].to + 6, to);
			break;
		case TI_JMP:
		case TI_RET:
			if (t[i].kind == TI_RET && i == n - 1)
				break;
			p[0] = 0xe9;
			ti_rel32(p + 1, t[i].to + 5, to);
			break;
		}
	}
	return end;
}
