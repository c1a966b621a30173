/*
 * Opening an ELF file and the little every reader of one needs: its
 * sections by name, its notes, its GNU build id.  Below probes_elf.c and
 * probes_debuginfo.c, which both read ELF files (calls run one way).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "probes_int.h"

int probes_elf_open(const char *path, struct probes_elf *e)
{
	GElf_Ehdr ehdr;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return -errno;
	e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF ||
	    !gelf_getehdr(e->elf, &ehdr)) {
		if (e->elf)
			elf_end(e->elf);
		close(e->fd);
		return -ENOEXEC;
	}
	return 0;
}

void probes_elf_close(struct probes_elf *e)
{
	elf_end(e->elf);
	close(e->fd);
}

/* The section named name, or NULL. */
Elf_Scn *probes_elf_section(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* The note section it->scn after the current one, its data in it->data. */
static bool probes_note_scn_next(struct probes_note_it *it)
{
	size_t shstrndx;

	if (it->section && elf_getshdrstrndx(it->elf, &shstrndx))
		return false;
	while ((it->scn = elf_nextscn(it->elf, it->scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(it->scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (it->section) {
			n = elf_strptr(it->elf, shstrndx, sh.sh_name);
			if (!n || strcmp(n, it->section))
				continue;
		}
		it->data = elf_getdata(it->scn, NULL);
		if (!it->data)
			continue;
		it->off = 0;
		return true;
	}
	return false;
}

bool probes_elf_note_next(struct probes_note_it *it, const char *owner,
			  uint32_t type, const unsigned char **desc,
			  size_t *descsz)
{
	size_t olen = strlen(owner) + 1;

	for (;;) {
		GElf_Nhdr nh;
		size_t name_off, desc_off, next;

		next = it->data ? gelf_getnote(it->data, it->off, &nh,
					       &name_off, &desc_off) : 0;
		if (!next) {
			if (!probes_note_scn_next(it))
				return false;
			continue;
		}
		it->off = next;
		if (nh.n_type != type || nh.n_namesz != olen ||
		    memcmp((char *)it->data->d_buf + name_off, owner, olen))
			continue;
		*desc = (const unsigned char *)it->data->d_buf + desc_off;
		*descsz = nh.n_descsz;
		return true;
	}
}

size_t probes_elf_build_id(Elf *elf, const unsigned char **id)
{
	struct probes_note_it it = { .elf = elf };
	size_t len;

	while (probes_elf_note_next(&it, "GNU", NT_GNU_BUILD_ID, id, &len))
		if (len >= 2)
			return len;
	return 0;
}
