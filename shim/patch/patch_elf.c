/*
 * The ELF side of patching: a function's or a data symbol's address, size
 * and file offset (.symtab, .dynsym, or the separate debug file), the
 * load base and whether a file is dynamically linked.  Lookups are kept
 * per file and name (patch_memo.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "patch.h"
#include "patch_memo.h"
#include "probes.h"

static int find_in(Elf *e, Elf_Scn *scn, const char *name, bool func,
		   GElf_Sym *out)
{
	GElf_Shdr sh;
	Elf_Data *d;
	size_t i, n;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -ENOENT;
	d = elf_getdata(scn, NULL);
	if (!d)
		return -ENOENT;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(d, (int)i, &sym))
			continue;
		if (func != (GELF_ST_TYPE(sym.st_info) == STT_FUNC ||
			     GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC))
			continue;
		if (sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(e, sh.sh_link, sym.st_name);
		if (s && !strcmp(s, name)) {
			*out = sym;
			return 0;
		}
	}
	return -ENOENT;
}

static Elf *elf_open_path(const char *path, int *fd)
{
	Elf *e;

	elf_version(EV_CURRENT);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e) {
		close(*fd);
		errno = ENOEXEC;
		return NULL;
	}
	return e;
}

static Elf_Scn *find_symtab(Elf *e, Elf32_Word type)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	}
	return NULL;
}

/*
 * A stripped file's .symtab is in its separate debug file (build id,
 * .gnu_debuglink; the same addresses): name looked up there.
 */
static int find_in_debug_file(const char *path, const char *name, bool func,
			      GElf_Sym *sym)
{
	struct arena a;
	const char *debug;
	Elf_Scn *scn;
	int fd, err = -ENOENT;
	Elf *e;

	arena_init(&a);
	debug = probes_elf_dwarf_file(&a, path);
	if (debug && strcmp(debug, path) && (e = elf_open_path(debug, &fd))) {
		scn = find_symtab(e, SHT_SYMTAB);
		if (scn)
			err = find_in(e, scn, name, func, sym);
		elf_end(e);
		close(fd);
	}
	arena_release(&a);
	return err;
}

static int find_symbol(const char *path, const char *name, bool func,
		       uint64_t *vaddr, uint64_t *size, uint64_t *file_off)
{
	Elf_Scn *sym_scn, *dyn_scn;
	GElf_Sym sym;
	int fd, err = -ENOENT;
	size_t i, nph;
	Elf *e;

	e = elf_open_path(path, &fd);
	if (!e)
		return -errno;
	sym_scn = find_symtab(e, SHT_SYMTAB);
	dyn_scn = find_symtab(e, SHT_DYNSYM);
	if (sym_scn)
		err = find_in(e, sym_scn, name, func, &sym);
	if (err && dyn_scn)
		err = find_in(e, dyn_scn, name, func, &sym);
	if (err && !sym_scn)
		err = find_in_debug_file(path, name, func, &sym);
	if (err)
		goto out;
	*vaddr = sym.st_value;
	*size = sym.st_size;
	if (!func)
		goto out;	/* data: no file offset needed */
	err = -ENOENT;
	if (elf_getphdrnum(e, &nph))
		goto out;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (sym.st_value >= ph.p_vaddr &&
		    sym.st_value < ph.p_vaddr + ph.p_filesz) {
			*file_off = sym.st_value - ph.p_vaddr + ph.p_offset;
			err = 0;
			break;
		}
	}
out:
	elf_end(e);
	close(fd);
	return err;
}

/* find_symbol(), its answer kept for the same file (patch_memo.h) */
static int find_symbol_memo(const char *path, const char *name, bool func,
			    uint64_t *vaddr, uint64_t *size,
			    uint64_t *file_off)
{
	enum patch_memo_kind k = func ? PATCH_MEMO_FUNC : PATCH_MEMO_OBJECT;
	struct patch_memo_val m = { 0 };

	if (!patch_memo_get(path, k, name, &m)) {
		m.err = find_symbol(path, name, func, &m.v[0], &m.v[1],
				    &m.v[2]);
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

	e = elf_open_path(path, &fd);
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

	e = elf_open_path(path, &fd);
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
