/*
 * Deciding whether a function entry can be patched with a 5-byte jmp, and
 * relocating the instructions the jmp replaces.  The whole function (its ELF
 * symbol size) is decoded with Zydis.
 *
 * A function entry is shared with other tracers: a kernel uprobe (bpftrace,
 * perf, ubt --mode kernel) or a debugger writes int3 over the first byte of
 * the function (or of the instruction after endbr64) and, when it is hit,
 * runs the *file's* instruction there and resumes after it.  So the entry
 * instruction (after an optional endbr64) stays in place and the window,
 * the whole instructions covering >= 5 bytes that the jmp replaces, starts
 * after it: whoever runs the entry instruction then lands on the jmp.  The
 * trampoline sees the state after the entry instruction:
 *   - one that changes no register but %rsp's (a load, a compare, a
 *     store) is simply left behind; the registers it changes are in
 *     s->clobbers, and a probe that reads one of them at entry runs in
 *     the kernel (patch_site_sees()), any other in user mode;
 *   - push REG/IMM or sub $IMM,%rsp is undone by the trampoline (lea
 *     back over it: the registers are unchanged) and run again from the
 *     relocated copy, so probes see the function's entry state exactly;
 *   - any other change of %rsp refuses the site (kernel fallback).
 * A site inside a function (an offset) likewise leaves the instruction at
 * the offset in place, when it changes no general register and does not
 * transfer control, and the probe runs after it (the trampoline of a
 * site inside a function keeps the flags); otherwise it is refused.
 *
 * A site is refused, with a reason, when the function is too short, when a
 * branch or RIP-relative reference in the function points inside the
 * window (or at the jmp after the entry instruction: it would run the
 * probe without the entry's other tracers), when an instruction in the
 * window cannot be relocated, or when a call in the window would leave a
 * return address inside it.
 */
#ifndef UBT_PATCH_H
#define UBT_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PATCH_JMP_LEN 5
#define PATCH_MAX_WINDOW 24
#define PATCH_MAX_INSNS 9
#define PATCH_MAX_COPY 40	/* an entry instruction and the window */

struct patch_site {
	uint64_t func;		/* function start (address used for decoding) */
	uint64_t size;		/* ELF symbol size */
	uint64_t addr;		/* patched address: after the entry
				 * instruction, or at the offset */
	bool mid;		/* inside the function: registers and flags
				 * are live, the red zone is in use */
	bool flags_dead;	/* mid: the code after the site sets every
				 * status flag before it reads one */
	uint32_t len;		/* window length, >= 5 */
	bool tail;		/* the window is the rest of a short function
				 * and padding after it (patch_analyze_room()):
				 * every instruction runs in the trampoline */
	uint32_t undo;		/* the trampoline first adds this to %rsp:
				 * the entry instruction is run again */
	uint64_t kept;		/* the instruction left in place before the
				 * jump (where others' breakpoints go) */
	uint32_t clobbers;	/* PATCH_REG_*: the registers the probe sees
				 * changed by the entry instruction */
	/* the instructions the trampoline runs, from copy_addr on: the
	 * window's, after the entry instruction when it is run again */
	uint64_t copy_addr;
	int ninsns;
	int first;		/* index of the window's first instruction */
	uint8_t insn_off[PATCH_MAX_INSNS];	/* offsets from copy_addr */
	uint8_t insn_len[PATCH_MAX_INSNS];
	uint8_t copy[PATCH_MAX_COPY];		/* their original bytes */
	uint8_t orig[PATCH_MAX_WINDOW];		/* original window bytes */
	char reason[128];	/* why the site was refused */
};

/*
 * General registers by their x86 encoding (%rax 0 ... %r15 15), as a mask:
 * what an entry instruction left in place changes (patch_site.clobbers)
 * and what a probe reads of the entry state (patch_site_sees()).
 */
#define PATCH_REG(n) (1u << (n))
#define PATCH_REG_RAX PATCH_REG(0)
#define PATCH_REG_RCX PATCH_REG(1)
#define PATCH_REG_RDX PATCH_REG(2)
#define PATCH_REG_RBX PATCH_REG(3)
#define PATCH_REG_RSP PATCH_REG(4)
#define PATCH_REG_RBP PATCH_REG(5)
#define PATCH_REG_RSI PATCH_REG(6)
#define PATCH_REG_RDI PATCH_REG(7)
#define PATCH_REG_R8 PATCH_REG(8)
#define PATCH_REG_R9 PATCH_REG(9)
#define PATCH_REGS_ARGS                                                    \
	(PATCH_REG_RDI | PATCH_REG_RSI | PATCH_REG_RDX | PATCH_REG_RCX |   \
	 PATCH_REG_R8 | PATCH_REG_R9)
#define PATCH_REGS_ALL 0xffffu

/* Relocated window: where each original instruction went. */
struct patch_reloc {
	uint32_t len;			/* bytes written, incl. the jmp back */
	uint8_t insn_off[PATCH_MAX_INSNS];	/* offsets in the copy */
};

/*
 * Find a function symbol (.symtab, then .dynsym) in an ELF file: its
 * st_value, size and file offset.  -ENOENT if there is no such function.
 */
int patch_find_symbol(const char *path, const char *name, uint64_t *vaddr,
		      uint64_t *size, uint64_t *file_off);
/* A data symbol (not a function): st_value and size. */
int patch_find_object(const char *path, const char *name, uint64_t *vaddr,
		      uint64_t *size);
/* The lowest p_vaddr of the PT_LOADs (page aligned) and the ELF type. */
int patch_elf_base(const char *path, uint64_t *min_vaddr, int *is_dyn);

/*
 * The dynamic loader's locks as libc at path takes them (patch_ldlock.c):
 * the vaddr of libc's GOT slot that holds _rtld_global's address, and the
 * offset of _dl_load_write_lock in it (_dl_load_lock is the mutex before
 * it).  -ENOENT when the code does not show them.
 */
int patch_ldlock_find(const char *libc, uint64_t *slot, int64_t *off);

/* 1 if the ELF file names a program interpreter (dynamically linked). */
int patch_elf_interp(const char *path);

/*
 * Analyse the function code[0..size) located at address func, for a probe
 * at offset at (0: the entry).  code is the file's, never the process's
 * (whose entry may hold another tracer's int3).
 * 0: s describes a patchable window; -EINVAL: refused, s->reason says why.
 */
int patch_analyze(const uint8_t *code, uint64_t size, uint64_t func,
		  uint64_t at, struct patch_site *s);

/*
 * patch_analyze() at the entry, for a hook of the runtime's that knows
 * where the return address went: an entry instruction "pop %reg" (glibc's
 * vfork) stays in place and is not run again; the jump follows it.
 */
int patch_analyze_pop(const uint8_t *code, uint64_t size, uint64_t func,
		      struct patch_site *s);

/*
 * Whether a probe reading the entry registers reads (PATCH_REG_*) sees
 * them as at the function's entry at site s: 0, or -EINVAL with the
 * reason in s->reason (the entry instruction changes one it reads).
 */
int patch_site_sees(struct patch_site *s, uint32_t reads);

/* with the PATCH_REG_* of user_site_check_reads()'s *clobbers: the site
 * is a short function's tail (patch_site.tail) */
#define PATCH_CLOBBERS_TAIL (1u << 16)

/* "%rdx, %rsi": the registers of mask, into buf. */
const char *patch_reg_names(uint32_t mask, char *buf, size_t len);

/*
 * The same, where room bytes after the function (code[size..size+room),
 * patch_find_room()) belong to no symbol: a function too short for the
 * jump after its entry instruction, ending in a ret or jmp and followed
 * by padding (nops, int3) gets a window made of the rest of it and the
 * padding the jump needs; the trampoline runs the rest of the function
 * relocated (never returning to the window), and the padding comes back
 * at detach with the window.
 */
int patch_analyze_room(const uint8_t *code, uint64_t size, uint64_t room,
		       uint64_t func, uint64_t at, struct patch_site *s);

/*
 * The bytes after the function at vaddr (size bytes long) in an ELF file
 * that no symbol starts in, up to the next 16-byte boundary and inside
 * its executable segment: *room (0 when there are none).  0 or -errno.
 */
int patch_find_room(const char *path, uint64_t vaddr, uint64_t size,
		    uint64_t *room);
/* functions shorter than this are the ones patch_find_room() helps */
#define PATCH_ROOM_BELOW 32

/*
 * Write the copied instructions relocated to run at address to, followed
 * by a jmp back to the end of the window.  -ERANGE if a target is out of
 * rel32 reach (s->reason says so) or cap is too small.
 */
int patch_relocate(struct patch_site *s, uint64_t to, uint8_t *out,
		   size_t cap, struct patch_reloc *r);

/* The bytes replacing the window: jmp tramp, then int3 filler. */
void patch_jump_bytes(const struct patch_site *s, uint64_t tramp,
		      uint8_t *out);

/*
 * Map a thread's rip inside the window (an instruction boundary after the
 * first) to the relocated copy at to, or return 0 if rip is not there.
 */
uint64_t patch_move_rip(const struct patch_site *s,
			const struct patch_reloc *r, uint64_t to,
			uint64_t rip);

#endif
