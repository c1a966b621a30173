/*
 * A file's symbols in one hash table, built once per file
 * (patch_symidx.c), for patch_elf.c's lookups.
 */
#ifndef UBT_PATCH_SYMIDX_H
#define UBT_PATCH_SYMIDX_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * name (a function when func, else data) in path: its address and size,
 * and a function's file offset; 0, -ENOENT, or -errno (the file).
 */
int patch_symidx_find(const char *path, const char *name, bool func,
		      uint64_t *vaddr, uint64_t *size, uint64_t *file_off);

/* path opened for libelf (patch_elf.c): the Elf and *fd, or NULL (errno) */
Elf *patch_elf_open(const char *path, int *fd);

#endif
