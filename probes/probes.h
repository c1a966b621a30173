/*
 * Attach points, resolved: uprobe/usdt targets (binary paths and library
 * names, as bpftrace resolves them), ELF function symbols, USDT notes,
 * wildcard expansion into concrete attach points, and `ubt -l` listing.
 *
 * Everything is allocated in the arena passed in; nothing to free.
 */
#ifndef UBT_PROBES_H
#define UBT_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct arena;
struct ast_node;
struct compile;
struct diag_list;
struct ast_loc;

/* A function symbol of an ELF file. */
struct probes_sym {
	const char *name;
	uint64_t addr;		/* st_value: virtual address */
	uint64_t size;		/* st_size */
	uint64_t offset;	/* file offset of addr (for attaching) */
	int bind;		/* STB_LOCAL, STB_GLOBAL, STB_WEAK */
	int type;		/* STT_FUNC, STT_GNU_IFUNC */
};

/*
 * The defined function symbols (STT_FUNC, STT_GNU_IFUNC) of an ELF file
 * and of its separate debug file when installed (build id or
 * .gnu_debuglink, as bcc and so bpftrace find it), .symtab and .dynsym
 * merged, one per name (a global binding wins over a weak or local one;
 * versioned .symtab names like "f@@GLIBC_2.34" are names of their own, as
 * bpftrace lists them; gcc's "f.part.N" pieces left out), sorted by name
 * (bytewise). 0 or -errno (-ENOENT: no such file, -ENOEXEC: not an ELF
 * file).
 */
int probes_elf_funcs(struct arena *a, const char *path,
		     struct probes_sym **out, int *n);
/* Find name in a list from probes_elf_funcs() (binary search). */
const struct probes_sym *probes_sym_find(const struct probes_sym *syms, int n,
					 const char *name);
/*
 * The symbol whose [addr, addr + size) contains addr (size 0: exact
 * match), or NULL. Linear; to resolve many addresses use
 * probes_symcache below (cached, address-sorted).
 */
const struct probes_sym *probes_sym_at(const struct probes_sym *syms, int n,
				       uint64_t addr);
/* Any defined symbol (function, object, ...) of path by name, from
 * .symtab or .dynsym: its address and size; 0 or -ENOENT (uaddr()). */
int probes_elf_symbol(const char *path, const char *name, uint64_t *addr,
		      uint64_t *size);
/*
 * Where path's DWARF is: path itself when it has .debug_info, else its
 * separate debug file (build id under /usr/lib/debug/.build-id, then
 * .gnu_debuglink), else path. In a; NULL only when a runs out.
 */
const char *probes_elf_dwarf_file(struct arena *a, const char *path);
/* uprobe:BINARY@FILE:LINE: the lowest address of a statement of LINE in
 * FILE (a path, or its last components) in path's DWARF line table;
 * 0 or -ENOENT (probes_srcline.c). */
int probes_srcline_addr(struct arena *a, const char *path, const char *file,
			int line, uint64_t *addr);
/* --debuginfo DIR[:DIR]: directories searched first for debug files
 * (probes_debuginfo.c); kept for the whole run. */
void probes_set_debuginfo(const char *const *dirs, int n);
/* Virtual address -> file offset through the PT_LOAD headers; 0 or -errno. */
int probes_elf_vaddr_to_offset(const char *path, uint64_t vaddr,
			       uint64_t *offset);

/*
 * Address -> function name in a process (usym(), func in uprobes): a
 * cache of each process's mappings (/proc/PID/maps, read on first use or
 * when probes_symcache_note() snapshots it, so that addresses of a
 * process that has exited since still resolve) and of each file's
 * symbols.
 */
struct probes_symcache;

struct probes_symcache *probes_symcache_new(void);
void probes_symcache_free(struct probes_symcache *sc);
/* Snapshot pid's mappings now (at attach time, and for -c/-p). */
int probes_symcache_note(struct probes_symcache *sc, int pid);
/*
 * The name of the function containing addr in pid, *offset (may be NULL)
 * the distance from its start; NULL when unknown. The string lives as
 * long as the cache.
 */
const char *probes_symcache_resolve(struct probes_symcache *sc, int pid,
				    uint64_t addr, uint64_t *offset);
/* The path of the file mapped at addr in pid (as the mappings name it),
 * NULL when none. */
const char *probes_symcache_module(struct probes_symcache *sc, int pid,
				   uint64_t addr);
/* The source file and line of addr in pid from the DWARF line table of
 * the file mapped there (its own, or its separate debug file); 0, or
 * -ENOENT. *file lives as long as the cache. */
int probes_symcache_line(struct probes_symcache *sc, int pid, uint64_t addr,
			 const char **file, int *line);

/*
 * Resolve a uprobe/usdt target as bpftrace does:
 *   - a path containing '/' is used as is (globbed if it has wildcards);
 *   - otherwise a library name: "libc", "c" or "libc.so.6" is looked up
 *     in the -p process's mapped files (pid > 0), then in ld.so.cache,
 *     then in the standard library directories;
 *   - otherwise an executable in $PATH (bash -> /usr/bin/bash);
 *   - "*" (or any wildcard) with pid > 0: every ELF file mapped by the
 *     process that matches the pattern;
 * Each result is an existing ELF file. "/proc/PID/exe" style paths are
 * kept. 0 with at least one path, -ENOENT when nothing is found.
 */
int probes_resolve_target(struct arena *a, const char *target, int pid,
			  const char ***paths, int *npaths);

/* A USDT probe site (a stapsdt note). */
struct probes_usdt {
	const char *path;
	const char *provider;
	const char *name;
	uint64_t pc;		/* site address, adjusted for .stapsdt.base */
	uint64_t pc_offset;	/* file offset of the site (for attaching) */
	uint64_t semaphore;	/* semaphore address, 0 when none */
	uint64_t semaphore_offset;	/* file offset: ref_ctr_offset */
	const char *args;	/* argument spec: "-4@%edi 8@-8(%rbp)" */
};

int probes_usdt_notes(struct arena *a, const char *path,
		      struct probes_usdt **out, int *n);

/* One argument of a USDT argument spec, x86-64 (as in sys/sdt.h). */
enum probes_usdt_arg_kind {
	USDT_ARG_CONST,		/* $val */
	USDT_ARG_REG,		/* %reg */
	USDT_ARG_REG_DEREF,	/* off(%reg) or off(%reg,%idx,scale): read
				 * size bytes at reg + idx * scale + off */
	USDT_ARG_ADDR,		/* sym(%rip) / sym+off(%rip): read size
				 * bytes at the symbol's address (sym) +
				 * val in the module, reg "rip" */
};

struct probes_usdt_arg {
	enum probes_usdt_arg_kind kind;
	int size;		/* 1, 2, 4, 8 */
	bool is_signed;		/* "-4@..." */
	const char *reg;	/* "rdi", "edi", "rip", ... as written */
	int pt_regs_off;	/* offsetof(struct pt_regs, <64-bit reg>), -1 */
	int reg_size;		/* bytes of the named (sub)register */
	int64_t val;		/* constant or displacement */
	const char *sym;	/* USDT_ARG_ADDR: the symbol, else NULL */
	int idx_pt_regs_off;	/* off(%reg,%idx,scale): the index
				 * register's offset, else -1 */
	int scale;		/* its scale: 1, 2, 4 or 8 */
};

/* Parse an argument spec; 0 or -EINVAL. */
int probes_usdt_parse_args(struct arena *a, const char *spec,
			   struct probes_usdt_arg **out, int *n);
/* offsetof(struct pt_regs, R) for an x86-64 register name of any width
 * ("rax", "eax", "ax", "al", "r8d", ...), -1 when unknown; *size gets the
 * width in bytes. */
int probes_x86_reg_offset(const char *reg, int *size);

/* One concrete attach point after expansion. */
struct probes_match {
	const char *provider;	/* "uprobe", "uretprobe", "usdt", "tracepoint" */
	const char *target;	/* resolved path, or tracepoint category */
	const char *ns;		/* usdt provider, else NULL */
	const char *func;	/* symbol, event, usdt name */
	const char *name;	/* the probe builtin's value, bpftrace's
				 * spelling: "uprobe:/usr/bin/bash:readline",
				 * "tracepoint:sched:sched_switch",
				 * "usdt:/path:provider:name" */
	uint64_t addr;		/* uprobe: symbol address (+ func_offset),
				 * or the address given; usdt: site pc. For
				 * an IFUNC symbol of a library ubt has
				 * loaded too: the implementation selected
				 * on this machine, not the resolver */
	uint64_t offset;	/* file offset to attach a uprobe at */
	uint64_t size;		/* uprobe: symbol size, 0 when unknown */
	uint64_t func_offset;	/* uprobe:bin:func+N: N (for an address:
				 * its offset in the function, ->func the
				 * function containing it) */
	int pid;		/* -p filter, 0 = every process */
	/* usdt */
	uint64_t semaphore_offset;	/* ref_ctr_offset, 0 when none */
	const char *usdt_args;	/* argument spec */
	int index;		/* 0.. within the attach point's matches */
	/* kfunc/kretfunc named without a wildcard that no BTF has (no
	 * such function, its module not loaded): kept, to fail or be
	 * skipped at attach in bpftrace 0.17's words */
	bool no_btf;
};

/*
 * Expand one AST_ATTACH_POINT of probe (an AST_PROBE) into concrete
 * attach points: uprobe/uretprobe/usdt (targets resolved, wildcards in
 * target, function, usdt provider and name matched; c->pid used for the
 * target and as the filter) and tracepoint (wildcards in category and
 * event). Other providers (BEGIN, END, interval, ...) give one match
 * with ->name the attach point's canonical name.
 *
 * Problems are located diagnostics in c->diag at the attach point, in
 * bpftrace's wording:
 *   tracepoint not found: CAT:EVENT     (a warning when the probe has
 *                                        other attach points)
 *   tracepoints not found: CAT:EVENT*   (wildcard)
 *   Did you mean syscalls:EVENT?        (warning, category "syscall")
 *   uprobe target file 'X' does not exist or is not executable
 *   Could not resolve symbol: PATH:FUNC
 *   Could not resolve address: PATH:0xADDR  (not inside a function)
 *   uprobes not found: PATH:FUNC*       (wildcard matching nothing)
 *   usdt probe not found: PATH:PROVIDER:NAME
 *   usdt target file 'X' does not exist or is not executable
 *   uprobe probe needs a target binary or -p PID   (uprobe:func without
 *                                        -p; with -p: /proc/PID/exe)
 *   usdt probe needs a target binary or -p PID
 * A uprobe function also matches C++ symbols by their demangled name, as
 * bpftrace does ("foo" matches _Z3fooi and _Z3foov, "foo(int)" only the
 * first; "ns::*" works too); uprobe:bin:cpp:func matches C++ symbols only.
 * Rate probes get bpftrace's canonical name: "interval:s:1",
 * "software:cpu-clock:100".
 * Returns 0 (*n may be 0 after a warning), or -errno after an error.
 */
int probes_expand(struct compile *c, struct ast_node *probe,
		  struct ast_node *ap, struct probes_match **out, int *n);

/*
 * probes_expand() without reporting (cg_build() reports later): its
 * warnings and errors are dropped, *why is the first error's text (else
 * NULL), and an error makes it -EINVAL.
 */
int probes_expand_quiet(struct compile *c, struct ast_node *probe,
			struct ast_node *ap, struct probes_match **out, int *n,
			const char **why);

/*
 * probes_insn.c: is the byte at offset at of the function whose code is
 * at file offset func_off (size bytes) in path the first of an
 * instruction?  1 yes, 0 no (inside one), -errno when it cannot tell.
 */
int probes_insn_boundary(const char *path, uint64_t func_off, uint64_t size,
			 uint64_t at);
/*
 * probes_kvmlinux.c: kprobe:func+off checked as bpftrace 0.17 checks it
 * against a vmlinux file with symbols (BPFTRACE_VMLINUX, or one of its
 * places for the running kernel): 0 (*msg: --unsafe's warning, or NULL),
 * -ENOENT no such file (the kernel checks), -ERANGE past the function's
 * end, -EILSEQ not at an instruction's start or undecidable (*msg says
 * which, in bpftrace's words).
 */
int probes_kernel_offset_check(struct arena *a, const char *func,
			       uint64_t off, bool unsafe, const char **msg);
/* Does the instruction at file offset off of path have a lock prefix (the
 * kernel places no uprobe there: ENOTSUPP)?  1, 0, or -errno. */
int probes_insn_locked(const char *path, uint64_t off);

/* A C++ symbol's demangled name (malloc()ed), else NULL (not "_Z...", or
 * libstdc++'s __cxa_demangle() refused it or is not loaded). */
char *probes_demangle(const char *sym);

/*
 * probes_watch.c, for probes_expand(): a watchpoint attach point gives
 * the address given, or one match per function of the -p/-c program at
 * its entry (->offset), named "watchpoint:PROGRAM:FUNC:LEN:MODE" as
 * bpftrace names it. probes_watch_target(): the -c program, as given.
 */
bool probes_is_watch(const char *provider);
const char *probes_watch_target(struct compile *c, int pid);
void probes_watch_names(struct compile *c, const struct ast_node *ap,
			const char *target, struct probes_match *m, int n);

/* The same, without an AST: ap fields given directly (for tests, -l). */
int probes_expand_ap(struct arena *a, struct diag_list *d,
		     const struct ast_loc *loc, const char *provider,
		     const char *target, const char *ns, const char *func,
		     uint64_t address, uint64_t func_offset, int pid,
		     bool warn_only, struct probes_match **out, int *n);

/* Does s contain a wildcard (*, ?, [) ? */
bool probes_has_wildcard(const char *s);
/* fnmatch() as bpftrace matches probe names. */
bool probes_match_wildcard(const char *pattern, const char *s);

/*
 * `ubt -l [PATTERN]` (and -lv when verbose): print the matching probes,
 * one per line, sorted, as bpftrace 0.17 prints them; PATTERN NULL or ""
 * lists tracepoints, software and hardware (with a CPU PMU) events. -lv
 * adds a tracepoint's fields as its format file declares them and a
 * uprobe's parameters from DWARF ("    const char* s"). Patterns: full
 * names with wildcards ("tracepoint:sched:*", "t:*:sched_sw*",
 * "*sched_switch*"), "uprobe:TARGET:FUNC", "usdt:TARGET[:PROV]:NAME";
 * with pid > 0 targets resolve through the process's maps, and without a
 * pattern the process's executable's uprobes and usdt probes are listed.
 * Errors in the pattern are printed to err in bpftrace's diagnostic
 * format against "stdin".
 * Returns 0, or 1 after printing an error.
 */
int probes_list(const char *pattern, int pid, bool verbose, FILE *out,
		FILE *err);

#endif
