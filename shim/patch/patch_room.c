/*
 * The bytes after a function that no code of the file can own: up to the
 * next 16-byte boundary, inside the function's executable segment, with no
 * symbol (.symtab, .dynsym) starting in them.  patch.c proves them padding
 * from their content (nops, int3) and lends them to a function too short
 * for the jump after its entry instruction.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <unistd.h>

#include "patch.h"
#include "patch_memo.h"

/* the lowest symbol start in [lo, hi) other than at func, or hi */
static uint64_t room_first_symbol(Elf *e, uint64_t func, uint64_t lo,
				  uint64_t hi)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;

			if (gelf_getsym(d, (int)i, &sym) &&
			    sym.st_shndx != SHN_UNDEF &&
			    sym.st_value != func && sym.st_value >= lo &&
			    sym.st_value < hi)
				hi = sym.st_value;
		}
	}
	return hi;
}

static int room_find(const char *path, uint64_t vaddr, uint64_t size,
		     uint64_t *room)
{
	uint64_t end = vaddr + size, hi = (end + 15) & ~15ULL;
	size_t nph;
	int fd, err = -ENOENT;
	Elf *e;

	*room = 0;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		close(fd);
		return -ENOEXEC;
	}
	if (!elf_getphdrnum(e, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) ||
			    ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
			    vaddr < ph.p_vaddr ||
			    end > ph.p_vaddr + ph.p_filesz)
				continue;
			if (hi > ph.p_vaddr + ph.p_filesz)
				hi = ph.p_vaddr + ph.p_filesz;
			err = 0;
		}
	if (!err && hi > end)
		*room = room_first_symbol(e, vaddr, end, hi) - end;
	elf_end(e);
	close(fd);
	return err;
}

int patch_find_room(const char *path, uint64_t vaddr, uint64_t size,
		    uint64_t *room)
{
	struct patch_memo_val m = { 0 };
	char name[40];

	snprintf(name, sizeof(name), "%llx+%llx", (unsigned long long)vaddr,
		 (unsigned long long)size);
	if (!patch_memo_get(path, PATCH_MEMO_ROOM, name, &m)) {
		m.err = room_find(path, vaddr, size, &m.v[0]);
		patch_memo_put(path, PATCH_MEMO_ROOM, name, &m);
	}
	*room = m.err ? 0 : m.v[0];
	return m.err;
}
