/*
 * uprobe:BINARY@FILE:LINE (bpftrace v0.26): the address of a source line,
 * from the line table of the binary's DWARF (its own, or its separate
 * debug file): the lowest address of a statement of that line in a file
 * whose path is FILE or ends in "/FILE".
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "probes.h"
#include "util.h"

static bool srcline_file_match(const char *src, const char *file)
{
	size_t ls = strlen(src), lf = strlen(file);

	if (!strcmp(src, file))
		return true;
	return ls > lf && src[ls - lf - 1] == '/' &&
	       !strcmp(src + ls - lf, file);
}

int probes_srcline_addr(struct arena *a, const char *path, const char *file,
			int line, uint64_t *addr)
{
	const char *dpath = probes_elf_dwarf_file(a, path);
	Dwarf_Off off = 0, next;
	size_t hsize;
	bool found = false;
	Dwarf *dw;
	int fd;

	if (!dpath || (fd = open(dpath, O_RDONLY | O_CLOEXEC)) < 0)
		return -ENOENT;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return -ENOENT;
	}
	while (!dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    !dwarf_getsrclines(&cu, &lines, &n)) {
			for (size_t i = 0; i < n; i++) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				const char *src;
				Dwarf_Addr la;
				int ln;
				bool stmt;

				if (!l || dwarf_lineno(l, &ln) || ln != line ||
				    dwarf_linebeginstatement(l, &stmt) ||
				    !stmt || dwarf_lineaddr(l, &la) ||
				    !(src = dwarf_linesrc(l, NULL, NULL)) ||
				    !srcline_file_match(src, file))
					continue;
				if (!found || la < *addr)
					*addr = la;
				found = true;
			}
		}
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	return found ? 0 : -ENOENT;
}
