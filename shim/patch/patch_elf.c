/*
 * The ELF side of patching: a function's or a data symbol's address, size
 * and file offset (.symtab, .dynsym, or the separate debug file), the
 * load base and whether a file is dynamically linked.  Lookups are kept
 * per file and name (patch_memo.h), answered from the file's symbols
 * indexed once (patch_symidx.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <unistd.h>

#include "patch.h"
#include "patch_memo.h"
#include "patch_symidx.h"

/* patch_symidx_find(), its answer kept for the same file (patch_memo.h) */
static int find_symbol_memo(const char *path, const char *name, bool func,
			    uint64_t *vaddr, uint64_t *size,
			    uint64_t *file_off)
{
	enum patch_memo_kind k = func ? PATCH_MEMO_FUNC : PATCH_MEMO_OBJECT;
	struct patch_memo_val m = { 0 };

	if (!patch_memo_get(path, k, name, &m)) {
		m.err = patch_symidx_find(path, name, func, &m.v[0],
					  &m.v[1], &m.v[2]);
		patch_memo_put(path, k, name, &m);
	}
	if (!m.err) {
		*vaddr = m.v[0];
		*size = m.v[1];
		*file_off = m.v[2];
	}
	return m.err;
}

int patch_find_symbol(const char *path, const char *name, uint64_t *vaddr,
		      uint64_t *size, uint64_t *file_off)
{
	return find_symbol_memo(path, name, true, vaddr, size, file_off);
}

int patch_find_object(const char *path, const char *name, uint64_t *vaddr,
		      uint64_t *size)
{
	uint64_t off;

	return find_symbol_memo(path, name, false, vaddr, size, &off);
}

static int elf_base(const char *path, uint64_t *min_vaddr, int *is_dyn);

int patch_elf_base(const char *path, uint64_t *min_vaddr, int *is_dyn)
{
	struct patch_memo_val m = { 0 };

	if (!patch_memo_get(path, PATCH_MEMO_BASE, "", &m)) {
		int dyn = 0;

		m.err = elf_base(path, &m.v[0], &dyn);
		m.v[1] = (uint64_t)dyn;
		patch_memo_put(path, PATCH_MEMO_BASE, "", &m);
	}
	if (!m.err) {
		*min_vaddr = m.v[0];
		*is_dyn = (int)m.v[1];
	}
	return m.err;
}

static int elf_base(const char *path, uint64_t *min_vaddr, int *is_dyn)
{
	uint64_t min = UINT64_MAX;
	size_t i, nph;
	GElf_Ehdr eh;
	int fd, err = 0;
	Elf *e;

	e = patch_elf_open(path, &fd);
	if (!e)
		return -errno;
	if (!gelf_getehdr(e, &eh) || elf_getphdrnum(e, &nph)) {
		err = -ENOEXEC;
		goto out;
	}
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < min)
			min = ph.p_vaddr;
	}
	if (min == UINT64_MAX)
		err = -ENOEXEC;
	*min_vaddr = min & ~0xfffULL;
	*is_dyn = eh.e_type == ET_DYN;
out:
	elf_end(e);
	close(fd);
	return err;
}

int patch_elf_interp(const char *path)
{
	size_t i, nph;
	int fd, ret = 0;
	Elf *e;

	e = patch_elf_open(path, &fd);
	if (!e)
		return -errno;
	if (!elf_getphdrnum(e, &nph))
		for (i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) &&
			    ph.p_type == PT_INTERP)
				ret = 1;
		}
	elf_end(e);
	close(fd);
	return ret;
}
