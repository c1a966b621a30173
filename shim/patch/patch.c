/* Function-entry patch sites: Zydis analysis and relocation. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "arena.h"
#include "patch.h"
#include "patch_icall.h"
#include "probes.h"

static void decoder(ZydisDecoder *d)
{
	ZydisDecoderInit(d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

/* Absolute target of a relative branch or RIP-relative operand, if any. */
static int insn_target(const ZydisDecodedInstruction *in,
		       const ZydisDecodedOperand *ops, uint64_t ip,
		       uint64_t *target)
{
	int i;

	if (!(in->attributes & ZYDIS_ATTRIB_IS_RELATIVE))
		return 0;
	for (i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];

		if ((op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
		     op->imm.is_relative) ||
		    (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		     op->mem.base == ZYDIS_REGISTER_RIP)) {
			ZyanU64 t;

			if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(in, op, ip,
								  &t))) {
				*target = t;
				return 1;
			}
		}
	}
	return 0;
}

enum rel_kind {
	REL_NONE,	/* plain copy */
	REL_RIPMEM,	/* fix disp32 */
	REL_JMP,
	REL_JCC,
	REL_CALL,
	REL_BAD,
};

static enum rel_kind classify(const ZydisDecodedInstruction *in,
			      const ZydisDecodedOperand *ops)
{
	int i;

	if (!(in->attributes & ZYDIS_ATTRIB_IS_RELATIVE))
		return REL_NONE;
	for (i = 0; i < in->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[i].mem.base == ZYDIS_REGISTER_RIP)
			return in->raw.disp.size == 32 ? REL_RIPMEM : REL_BAD;
	if (in->mnemonic == ZYDIS_MNEMONIC_JMP &&
	    in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	    (in->opcode == 0xeb || in->opcode == 0xe9))
		return REL_JMP;
	if (in->mnemonic == ZYDIS_MNEMONIC_CALL &&
	    in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && in->opcode == 0xe8)
		return REL_CALL;
	if ((in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	     in->opcode >= 0x70 && in->opcode <= 0x7f) ||
	    (in->opcode_map == ZYDIS_OPCODE_MAP_0F && in->opcode >= 0x80 &&
	     in->opcode <= 0x8f))
		return REL_JCC;
	return REL_BAD;
}

/* PATCH_REG_* of a general register (any width), 0 for any other */
static uint32_t reg_bit(ZydisRegister r)
{
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(
		ZYDIS_MACHINE_MODE_LONG_64, r);

	if (big < ZYDIS_REGISTER_RAX || big > ZYDIS_REGISTER_R15)
		return 0;
	return PATCH_REG(big - ZYDIS_REGISTER_RAX);
}

static bool is_rsp(ZydisRegister r)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64,
						r) == ZYDIS_REGISTER_RSP;
}

/* A branch, call, return or trap: control may not fall through. */
static bool jumps_away(const ZydisDecodedInstruction *in)
{
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSTEM:
		return true;
	default:
		return false;
	}
}

/*
 * An instruction's name as a disassembler prints it: its mnemonic with
 * the prefixes that change what it does ("lock add", "rep movsb"), not
 * Zydis's bare mnemonic.  In a static buffer per call site's use: one
 * name per message.
 */
static const char *insn_name(const ZydisDecodedInstruction *in)
{
	static char buf[48];
	const char *m = ZydisMnemonicGetString(in->mnemonic);
	const char *pre = "";

	if (in->attributes & ZYDIS_ATTRIB_HAS_LOCK)
		pre = "lock ";
	else if (in->attributes & ZYDIS_ATTRIB_HAS_REPNE)
		pre = "repne ";
	else if (in->attributes & ZYDIS_ATTRIB_HAS_REPE)
		pre = "repe ";
	else if (in->attributes & ZYDIS_ATTRIB_HAS_REP)
		pre = "rep ";
	snprintf(buf, sizeof(buf), "%s%s", pre, m ? m : "?");
	return buf;
}

/*
 * An instruction left in place before the jump must fall through to it:
 * true (with the reason) for a branch, call, return or trap.
 */
static bool transfers_control(const ZydisDecodedInstruction *in,
			      uint64_t off, struct patch_site *s)
{
	if (jumps_away(in)) {
		snprintf(s->reason, sizeof(s->reason),
			 "the %sinstruction '%s' at +%#llx transfers control: "
			 "no room for a jump after it",
			 s->mid ? "" : "entry ",
			 insn_name(in),
			 (unsigned long long)off);
		return true;
	}
	return false;
}

/* patch_analyze_pop(): an entry "pop %reg" may stay behind */
static bool pop_entry;

/*
 * The entry instruction stays in place, before the jump.  0 if it may:
 * *undo is the %rsp change the trampoline takes back before running it
 * again (push, sub $imm,%rsp), 0 when it is left behind.  -EINVAL with
 * the reason otherwise.
 */
static int entry_insn(const ZydisDecodedInstruction *in,
		      const ZydisDecodedOperand *ops, uint64_t off,
		      struct patch_site *s, uint32_t *undo, bool *again)
{
	const char *name = insn_name(in);
	bool writes_rsp = false, writes_flags = false, rerun = true;
	int i;

	*undo = 0;
	*again = false;
	if (transfers_control(in, off, s))
		return -EINVAL;
	for (i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];

		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    in->mnemonic != ZYDIS_MNEMONIC_PUSH)
			rerun = false;	/* a store: maybe not idempotent */
		if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
			continue;
		if (op->reg.value == ZYDIS_REGISTER_RFLAGS ||
		    op->reg.value == ZYDIS_REGISTER_EFLAGS ||
		    op->reg.value == ZYDIS_REGISTER_FLAGS) {
			if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
				writes_flags = true;
			continue;
		}
		if (!(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (is_rsp(op->reg.value))
			writes_rsp = true;
		else
			s->clobbers |= reg_bit(op->reg.value);
		/* a register it also reads: running it twice differs
		 * (but xor/sub of a register with itself is a zeroing) */
		if (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ &&
		    !((in->mnemonic == ZYDIS_MNEMONIC_XOR ||
		       in->mnemonic == ZYDIS_MNEMONIC_SUB) &&
		      in->operand_count >= 2 &&
		      ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		      ops[1].reg.value == op->reg.value))
			rerun = false;
	}
	/* the flags also come from %eflags: the implicit operands above */
	if (in->cpu_flags &&
	    (in->cpu_flags->modified | in->cpu_flags->set_0 |
	     in->cpu_flags->set_1 | in->cpu_flags->undefined))
		writes_flags = true;
	if (!writes_rsp) {
		/*
		 * Left behind, the flags it sets would be the trampoline's
		 * by the time the next instruction reads them: it runs
		 * again from the copy, which it may since it depends on
		 * nothing it changes.
		 */
		if (!writes_flags)
			return 0;
		if (rerun) {
			*again = true;
			return 0;
		}
		/*
		 * It cannot run again (lock add to memory, say): it runs in
		 * place once, and the probe after it keeps the flags it
		 * set, as at a site inside the function (s->mid: the
		 * argument registers are still the entry's, it wrote none).
		 */
		s->mid = true;
		return 0;
	}
	if (s->clobbers && pop_entry && in->mnemonic == ZYDIS_MNEMONIC_POP &&
	    in->operand_width == 64)
		return 0;	/* left behind, never run again */
	if (s->clobbers)
		goto refuse;	/* %rsp and another register (pop) */
	if (in->mnemonic == ZYDIS_MNEMONIC_PUSH &&
	    in->operand_width == 64) {
		*undo = 8;
		*again = true;
		return 0;
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_SUB && in->operand_count >= 2 &&
	    ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
	    ops[0].reg.value == ZYDIS_REGISTER_RSP &&
	    ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	    ops[1].imm.value.s > 0 && ops[1].imm.value.s < (1 << 20)) {
		*undo = (uint32_t)ops[1].imm.value.s;
		*again = true;
		return 0;
	}
refuse:
	snprintf(s->reason, sizeof(s->reason),
		 "the entry instruction '%s' at +%#llx changes %%rsp: a "
		 "jump after it could not share the entry with other "
		 "tracers",
		 name, (unsigned long long)off);
	return -EINVAL;
}

static const char *const reg_name[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};

const char *patch_reg_names(uint32_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < 16 && n < len; i++)
		if (mask & PATCH_REG(i))
			n += (size_t)snprintf(buf + n, len - n, "%s%%%s",
					      n ? ", " : "", reg_name[i]);
	return buf;
}

int patch_site_sees(struct patch_site *s, uint32_t reads)
{
	char names[64];
	uint32_t both = s->clobbers & reads;

	if (!both)
		return 0;
	snprintf(s->reason, sizeof(s->reason),
		 "the entry instruction at +%#llx changes %s, which the "
		 "probe reads",
		 (unsigned long long)(s->kept - s->func),
		 patch_reg_names(both, names, sizeof(names)));
	return -EINVAL;
}

/*
 * The instruction at a probe's offset inside a function stays in place
 * too, and the probe runs after it: only when it changes no general
 * register (the probe sees every register as at the offset; the
 * trampoline keeps the flags it set) and does not transfer control.
 * 0, or -EINVAL with the reason.
 */
static int mid_insn(const ZydisDecodedInstruction *in,
		    const ZydisDecodedOperand *ops, uint64_t off,
		    struct patch_site *s)
{
	const char *name = insn_name(in);
	int i;

	if (transfers_control(in, off, s))
		return -EINVAL;
	for (i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];

		if (op->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) ||
		    op->reg.value == ZYDIS_REGISTER_RFLAGS ||
		    op->reg.value == ZYDIS_REGISTER_EFLAGS ||
		    op->reg.value == ZYDIS_REGISTER_FLAGS)
			continue;
		snprintf(s->reason, sizeof(s->reason),
			 "the instruction '%s' at +%#llx changes %s: no "
			 "room for a jump after it",
			 name, (unsigned long long)off,
			 ZydisRegisterGetString(op->reg.value));
		return -EINVAL;
	}
	return 0;
}

/*
 * Whether the status flags are dead where a mid-function probe runs (at
 * off): the straight-line code from there sets all six before any of it
 * tests one, and before any branch, call or return (conservatively live
 * then).  The trampoline need not keep the flags of such a site: popfq is
 * the slowest instruction of its path (~10 ns here).
 */
#define PATCH_STATUS_FLAGS                                                  \
	(ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF |           \
	 ZYDIS_CPUFLAG_ZF | ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_OF)

static bool flags_dead_at(ZydisDecoder *d, const uint8_t *code,
			  uint64_t size, uint64_t off)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	uint32_t need = PATCH_STATUS_FLAGS;

	for (int i = 0; i < 16 && off < size; i++) {
		const ZydisAccessedFlags *f;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, code + off,
							 size - off, &in,
							 ops)))
			return false;
		f = in.cpu_flags;
		if (!f || (f->tested & need))
			return false;
		need &= ~(f->modified | f->set_0 | f->set_1 | f->undefined);
		if (!need)
			return true;
		if (jumps_away(&in))
			return false;
		off += in.length;
	}
	return false;
}

/*
 * A nop of any length or an int3: what an assembler puts between
 * functions for alignment.
 */
static bool is_padding(const ZydisDecodedInstruction *in)
{
	return in->mnemonic == ZYDIS_MNEMONIC_NOP ||
	       in->mnemonic == ZYDIS_MNEMONIC_INT3;
}

/*
 * A function too short for the jump after its entry instruction (the
 * bytes from start to size), whose last instruction never falls through
 * (ret, jmp, ud2): the window takes the rest of it and as much of the
 * padding after it (room bytes at code[size..], every one of them a nop
 * or int3: no code reaches them) as the jump needs; its instructions all
 * run relocated in the trampoline.  0, or -EINVAL with the reason.
 */
static int tail_window(ZydisDecoder *d, const uint8_t *code, uint64_t size,
		       uint64_t room, uint64_t start, struct patch_site *s)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	uint64_t off = start;
	bool ends = false;

	snprintf(s->reason, sizeof(s->reason),
		 "function is shorter than %d bytes after its entry "
		 "instruction",
		 PATCH_JMP_LEN);
	if (start + PATCH_JMP_LEN > size + room)
		return -EINVAL;
	for (off = size; off < size + room; off += in.length)
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, code + off,
							 size + room - off,
							 &in, ops)) ||
		    !is_padding(&in))
			return -EINVAL;
	for (off = start; off < size; off += in.length) {
		enum rel_kind k;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(d, code + off,
							 size - off, &in,
							 ops)) ||
		    s->ninsns == PATCH_MAX_INSNS)
			return -EINVAL;
		k = classify(&in, ops);
		if (k == REL_BAD || in.meta.category == ZYDIS_CATEGORY_CALL) {
			snprintf(s->reason, sizeof(s->reason),
				 "function is shorter than %d bytes after its "
				 "entry instruction, and '%s' at +%#llx cannot "
				 "move into the trampoline",
				 PATCH_JMP_LEN, insn_name(&in),
				 (unsigned long long)off);
			return -EINVAL;
		}
		s->insn_off[s->ninsns] = (uint8_t)(s->func + off -
						   s->copy_addr);
		s->insn_len[s->ninsns] = in.length;
		s->ninsns++;
		ends = in.meta.category == ZYDIS_CATEGORY_RET ||
		       in.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		       in.mnemonic == ZYDIS_MNEMONIC_UD2 ||
		       in.mnemonic == ZYDIS_MNEMONIC_HLT;
	}
	if (off != size || !ends)
		return -EINVAL;
	s->reason[0] = 0;
	s->len = PATCH_JMP_LEN;
	s->tail = true;
	return 0;
}

int patch_analyze(const uint8_t *code, uint64_t size, uint64_t func,
		  uint64_t at, struct patch_site *s)
{
	return patch_analyze_room(code, size, 0, func, at, s);
}

int patch_analyze_pop(const uint8_t *code, uint64_t size, uint64_t func,
		      struct patch_site *s)
{
	int err;

	pop_entry = true;
	err = patch_analyze_room(code, size, 0, func, 0, s);
	pop_entry = false;
	return err;
}

int patch_analyze_room(const uint8_t *code, uint64_t size, uint64_t room,
		       uint64_t func, uint64_t at, struct patch_site *s)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	uint64_t off = 0, start, end, copy;
	bool again = false;
	ZydisDecoder d;
	int err;

	memset(s, 0, sizeof(*s));
	s->func = func;
	s->size = size;
	s->mid = at != 0;
	decoder(&d);
	if (!size) {
		snprintf(s->reason, sizeof(s->reason),
			 "the symbol has no size");
		return -EINVAL;
	}
	if (at) {
		/* decode up to the offset: it must start an instruction */
		while (off < at && ZYAN_SUCCESS(ZydisDecoderDecodeFull(
					   &d, code + off, size - off, &in,
					   ops)))
			off += in.length;
		if (off != at) {
			snprintf(s->reason, sizeof(s->reason),
				 "offset +%#llx is not at an instruction "
				 "boundary",
				 (unsigned long long)at);
			return -EINVAL;
		}
		/* the instruction there stays, as at an entry */
		if (off >= size ||
		    !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code + off,
							 size - off, &in,
							 ops))) {
			snprintf(s->reason, sizeof(s->reason),
				 "cannot decode the instruction at +%#llx",
				 (unsigned long long)off);
			return -EINVAL;
		}
		err = mid_insn(&in, ops, off, s);
		if (err)
			return err;
		s->kept = func + off;
		off += in.length;
		copy = off;
	} else {
		if (size >= 4 &&
		    ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code, size, &in,
							ops)) &&
		    in.mnemonic == ZYDIS_MNEMONIC_ENDBR64)
			off = in.length;
		/* the entry instruction stays where other tracers expect it */
		if (off >= size ||
		    !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code + off,
							 size - off, &in,
							 ops))) {
			snprintf(s->reason, sizeof(s->reason),
				 off >= size ? "function is only endbr64" :
					       "cannot decode the entry "
					       "instruction");
			return -EINVAL;
		}
		err = entry_insn(&in, ops, off, s, &s->undo, &again);
		if (err)
			return err;
		s->kept = func + off;
		if (again && classify(&in, ops) == REL_BAD) {
			snprintf(s->reason, sizeof(s->reason),
				 "the entry instruction '%s' cannot be "
				 "relocated",
				 insn_name(&in));
			return -EINVAL;
		}
		copy = again ? off : off + in.length;
		if (again) {
			s->insn_off[0] = 0;
			s->insn_len[0] = in.length;
			s->ninsns = 1;
		}
		off += in.length;
	}
	start = off;
	s->addr = func + off;
	s->flags_dead = at && flags_dead_at(&d, code, size, off);
	s->copy_addr = func + copy;
	s->first = s->ninsns;
	if (size < off + PATCH_JMP_LEN && !at) {
		err = tail_window(&d, code, size, room, start, s);
		if (err)
			return err;
		end = size;
		memcpy(s->orig, code + start, s->len);
		memcpy(s->copy, code + (s->copy_addr - func),
		       end - (s->copy_addr - func));
		goto targets;
	}
	if (size < off + PATCH_JMP_LEN) {
		if (at)
			snprintf(s->reason, sizeof(s->reason),
				 "fewer than %d bytes after the instruction at "
				 "+%#llx to the end of the function",
				 PATCH_JMP_LEN, (unsigned long long)at);
		else
			snprintf(s->reason, sizeof(s->reason),
				 "function is shorter than %d bytes after "
				 "its entry instruction",
				 PATCH_JMP_LEN);
		return -EINVAL;
	}
	/* the window: whole instructions covering >= 5 bytes */
	while (off - start < PATCH_JMP_LEN) {
		enum rel_kind k;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code + off,
							 size - off, &in,
							 ops))) {
			snprintf(s->reason, sizeof(s->reason),
				 "cannot decode the instruction at +%#llx",
				 (unsigned long long)off);
			return -EINVAL;
		}
		k = classify(&in, ops);
		if (k == REL_BAD) {
			snprintf(s->reason, sizeof(s->reason),
				 "instruction '%s' at +%#llx cannot be relocated",
				 insn_name(&in),
				 (unsigned long long)off);
			return -EINVAL;
		}
		if (s->ninsns == PATCH_MAX_INSNS ||
		    off - start + in.length > PATCH_MAX_WINDOW) {
			snprintf(s->reason, sizeof(s->reason),
				 "too many instructions in the patch window");
			return -EINVAL;
		}
		s->insn_off[s->ninsns] = (uint8_t)(func + off - s->copy_addr);
		s->insn_len[s->ninsns] = in.length;
		s->ninsns++;
		off += in.length;
		if (in.mnemonic == ZYDIS_MNEMONIC_CALL && k != REL_CALL &&
		    patch_icall_check(&in, ops, s->reason, sizeof(s->reason)))
			return -EINVAL;
		if (in.mnemonic == ZYDIS_MNEMONIC_CALL &&
		    off - start < PATCH_JMP_LEN) {
			snprintf(s->reason, sizeof(s->reason),
				 "a%s call in the first %d bytes would return "
				 "inside the patched window",
				 k == REL_CALL ? "" : "n indirect",
				 PATCH_JMP_LEN);
			return -EINVAL;
		}
	}
	if (off > size) {
		snprintf(s->reason, sizeof(s->reason),
			 "the patch window extends past the end of the function");
		return -EINVAL;
	}
	end = off;
	s->len = (uint32_t)(end - start);
	memcpy(s->orig, code + start, s->len);
	memcpy(s->copy, code + (s->copy_addr - func), end - (s->copy_addr - func));
	/*
	 * Nothing in the function may point inside the window, nor at the
	 * jump: a branch there would run the probe without the instruction
	 * before it (and the other tracers' probes on that one).
	 */
targets:
	end = start + s->len;
	for (off = 0; off < size;) {
		uint64_t t;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, code + off,
							 size - off, &in,
							 ops))) {
			off++;
			continue;
		}
		if (insn_target(&in, ops, func + off, &t) &&
		    t >= func + start && t < func + end) {
			snprintf(s->reason, sizeof(s->reason),
				 "the instruction at +%#llx targets +%#llx, "
				 "inside the patched window",
				 (unsigned long long)off,
				 (unsigned long long)(t - func));
			return -EINVAL;
		}
		off += in.length;
	}
	return 0;
}

static int put_rel32(struct patch_site *s, uint8_t *p, uint64_t target,
		     uint64_t next_ip)
{
	int64_t rel = (int64_t)(target - next_ip);
	int32_t r32 = (int32_t)rel;

	if (rel != r32) {
		snprintf(s->reason, sizeof(s->reason),
			 "target %#llx out of rel32 reach of the trampoline",
			 (unsigned long long)target);
		return -ERANGE;
	}
	memcpy(p, &r32, 4);
	return 0;
}

/*
 * An instruction of len bytes at out + *n (placed at to + *n) whose rel32
 * field, at pos, reaches target; *n moves past it.
 */
static int put_insn_rel32(struct patch_site *s, uint8_t *out, uint64_t to,
			  uint32_t *n, uint32_t pos, uint32_t len,
			  uint64_t target)
{
	int err = put_rel32(s, out + *n + pos, target, to + *n + len);

	if (err)
		return err;
	*n += len;
	return 0;
}

int patch_relocate(struct patch_site *s, uint64_t to, uint8_t *out,
		   size_t cap, struct patch_reloc *r)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	ZydisDecoder d;
	uint32_t n = 0;
	int i, err;

	decoder(&d);
	memset(r, 0, sizeof(*r));
	for (i = 0; i < s->ninsns; i++) {
		const uint8_t *src = s->copy + s->insn_off[i];
		uint64_t ip = s->copy_addr + s->insn_off[i], t = 0;
		enum rel_kind k;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, src,
							 s->insn_len[i], &in,
							 ops)))
			return -EINVAL;
		if (cap - n < 32)
			return -ENOSPC;
		r->insn_off[i] = (uint8_t)n;
		k = classify(&in, ops);
		if (k != REL_NONE)
			insn_target(&in, ops, ip, &t);
		if (in.mnemonic == ZYDIS_MNEMONIC_CALL && k != REL_CALL) {
			int disp;

			if (cap - n < PATCH_ICALL_MAX)
				return -ENOSPC;
			n += patch_icall_emit(&in, ops, src, ip + in.length,
					      out + n, &disp);
			if (disp >= 0) {
				err = put_rel32(s, out + r->insn_off[i] + disp,
						t, to + n);
				if (err)
					return err;
			}
			continue;
		}
		err = 0;
		switch (k) {
		case REL_NONE:
			memcpy(out + n, src, in.length);
			n += in.length;
			break;
		case REL_RIPMEM:
			memcpy(out + n, src, in.length);
			err = put_insn_rel32(s, out, to, &n, in.raw.disp.offset,
					     in.length, t);
			break;
		case REL_CALL: {
			/*
			 * Push the original return address and jump: the
			 * callee returns into the function itself (the call
			 * ends the window), where unwinders (exceptions,
			 * backtrace()) and __builtin_return_address() find
			 * the function, not the trampoline.  No register or
			 * flag changes.
			 */
			uint64_t ra = ip + in.length;
			uint32_t lo = (uint32_t)ra, hi = (uint32_t)(ra >> 32);
			static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24,
						       0xf8 };

			memcpy(out + n, lea, 5);	/* lea -8(%rsp),%rsp */
			out[n + 5] = 0xc7;		/* movl $lo,(%rsp) */
			out[n + 6] = 0x04;
			out[n + 7] = 0x24;
			memcpy(out + n + 8, &lo, 4);
			out[n + 12] = 0xc7;		/* movl $hi,4(%rsp) */
			out[n + 13] = 0x44;
			out[n + 14] = 0x24;
			out[n + 15] = 0x04;
			memcpy(out + n + 16, &hi, 4);
			out[n + 20] = 0xe9;		/* jmp target */
			err = put_insn_rel32(s, out, to, &n, 21, 25, t);
			break;
		}
		case REL_JMP:
			out[n] = 0xe9;
			err = put_insn_rel32(s, out, to, &n, 1, 5, t);
			break;
		case REL_JCC:
			out[n] = 0x0f;
			out[n + 1] = 0x80 | (in.opcode & 0x0f);
			err = put_insn_rel32(s, out, to, &n, 2, 6, t);
			break;
		case REL_BAD:
			return -EINVAL;
		}
		if (err)
			return err;
	}
	if (cap - n < 5)
		return -ENOSPC;
	out[n] = 0xe9;
	err = put_insn_rel32(s, out, to, &n, 1, 5, s->addr + s->len);
	if (err)
		return err;
	r->len = n;
	return 0;
}

void patch_jump_bytes(const struct patch_site *s, uint64_t tramp,
		      uint8_t *out)
{
	int32_t rel = (int32_t)(tramp - (s->addr + PATCH_JMP_LEN));

	out[0] = 0xe9;
	memcpy(out + 1, &rel, 4);
	memset(out + PATCH_JMP_LEN, 0xcc, s->len - PATCH_JMP_LEN);
}

uint64_t patch_move_rip(const struct patch_site *s,
			const struct patch_reloc *r, uint64_t to,
			uint64_t rip)
{
	int i;

	if (rip <= s->addr || rip >= s->addr + s->len)
		return 0;
	for (i = s->first + 1; i < s->ninsns; i++)
		if (rip == s->copy_addr + s->insn_off[i])
			return to + r->insn_off[i];
	return 0;
}
