/*
 * The answers of patch.c's ELF lookups (a symbol, the load base), kept
 * per file (device, inode, size, modification time) and name: -c looks up
 * the command's functions and libc's before it starts the command, and
 * again while the command waits at its entry point, where every lookup
 * (the file opened, its symbol table walked) is part of its wait.
 */
#ifndef UBT_PATCH_MEMO_H
#define UBT_PATCH_MEMO_H

#include <stdbool.h>
#include <stdint.h>

enum patch_memo_kind {
	PATCH_MEMO_FUNC,	/* patch_find_symbol() */
	PATCH_MEMO_OBJECT,	/* patch_find_object() */
	PATCH_MEMO_BASE,	/* patch_elf_base() (name "") */
	PATCH_MEMO_ROOM,	/* patch_find_room() (name "vaddr+size") */
};

/* A lookup's result: its return value and up to three outputs. */
struct patch_memo_val {
	int err;
	uint64_t v[3];
};

/* true, and *out, when the same lookup in the same file was kept. */
bool patch_memo_get(const char *path, enum patch_memo_kind kind,
		    const char *name, struct patch_memo_val *out);
/* Keep a lookup's result (0 or -ENOENT: a file's answer, not an accident). */
void patch_memo_put(const char *path, enum patch_memo_kind kind,
		    const char *name, const struct patch_memo_val *val);

#endif
