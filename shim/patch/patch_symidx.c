/*
 * Every symbol of a file in one hash table, built once per file (device,
 * inode, size, modification time), for patch_elf.c's lookups: attaching
 * uprobe:libc.so.6:* looks up each of a library's thousands of functions,
 * and each lookup walked the whole symbol table again (and, for a
 * stripped file, opened its debug file and walked that too).
 *
 * The table answers as that walk did: .symtab first; without one,
 * .dynsym, then the debug file's .symtab (build id, .gnu_debuglink); with
 * one, .dynsym after it.  Within that order the first defined symbol of a
 * name and kind (function: STT_FUNC or STT_GNU_IFUNC; else data) wins.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "patch_symidx.h"
#include "probes.h"
#include "util.h"

/* ELF files opened for reading (patch_elf.c too: this file is its leaf) */
Elf *patch_elf_open(const char *path, int *fd)
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

/* the files kept: the command, libc, a library or two */
#define SYMIDX_FILES 8

struct symidx_ent {
	const char *name;	/* NULL: a free slot */
	uint64_t value, size;
	bool func;
};

struct symidx_load {
	uint64_t vaddr, filesz, off;
};

struct symidx {
	bool used;
	dev_t dev;
	ino_t ino;
	off_t fsize;
	struct timespec mtime;
	struct arena a;		/* names, slots, segments */
	struct symidx_ent *ents;
	size_t mask;		/* slots - 1 */
	struct symidx_load *loads;
	size_t nloads;
};

static struct symidx symidx_files[SYMIDX_FILES];
static unsigned int symidx_next;
static pthread_mutex_t symidx_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t symidx_hash(const char *s, bool func)
{
	uint64_t h = func ? 1469598103934665603ULL : 7809847782465536322ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return (size_t)(h ^ h >> 29);
}

static struct symidx_ent *symidx_slot(struct symidx *x, const char *name,
				      bool func)
{
	size_t i = symidx_hash(name, func) & x->mask;

	while (x->ents[i].name && (x->ents[i].func != func ||
				   strcmp(x->ents[i].name, name)))
		i = (i + 1) & x->mask;
	return &x->ents[i];
}

static Elf_Scn *symidx_symtab(Elf *e, Elf32_Word type, size_t *n)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type &&
		    sh.sh_entsize) {
			*n += sh.sh_size / sh.sh_entsize;
			return scn;
		}
	}
	return NULL;
}

/* scn's defined symbols into x, where their name and kind are new. */
static void symidx_add(struct symidx *x, Elf *e, Elf_Scn *scn)
{
	GElf_Shdr sh;
	Elf_Data *d;
	size_t i, n;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
	    !(d = elf_getdata(scn, NULL)))
		return;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		struct symidx_ent *s;
		GElf_Sym sym;
		const char *name;
		bool func;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(e, sh.sh_link, sym.st_name);
		if (!name)
			continue;
		func = GELF_ST_TYPE(sym.st_info) == STT_FUNC ||
		       GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC;
		s = symidx_slot(x, name, func);
		if (s->name)
			continue;
		*s = (struct symidx_ent){ .name = arena_strdup(&x->a, name),
					  .value = sym.st_value,
					  .size = sym.st_size, .func = func };
	}
}

/* The PT_LOAD segments of e into x (a function's file offset). */
static void symidx_loads(struct symidx *x, Elf *e)
{
	size_t i, nph;

	if (elf_getphdrnum(e, &nph) || !nph)
		return;
	x->loads = arena_alloc(&x->a, nph * sizeof(*x->loads));
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			x->loads[x->nloads++] = (struct symidx_load){
				ph.p_vaddr, ph.p_filesz, ph.p_offset };
	}
}

/* x built from path's symbols; 0 or -errno. */
static int symidx_build(struct symidx *x, const char *path)
{
	Elf_Scn *sym_scn, *dyn_scn, *dbg_scn = NULL;
	Elf *e, *de = NULL;
	size_t n = 0, slots = 16;
	int fd, dfd = -1;
	const char *debug;

	e = patch_elf_open(path, &fd);
	if (!e)
		return -errno;
	sym_scn = symidx_symtab(e, SHT_SYMTAB, &n);
	dyn_scn = symidx_symtab(e, SHT_DYNSYM, &n);
	if (!sym_scn) {
		debug = probes_elf_dwarf_file(&x->a, path);
		if (debug && strcmp(debug, path) &&
		    (de = patch_elf_open(debug, &dfd)))
			dbg_scn = symidx_symtab(de, SHT_SYMTAB, &n);
	}
	while (slots < 2 * n)
		slots *= 2;
	x->ents = arena_alloc(&x->a, slots * sizeof(*x->ents));
	memset(x->ents, 0, slots * sizeof(*x->ents));
	x->mask = slots - 1;
	symidx_add(x, e, sym_scn);
	symidx_add(x, e, dyn_scn);
	if (de)
		symidx_add(x, de, dbg_scn);
	symidx_loads(x, e);
	if (de) {
		elf_end(de);
		close(dfd);
	}
	elf_end(e);
	close(fd);
	return 0;
}

static bool symidx_same(const struct symidx *x, const struct stat *st)
{
	return x->used && x->dev == st->st_dev && x->ino == st->st_ino &&
	       x->fsize == st->st_size &&
	       x->mtime.tv_sec == st->st_mtim.tv_sec &&
	       x->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* path's table, built when not kept (the lock held); NULL: errno */
static struct symidx *symidx_get(const char *path)
{
	struct symidx *x;
	struct stat st;
	int err;

	if (stat(path, &st))
		return NULL;
	for (int i = 0; i < SYMIDX_FILES; i++)
		if (symidx_same(&symidx_files[i], &st))
			return &symidx_files[i];
	x = &symidx_files[symidx_next++ % SYMIDX_FILES];
	if (x->used)
		arena_release(&x->a);
	*x = (struct symidx){ .dev = st.st_dev, .ino = st.st_ino,
			      .fsize = st.st_size, .mtime = st.st_mtim };
	arena_init(&x->a);
	err = symidx_build(x, path);
	if (err) {
		arena_release(&x->a);
		x->used = false;
		errno = -err;
		return NULL;
	}
	x->used = true;
	return x;
}

int patch_symidx_find(const char *path, const char *name, bool func,
		      uint64_t *vaddr, uint64_t *size, uint64_t *file_off)
{
	const struct symidx_ent *s;
	struct symidx *x;
	int err = -ENOENT;

	pthread_mutex_lock(&symidx_lock);
	x = symidx_get(path);
	if (!x) {
		err = -errno;
		goto out;
	}
	s = symidx_slot(x, name, func);
	if (!s->name)
		goto out;
	*vaddr = s->value;
	*size = s->size;
	if (!func) {
		err = 0;	/* data: no file offset needed */
		goto out;
	}
	for (size_t i = 0; i < x->nloads; i++) {
		const struct symidx_load *l = &x->loads[i];

		if (s->value >= l->vaddr && s->value < l->vaddr + l->filesz) {
			*file_off = s->value - l->vaddr + l->off;
			err = 0;
			break;
		}
	}
out:
	pthread_mutex_unlock(&symidx_lock);
	return err;
}
