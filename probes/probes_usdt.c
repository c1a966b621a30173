/*
 * USDT: the stapsdt notes of an ELF file and their argument specs
 * ("-4@%edi", "8@-16(%rbp)") parsed to register/offset reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem */
#endif
#include <ctype.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"
#include "probes_int.h"

/* ------------------------------------------------------------------ */
/* USDT                                                                */

#define NT_STAPSDT 3

static uint64_t probes_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int probes_usdt_notes(struct arena *a, const char *path,
		      struct probes_usdt **out, int *n)
{
	struct probes_elf e;
	struct probes_vec v = { .elem = sizeof(struct probes_usdt) };
	struct probes_note_it it = { .section = ".note.stapsdt" };
	const unsigned char *d;
	size_t dlen;
	Elf_Scn *scn;
	GElf_Shdr sh;
	uint64_t base_addr = 0;
	bool have_base = false;
	int err;

	*out = NULL;
	*n = 0;
	err = probes_elf_open(path, &e);
	if (err)
		return err;
	it.elf = e.elf;
	scn = probes_elf_section(e.elf, ".stapsdt.base");
	if (scn && gelf_getshdr(scn, &sh)) {
		base_addr = sh.sh_addr;
		have_base = true;
	}
	while (probes_elf_note_next(&it, "stapsdt", NT_STAPSDT, &d, &dlen)) {
		const char *s, *end;
		struct probes_usdt *u;
		uint64_t pc, base, sem;

		if (dlen < 3 * 8 + 3)
			continue;
		pc = probes_le64(d);
		base = probes_le64(d + 8);
		sem = probes_le64(d + 16);
		s = (const char *)d + 24;
		end = (const char *)d + dlen;
		u = probes_vec_push(&v);
		u->path = arena_strdup(a, path);
		u->provider = arena_strndup(a, s, strnlen(s, end - s));
		s += strlen(u->provider) + 1;
		u->name = arena_strndup(a, s, s < end ? strnlen(s, end - s) : 0);
		s += strlen(u->name) + 1;
		u->args = arena_strndup(a, s, s < end ? strnlen(s, end - s) : 0);
		if (have_base) {
			pc += base_addr - base;
			if (sem)
				sem += base_addr - base;
		}
		u->pc = pc;
		u->semaphore = sem;
		if (probes_elf_offset(e.elf, pc, &u->pc_offset))
			u->pc_offset = pc;
		if (sem && probes_elf_offset(e.elf, sem, &u->semaphore_offset))
			u->semaphore_offset = sem;
	}
	probes_elf_close(&e);
	*n = v.len;
	*out = probes_vec_to_arena(a, &v);
	return 0;
}

/* x86-64 struct pt_regs (arch/x86/include/uapi/asm/ptrace.h). */
static const struct {
	const char *names[4];	/* 64, 32, 16, 8-bit */
	int off;
} probes_x86_regs[] = {
	{ { "r15", "r15d", "r15w", "r15b" }, 0 },
	{ { "r14", "r14d", "r14w", "r14b" }, 8 },
	{ { "r13", "r13d", "r13w", "r13b" }, 16 },
	{ { "r12", "r12d", "r12w", "r12b" }, 24 },
	{ { "rbp", "ebp", "bp", "bpl" }, 32 },
	{ { "rbx", "ebx", "bx", "bl" }, 40 },
	{ { "r11", "r11d", "r11w", "r11b" }, 48 },
	{ { "r10", "r10d", "r10w", "r10b" }, 56 },
	{ { "r9", "r9d", "r9w", "r9b" }, 64 },
	{ { "r8", "r8d", "r8w", "r8b" }, 72 },
	{ { "rax", "eax", "ax", "al" }, 80 },
	{ { "rcx", "ecx", "cx", "cl" }, 88 },
	{ { "rdx", "edx", "dx", "dl" }, 96 },
	{ { "rsi", "esi", "si", "sil" }, 104 },
	{ { "rdi", "edi", "di", "dil" }, 112 },
	{ { "rip", "eip", "ip", NULL }, 128 },
	{ { "rsp", "esp", "sp", "spl" }, 152 },
};

int probes_x86_reg_offset(const char *reg, int *size)
{
	static const int sizes[] = { 8, 4, 2, 1 };

	if (*reg == '%')
		reg++;
	for (size_t i = 0; i < ARRAY_SIZE(probes_x86_regs); i++)
		for (int w = 0; w < 4; w++) {
			const char *nm = probes_x86_regs[i].names[w];

			if (nm && !strcmp(nm, reg)) {
				if (size)
					*size = sizes[w];
				return probes_x86_regs[i].off;
			}
		}
	/* 8-bit high halves: ah, bh, ch, dh (byte 1 of the register) */
	if (strlen(reg) == 2 && reg[1] == 'h' && strchr("abcd", reg[0])) {
		char full[4] = { 'r', reg[0], 'x', 0 };

		if (reg[0] == 'b')
			full[2] = 'x';
		if (size)
			*size = 1;
		return probes_x86_reg_offset(full, NULL) + 1;
	}
	return -1;
}

static int probes_parse_reg(struct arena *a, const char **pp,
			    struct probes_usdt_arg *arg)
{
	const char *p = *pp, *s;
	char buf[16];
	size_t n;

	if (*p != '%')
		return -EINVAL;
	s = ++p;
	while (isalnum((unsigned char)*p))
		p++;
	n = p - s;
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	arg->reg = arena_strdup(a, buf);
	arg->pt_regs_off = probes_x86_reg_offset(buf, &arg->reg_size);
	if (arg->pt_regs_off < 0)
		return -EINVAL;
	*pp = p;
	return 0;
}

static int probes_parse_one_arg(struct arena *a, const char *s,
				struct probes_usdt_arg *arg)
{
	const char *p = s, *at = strchr(s, '@');
	char *end;

	memset(arg, 0, sizeof(*arg));
	arg->pt_regs_off = -1;
	arg->idx_pt_regs_off = -1;
	if (at) {
		long sz = strtol(s, &end, 10);

		if (end != at || sz == 0 || labs(sz) > 8)
			return -EINVAL;
		arg->is_signed = sz < 0;
		arg->size = labs(sz);
		p = at + 1;
	} else {
		arg->size = 8;
	}
	if (*p == '$') {
		arg->kind = USDT_ARG_CONST;
		arg->val = strtoll(p + 1, &end, 0);
		if (*end)
			return -EINVAL;
		/* the assembler's immediate is signed whatever the type
		 * ("1@$-56" is an unsigned char 200): extend as the size
		 * and sign the note gives */
		if (arg->size < 8) {
			int sh = 64 - 8 * arg->size;

			arg->val = arg->is_signed ?
				(int64_t)((uint64_t)arg->val << sh) >> sh :
				(int64_t)((uint64_t)arg->val << sh >> sh);
		}
		return 0;
	}
	if (*p == '%') {
		arg->kind = USDT_ARG_REG;
		if (probes_parse_reg(a, &p, arg))
			return -EINVAL;
		return *p ? -EINVAL : 0;
	}
	/* [disp](%reg) or sym(%rip) / sym+disp(%rip) */
	const char *lp = strchr(p, '(');

	if (!lp)
		return -EINVAL;
	if (lp == p) {
		arg->val = 0;
	} else {
		arg->val = strtoll(p, &end, 0);
		if (end != lp) {
			/* sym(%rip), sym+off(%rip), sym-off(%rip) */
			const char *sign = p;

			while (sign < lp && *sign != '+' && *sign != '-')
				sign++;
			arg->sym = arena_strndup(a, p, sign - p);
			arg->val = sign < lp ? strtoll(sign, NULL, 0) : 0;
		}
	}
	p = lp + 1;
	if (probes_parse_reg(a, &p, arg))
		return -EINVAL;
	if (*p == ',') {
		/* (%base,%index,scale): the index register's 64 bits */
		struct probes_usdt_arg idx = { 0 };
		char *e;

		p++;
		if (probes_parse_reg(a, &p, &idx) || idx.reg_size != 8)
			return -EINVAL;
		arg->idx_pt_regs_off = idx.pt_regs_off;
		arg->scale = 1;
		if (*p == ',') {
			arg->scale = (int)strtol(p + 1, &e, 10);
			p = e;
			if (arg->scale != 1 && arg->scale != 2 &&
			    arg->scale != 4 && arg->scale != 8)
				return -EINVAL;
		}
	}
	if (*p != ')' || p[1])
		return -EINVAL;
	arg->kind = !strcmp(arg->reg, "rip") ? USDT_ARG_ADDR :
					       USDT_ARG_REG_DEREF;
	return 0;
}

int probes_usdt_parse_args(struct arena *a, const char *spec,
			   struct probes_usdt_arg **out, int *n)
{
	struct probes_vec v = { .elem = sizeof(struct probes_usdt_arg) };
	char *copy = arena_strdup(a, spec ? spec : ""), *save = NULL;
	int err = 0;

	for (char *tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		err = probes_parse_one_arg(a, tok, probes_vec_push(&v));
		if (err)
			break;
	}
	if (err) {
		free(v.data);
		*out = NULL;
		*n = 0;
		return err;
	}
	*n = v.len;
	*out = probes_vec_to_arena(a, &v);
	return 0;
}
