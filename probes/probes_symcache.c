/*
 * Address to symbol in a running process: its mappings read once per pid,
 * each mapped file's symbols once (ustack/usym, kernel.c), and wildcards.
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
	Dwarf *dw;		/* its line tables, opened on first use */
	int dwfd;
	bool dw_tried;
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
	for (struct probes_file *f = sc->files; f; f = f->next)
		if (f->dw) {
			dwarf_end(f->dw);
			close(f->dwfd);
		}
	arena_release(&sc->arena);
	free(sc);
}

static struct probes_proc *probes_proc_read(struct probes_symcache *sc,
					    int pid)
{
	struct probes_vec v = { .elem = sizeof(struct probes_map) };
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
		m = probes_vec_push(&v);
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->path = arena_strdup(&sc->arena, file);
	}
	fclose(f);
	p = arena_alloc(&sc->arena, sizeof(*p));
	p->pid = pid;
	p->nmaps = v.len;
	p->maps = probes_vec_to_arena(&sc->arena, &v);
	p->next = sc->procs;
	sc->procs = p;
	return p;
}

static struct probes_proc *probes_proc_get(struct probes_symcache *sc,
					   int pid);

int probes_symcache_note(struct probes_symcache *sc, int pid)
{
	struct probes_proc **pp, *p = probes_proc_read(sc, pid);

	if (!p)
		return -ESRCH;
	/*
	 * A fresh snapshot replaces an older one (exec, dlopen), unless it
	 * is empty: a process that has exited (a zombie) lists no mappings,
	 * and the older snapshot is all there is left of it.
	 */
	for (pp = &p->next; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid) {
			if (!p->nmaps) {
				sc->procs = p->next;
				return -ESRCH;
			}
			*pp = (*pp)->next;
			break;
		}
	return 0;
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

static struct probes_proc *probes_proc_get(struct probes_symcache *sc,
					   int pid)
{
	struct probes_proc *p;

	for (p = sc->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return probes_proc_read(sc, pid);
}

const char *probes_symcache_module(struct probes_symcache *sc, int pid,
				   uint64_t addr)
{
	struct probes_proc *p = probes_proc_get(sc, pid);

	for (int i = 0; p && i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return p->maps[i].path;
	return NULL;
}

/* addr in pid: the file mapped there and the ELF virtual address. */
static struct probes_file *probes_symcache_vaddr(struct probes_symcache *sc,
						 int pid, uint64_t addr,
						 uint64_t *vaddr)
{
	struct probes_proc *p;
	const struct probes_map *m = NULL;
	struct probes_file *f;
	uint64_t foff;

	p = probes_proc_get(sc, pid);
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
			*vaddr = foff - ph->p_offset + ph->p_vaddr;
			return f;
		}
	}
	return NULL;
}

int probes_symcache_line(struct probes_symcache *sc, int pid, uint64_t addr,
			 const char **file, int *line)
{
	uint64_t vaddr = 0;
	struct probes_file *f = probes_symcache_vaddr(sc, pid, addr, &vaddr);
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *src;

	if (!f)
		return -ENOENT;
	if (!f->dw_tried) {
		const char *d = probes_elf_dwarf_file(&sc->arena, f->path);

		f->dw_tried = true;
		f->dwfd = d ? open(d, O_RDONLY | O_CLOEXEC) : -1;
		if (f->dwfd >= 0 &&
		    !(f->dw = dwarf_begin(f->dwfd, DWARF_C_READ)))
			close(f->dwfd);
	}
	if (!f->dw || !dwarf_addrdie(f->dw, vaddr, &cu) ||
	    !(l = dwarf_getsrc_die(&cu, vaddr)) || dwarf_lineno(l, line) ||
	    !(src = dwarf_linesrc(l, NULL, NULL)))
		return -ENOENT;
	if (src[0] != '/') {
		/* relative to the unit's directory: the full path, as
		 * v0.26 prints it (directory/file) */
		Dwarf_Attribute at;
		const char *dir = dwarf_formstring(dwarf_attr(&cu,
							      DW_AT_comp_dir,
							      &at));

		if (dir) {
			*file = arena_printf(&sc->arena, "%s/%s", dir, src);
			return 0;
		}
	}
	*file = arena_strdup(&sc->arena, src);
	return 0;
}

const char *probes_symcache_resolve(struct probes_symcache *sc, int pid,
				    uint64_t addr, uint64_t *offset)
{
	struct probes_file *f;
	uint64_t vaddr = 0;
	int lo, hi, best = -1;

	f = probes_symcache_vaddr(sc, pid, addr, &vaddr);
	if (!f)
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
