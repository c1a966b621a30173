/*
 * Opening an ELF file and the little every reader of one needs: its
 * sections by name, its GNU build id.  Below probes_elf.c and
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

size_t probes_elf_build_id(Elf *elf, const unsigned char **id)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off,
					   &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) ||
			    nh.n_descsz < 2)
				continue;
			*id = (const unsigned char *)data->d_buf + desc_off;
			return nh.n_descsz;
		}
	}
	return 0;
}
