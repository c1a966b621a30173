/*
 * Attach points, resolved: targets, ELF function symbols, USDT notes,
 * wildcard expansion and `ubt -l` listing (see probes.h).
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

/* ------------------------------------------------------------------ */
/* Small growable arrays (heap while growing, copied to the arena).   */

struct vec {
	void *data;
	size_t len, cap, elem;
};

static void *vec_push(struct vec *v)
{
	if (v->len == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->data = xrealloc(v->data, v->cap * v->elem);
	}
	memset((char *)v->data + v->len * v->elem, 0, v->elem);
	return (char *)v->data + v->len++ * v->elem;
}

static void *vec_to_arena(struct arena *a, struct vec *v)
{
	void *p = arena_alloc(a, (v->len + 1) * v->elem);

	if (v->len)
		memcpy(p, v->data, v->len * v->elem);
	free(v->data);
	v->data = NULL;
	return p;
}

/* ------------------------------------------------------------------ */
/* ELF files                                                           */

struct probes_elf {
	int fd;
	Elf *elf;
};

static int probes_elf_open(const char *path, struct probes_elf *e)
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

static void probes_elf_close(struct probes_elf *e)
{
	elf_end(e->elf);
	close(e->fd);
}

/* vaddr -> file offset through PT_LOAD; -ENOENT when not mapped. */
static int probes_elf_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
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

static int probes_bind_rank(int bind)
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
static void probes_collect_syms(Elf *elf, struct vec *v)
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
			s = vec_push(v);
			s->name = name;	/* copied once deduplicated */
			s->addr = sym.st_value;
			s->size = sym.st_size;
			s->bind = GELF_ST_BIND(sym.st_info);
			s->type = type;
		}
	}
}

/* The section named name, or NULL. */
static Elf_Scn *probes_elf_section(Elf *elf, const char *name)
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
static const char *probes_debug_file(struct arena *a, Elf *elf,
				     const char *path)
{
	Elf_Scn *scn = NULL;
	char real[PATH_MAX], *dir;

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
			const unsigned char *id;
			char *p;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) ||
			    nh.n_descsz < 2)
				continue;
			id = (const unsigned char *)data->d_buf + desc_off;
			p = arena_printf(a, "/usr/lib/debug/.build-id/%02x/",
					 id[0]);
			for (size_t i = 1; i < nh.n_descsz; i++)
				p = arena_printf(a, "%s%02x", p, id[i]);
			p = arena_printf(a, "%s.debug", p);
			if (access(p, R_OK) == 0)
				return p;
		}
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

int probes_elf_funcs(struct arena *a, const char *path,
		     struct probes_sym **out, int *n)
{
	struct probes_elf e, dbg;
	struct vec v = { .elem = sizeof(struct probes_sym) };
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
	*out = vec_to_arena(a, &v);
	*n = cnt;
	return 0;
}

/* bsearch() over records whose first member is their name */
_Static_assert(offsetof(struct probes_sym, name) == 0, "name first");
static int probes_name_cmp(const void *key, const void *rec)
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

/* ------------------------------------------------------------------ */
/* Address -> symbol in a process                                      */

struct probes_map {
	uint64_t start, end, pgoff;
	const char *path;
};

struct probes_proc {
	struct probes_proc *next;
	int pid;
	struct probes_map *maps;
	int nmaps;
};

struct probes_file {
	struct probes_file *next;
	const char *path;
	struct probes_sym *syms;	/* sorted by address */
	int nsyms;
	GElf_Phdr *loads;	/* PT_LOAD headers */
	int nloads;
};

struct probes_symcache {
	struct arena arena;
	struct probes_proc *procs;
	struct probes_file *files;
};

struct probes_symcache *probes_symcache_new(void)
{
	struct probes_symcache *sc = xcalloc(1, sizeof(*sc));

	arena_init(&sc->arena);
	return sc;
}

void probes_symcache_free(struct probes_symcache *sc)
{
	if (!sc)
		return;
	arena_release(&sc->arena);
	free(sc);
}

static struct probes_proc *probes_proc_read(struct probes_symcache *sc,
					    int pid)
{
	struct vec v = { .elem = sizeof(struct probes_map) };
	struct probes_proc *p;
	char path[64], line[PATH_MAX + 256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8], *file = strchr(line, '/'), *nl;
		struct probes_map *m;

		if (!file || sscanf(line, "%llx-%llx %7s %llx", &start, &end,
				    perms, &pgoff) != 4 || perms[2] != 'x')
			continue;
		nl = strchr(file, '\n');
		if (nl)
			*nl = '\0';
		m = vec_push(&v);
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->path = arena_strdup(&sc->arena, file);
	}
	fclose(f);
	p = arena_alloc(&sc->arena, sizeof(*p));
	p->pid = pid;
	p->nmaps = v.len;
	p->maps = vec_to_arena(&sc->arena, &v);
	p->next = sc->procs;
	sc->procs = p;
	return p;
}

int probes_symcache_note(struct probes_symcache *sc, int pid)
{
	struct probes_proc **pp;

	/* a fresh snapshot replaces an older one (exec, dlopen) */
	for (pp = &sc->procs; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid) {
			*pp = (*pp)->next;
			break;
		}
	return probes_proc_read(sc, pid) ? 0 : -ESRCH;
}

static int probes_sym_addr_cmp(const void *x, const void *y)
{
	const struct probes_sym *a = x, *b = y;

	size_t la, lb, ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	/* aliases: the public name first (getpid, not __getpid; malloc,
	 * not __libc_malloc or __interceptor_malloc), then global before
	 * weak before local, then the shortest name, then by name */
	ua = strspn(a->name, "_");
	ub = strspn(b->name, "_");
	if (ua != ub)
		return ua < ub ? -1 : 1;
	if (probes_bind_rank(a->bind) != probes_bind_rank(b->bind))
		return probes_bind_rank(a->bind) - probes_bind_rank(b->bind);
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static struct probes_file *probes_file_get(struct probes_symcache *sc,
					   const char *path)
{
	struct probes_file *f;
	struct probes_elf e;
	size_t n;

	for (f = sc->files; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	f = arena_alloc(&sc->arena, sizeof(*f));
	f->path = arena_strdup(&sc->arena, path);
	f->next = sc->files;
	sc->files = f;
	if (probes_elf_funcs(&sc->arena, path, &f->syms, &f->nsyms))
		return f;
	if (f->nsyms > 1)
		qsort(f->syms, f->nsyms, sizeof(*f->syms),
		      probes_sym_addr_cmp);
	if (probes_elf_open(path, &e))
		return f;
	if (!elf_getphdrnum(e.elf, &n)) {
		f->loads = arena_alloc(&sc->arena, (n + 1) * sizeof(GElf_Phdr));
		for (size_t i = 0; i < n; i++)
			if (gelf_getphdr(e.elf, i, &f->loads[f->nloads]) &&
			    f->loads[f->nloads].p_type == PT_LOAD)
				f->nloads++;
	}
	probes_elf_close(&e);
	return f;
}

const char *probes_symcache_resolve(struct probes_symcache *sc, int pid,
				    uint64_t addr, uint64_t *offset)
{
	struct probes_proc *p;
	const struct probes_map *m = NULL;
	struct probes_file *f;
	uint64_t foff, vaddr = 0;
	bool found = false;
	int lo, hi, best = -1;

	for (p = sc->procs; p; p = p->next)
		if (p->pid == pid)
			break;
	if (!p)
		p = probes_proc_read(sc, pid);
	if (!p)
		return NULL;
	for (int i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			m = &p->maps[i];
	if (!m)
		return NULL;
	f = probes_file_get(sc, m->path);
	foff = addr - m->start + m->pgoff;
	for (int i = 0; i < f->nloads; i++) {
		const GElf_Phdr *ph = &f->loads[i];

		if (foff >= ph->p_offset && foff < ph->p_offset + ph->p_filesz) {
			vaddr = foff - ph->p_offset + ph->p_vaddr;
			found = true;
			break;
		}
	}
	if (!found)
		return NULL;
	/* the last symbol starting at or before vaddr */
	lo = 0;
	hi = f->nsyms - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= vaddr) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	if (best < 0)
		return NULL;
	/* among symbols at that address, the preferred binding sorts first */
	while (best > 0 && f->syms[best - 1].addr == f->syms[best].addr)
		best--;
	if (f->syms[best].size && vaddr >= f->syms[best].addr +
						   f->syms[best].size)
		return NULL;
	if (offset)
		*offset = vaddr - f->syms[best].addr;
	return f->syms[best].name;
}

/* ------------------------------------------------------------------ */
/* Wildcards                                                            */

bool probes_has_wildcard(const char *s)
{
	return s && (strchr(s, '*') || strchr(s, '?') ||
		     (strchr(s, '[') && strchr(s, ']')));
}

bool probes_match_wildcard(const char *pattern, const char *s)
{
	return fnmatch(pattern, s, 0) == 0;
}

/* ------------------------------------------------------------------ */
/* Target resolution                                                   */

static bool probes_is_elf(const char *path)
{
	unsigned char magic[4];
	struct stat st;
	int fd;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = read(fd, magic, 4) == 4 && !memcmp(magic, ELFMAG, SELFMAG);
	close(fd);
	return ok;
}

static const char *probes_basename(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/*
 * Does a library file name (a basename or soname) match a library name
 * as written: "libc.so.6" exactly, "libc" -> libc.so*, "c" -> libc.so*.
 */
static bool probes_lib_matches(const char *base, const char *lib)
{
	size_t n = strlen(lib);

	if (!strcmp(base, lib))
		return true;
	if (!strncmp(base, lib, n) && !strncmp(base + n, ".so", 3) &&
	    (base[n + 3] == '\0' || base[n + 3] == '.'))
		return true;
	if (strncmp(lib, "lib", 3) && !strncmp(base, "lib", 3) &&
	    !strncmp(base + 3, lib, n) && !strncmp(base + 3 + n, ".so", 3) &&
	    (base[n + 6] == '\0' || base[n + 6] == '.'))
		return true;
	return false;
}

/* Every file mapped by pid (executable mappings first seen), deduplicated. */
static int probes_pid_files(struct arena *a, int pid, const char ***out,
			    int *n)
{
	char path[64], line[PATH_MAX + 256];
	struct vec v = { .elem = sizeof(char *) };
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		char *nl;
		bool dup = false;

		if (!p)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(p, " (deleted)"))
			continue;
		for (size_t i = 0; i < v.len; i++)
			if (!strcmp(((char **)v.data)[i], p))
				dup = true;
		if (dup)
			continue;
		*(char **)vec_push(&v) = arena_strdup(a, p);
	}
	fclose(f);
	*n = v.len;
	*out = vec_to_arena(a, &v);
	return 0;
}

/* ld.so.cache (glibc's new format): soname -> path. */
static const char *probes_ldcache_find(struct arena *a, const char *lib)
{
	static const char magic[] = "glibc-ld.so.cache1.1";
	const char *res = NULL;
	struct stat st;
	const char *base, *h;
	int fd;
	void *map;

	fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size < 48) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	base = map;
	h = memmem(base, st.st_size, magic, sizeof(magic) - 1);
	if (h && (size_t)(h - base) + 48 <= (size_t)st.st_size) {
		uint32_t nlibs;
		size_t first = h - base + 48;
		size_t size = st.st_size - (h - base);

		memcpy(&nlibs, h + 20, 4);
		for (uint32_t i = 0; i < nlibs; i++) {
			size_t e = first + (size_t)i * 24;
			uint32_t flags, key, value;
			const char *name, *val;

			if (e + 24 > (size_t)st.st_size)
				break;
			memcpy(&flags, base + e, 4);
			memcpy(&key, base + e + 4, 4);
			memcpy(&value, base + e + 8, 4);
			/* key/value are offsets from the new format's header
			 * (the file start, unless an old-format part leads) */
			if ((size_t)key >= size || (size_t)value >= size)
				continue;
			name = h + key;
			val = h + value;
			if (!memchr(name, 0, size - key) ||
			    !memchr(val, 0, size - value))
				continue;
			/* x86-64 libraries only: FLAG_X8664_LIB64 */
			if ((flags & 0xff00) != 0x0300 && (flags & 0xff00))
				continue;
			if (probes_lib_matches(name, lib) &&
			    probes_is_elf(val)) {
				res = arena_strdup(a, val);
				break;
			}
		}
	}
	munmap(map, st.st_size);
	return res;
}

static const char *probes_find_library(struct arena *a, const char *lib,
				       int pid)
{
	static const char *const dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
		"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
	};
	const char *p;

	if (pid > 0) {
		const char **files;
		int n;

		if (!probes_pid_files(a, pid, &files, &n))
			for (int i = 0; i < n; i++)
				if (probes_lib_matches(
					    probes_basename(files[i]), lib) &&
				    probes_is_elf(files[i]))
					return files[i];
	}
	p = probes_ldcache_find(a, lib);
	if (p)
		return p;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		const char *cands[] = {
			arena_printf(a, "%s/%s", dirs[i], lib),
			arena_printf(a, "%s/lib%s.so", dirs[i], lib),
			arena_printf(a, "%s/%s.so", dirs[i], lib),
		};

		for (size_t j = 0; j < ARRAY_SIZE(cands); j++) {
			if (strstr(probes_basename(cands[j]), ".so") &&
			    probes_is_elf(cands[j]))
				return cands[j];
		}
	}
	return NULL;
}

static const char *probes_path_env(void)
{
	const char *p = getenv("PATH");

	return p && *p ? p : "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
			     "/usr/bin:/sbin:/bin";
}

/* Candidate paths of name in $PATH, in order (glob when wildcard). */
static void probes_path_candidates(struct arena *a, const char *name,
				   struct vec *v)
{
	char *env = arena_strdup(a, probes_path_env());
	char *save = NULL;

	for (char *dir = strtok_r(env, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		char *cand = arena_printf(a, "%s/%s", dir, name);

		if (probes_has_wildcard(name)) {
			glob_t g;

			if (glob(cand, 0, NULL, &g) == 0)
				for (size_t i = 0; i < g.gl_pathc; i++)
					*(const char **)vec_push(v) =
						arena_strdup(a,
							     g.gl_pathv[i]);
			globfree(&g);
		} else if (access(cand, X_OK) == 0) {
			*(const char **)vec_push(v) = cand;
		}
	}
}

static void probes_add_unique(struct arena *a, struct vec *v,
			      const char *path)
{
	char real[PATH_MAX];
	const char *rp = realpath(path, real) ? real : path;

	for (size_t i = 0; i < v->len; i++) {
		char r2[PATH_MAX];
		const char *q = ((const char **)v->data)[i];

		if (!strcmp(q, path) ||
		    (realpath(q, r2) && !strcmp(r2, rp)))
			return;
	}
	*(const char **)vec_push(v) = arena_strdup(a, path);
}

int probes_resolve_target(struct arena *a, const char *target, int pid,
			  const char ***paths, int *npaths)
{
	struct vec v = { .elem = sizeof(char *) };
	struct vec cands = { .elem = sizeof(char *) };

	*paths = NULL;
	*npaths = 0;
	if (!target || !*target)
		return -ENOENT;
	if (probes_has_wildcard(target)) {
		if (pid > 0) {
			const char **files;
			int n;
			bool has_slash = strchr(target, '/') != NULL;

			if (!probes_pid_files(a, pid, &files, &n))
				for (int i = 0; i < n; i++) {
					const char *s = has_slash ? files[i] :
						probes_basename(files[i]);

					if (probes_match_wildcard(target, s) &&
					    probes_is_elf(files[i]))
						probes_add_unique(a, &v,
								  files[i]);
				}
		} else if (strchr(target, '/')) {
			glob_t g;

			if (glob(target, 0, NULL, &g) == 0)
				for (size_t i = 0; i < g.gl_pathc; i++)
					*(const char **)vec_push(&cands) =
						arena_strdup(a,
							     g.gl_pathv[i]);
			globfree(&g);
		} else {
			probes_path_candidates(a, target, &cands);
		}
	} else if (strchr(target, '/')) {
		*(const char **)vec_push(&cands) = arena_strdup(a, target);
	} else {
		const char *lib = probes_find_library(a, target, pid);

		if (lib)
			*(const char **)vec_push(&cands) = lib;
		else
			probes_path_candidates(a, target, &cands);
	}
	for (size_t i = 0; i < cands.len; i++) {
		const char *c = ((const char **)cands.data)[i];

		if (probes_is_elf(c))
			probes_add_unique(a, &v, c);
		/* a name found in $PATH: the first one, as bpftrace */
		if (v.len && !strchr(target, '/') &&
		    !probes_has_wildcard(target))
			break;
	}
	free(cands.data);
	if (!v.len) {
		free(v.data);
		return -ENOENT;
	}
	*npaths = v.len;
	*paths = vec_to_arena(a, &v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* USDT                                                                */

#define NT_STAPSDT 3

static uint64_t probes_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int probes_usdt_notes(struct arena *a, const char *path,
		      struct probes_usdt **out, int *n)
{
	struct probes_elf e;
	struct vec v = { .elem = sizeof(struct probes_usdt) };
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint64_t base_addr = 0;
	bool have_base = false;
	int err;

	*out = NULL;
	*n = 0;
	err = probes_elf_open(path, &e);
	if (err)
		return err;
	if (elf_getshdrstrndx(e.elf, &shstrndx)) {
		probes_elf_close(&e);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e.elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e.elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			have_base = true;
		}
	}
	scn = NULL;
	while ((scn = elf_nextscn(e.elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(e.elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off,
					   &desc_off)) > 0) {
			const unsigned char *d =
				(const unsigned char *)data->d_buf + desc_off;
			const char *s, *end;
			struct probes_usdt *u;
			uint64_t pc, base, sem;

			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
			    memcmp((char *)data->d_buf + name_off, "stapsdt",
				   8) ||
			    nh.n_descsz < 3 * 8 + 3)
				continue;
			pc = probes_le64(d);
			base = probes_le64(d + 8);
			sem = probes_le64(d + 16);
			s = (const char *)d + 24;
			end = (const char *)d + nh.n_descsz;
			u = vec_push(&v);
			u->path = arena_strdup(a, path);
			u->provider = arena_strndup(a, s, strnlen(s, end - s));
			s += strlen(u->provider) + 1;
			u->name = arena_strndup(a, s, s < end ?
							 strnlen(s, end - s) :
							 0);
			s += strlen(u->name) + 1;
			u->args = arena_strndup(a, s, s < end ?
							 strnlen(s, end - s) :
							 0);
			if (have_base) {
				pc += base_addr - base;
				if (sem)
					sem += base_addr - base;
			}
			u->pc = pc;
			u->semaphore = sem;
			if (probes_elf_offset(e.elf, pc, &u->pc_offset))
				u->pc_offset = pc;
			if (sem && probes_elf_offset(e.elf, sem,
						     &u->semaphore_offset))
				u->semaphore_offset = sem;
		}
	}
	probes_elf_close(&e);
	*n = v.len;
	*out = vec_to_arena(a, &v);
	return 0;
}

/* x86-64 struct pt_regs (arch/x86/include/uapi/asm/ptrace.h). */
static const struct {
	const char *names[4];	/* 64, 32, 16, 8-bit */
	int off;
} probes_x86_regs[] = {
	{ { "r15", "r15d", "r15w", "r15b" }, 0 },
	{ { "r14", "r14d", "r14w", "r14b" }, 8 },
	{ { "r13", "r13d", "r13w", "r13b" }, 16 },
	{ { "r12", "r12d", "r12w", "r12b" }, 24 },
	{ { "rbp", "ebp", "bp", "bpl" }, 32 },
	{ { "rbx", "ebx", "bx", "bl" }, 40 },
	{ { "r11", "r11d", "r11w", "r11b" }, 48 },
	{ { "r10", "r10d", "r10w", "r10b" }, 56 },
	{ { "r9", "r9d", "r9w", "r9b" }, 64 },
	{ { "r8", "r8d", "r8w", "r8b" }, 72 },
	{ { "rax", "eax", "ax", "al" }, 80 },
	{ { "rcx", "ecx", "cx", "cl" }, 88 },
	{ { "rdx", "edx", "dx", "dl" }, 96 },
	{ { "rsi", "esi", "si", "sil" }, 104 },
	{ { "rdi", "edi", "di", "dil" }, 112 },
	{ { "rip", "eip", "ip", NULL }, 128 },
	{ { "rsp", "esp", "sp", "spl" }, 152 },
};

int probes_x86_reg_offset(const char *reg, int *size)
{
	static const int sizes[] = { 8, 4, 2, 1 };

	if (*reg == '%')
		reg++;
	for (size_t i = 0; i < ARRAY_SIZE(probes_x86_regs); i++)
		for (int w = 0; w < 4; w++) {
			const char *nm = probes_x86_regs[i].names[w];

			if (nm && !strcmp(nm, reg)) {
				if (size)
					*size = sizes[w];
				return probes_x86_regs[i].off;
			}
		}
	/* 8-bit high halves: ah, bh, ch, dh (byte 1 of the register) */
	if (strlen(reg) == 2 && reg[1] == 'h' && strchr("abcd", reg[0])) {
		char full[4] = { 'r', reg[0], 'x', 0 };

		if (reg[0] == 'b')
			full[2] = 'x';
		if (size)
			*size = 1;
		return probes_x86_reg_offset(full, NULL) + 1;
	}
	return -1;
}

static int probes_parse_reg(struct arena *a, const char **pp,
			    struct probes_usdt_arg *arg)
{
	const char *p = *pp, *s;
	char buf[16];
	size_t n;

	if (*p != '%')
		return -EINVAL;
	s = ++p;
	while (isalnum((unsigned char)*p))
		p++;
	n = p - s;
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	arg->reg = arena_strdup(a, buf);
	arg->pt_regs_off = probes_x86_reg_offset(buf, &arg->reg_size);
	if (arg->pt_regs_off < 0)
		return -EINVAL;
	*pp = p;
	return 0;
}

static int probes_parse_one_arg(struct arena *a, const char *s,
				struct probes_usdt_arg *arg)
{
	const char *p = s, *at = strchr(s, '@');
	char *end;

	memset(arg, 0, sizeof(*arg));
	arg->pt_regs_off = -1;
	if (at) {
		long sz = strtol(s, &end, 10);

		if (end != at || sz == 0 || labs(sz) > 8)
			return -EINVAL;
		arg->is_signed = sz < 0;
		arg->size = labs(sz);
		p = at + 1;
	} else {
		arg->size = 8;
	}
	if (*p == '$') {
		arg->kind = USDT_ARG_CONST;
		arg->val = strtoll(p + 1, &end, 0);
		return *end ? -EINVAL : 0;
	}
	if (*p == '%') {
		arg->kind = USDT_ARG_REG;
		if (probes_parse_reg(a, &p, arg))
			return -EINVAL;
		return *p ? -EINVAL : 0;
	}
	/* [disp](%reg) or sym(%rip) / sym+disp(%rip) */
	const char *lp = strchr(p, '(');

	if (!lp)
		return -EINVAL;
	if (lp == p) {
		arg->val = 0;
	} else {
		arg->val = strtoll(p, &end, 0);
		if (end != lp) {
			/* sym(%rip), sym+off(%rip), sym-off(%rip) */
			const char *sign = p;

			while (sign < lp && *sign != '+' && *sign != '-')
				sign++;
			arg->sym = arena_strndup(a, p, sign - p);
			arg->val = sign < lp ? strtoll(sign, NULL, 0) : 0;
		}
	}
	p = lp + 1;
	if (probes_parse_reg(a, &p, arg) || *p != ')' || p[1])
		return -EINVAL;
	arg->kind = !strcmp(arg->reg, "rip") ? USDT_ARG_ADDR :
					       USDT_ARG_REG_DEREF;
	return 0;
}

int probes_usdt_parse_args(struct arena *a, const char *spec,
			   struct probes_usdt_arg **out, int *n)
{
	struct vec v = { .elem = sizeof(struct probes_usdt_arg) };
	char *copy = arena_strdup(a, spec ? spec : ""), *save = NULL;
	int err = 0;

	for (char *tok = strtok_r(copy, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		err = probes_parse_one_arg(a, tok, vec_push(&v));
		if (err)
			break;
	}
	if (err) {
		free(v.data);
		*out = NULL;
		*n = 0;
		return err;
	}
	*n = v.len;
	*out = vec_to_arena(a, &v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Expansion                                                           */

static int probes_match_cmp(const void *x, const void *y)
{
	const struct probes_match *a = x, *b = y;

	return strcmp(a->name, b->name);
}

static struct probes_match *probes_new_match(struct vec *v, const char *prov,
					     int pid)
{
	struct probes_match *m = vec_push(v);

	m->provider = prov;
	m->pid = pid;
	return m;
}

static struct diag *probes_report(struct diag_list *d,
				  const struct ast_loc *loc, bool warn,
				  const char *msg)
{
	if (!d)
		return NULL;
	if (warn)
		return diag_warning(d, loc, "%s", msg);
	return diag_error(d, loc, "%s", msg);
}

static int probes_expand_tracepoint(struct arena *a, struct diag_list *d,
				    const struct ast_loc *loc,
				    const char *cat, const char *ev,
				    bool warn_only, struct vec *v)
{
	bool wild = probes_has_wildcard(cat) || probes_has_wildcard(ev);

	if (!wild) {
		struct tp_format f;

		if (tp_format_read(a, cat, ev, &f)) {
			char *msg = arena_printf(a,
						 "tracepoint not found: %s:%s",
						 cat, ev);

			probes_report(d, loc, warn_only, msg);
			if (!strcmp(cat, "syscall"))
				probes_report(d, loc, true,
					      arena_printf(a,
							   "Did you mean syscalls:%s?",
							   ev));
			return warn_only ? 0 : -ENOENT;
		}
		struct probes_match *m = probes_new_match(v, "tracepoint", 0);

		m->target = arena_strdup(a, cat);
		m->func = arena_strdup(a, ev);
		m->name = arena_printf(a, "tracepoint:%s:%s", cat, ev);
		return 0;
	}

	const char **all;
	int n, err = tp_list(a, &all, &n);
	size_t before = v->len;

	if (err && err != -ENOENT)
		return err;
	for (int i = 0; i < n; i++) {
		const char *colon = strchr(all[i], ':');
		char *c = arena_strndup(a, all[i], colon - all[i]);

		if (!probes_match_wildcard(cat, c) ||
		    !probes_match_wildcard(ev, colon + 1))
			continue;
		struct probes_match *m = probes_new_match(v, "tracepoint", 0);

		m->target = c;
		m->func = colon + 1;
		m->name = arena_printf(a, "tracepoint:%s", all[i]);
	}
	if (v->len == before) {
		probes_report(d, loc, false,
			      arena_printf(a, "tracepoints not found: %s:%s",
					   cat, ev));
		if (!strcmp(cat, "syscall"))
			probes_report(d, loc, false,
				      arena_printf(a,
						   "Did you mean syscalls:%s?",
						   ev));
		return -ENOENT;
	}
	return 0;
}

/*
 * C++ names: bpftrace matches a uprobe's function against a mangled
 * symbol as written, and against its demangled name, without the
 * parameter list unless the pattern has one: "foo" matches _Z3fooi and
 * _Z3foov, "foo(int)" only _Z3fooi. The demangler is libstdc++'s, which
 * ubt has loaded through LLVM (looked up at run time: ubt is C).
 */
typedef char *(*probes_demangle_fn)(const char *, char *, size_t *, int *);

static probes_demangle_fn probes_demangler(void)
{
	static probes_demangle_fn fn;
	static bool tried;

	if (!tried) {
		void *h;

		tried = true;
		fn = (probes_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!fn && (h = dlopen("libstdc++.so.6", RTLD_LAZY)))
			fn = (probes_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return fn;
}

/* Cut "(params) const" off a demangled name (the last balanced group). */
static void probes_erase_params(char *s)
{
	int depth = 0;

	for (ssize_t i = (ssize_t)strlen(s) - 1; i >= 0; i--) {
		if (s[i] == ')') {
			depth++;
		} else if (s[i] == '(' && --depth == 0) {
			s[i] = '\0';
			return;
		}
	}
}

/* Does pattern (wildcards when wild) name symbol sym? cpp_only: only as a
 * demangled C++ name (uprobe:bin:cpp:func). */
static bool probes_func_matches(const char *pattern, bool wild,
				const char *sym, bool cpp_only)
{
	probes_demangle_fn demangle;
	char *d;
	bool m;
	int status;

	if (!cpp_only && (wild ? probes_match_wildcard(pattern, sym) :
				 !strcmp(pattern, sym)))
		return true;
	if (strncmp(sym, "_Z", 2) || !(demangle = probes_demangler()))
		return false;
	d = demangle(sym, NULL, NULL, &status);
	if (!d)
		return false;
	if (!strchr(pattern, '('))
		probes_erase_params(d);
	m = wild ? probes_match_wildcard(pattern, d) : !strcmp(pattern, d);
	free(d);
	return m;
}

/*
 * An STT_GNU_IFUNC symbol's address is its resolver, which runs once at
 * relocation: a uprobe there never fires for calls. When ubt has the same
 * library loaded (libc, libm, ...), the implementation the resolver picks
 * on this machine is the one dlsym() returns here: use its address in
 * the file. 0, or -ENOENT when the library is not loaded in ubt.
 */
static int probes_ifunc_target(const char *path, const char *name,
			       uint64_t *vaddr)
{
	char want[PATH_MAX], have[PATH_MAX];
	struct link_map *lm = NULL;
	Dl_info info;
	void *h, *addr;
	int err = -ENOENT;

	if (!realpath(path, want))
		return -ENOENT;
	h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return -ENOENT;
	addr = dlsym(h, name);
	if (addr && dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) &&
	    lm && lm->l_name && realpath(lm->l_name, have) &&
	    !strcmp(have, want)) {
		*vaddr = (uint64_t)(uintptr_t)addr - lm->l_addr;
		err = 0;
	}
	dlclose(h);
	return err;
}

static int probes_expand_uprobe(struct arena *a, struct diag_list *d,
				const struct ast_loc *loc, const char *prov,
				const char *target, const char *func,
				bool cpp_only, uint64_t address,
				uint64_t func_offset, int pid, bool warn_only,
				struct vec *v)
{
	const char **paths;
	int npaths, err;
	bool wild = probes_has_wildcard(func);
	size_t before = v->len;

	if (!*target) {
		/* uprobe:func with -p: the process's executable */
		char exe[PATH_MAX];
		ssize_t len = -1;

		if (pid > 0)
			len = readlink(arena_printf(a, "/proc/%d/exe", pid),
				       exe, sizeof(exe) - 1);
		if (len <= 0) {
			probes_report(d, loc, false,
				      arena_printf(a,
						   "%s probe needs a target binary or -p PID",
						   prov));
			return -EINVAL;
		}
		target = arena_strndup(a, exe, len);
	}
	err = probes_resolve_target(a, target, pid, &paths, &npaths);
	if (err) {
		probes_report(d, loc, warn_only,
			      arena_printf(a,
					   "%s target file '%s' does not exist or is not executable",
					   "uprobe", target));
		return warn_only ? 0 : err;
	}
	for (int p = 0; p < npaths; p++) {
		struct probes_sym *syms;
		int nsyms;

		if (!func || !*func) {
			/* uprobe:bin:0x1234: inside a known function */
			struct probes_match *m = probes_new_match(v, prov, pid);
			const struct probes_sym *in = NULL;

			m->target = paths[p];
			m->addr = address;
			if (!probes_elf_funcs(a, paths[p], &syms, &nsyms))
				in = probes_sym_at(syms, nsyms, address);
			if (in) {
				m->func = in->name;
				m->size = in->size;
				m->func_offset = address - in->addr;
			}
			if (!in || probes_elf_vaddr_to_offset(paths[p], address,
							      &m->offset)) {
				probes_report(d, loc, warn_only,
					      arena_printf(a,
							   "Could not resolve address: %s:0x%llx",
							   paths[p],
							   (unsigned long long)address));
				v->len--;
				if (!warn_only)
					return -ENOENT;
				continue;
			}
			m->name = arena_printf(a, "%s:%s:0x%llx", prov,
					       paths[p],
					       (unsigned long long)address);
			continue;
		}
		err = probes_elf_funcs(a, paths[p], &syms, &nsyms);
		if (err) {
			probes_report(d, loc, warn_only,
				      arena_printf(a,
						   "%s target file '%s' does not exist or is not executable",
						   "uprobe", paths[p]));
			if (!warn_only)
				return err;
			continue;
		}
		for (int i = 0; i < nsyms; i++) {
			const struct probes_sym *s = &syms[i];

			if (!probes_func_matches(func, wild, s->name,
						 cpp_only))
				continue;
			struct probes_match *m = probes_new_match(v, prov, pid);
			uint64_t impl, impl_off;

			m->target = paths[p];
			m->func = s->name;
			m->addr = s->addr + func_offset;
			m->offset = s->offset + func_offset;
			m->size = s->size;
			if (s->type == STT_GNU_IFUNC &&
			    !probes_ifunc_target(paths[p], s->name, &impl) &&
			    !probes_elf_vaddr_to_offset(paths[p], impl,
							&impl_off)) {
				const struct probes_sym *is =
					probes_sym_at(syms, nsyms, impl);

				m->addr = impl + func_offset;
				m->offset = impl_off + func_offset;
				m->size = is ? is->size : 0;
			}
			m->func_offset = func_offset;
			if (func_offset)
				m->name = arena_printf(a, "%s:%s:%s+%llu", prov,
						       paths[p], s->name,
						       (unsigned long long)func_offset);
			else
				m->name = arena_printf(a, "%s:%s:%s", prov,
						       paths[p], s->name);
		}
	}
	if (v->len == before) {
		const char *t = npaths == 1 ? paths[0] : target;

		if (wild)
			probes_report(d, loc, warn_only,
				      arena_printf(a, "uprobes not found: %s:%s",
						   t, func));
		else
			probes_report(d, loc, warn_only,
				      arena_printf(a,
						   "Could not resolve symbol: %s:%s",
						   t, func));
		return warn_only ? 0 : -ENOENT;
	}
	return 0;
}

static int probes_expand_usdt(struct arena *a, struct diag_list *d,
			      const struct ast_loc *loc, const char *target,
			      const char *ns, const char *func, int pid,
			      bool warn_only, struct vec *v)
{
	const char **paths;
	int npaths, err;
	size_t before = v->len;
	bool wild;

	if (!target || !*target) {
		/* usdt::name or usdt:name with -p: every mapped file */
		if (pid <= 0) {
			probes_report(d, loc, false,
				      "usdt probe needs a target binary or -p PID");
			return -EINVAL;
		}
		target = "*";
	}
	err = probes_resolve_target(a, target, pid, &paths, &npaths);
	if (err) {
		probes_report(d, loc, warn_only,
			      arena_printf(a,
					   "usdt target file '%s' does not exist or is not executable",
					   target));
		return warn_only ? 0 : err;
	}
	if (!ns || !*ns)
		ns = "*";
	wild = probes_has_wildcard(ns) || probes_has_wildcard(func);
	for (int p = 0; p < npaths; p++) {
		struct probes_usdt *notes;
		int n;

		if (probes_usdt_notes(a, paths[p], &notes, &n))
			continue;
		for (int i = 0; i < n; i++) {
			const struct probes_usdt *u = &notes[i];

			if (!probes_match_wildcard(ns, u->provider) ||
			    !probes_match_wildcard(func, u->name))
				continue;
			/* a probe with several sites: one match per site */
			struct probes_match *m = probes_new_match(v, "usdt",
								  pid);

			m->target = paths[p];
			m->ns = u->provider;
			m->func = u->name;
			m->addr = u->pc;
			m->offset = u->pc_offset;
			m->semaphore_offset = u->semaphore ?
						      u->semaphore_offset : 0;
			m->usdt_args = u->args;
			m->name = arena_printf(a, "usdt:%s:%s:%s", paths[p],
					       u->provider, u->name);
		}
	}
	if (v->len == before) {
		probes_report(d, loc, warn_only && !wild,
			      arena_printf(a,
					   "usdt probe not found: %s:%s:%s",
					   npaths == 1 ? paths[0] : target, ns,
					   func));
		return warn_only && !wild ? 0 : -ENOENT;
	}
	return 0;
}

static int probes_expand_lang(struct arena *a, struct diag_list *d,
			      const struct ast_loc *loc, const char *provider,
			      const char *target, const char *ns,
			      const char *func, bool cpp_only,
			      uint64_t address, uint64_t func_offset, int pid,
			      bool warn_only, struct probes_match **out,
			      int *n)
{
	struct vec v = { .elem = sizeof(struct probes_match) };
	static const struct ast_loc noloc;
	int err = 0;

	if (!loc)
		loc = &noloc;
	*out = NULL;
	*n = 0;
	if (!strcmp(provider, "tracepoint")) {
		err = probes_expand_tracepoint(a, d, loc, target ? target : "",
					       func ? func : "", warn_only,
					       &v);
	} else if (!strcmp(provider, "uprobe") ||
		   !strcmp(provider, "uretprobe")) {
		err = probes_expand_uprobe(a, d, loc, provider,
					   target ? target : "", func,
					   cpp_only, address, func_offset,
					   pid, warn_only, &v);
	} else if (!strcmp(provider, "usdt")) {
		err = probes_expand_usdt(a, d, loc, target, ns,
					 func ? func : "*", pid, warn_only,
					 &v);
	} else {
		struct probes_match *m = probes_new_match(&v, provider, pid);
		const char *t = target && *target ? target : NULL;

		m->target = t;
		m->func = func;
		if (!strcmp(provider, "BEGIN") || !strcmp(provider, "END"))
			m->name = provider;
		else if (t && func && *func)
			m->name = arena_printf(a, "%s:%s:%s", provider, t,
					       func);
		else if (t)
			m->name = arena_printf(a, "%s:%s", provider, t);
		else
			m->name = arena_printf(a, "%s:%s", provider,
					       func ? func : "");
	}
	if (err) {
		free(v.data);
		return err;
	}
	if (v.len > 1)
		qsort(v.data, v.len, v.elem, probes_match_cmp);
	for (size_t i = 0; i < v.len; i++)
		((struct probes_match *)v.data)[i].index = i;
	*n = v.len;
	*out = vec_to_arena(a, &v);
	return 0;
}

int probes_expand_ap(struct arena *a, struct diag_list *d,
		     const struct ast_loc *loc, const char *provider,
		     const char *target, const char *ns, const char *func,
		     uint64_t address, uint64_t func_offset, int pid,
		     bool warn_only, struct probes_match **out, int *n)
{
	return probes_expand_lang(a, d, loc, provider, target, ns, func,
				  false, address, func_offset, pid, warn_only,
				  out, n);
}

int probes_expand(struct compile *c, struct ast_node *probe,
		  struct ast_node *ap, struct probes_match **out, int *n)
{
	const struct ast_attach_point *p = &ap->ap;
	bool warn_only = probe && probe->kind == AST_PROBE &&
			 probe->probe.aps && probe->probe.aps->next;
	const char *provider = p->provider;
	static const struct {
		const char *alias, *name;
	} aliases[] = {
		{ "u", "uprobe" }, { "ur", "uretprobe" },
		{ "U", "usdt" }, { "t", "tracepoint" },
	};

	int pid = p->pid ? p->pid : c->pid, err;

	for (size_t i = 0; provider && i < ARRAY_SIZE(aliases); i++)
		if (!strcmp(provider, aliases[i].alias))
			provider = aliases[i].name;
	if (!provider)
		provider = "";
	if (p->lang && strcmp(p->lang, "cpp")) {
		diag_error(&c->diag, &ap->loc, "unsupported language: %s",
			   p->lang);
		return -ENOTSUP;
	}
	err = probes_expand_lang(&c->arena, &c->diag, &ap->loc, provider,
				 p->target, p->ns, p->func, p->lang != NULL,
				 p->address, p->func_offset, pid, warn_only,
				 out, n);
	if (err || *n != 1)
		return err;
	/* rate probes: bpftrace's canonical spelling of the probe name */
	if (p->unit)
		(*out)->name = arena_printf(&c->arena, "%s:%s:%llu", provider,
					    p->unit,
					    (unsigned long long)p->freq);
	else if (p->freq && p->target && (!strcmp(provider, "software") ||
					  !strcmp(provider, "hardware")))
		(*out)->name = arena_printf(&c->arena, "%s:%s:%llu", provider,
					    p->target,
					    (unsigned long long)p->freq);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Listing                                                             */

static const char *const probes_sw_events[] = {
	"alignment-faults", "bpf-output", "context-switches", "cs",
	"cpu-clock", "cpu", "cpu-migrations", "dummy", "emulation-faults",
	"faults", "major-faults", "minor-faults", "page-faults",
	"task-clock",
};

static const char *const probes_hw_events[] = {
	"backend-stalls", "branch-instructions", "branches", "branch-misses",
	"bus-cycles", "cache-misses", "cache-references", "cpu-cycles",
	"cycles", "frontend-stalls", "instructions", "ref-cycles",
};

struct probes_lister {
	struct arena *a;
	struct vec lines;	/* const char *: name, then verbose text */
	bool verbose;
};

struct probes_line {
	const char *name;
	const char *detail;	/* -lv lines, or NULL */
};

static void probes_emit(struct probes_lister *l, const char *name,
			const char *detail)
{
	struct probes_line *ln = vec_push(&l->lines);

	ln->name = name;
	ln->detail = detail;
}

static const char *probes_tp_detail(struct arena *a, const char *cat,
				    const char *ev)
{
	struct tp_format f;
	char *s = arena_strdup(a, "");

	if (tp_format_read(a, cat, ev, &f))
		return NULL;
	for (int i = 0; i < f.nfields; i++)
		if (!f.fields[i].common)
			s = arena_printf(a, "%s    %s\n", s, f.fields[i].decl);
	return s;
}

/*
 * -lv for uprobes: each function's parameters from DWARF (the file's own
 * or its separate debug file), spelled as bpftrace 0.17 spells them:
 * "const char* s", "const <unknown type>* q", "struct foo* const p".
 */
struct probes_dwfn {
	const char *name;
	const char *params;	/* "    T name\n" lines */
	size_t order;		/* position in the file */
};
_Static_assert(offsetof(struct probes_dwfn, name) == 0, "name first");

struct probes_dwctx {
	struct arena *a;
	struct vec fns;
};

static const char *probes_dw_type_name(struct arena *a, Dwarf_Die *die,
				       int depth)
{
	Dwarf_Attribute attr;
	Dwarf_Die inner, *in = NULL;
	const char *name;
	int tag = dwarf_tag(die);

	if (depth > 32)
		return "<unknown type>";
	if (dwarf_attr_integrate(die, DW_AT_type, &attr) &&
	    dwarf_formref_die(&attr, &inner))
		in = &inner;
	switch (tag) {
	case DW_TAG_pointer_type:
		return arena_printf(a, "%s*",
				    in ? probes_dw_type_name(a, in, depth + 1) :
					 "void");
	case DW_TAG_const_type:
		if (!in)
			return "const <unknown type>";
		if (dwarf_tag(in) == DW_TAG_pointer_type)
			return arena_printf(a, "%s const",
					    probes_dw_type_name(a, in,
								depth + 1));
		return arena_printf(a, "const %s",
				    probes_dw_type_name(a, in, depth + 1));
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_class_type:
		name = dwarf_diename(die);
		return arena_printf(a, "%s %s",
				    tag == DW_TAG_structure_type ? "struct" :
				    tag == DW_TAG_union_type ? "union" :
				    tag == DW_TAG_enumeration_type ? "enum" :
								     "class",
				    name ? name : "<unknown type>");
	default:
		name = dwarf_diename(die);
		return name ? name : "<unknown type>";
	}
}

static int probes_dw_func(Dwarf_Die *die, void *arg)
{
	struct probes_dwctx *x = arg;
	struct probes_dwfn *fn;
	const char *name = dwarf_diename(die);
	Dwarf_Die child;
	char *params;

	if (!name || dwarf_hasattr(die, DW_AT_declaration))
		return DWARF_CB_OK;
	params = arena_strdup(x->a, "");
	if (dwarf_child(die, &child) == 0) {
		do {
			Dwarf_Attribute attr;
			Dwarf_Die type;
			const char *pn, *tn = "<unknown type>";

			if (dwarf_tag(&child) != DW_TAG_formal_parameter)
				continue;
			pn = dwarf_diename(&child);
			if (!pn)
				continue;
			if (dwarf_attr_integrate(&child, DW_AT_type, &attr) &&
			    dwarf_formref_die(&attr, &type))
				tn = probes_dw_type_name(x->a, &type, 0);
			params = arena_printf(x->a, "%s    %s %s\n", params,
					      tn, pn);
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	fn = vec_push(&x->fns);
	fn->name = arena_strdup(x->a, name);
	fn->params = params;
	fn->order = x->fns.len;
	return DWARF_CB_OK;
}

static int probes_dwfn_cmp(const void *x, const void *y)
{
	const struct probes_dwfn *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	/* equal names: the first definition in the file wins */
	if (c)
		return c;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The functions with DWARF of an ELF file, sorted by name (first wins). */
static int probes_dw_funcs(struct arena *a, const char *path,
			   struct probes_dwfn **out, int *n)
{
	struct probes_dwctx x = {
		.a = a, .fns = { .elem = sizeof(struct probes_dwfn) },
	};
	struct probes_elf e;
	const char *debug = NULL;
	Dwarf *dw;
	Dwarf_Off off = 0, next;
	size_t hsize;
	int fd, cnt = 0;

	*out = NULL;
	*n = 0;
	if (!probes_elf_open(path, &e)) {
		if (!probes_elf_section(e.elf, ".debug_info"))
			debug = probes_debug_file(a, e.elf, path);
		probes_elf_close(&e);
	}
	fd = open(debug ? debug : path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return -ENOENT;
	}
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			dwarf_getfuncs(&cu, probes_dw_func, &x, 0);
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	if (x.fns.len) {
		struct probes_dwfn *f = x.fns.data;

		qsort(f, x.fns.len, sizeof(*f), probes_dwfn_cmp);
		for (size_t i = 0; i < x.fns.len; i++)
			if (!cnt || strcmp(f[cnt - 1].name, f[i].name))
				f[cnt++] = f[i];
	}
	x.fns.len = cnt;
	*n = cnt;
	*out = vec_to_arena(a, &x.fns);
	return 0;
}

static const char *probes_dw_params(const struct probes_dwfn *fns, int n,
				    const char *name)
{
	const struct probes_dwfn *f =
		n > 0 ? bsearch(name, fns, n, sizeof(*fns), probes_name_cmp) :
			NULL;

	return f ? f->params : NULL;
}

static bool probes_perf_pmu(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s",
		 name);
	return access(path, F_OK) == 0;
}

/* List every probe whose full name matches pattern (NULL: all). */
static void probes_list_fixed(struct probes_lister *l, const char *provider,
			      const char *pattern)
{
	bool all = !provider;

	if (all || !strcmp(provider, "software"))
		for (size_t i = 0; i < ARRAY_SIZE(probes_sw_events); i++) {
			char *nm = arena_printf(l->a, "software:%s:",
						probes_sw_events[i]);

			if (!pattern || probes_match_wildcard(pattern, nm))
				probes_emit(l, nm, NULL);
		}
	if ((all || !strcmp(provider, "hardware")) && probes_perf_pmu("cpu"))
		for (size_t i = 0; i < ARRAY_SIZE(probes_hw_events); i++) {
			char *nm = arena_printf(l->a, "hardware:%s:",
						probes_hw_events[i]);

			if (!pattern || probes_match_wildcard(pattern, nm))
				probes_emit(l, nm, NULL);
		}
	if (all || !strcmp(provider, "tracepoint")) {
		const char **tps;
		int n;

		if (tp_list(l->a, &tps, &n))
			return;
		for (int i = 0; i < n; i++) {
			char *nm = arena_printf(l->a, "tracepoint:%s", tps[i]);
			const char *detail = NULL;

			if (pattern && !probes_match_wildcard(pattern, nm))
				continue;
			if (l->verbose) {
				const char *colon = strchr(tps[i], ':');

				detail = probes_tp_detail(
					l->a,
					arena_strndup(l->a, tps[i],
						      colon - tps[i]),
					colon + 1);
			}
			probes_emit(l, nm, detail);
		}
	}
}

static int probes_line_cmp(const void *x, const void *y)
{
	return strcmp(((const struct probes_line *)x)->name,
		      ((const struct probes_line *)y)->name);
}

/*
 * Split s at ':' into at most max parts (the last keeps the rest); a
 * double-quoted part may contain ':' ("ns::f(int)"), quotes are removed.
 */
static int probes_split(struct arena *a, const char *s, const char **parts,
			int max)
{
	char *buf = arena_alloc(a, strlen(s) + 1), *o = buf;
	bool quoted = false;
	int n = 0;

	parts[n] = buf;
	for (; *s; s++) {
		if (*s == '"') {
			quoted = !quoted;
		} else if (*s == ':' && !quoted && n < max - 1) {
			*o++ = '\0';
			parts[++n] = o;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return n + 1;
}

static const char *probes_canonical(const char *p)
{
	static const struct {
		const char *alias, *name;
	} tab[] = {
		{ "t", "tracepoint" }, { "tracepoint", "tracepoint" },
		{ "u", "uprobe" }, { "uprobe", "uprobe" },
		{ "ur", "uretprobe" }, { "uretprobe", "uretprobe" },
		{ "U", "usdt" }, { "usdt", "usdt" },
		{ "s", "software" }, { "software", "software" },
		{ "h", "hardware" }, { "hardware", "hardware" },
		{ "k", "kprobe" }, { "kprobe", "kprobe" },
		{ "kr", "kretprobe" }, { "kretprobe", "kretprobe" },
		{ "f", "kfunc" }, { "kfunc", "kfunc" }, { "fentry", "kfunc" },
		{ "fr", "kretfunc" }, { "kretfunc", "kretfunc" },
		{ "fexit", "kretfunc" },
		{ "i", "interval" }, { "interval", "interval" },
		{ "p", "profile" }, { "profile", "profile" },
		{ "BEGIN", "BEGIN" }, { "END", "END" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(tab); i++)
		if (!strcmp(p, tab[i].alias))
			return tab[i].name;
	return NULL;
}

static int probes_list_pattern(struct probes_lister *l, struct diag_list *d,
			       const struct ast_loc *loc, const char *pattern,
			       int pid)
{
	struct arena *a = l->a;
	const char *parts[4] = { 0 };
	const char *prov;
	int np;

	if (!strchr(pattern, ':')) {
		static const struct {
			const char *prov, *count;
		} counts[] = {
			{ "tracepoint", "2 arguments" },
			{ "uprobe", "2 arguments" },
			{ "uretprobe", "2 arguments" },
			{ "usdt", "2 or 3 arguments" },
			{ "software", "1 or 2 arguments" },
			{ "hardware", "1 or 2 arguments" },
		};

		/* a probe type alone: bpftrace's complaint */
		prov = probes_canonical(pattern);
		for (size_t i = 0; prov && i < ARRAY_SIZE(counts); i++)
			if (!strcmp(prov, counts[i].prov)) {
				diag_error(d, loc,
					   "%s probe type requires %s", prov,
					   counts[i].count);
				return -EINVAL;
			}
		if (prov)
			return 0;
		/* a bare search: every full name matching it */
		probes_list_fixed(l, NULL, pattern);
		return 0;
	}
	np = probes_split(a, pattern, parts, 4);
	prov = probes_canonical(parts[0]);
	if (!prov) {
		if (probes_has_wildcard(parts[0])) {
			probes_list_fixed(l, NULL, pattern);
			return 0;
		}
		diag_error(d, loc, "Invalid probe type: %s", parts[0]);
		return -EINVAL;
	}
	if (!strcmp(prov, "tracepoint") || !strcmp(prov, "software") ||
	    !strcmp(prov, "hardware")) {
		int need = !strcmp(prov, "tracepoint") ? 3 : 2;

		if (np < need && !probes_has_wildcard(parts[np - 1])) {
			diag_error(d, loc, "%s probe type requires %d %s",
				   prov, need - 1,
				   need - 1 == 1 ? "argument" :
						   "arguments");
			return -EINVAL;
		}
		/* the canonical provider name, the rest as written */
		const char *rest = strchr(pattern, ':') + 1;

		probes_list_fixed(l, prov,
				  arena_printf(a, "%s:%s", prov, rest));
		return 0;
	}
	if (!strcmp(prov, "uprobe") || !strcmp(prov, "uretprobe")) {
		struct probes_match *m;
		int n, err;
		const char *func;

		if (np < 3 && !(np == 2 && pid > 0)) {
			diag_error(d, loc, "%s probe type requires 2 arguments",
				   prov);
			return -EINVAL;
		}
		func = np >= 3 ? parts[2] : "*";
		if (np == 4)
			func = arena_printf(a, "%s:%s", parts[2], parts[3]);
		if (!*func)
			func = "*";
		err = probes_expand_ap(a, NULL, loc, prov,
				       np >= 3 ? parts[1] : "*", NULL,
				       probes_has_wildcard(func) ? func :
				       arena_printf(a, "%s", func),
				       0, 0, pid, false, &m, &n);
		if (err == -ENOENT) {
			const char **paths;
			int npaths;

			if (probes_resolve_target(a, np >= 3 ? parts[1] : "*",
						  pid, &paths, &npaths)) {
				diag_error(d, loc,
					   "uprobe target file '%s' does not exist or is not executable",
					   parts[1]);
				return -ENOENT;
			}
			return 0;	/* nothing matched: print nothing */
		}
		const char *dw_path = NULL;
		struct probes_dwfn *fns = NULL;
		int nfns = 0;

		for (int i = 0; i < n; i++) {
			const char *detail = NULL;

			/* uretprobes have no args: bpftrace shows none */
			if (l->verbose && m[i].func &&
			    !strcmp(prov, "uprobe")) {
				if (!dw_path || strcmp(dw_path, m[i].target)) {
					dw_path = m[i].target;
					probes_dw_funcs(a, dw_path, &fns, &nfns);
				}
				detail = probes_dw_params(fns, nfns, m[i].func);
			}
			probes_emit(l, m[i].name, detail);
		}
		return 0;
	}
	if (!strcmp(prov, "usdt")) {
		struct probes_match *m;
		int n, err;
		const char *target = np >= 2 ? parts[1] : "";

		if (np < 3 && pid <= 0) {
			diag_error(d, loc,
				   "usdt probe type requires 2 or 3 arguments");
			return -EINVAL;
		}
		err = probes_expand_ap(a, NULL, loc, "usdt",
				       *target ? target : "*",
				       np == 4 ? parts[2] : "*",
				       np == 4 ? parts[3] :
				       np == 3 ? parts[2] : "*",
				       0, 0, pid, false, &m, &n);
		if (err == -ENOENT) {
			const char **paths;
			int npaths;

			if (probes_resolve_target(a, *target ? target : "*",
						  pid, &paths, &npaths)) {
				diag_error(d, loc,
					   "usdt target file '%s' does not exist or is not executable",
					   target);
				return -ENOENT;
			}
			return 0;
		}
		/* one line per provider:name, even with several sites */
		for (int i = 0; i < n; i++)
			if (!i || strcmp(m[i].name, m[i - 1].name))
				probes_emit(l, m[i].name, NULL);
		return 0;
	}
	/* kprobe & co: ubt has none on this kernel (no kprobe PMU), so it
	 * lists none; BEGIN, END, interval, profile: nothing to list */
	return 0;
}

int probes_list(const char *pattern, int pid, bool verbose, FILE *out,
		FILE *err)
{
	struct probes_lister l = {
		.lines = { .elem = sizeof(struct probes_line) },
		.verbose = verbose,
	};
	struct arena a;
	struct diag_list d;
	struct ast_loc loc = { 0 };
	int rc = 0;

	arena_init(&a);
	l.a = &a;
	diag_init(&d, &a, "stdin", pattern ? pattern : "");
	if ((!pattern || !*pattern) && pid > 0) {
		/* -p alone: the process's executable, as bpftrace spells it
		 * (through /proc/PID/root, its mount namespace) */
		char exe[PATH_MAX];
		ssize_t len = readlink(arena_printf(&a, "/proc/%d/exe", pid),
				       exe, sizeof(exe) - 1);

		if (len > 0) {
			const char *path = arena_printf(&a, "/proc/%d/root%.*s",
							pid, (int)len, exe);

			probes_list_pattern(&l, &d, &loc,
					    arena_printf(&a, "uprobe:%s:*",
							 path), 0);
			probes_list_pattern(&l, &d, &loc,
					    arena_printf(&a, "usdt:%s:*:*",
							 path), 0);
		} else {
			fprintf(err, "ubt: cannot read /proc/%d/exe: %s\n",
				pid, strerror(errno));
			rc = 1;
		}
	} else if (!pattern || !*pattern) {
		probes_list_fixed(&l, NULL, NULL);
	} else {
		loc.first_line = loc.last_line = 1;
		loc.first_column = 1;
		loc.last_column = strlen(pattern) + 1;
		if (probes_list_pattern(&l, &d, &loc, pattern, pid))
			rc = 1;
	}
	if (diag_has_errors(&d) || d.nwarnings)
		diag_print(&d, err);
	if (diag_has_errors(&d))
		rc = 1;
	if (!rc) {
		struct probes_line *lines = l.lines.data;

		if (l.lines.len)
			qsort(lines, l.lines.len, sizeof(*lines),
			      probes_line_cmp);
		for (size_t i = 0; i < l.lines.len; i++) {
			if (i && !strcmp(lines[i].name, lines[i - 1].name))
				continue;
			fprintf(out, "%s\n", lines[i].name);
			if (lines[i].detail)
				fputs(lines[i].detail, out);
		}
	}
	free(l.lines.data);
	arena_release(&a);
	return rc;
}
