/*
 * Shared by the parts of binary inspection (probes/README): growable
 * arrays copied to the arena, and the ELF file handle.
 */
#ifndef UBT_PROBES_INT_H
#define UBT_PROBES_INT_H

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

struct probes_vec {
	void *data;
	size_t len, cap, elem;
};

void *probes_vec_push(struct probes_vec *v);

void *probes_vec_to_arena(struct arena *a, struct probes_vec *v);

/* ------------------------------------------------------------------ */
/* Kernel attach points (probes_kernel.c)                              */

/* kprobe, kretprobe, kfunc, kretfunc, rawtracepoint (or an alias)? */
bool probes_is_kernel(const char *provider);
/* The functions or raw tracepoints an attach point names, into v; 0, or
 * -ENOENT after its error (a warning and 0 when warn_only). */
int probes_expand_kernel(struct arena *a, struct diag_list *d,
			 const struct ast_loc *loc, const char *provider,
			 const char *module, const char *func,
			 uint64_t func_offset, bool warn_only,
			 struct probes_vec *v);
/* Does bpftrace 0.17 drop attach point ap of probe silently (after its
 * "not traceable" warning)?  A kprobe on a function the kernel cannot
 * trace, alone in a probe that uses the probe builtin. */
bool probes_kernel_drops(const struct ast_node *probe,
			 const struct ast_node *ap);
/* -l without a probe type (the whole list, or a bare search): kprobes
 * and kfuncs, as bpftrace 0.17 lists them. */
void probes_list_kernel_all(struct arena *a, const char *pattern,
			    void (*emit)(void *ctx, const char *name,
					 const char *detail),
			    void *ctx);
/* -l: each match of provider:[module:]func, with -lv's argument lines
 * for kfuncs and raw tracepoints; 0 or -errno. */
int probes_list_kernel(struct arena *a, const char *provider,
		       const char *module, const char *func, bool verbose,
		       void (*emit)(void *ctx, const char *name,
				    const char *detail),
		       void *ctx);

/* -l 'struct NAME' (union, enum), -lv with each definition; the
 * iterators as iter:NAME (probes_btf.c); 0 or -errno. */
int probes_list_btf_types(struct arena *a, const char *pattern, bool verbose,
			  void (*emit)(void *ctx, const char *name,
				       const char *detail),
			  void *ctx);
int probes_list_iters(struct arena *a, const char *pattern,
		      void (*emit)(void *ctx, const char *name,
				   const char *detail),
		      void *ctx);

/* ------------------------------------------------------------------ */
/* ELF files                                                           */

struct probes_elf {
	int fd;
	Elf *elf;
};

int probes_elf_open(const char *path, struct probes_elf *e);

void probes_elf_close(struct probes_elf *e);

/* vaddr -> file offset through PT_LOAD; -ENOENT when not mapped. */
int probes_elf_offset(Elf *elf, uint64_t vaddr, uint64_t *off);

int probes_bind_rank(int bind);

/* The section named name, or NULL. */
Elf_Scn *probes_elf_section(Elf *elf, const char *name);

/*
 * The separate debug file of an ELF file, as gdb and bcc find it: by
 * build id under /usr/lib/debug/.build-id, else by .gnu_debuglink next
 * to the file, in its .debug directory or under /usr/lib/debug (with the
 * CRC checked). NULL when there is none.
 */
const char *probes_debug_file(struct arena *a, Elf *elf,
				     const char *path);
/*
 * Walking the notes of an ELF file: start with { .elf = elf } (and
 * .section = a section name to read only that note section); each call
 * gives the next note of that owner and type, false at the end.
 */
struct probes_note_it {
	Elf *elf;
	const char *section;
	Elf_Scn *scn;
	Elf_Data *data;
	size_t off;
};
bool probes_elf_note_next(struct probes_note_it *it, const char *owner,
			  uint32_t type, const unsigned char **desc,
			  size_t *descsz);
/* The GNU build id of elf: its length (0: none), *id pointing into elf. */
size_t probes_elf_build_id(Elf *elf, const unsigned char **id);
/* probes_debuginfo.c: elf's debug file in a --debuginfo directory, with
 * the same build id when both have one; NULL when there is none. */
const char *probes_debuginfo_find(struct arena *a, Elf *elf,
				  const char *path);

int probes_name_cmp(const void *key, const void *rec);

#endif
