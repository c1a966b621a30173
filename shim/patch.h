/*
 * Deciding whether a function entry can be patched with a 5-byte jmp, and
 * relocating the instructions the jmp replaces.  The whole function (its ELF
 * symbol size) is decoded with Zydis: the window is the whole instructions
 * covering >= 5 bytes after an optional endbr64.  A site is refused, with a
 * reason, when the function is shorter than 5 bytes (after endbr64), when a
 * branch or RIP-relative reference in the function points inside the window,
 * when an instruction in the window cannot be relocated, or when a call in
 * the window would leave a return address inside it.
 */
#ifndef UBT_PATCH_H
#define UBT_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PATCH_JMP_LEN 5
#define PATCH_MAX_WINDOW 24
#define PATCH_MAX_INSNS 8

struct patch_site {
	uint64_t func;		/* function start (address used for decoding) */
	uint64_t size;		/* ELF symbol size */
	uint64_t addr;		/* patched address: func, func + 4, or at */
	bool mid;		/* inside the function: registers and flags
				 * are live, the red zone is in use */
	uint32_t len;		/* window length, >= 5 */
	int ninsns;
	uint8_t insn_off[PATCH_MAX_INSNS];	/* offsets in the window */
	uint8_t insn_len[PATCH_MAX_INSNS];
	uint8_t orig[PATCH_MAX_WINDOW];		/* original window bytes */
	char reason[128];	/* why the site was refused */
};

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

/* 1 if the ELF file names a program interpreter (dynamically linked). */
int patch_elf_interp(const char *path);

/*
 * Analyse the function code[0..size) located at address func, for a probe
 * at offset at (0: the entry, after an endbr64).
 * 0: s describes a patchable window; -EINVAL: refused, s->reason says why.
 */
int patch_analyze(const uint8_t *code, uint64_t size, uint64_t func,
		  uint64_t at, struct patch_site *s);

/*
 * Write the window's instructions relocated to run at address to, followed
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
