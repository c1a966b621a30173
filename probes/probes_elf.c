/*
 * ELF files: function symbols (with .gnu_debuglink and build-id debug
 * files), virtual address to file offset, symbol lookup by name and by
 * address.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem */
#endif
#include <ctype.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"
#include "probes_int.h"

void *probes_vec_push(struct probes_vec *v)
{
	if (v->len == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->data = xrealloc(v->data, v->cap * v->elem);
	}
	memset((char *)v->data + v->len * v->elem, 0, v->elem);
	return (char *)v->data + v->len++ * v->elem;
}

void *probes_vec_to_arena(struct arena *a, struct probes_vec *v)
{
	void *p = arena_alloc(a, (v->len + 1) * v->elem);

	if (v->len)
		memcpy(p, v->data, v->len * v->elem);
	free(v->data);
	v->data = NULL;
	return p;
}

/* vaddr -> file offset through PT_LOAD; -ENOENT when not mapped. */
int probes_elf_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int probes_elf_vaddr_to_offset(const char *path, uint64_t vaddr,
			       uint64_t *offset)
{
	struct probes_elf e;
	int err = probes_elf_open(path, &e);

	if (err)
		return err;
	err = probes_elf_offset(e.elf, vaddr, offset);
	probes_elf_close(&e);
	return err;
}

int probes_bind_rank(int bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static int probes_sym_cmp(const void *x, const void *y)
{
	const struct probes_sym *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	return probes_bind_rank(a->bind) - probes_bind_rank(b->bind);
}

/* Append the defined function symbols of every symbol table of elf. */
static void probes_collect_syms(Elf *elf, struct probes_vec *v)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t nsyms;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		nsyms = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < nsyms; i++) {
			GElf_Sym sym;
			const char *name;
			struct probes_sym *s;
			int type;

			if (!gelf_getsym(data, i, &sym))
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			/* gcc's partial functions (f.part.0) are not entry
			 * points; bpftrace does not list them either */
			if (!name || !*name || strstr(name, ".part."))
				continue;
			s = probes_vec_push(v);
			s->name = name;	/* copied once deduplicated */
			s->addr = sym.st_value;
			s->size = sym.st_size;
			s->bind = GELF_ST_BIND(sym.st_info);
			s->type = type;
		}
	}
}

static bool probes_file_crc_ok(const char *path, uint32_t want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t got;

	if (fd < 0)
		return false;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, got);
	close(fd);
	return got == 0 && (uint32_t)crc == want;
}

/*
 * The separate debug file of an ELF file, as gdb and bcc find it: by
 * build id under /usr/lib/debug/.build-id, else by .gnu_debuglink next
 * to the file, in its .debug directory or under /usr/lib/debug (with the
 * CRC checked). NULL when there is none.
 */
const char *probes_debug_file(struct arena *a, Elf *elf,
				     const char *path)
{
	Elf_Scn *scn;
	char real[PATH_MAX], *dir;
	const unsigned char *id;
	size_t idlen = probes_elf_build_id(elf, &id);
	const char *found = probes_debuginfo_find(a, elf, path);

	if (found)
		return found;
	if (idlen) {
		char *p = arena_printf(a, "/usr/lib/debug/.build-id/%02x/",
				       id[0]);

		for (size_t i = 1; i < idlen; i++)
			p = arena_printf(a, "%s%02x", p, id[i]);
		p = arena_printf(a, "%s.debug", p);
		if (access(p, R_OK) == 0)
			return p;
	}
	scn = probes_elf_section(elf, ".gnu_debuglink");
	if (!scn || !realpath(path, real))
		return NULL;
	Elf_Data *data = elf_getdata(scn, NULL);
	const char *name;
	size_t len;
	uint32_t crc;

	if (!data || !data->d_buf || !data->d_size)
		return NULL;
	name = data->d_buf;
	len = strnlen(name, data->d_size);
	if (len == data->d_size || ((len + 4) & ~3u) + 4 > data->d_size)
		return NULL;
	memcpy(&crc, (char *)data->d_buf + ((len + 4) & ~3u), 4);
	dir = arena_strdup(a, real);
	*strrchr(dir, '/') = '\0';
	const char *cands[] = {
		arena_printf(a, "%s/%s", dir, name),
		arena_printf(a, "%s/.debug/%s", dir, name),
		arena_printf(a, "/usr/lib/debug%s/%s", dir, name),
	};
	for (size_t i = 0; i < ARRAY_SIZE(cands); i++) {
		if (!strcmp(cands[i], real) || access(cands[i], R_OK))
			continue;
		if (probes_file_crc_ok(cands[i], crc))
			return cands[i];
	}
	return NULL;
}

const char *probes_elf_dwarf_file(struct arena *a, const char *path)
{
	struct probes_elf e;
	const char *debug = NULL;

	if (probes_elf_open(path, &e))
		return path;
	if (!probes_elf_section(e.elf, ".debug_info"))
		debug = probes_debug_file(a, e.elf, path);
	probes_elf_close(&e);
	return debug ? debug : path;
}

int probes_elf_funcs(struct arena *a, const char *path,
		     struct probes_sym **out, int *n)
{
	struct probes_elf e, dbg;
	struct probes_vec v = { .elem = sizeof(struct probes_sym) };
	struct probes_sym *syms;
	const char *debug;
	bool have_dbg = false;
	int err, cnt = 0;

	*out = NULL;
	*n = 0;
	err = probes_elf_open(path, &e);
	if (err)
		return err;
	probes_collect_syms(e.elf, &v);
	debug = probes_debug_file(a, e.elf, path);
	if (debug && !probes_elf_open(debug, &dbg)) {
		have_dbg = true;
		probes_collect_syms(dbg.elf, &v);
	}
	syms = v.data;
	if (v.len)
		qsort(syms, v.len, sizeof(*syms), probes_sym_cmp);
	for (size_t i = 0; i < v.len; i++) {
		if (cnt && !strcmp(syms[cnt - 1].name, syms[i].name))
			continue;
		syms[cnt] = syms[i];
		syms[cnt].name = arena_strdup(a, syms[i].name);
		if (probes_elf_offset(e.elf, syms[cnt].addr,
				      &syms[cnt].offset))
			syms[cnt].offset = syms[cnt].addr;
		cnt++;
	}
	v.len = cnt;
	if (have_dbg)
		probes_elf_close(&dbg);
	probes_elf_close(&e);
	*out = probes_vec_to_arena(a, &v);
	*n = cnt;
	return 0;
}

/* bsearch() over records whose first member is their name */
_Static_assert(offsetof(struct probes_sym, name) == 0, "name first");
int probes_name_cmp(const void *key, const void *rec)
{
	return strcmp(key, *(const char *const *)rec);
}

const struct probes_sym *probes_sym_find(const struct probes_sym *syms, int n,
					 const char *name)
{
	return n > 0 ? bsearch(name, syms, n, sizeof(*syms),
			       probes_name_cmp) : NULL;
}

const struct probes_sym *probes_sym_at(const struct probes_sym *syms, int n,
				       uint64_t addr)
{
	const struct probes_sym *best = NULL;

	for (int i = 0; i < n; i++) {
		const struct probes_sym *s = &syms[i];

		if (addr == s->addr ||
		    (addr > s->addr && addr < s->addr + s->size)) {
			if (!best || probes_bind_rank(s->bind) <
					     probes_bind_rank(best->bind))
				best = s;
		}
	}
	return best;
}

int probes_elf_symbol(const char *path, const char *name, uint64_t *addr,
		      uint64_t *size)
{
	struct probes_elf e;
	Elf_Scn *scn = NULL;
	int err = probes_elf_open(path, &e);

	if (err)
		return err;
	err = -ENOENT;
	while (err && (scn = elf_nextscn(e.elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, i, &sym) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			n = elf_strptr(e.elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				*addr = sym.st_value;
				*size = sym.st_size;
				err = 0;
				break;
			}
		}
	}
	probes_elf_close(&e);
	return err;
}
