/*
 * Unit tests for probes/ and frontend/tracepoint.c: ELF function
 * symbols, USDT notes and argument specs, target resolution (paths,
 * library names, $PATH, -p), wildcard expansion and its diagnostics,
 * tracepoint format parsing and the args record of real tracepoints
 * (types as `bpftrace -lv` and bpftrace's type checker show them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr */
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "probes.h"
#include "tracepoint.h"
#include "types.h"
#include "tests/tap.h"


static const char *ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix) ? s + n - m : NULL;
}

static struct arena A;
static char target[4096];

static const struct type_field *field(const struct type *rec,
				      const char *name)
{
	for (int i = 0; i < rec->nfields; i++)
		if (!strcmp(rec->fields[i].name, name))
			return &rec->fields[i];
	return NULL;
}

/* "int32 @ 24" for a record field, "-" when missing. */
static const char *fdesc(const struct type *rec, const char *name)
{
	const struct type_field *f = field(rec, name);

	if (!f)
		return "-";
	return arena_printf(&A, "%s @ %zu", type_str(&A, f->type), f->offset);
}

static void test_symbols(void)
{
	struct probes_sym *syms;
	const struct probes_sym *s, *t;
	int n, err, sorted = 1;

	err = probes_elf_funcs(&A, target, &syms, &n);
	ok(!err && n >= 6, "symbols of the test target (%d, err %d)", n, err);
	if (err)
		return;
	for (int i = 1; i < n; i++)
		if (strcmp(syms[i - 1].name, syms[i].name) >= 0)
			sorted = 0;
	ok(sorted, "symbols sorted by name, one per name");
	s = probes_sym_find(syms, n, "ubt_probe_alpha");
	ok(s && s->size > 0 && s->bind == STB_GLOBAL && s->addr,
	   "ubt_probe_alpha: global, sized");
	t = probes_sym_find(syms, n, "ubt_probe_beta");
	ok(t && t->bind == STB_WEAK, "ubt_probe_beta: weak");
	t = probes_sym_find(syms, n, "ubt_probe_local");
	ok(t && t->bind == STB_LOCAL, "ubt_probe_local: local (.symtab)");
	ok(probes_sym_find(syms, n, "main") != NULL, "main listed");
	ok(!probes_sym_find(syms, n, "sleep") && !probes_sym_find(syms, n, "atoi"),
	   "undefined (imported) functions not listed");
	ok(!probes_sym_find(syms, n, "ubt_test_sem_semaphore"),
	   "data symbols not listed");
	if (s) {
		uint64_t off = 0;

		ok(probes_sym_at(syms, n, s->addr + 1) == s,
		   "address inside ubt_probe_alpha resolves to it");
		int e = probes_elf_vaddr_to_offset(target, s->addr, &off);

		ok(!e && off == s->offset && off,
		   "file offset of ubt_probe_alpha (0x%llx)",
		   (unsigned long long)off);
	}
	err = probes_elf_funcs(&A, "/nonexistent/file", &syms, &n);
	ok(err == -ENOENT, "missing file: -ENOENT (%d)", err);
	err = probes_elf_funcs(&A, "/proc/self/status", &syms, &n);
	ok(err == -ENOEXEC, "not an ELF file: -ENOEXEC (%d)", err);
}

static void test_usdt(void)
{
	struct probes_usdt *u;
	struct probes_usdt_arg *args;
	int n, nargs, err, found = 0;
	struct probes_sym *syms;
	int nsyms;

	err = probes_usdt_notes(&A, target, &u, &n);
	ok(!err && n == 3, "three USDT notes (%d)", n);
	probes_elf_funcs(&A, target, &syms, &nsyms);
	for (int i = 0; i < n; i++) {
		const struct probes_sym *in = probes_sym_at(syms, nsyms, u[i].pc);

		if (strcmp(u[i].provider, "ubt_test"))
			continue;
		if (!strcmp(u[i].name, "start")) {
			found++;
			ok(!strcmp(u[i].args, "-4@%edi -8@%rax"),
			   "start args \"%s\"", u[i].args);
			ok(!u[i].semaphore && !u[i].semaphore_offset,
			   "start has no semaphore");
			ok(in && !strcmp(in->name, "ubt_probe_alpha"),
			   "start site inside ubt_probe_alpha");
		} else if (!strcmp(u[i].name, "sem")) {
			found++;
			ok(u[i].semaphore && u[i].semaphore_offset,
			   "sem has a semaphore (0x%llx at offset 0x%llx)",
			   (unsigned long long)u[i].semaphore,
			   (unsigned long long)u[i].semaphore_offset);
			ok(in && !strcmp(in->name, "ubt_probe_beta"),
			   "sem site inside ubt_probe_beta");
		} else if (!strcmp(u[i].name, "done")) {
			found++;
			ok(!strcmp(u[i].args, ""), "done has no arguments");
		}
	}
	ok(found == 3, "notes start, sem, done found");

	err = probes_usdt_parse_args(&A, "-4@%edi 8@-8(%rbp) 1@$5 -2@%ax "
					 "8@foo+16(%rip) 4@(%r12)",
				     &args, &nargs);
	ok(!err && nargs == 6, "parse a 6-argument spec");
	if (!err && nargs == 6) {
		ok(args[0].kind == USDT_ARG_REG && args[0].size == 4 &&
		   args[0].is_signed && args[0].pt_regs_off == 112 &&
		   args[0].reg_size == 4, "-4@%%edi");
		ok(args[1].kind == USDT_ARG_REG_DEREF && args[1].size == 8 &&
		   !args[1].is_signed && args[1].val == -8 &&
		   args[1].pt_regs_off == 32, "8@-8(%%rbp)");
		ok(args[2].kind == USDT_ARG_CONST && args[2].val == 5 &&
		   args[2].size == 1, "1@$5");
		ok(args[3].kind == USDT_ARG_REG && args[3].reg_size == 2 &&
		   args[3].pt_regs_off == 80, "-2@%%ax");
		ok(args[4].kind == USDT_ARG_ADDR && args[4].val == 16 &&
		   args[4].sym && !strcmp(args[4].sym, "foo"),
		   "8@foo+16(%%rip)");
		ok(args[5].kind == USDT_ARG_REG_DEREF && args[5].val == 0 &&
		   args[5].pt_regs_off == 24, "4@(%%r12)");
	}
	/* immediates are signed as written: extended as the note says */
	err = probes_usdt_parse_args(&A, "1@$-56 2@$-5536 4@$-294967296 "
					 "-1@$-5 -2@$-300 -4@$-7 8@$-1",
				     &args, &nargs);
	ok(!err && nargs == 7 && args[0].val == 200 &&
	   args[1].val == 60000 && args[2].val == 4000000000 &&
	   args[3].val == -5 && args[4].val == -300 && args[5].val == -7 &&
	   args[6].val == -1, "narrow constants zero- or sign-extended");
	/* base + index * scale + displacement (gcc's arrays on the stack) */
	err = probes_usdt_parse_args(&A, "8@-88(%rsp,%rax,8) -4@(%rdi,%rsi) "
					 "2@8(%rbp)",
				     &args, &nargs);
	ok(!err && nargs == 3 && args[0].kind == USDT_ARG_REG_DEREF &&
	   args[0].pt_regs_off == 152 && args[0].idx_pt_regs_off == 80 &&
	   args[0].scale == 8 && args[0].val == -88 &&
	   args[1].idx_pt_regs_off == 104 && args[1].scale == 1 &&
	   args[1].is_signed && args[2].idx_pt_regs_off == -1,
	   "8@-88(%%rsp,%%rax,8): base, index, scale");
	err = probes_usdt_parse_args(&A, "4@8(%rdi,%esi,4)", &args, &nargs);
	ok(err == -EINVAL, "a 32-bit index register rejected");
	err = probes_usdt_parse_args(&A, "4@8(%rdi,%rsi,3)", &args, &nargs);
	ok(err == -EINVAL, "a scale other than 1, 2, 4, 8 rejected");
	err = probes_usdt_parse_args(&A, "4@%nosuchreg", &args, &nargs);
	ok(err == -EINVAL, "unknown register rejected");
	ok(probes_x86_reg_offset("r9d", &n) == 64 && n == 4, "r9d offset");
	ok(probes_x86_reg_offset("ah", &n) == 81 && n == 1, "ah offset");
}

static void test_resolve(void)
{
	const char **paths;
	int n, err;
	const char *libc = NULL;

	err = probes_resolve_target(&A, target, 0, &paths, &n);
	ok(!err && n == 1 && !strcmp(paths[0], target), "absolute path kept");
	err = probes_resolve_target(&A, "libc", 0, &paths, &n);
	ok(!err && n == 1 && ends_with(paths[0], "/libc.so.6"),
	   "libc -> %s", err ? "(none)" : paths[0]);
	if (!err)
		libc = paths[0];
	err = probes_resolve_target(&A, "libc.so.6", 0, &paths, &n);
	ok(!err && n == 1 && libc && !strcmp(paths[0], libc),
	   "libc.so.6 -> %s", err ? "(none)" : paths[0]);
	err = probes_resolve_target(&A, "c", 0, &paths, &n);
	ok(!err && n == 1 && libc && !strcmp(paths[0], libc),
	   "c -> %s", err ? "(none)" : paths[0]);
	err = probes_resolve_target(&A, "sh", 0, &paths, &n);
	ok(!err && n == 1 && ends_with(paths[0], "/sh"),
	   "sh found in $PATH: %s", err ? "(none)" : paths[0]);
	err = probes_resolve_target(&A, "libnosuchlibrary", 0, &paths, &n);
	ok(err == -ENOENT, "unknown library: -ENOENT");
	err = probes_resolve_target(&A, "/nonexistent/bin", 0, &paths, &n);
	ok(err == -ENOENT, "missing path: -ENOENT");
	err = probes_resolve_target(&A, "/proc/self/status", 0, &paths, &n);
	ok(err == -ENOENT, "non-ELF path: -ENOENT");
}

static int count_diags(const struct diag_list *d, const char *msg)
{
	int n = 0;

	for (const struct diag *g = d->head; g; g = g->next)
		if (!msg || !strcmp(g->msg, msg))
			n++;
	return n;
}

static void test_expand(void)
{
	struct probes_match *m;
	struct diag_list d;
	struct ast_loc loc = { 1, 1, 1, 10 };
	int n, err;

	diag_init(&d, &A, "stdin", "x");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "ubt_probe_alpha*", 0, 0, 0, false, &m, &n);
	ok(!err && n == 2, "uprobe wildcard: 2 matches (%d)", n);
	if (!err && n == 2) {
		ok(!strcmp(m[0].func, "ubt_probe_alpha") &&
		   !strcmp(m[1].func, "ubt_probe_alpha2") &&
		   m[0].index == 0 && m[1].index == 1, "sorted, indexed");
		ok(!strcmp(m[0].name,
			   arena_printf(&A, "uprobe:%s:ubt_probe_alpha",
					target)), "probe name %s", m[0].name);
		ok(m[0].offset && m[0].size, "offset and size set");
	}
	err = probes_expand_ap(&A, &d, &loc, "uretprobe", target, NULL,
			       "ubt_probe_?eta", 0, 0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].provider, "uretprobe") &&
	   !strcmp(m[0].func, "ubt_probe_beta"), "uretprobe with '?'");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "ubt_probe_local", 0, 4, 0, false, &m, &n);
	ok(!err && n == 1 && m[0].func_offset == 4 &&
	   ends_with(m[0].name, ":ubt_probe_local+4"), "func+offset");
	{
		struct probes_sym *syms;
		const struct probes_sym *s;
		int nsyms;

		probes_elf_funcs(&A, target, &syms, &nsyms);
		s = probes_sym_find(syms, nsyms, "ubt_probe_alpha2");
		err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
				       NULL, s ? s->addr + 1 : 1, 0, 0, false,
				       &m, &n);
		ok(s && !err && n == 1 && m[0].func &&
		   !strcmp(m[0].func, "ubt_probe_alpha2") &&
		   m[0].func_offset == 1 && m[0].offset == s->offset + 1 &&
		   ends_with(m[0].name, arena_printf(&A, ":0x%llx",
			     (unsigned long long)s->addr + 1)),
		   "uprobe at an address: %s", n ? m[0].name : "-");
	}
	ok(count_diags(&d, NULL) == 0, "no diagnostics so far");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "ubt_cpp", 0, 0, 0, false, &m, &n);
	ok(!err && n == 2 && !strcmp(m[0].func, "_Z7ubt_cppi") &&
	   !strcmp(m[1].func, "_Z7ubt_cppv") &&
	   ends_with(m[0].name, ":_Z7ubt_cppi"),
	   "C++: a demangled name without parameters: both overloads");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "ubt_cpp()", 0, 0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].func, "_Z7ubt_cppv"),
	   "C++: with parameters: one overload");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "ubt::*", 0, 0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].func, "_ZN3ubt5probeEl"),
	   "C++: a namespace wildcard");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "_Z7*", 0, 0, 0, false, &m, &n);
	ok(!err && n == 2, "C++: mangled names match too");
	ok(count_diags(&d, NULL) == 0, "still no diagnostics");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL, NULL,
			       0x10, 0, 0, false, &m, &n);
	ok(err && count_diags(&d, arena_printf(&A,
			"Could not resolve address: %s:0x10", target)) == 1,
	   "address outside any function");

	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "nosuchfunc", 0, 0, 0, false, &m, &n);
	ok(err == -ENOENT && count_diags(&d, arena_printf(&A,
			"Could not resolve symbol: %s:nosuchfunc", target)) == 1,
	   "unknown function: Could not resolve symbol");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", target, NULL,
			       "nosuch*", 0, 0, 0, false, &m, &n);
	ok(err == -ENOENT && count_diags(&d, arena_printf(&A,
			"uprobes not found: %s:nosuch*", target)) == 1,
	   "wildcard matching nothing is an error");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", "/nonexistent/x",
			       NULL, "f", 0, 0, 0, false, &m, &n);
	ok(err && count_diags(&d, "uprobe target file '/nonexistent/x' does "
				  "not exist or is not executable") == 1,
	   "missing target file");
	err = probes_expand_ap(&A, &d, &loc, "uprobe", "/nonexistent/x",
			       NULL, "f", 0, 0, 0, true, &m, &n);
	ok(!err && n == 0 && d.nwarnings == 1,
	   "missing target with other attach points: a warning");

	err = probes_expand_ap(&A, &d, &loc, "usdt", target, NULL, "s*", 0,
			       0, 0, false, &m, &n);
	ok(!err && n == 2 && !strcmp(m[0].func, "sem") &&
	   !strcmp(m[1].func, "start") && m[0].semaphore_offset &&
	   !m[1].semaphore_offset && !strcmp(m[1].usdt_args,
					     "-4@%edi -8@%rax"),
	   "usdt wildcard name");
	err = probes_expand_ap(&A, &d, &loc, "usdt", target, "ubt_test",
			       "done", 0, 0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].name,
				     arena_printf(&A, "usdt:%s:ubt_test:done",
						  target)),
	   "usdt provider:name");
	err = probes_expand_ap(&A, &d, &loc, "usdt", target, "ubt_test",
			       "nosuch", 0, 0, 0, false, &m, &n);
	ok(err == -ENOENT, "usdt name not found");

	err = probes_expand_ap(&A, &d, &loc, "tracepoint", "sched",
			       NULL, "sched_switch", 0, 0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].name,
				     "tracepoint:sched:sched_switch"),
	   "tracepoint, exact");
	err = probes_expand_ap(&A, &d, &loc, "tracepoint", "syscalls",
			       NULL, "sys_enter_open*", 0, 0, 0, false, &m, &n);
	ok(!err && n >= 3 && !strcmp(m[0].func, "sys_enter_open") &&
	   !strcmp(m[1].func, "sys_enter_open_by_handle_at"),
	   "tracepoint wildcard: %d matches, first %s", n,
	   n ? m[0].func : "-");
	err = probes_expand_ap(&A, &d, &loc, "tracepoint", "sched",
			       NULL, "nosuch*", 0, 0, 0, false, &m, &n);
	ok(err == -ENOENT &&
	   count_diags(&d, "tracepoints not found: sched:nosuch*") == 1,
	   "tracepoints not found");
	err = probes_expand_ap(&A, &d, &loc, "tracepoint", "syscall",
			       NULL, "sys_enter_openat", 0, 0, 0, false, &m, &n);
	ok(err == -ENOENT &&
	   count_diags(&d, "tracepoint not found: syscall:sys_enter_openat") == 1 &&
	   count_diags(&d, "Did you mean syscalls:sys_enter_openat?") == 1,
	   "tracepoint not found, with the syscalls hint");

	err = probes_expand_ap(&A, &d, &loc, "BEGIN", NULL, NULL, NULL, 0,
			       0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].name, "BEGIN"), "BEGIN");
	err = probes_expand_ap(&A, &d, &loc, "interval", "s", NULL, "1", 0,
			       0, 0, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].name, "interval:s:1"),
	   "interval:s:1");
}

/* probes_expand() on hand-made attach points, as ap_parse() fills them. */
static void test_expand_ast(void)
{
	struct compile c = { 0 };
	struct ast_node probe = { .kind = AST_PROBE };
	struct ast_node ap = { .kind = AST_ATTACH_POINT };
	struct ast_node ap2 = { .kind = AST_ATTACH_POINT };
	struct probes_match *m;
	int n, err;

	arena_init(&c.arena);
	diag_init(&c.diag, &c.arena, "stdin", "x");
	probe.probe.aps = &ap;
	ap.loc = (struct ast_loc){ 1, 1, 1, 2 };
	ap.ap.provider = "interval";
	ap.ap.unit = "ms";
	ap.ap.freq = 100;
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].name, "interval:ms:100"),
	   "interval name %s", n ? m[0].name : "-");
	memset(&ap.ap, 0, sizeof(ap.ap));
	ap.ap.provider = "software";
	ap.ap.target = "cpu-clock";
	ap.ap.freq = 1000;
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].name, "software:cpu-clock:1000"),
	   "software name %s", n ? m[0].name : "-");
	memset(&ap.ap, 0, sizeof(ap.ap));
	ap.ap.provider = "u";
	ap.ap.target = target;
	ap.ap.func = "ubt_probe_beta";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].provider, "uprobe") &&
	   !strcmp(m[0].func, "ubt_probe_beta"), "alias u: uprobe");
	memset(&ap.ap, 0, sizeof(ap.ap));
	ap.ap.provider = "uprobe";
	ap.ap.func = "ubt_probe_beta";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(err && count_diags(&c.diag, "uprobe probe needs a target binary "
				       "or -p PID") == 1,
	   "uprobe:func without -p");
	c.pid = getpid();
	memset(&ap.ap, 0, sizeof(ap.ap));
	ap.ap.provider = "uprobe";
	ap.ap.func = "main";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(!err && n == 1 && m[0].pid == c.pid &&
	   strstr(m[0].target, "/unit-probes"),
	   "uprobe:main with -p: the process's executable (%s)",
	   n ? m[0].target : "-");
	c.pid = 0;
	memset(&ap.ap, 0, sizeof(ap.ap));
	ap.ap.provider = "uprobe";
	ap.ap.target = target;
	ap.ap.lang = "cpp";
	ap.ap.func = "ns::f";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(err == -ENOENT && count_diags(&c.diag, arena_printf(&A,
			"Could not resolve symbol: %s:ns::f", target)) == 1,
	   "uprobe:bin:cpp:ns::f: no such C++ function");
	ap.ap.func = "ubt_cpp";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(!err && n == 2 && !strcmp(m[0].func, "_Z7ubt_cppi") &&
	   !strcmp(m[1].func, "_Z7ubt_cppv"),
	   "uprobe:bin:cpp:ubt_cpp: both overloads");
	ap.ap.lang = "rust";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(err == -ENOTSUP &&
	   count_diags(&c.diag, "unsupported language: rust") == 1,
	   "other languages refused");
	/* two attach points: a missing tracepoint is only a warning */
	ap.next = &ap2;
	memset(&ap.ap, 0, sizeof(ap.ap));
	ap.ap.provider = "tracepoint";
	ap.ap.target = "sched";
	ap.ap.func = "no_such_event";
	err = probes_expand(&c, &probe, &ap, &m, &n);
	ok(!err && n == 0 && c.diag.nwarnings == 1 &&
	   count_diags(&c.diag, "tracepoint not found: sched:no_such_event"),
	   "missing tracepoint among several attach points: a warning");
	arena_release(&c.arena);
}

/* A uprobe on an IFUNC (strlen) goes to the implementation, not the
 * resolver that only runs at relocation. */
static void test_ifunc(void)
{
	const char **paths;
	struct probes_sym *syms;
	const struct probes_sym *s, *impl;
	struct probes_match *m;
	int n, nsyms, err;

	if (probes_resolve_target(&A, "libc", 0, &paths, &n) ||
	    probes_elf_funcs(&A, paths[0], &syms, &nsyms)) {
		ok(0, "libc symbols");
		return;
	}
	s = probes_sym_find(syms, nsyms, "strlen");
	ok(s && s->type == STT_GNU_IFUNC, "strlen is an IFUNC in libc");
	err = probes_expand_ap(&A, NULL, NULL, "uprobe", paths[0], NULL,
			       "strlen", 0, 0, 0, false, &m, &n);
	ok(!err && n == 1 && s && m[0].addr != s->addr &&
	   !strcmp(m[0].func, "strlen"),
	   "uprobe:libc:strlen at 0x%llx, not the resolver at 0x%llx",
	   n ? (unsigned long long)m[0].addr : 0ull,
	   s ? (unsigned long long)s->addr : 0ull);
	/* libc's strlen in this process, relative to libc's base (not
	 * RTLD_DEFAULT: a sanitizer build interposes strlen) */
	void *h = dlopen(paths[0], RTLD_LAZY | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "strlen") : NULL;
	Dl_info info;

	ok(n == 1 && fn && dladdr(fn, &info) &&
	   strstr(info.dli_fname, "libc") &&
	   m[0].addr == (uintptr_t)fn - (uintptr_t)info.dli_fbase,
	   "the implementation libc gives this process");
	if (h)
		dlclose(h);
	impl = n ? probes_sym_at(syms, nsyms, m[0].addr) : NULL;
	if (impl)	/* named only with libc's debug symbols installed */
		printf("# implementation: %s\n", impl->name);
}

static void test_pid(void)
{
	pid_t child = fork();
	const char **paths;
	struct probes_match *m;
	int n, err;

	if (child == 0) {
		execl(target, target, "30", (char *)NULL);
		_exit(127);
	}
	usleep(200 * 1000);
	err = probes_resolve_target(&A, "libc", child, &paths, &n);
	ok(!err && n == 1 && ends_with(paths[0], "/libc.so.6"),
	   "-p: libc from the process's maps: %s", err ? "-" : paths[0]);
	err = probes_expand_ap(&A, NULL, NULL, "uprobe", "*", NULL,
			       "ubt_probe_alpha", 0, 0, child, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].target, target) &&
	   m[0].pid == child, "-p: uprobe:*:ubt_probe_alpha");
	err = probes_expand_ap(&A, NULL, NULL, "usdt", NULL, NULL, "start",
			       0, 0, child, false, &m, &n);
	ok(!err && n == 1 && !strcmp(m[0].target, target),
	   "-p: usdt without a target");
	/* the child's ubt_probe_alpha at run time, resolved after it exits */
	struct probes_symcache *sc = probes_symcache_new();
	struct probes_sym *syms;
	const struct probes_sym *s;
	uint64_t runtime = 0, off = 99;
	const char *name;
	char path[64], line[4200];
	FILE *f;

	probes_elf_funcs(&A, target, &syms, &n);
	s = probes_sym_find(syms, n, "ubt_probe_alpha");
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	f = fopen(path, "r");
	while (s && f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx", &start, &end, perms,
			   &pgoff) == 4 && perms[2] == 'x' &&
		    strstr(line, target) && s->offset >= pgoff &&
		    s->offset < pgoff + (end - start))
			runtime = start + (s->offset - pgoff);
	}
	if (f)
		fclose(f);
	ok(runtime && probes_symcache_note(sc, child) == 0,
	   "snapshot of the child's mappings");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	name = probes_symcache_resolve(sc, child, runtime + 1, &off);
	ok(name && !strcmp(name, "ubt_probe_alpha") && off == 1,
	   "address in the exited child resolves: %s+%llu",
	   name ? name : "-", (unsigned long long)off);
	name = probes_symcache_resolve(sc, getpid(),
				       (uint64_t)(uintptr_t)&test_symbols,
				       &off);
	ok(name && !strcmp(name, "test_symbols") && off == 0,
	   "own static function: %s", name ? name : "-");
	name = probes_symcache_resolve(sc, getpid(),
				       (uint64_t)(uintptr_t)&malloc, &off);
	ok(name && !strcmp(name, "malloc") && off == 0,
	   "alias preference: %s", name ? name : "-");
	name = probes_symcache_resolve(sc, getpid(),
				       (uint64_t)(uintptr_t)&getpid, &off);
	ok(name && !strcmp(name, "getpid") && off == 0,
	   "alias preference: %s, not __getpid", name ? name : "-");
	name = probes_symcache_resolve(sc, 0x7ffffff0, 0x1000, &off);
	ok(!name, "unknown process: NULL");
	probes_symcache_free(sc);
}

static void test_format_parse(void)
{
	static const char text[] =
		"name: demo\n"
		"ID: 42\n"
		"format:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\n"
		"\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n"
		"\tfield:const char __user * buf;\toffset:24;\tsize:8;\tsigned:0;\n"
		"\tfield:char comm[16];\toffset:32;\tsize:16;\tsigned:0;\n"
		"\tfield:__u8 mac[6];\toffset:48;\tsize:6;\tsigned:0;\n"
		"\tfield:__data_loc char[] name;\toffset:56;\tsize:4;\tsigned:0;\n"
		"\tfield:some_unknown_t weird;\toffset:60;\tsize:2;\tsigned:1;\n"
		"\tfield:bool flag;\toffset:62;\tsize:1;\tsigned:0;\n"
		"\n"
		"print fmt: \"fd: %d\", REC->fd\n";
	struct tp_format f;
	struct type *rec;
	int dl = -1;

	ok(!tp_format_parse(&A, "syscalls", "demo", text, &f) &&
	   f.nfields == 10 && f.id == 42, "synthetic format: 10 fields");
	rec = tp_args_type(&A, &f);
	ok(rec->kind == TY_RECORD && rec->nfields == 8 && rec->is_ctx &&
	   !strcmp(rec->name, "struct _tracepoint_syscalls_demo"),
	   "record without common_* fields: %s", rec->name);
	ok(!strcmp(fdesc(rec, "__syscall_nr"), "int32 @ 8"), "__syscall_nr");
	ok(!strcmp(fdesc(rec, "fd"), "uint64 @ 16"),
	   "unsigned int of size 8 -> %s", fdesc(rec, "fd"));
	ok(!strcmp(fdesc(rec, "buf"), "int8 * @ 24") &&
	   field(rec, "buf")->type->addrspace == AS_USER,
	   "const char __user * -> user %s", fdesc(rec, "buf"));
	ok(!strcmp(fdesc(rec, "comm"), "string[16] @ 32"), "char[16] -> %s",
	   fdesc(rec, "comm"));
	ok(!strcmp(fdesc(rec, "mac"), "uint8[6] @ 48"), "__u8[6] -> %s",
	   fdesc(rec, "mac"));
	ok(!strcmp(fdesc(rec, "name"), "int64 @ 56"), "__data_loc -> %s",
	   fdesc(rec, "name"));
	for (int i = 0; i < rec->nfields; i++)
		if (tp_field_is_data_loc(rec, i))
			dl = i;
	ok(dl >= 0 && !strcmp(rec->fields[dl].name, "name"),
	   "data_loc field flagged");
	ok(!strcmp(fdesc(rec, "weird"), "int16 @ 60"),
	   "unknown typedef: size and sign from the file (%s)",
	   fdesc(rec, "weird"));
	ok(!strcmp(fdesc(rec, "flag"), "uint8 @ 62"), "bool -> %s",
	   fdesc(rec, "flag"));
	ok(rec->size == 63, "record size %zu", rec->size);
}

/*
 * Real tracepoints of this kernel, typed as bpftrace 0.17 types them (its
 * "Type mismatch for $x" messages show these types).
 */
static void test_real_tracepoints(void)
{
	struct type *rec;
	struct tp_format f;
	int err;

	ok(tp_tracefs() != NULL, "tracefs at %s", tp_tracefs());
	err = tp_args(&A, "syscalls", "sys_enter_openat", &rec);
	ok(!err && rec->nfields == 5, "syscalls:sys_enter_openat: 5 fields");
	if (!err) {
		ok(!strcmp(fdesc(rec, "__syscall_nr"), "int32 @ 8"),
		   "__syscall_nr %s", fdesc(rec, "__syscall_nr"));
		ok(!strcmp(fdesc(rec, "dfd"), "int64 @ 16"), "dfd %s",
		   fdesc(rec, "dfd"));
		ok(!strcmp(fdesc(rec, "filename"), "int8 * @ 24"),
		   "filename %s", fdesc(rec, "filename"));
		ok(!strcmp(fdesc(rec, "flags"), "int64 @ 32"), "flags %s",
		   fdesc(rec, "flags"));
		ok(!strcmp(fdesc(rec, "mode"), "uint16 @ 40"), "mode %s",
		   fdesc(rec, "mode"));
		ok(!field(rec, "common_pid"), "no common_pid");
	}
	err = tp_args(&A, "sched", "sched_switch", &rec);
	ok(!err && rec->nfields == 7, "sched:sched_switch: 7 fields");
	if (!err) {
		ok(!strcmp(fdesc(rec, "prev_comm"), "string[16] @ 8"),
		   "prev_comm %s", fdesc(rec, "prev_comm"));
		ok(!strcmp(fdesc(rec, "prev_pid"), "int32 @ 24"),
		   "prev_pid %s", fdesc(rec, "prev_pid"));
		ok(!strcmp(fdesc(rec, "prev_prio"), "int32 @ 28"),
		   "prev_prio %s", fdesc(rec, "prev_prio"));
		ok(!strcmp(fdesc(rec, "prev_state"), "int64 @ 32"),
		   "prev_state %s", fdesc(rec, "prev_state"));
		ok(!strcmp(fdesc(rec, "next_comm"), "string[16] @ 40"),
		   "next_comm %s", fdesc(rec, "next_comm"));
		ok(!strcmp(fdesc(rec, "next_pid"), "int32 @ 56"),
		   "next_pid %s", fdesc(rec, "next_pid"));
	}
	err = tp_args(&A, "syscalls", "sys_enter_read", &rec);
	ok(!err && !strcmp(fdesc(rec, "fd"), "uint64 @ 16") &&
	   !strcmp(fdesc(rec, "buf"), "int8 * @ 24") &&
	   !strcmp(fdesc(rec, "count"), "uint64 @ 32"),
	   "sys_enter_read: fd %s, buf %s, count %s", fdesc(rec, "fd"),
	   fdesc(rec, "buf"), fdesc(rec, "count"));
	err = tp_args(&A, "syscalls", "sys_exit_read", &rec);
	ok(!err && !strcmp(fdesc(rec, "ret"), "int64 @ 16"),
	   "sys_exit_read: ret %s", fdesc(rec, "ret"));
	err = tp_args(&A, "sched", "sched_process_exec", &rec);
	ok(!err && !strcmp(fdesc(rec, "filename"), "int64 @ 8") &&
	   tp_field_is_data_loc(rec, 0) &&
	   !strcmp(fdesc(rec, "pid"), "int32 @ 12"),
	   "sched_process_exec: __data_loc filename, pid %s",
	   fdesc(rec, "pid"));
	err = tp_args(&A, "syscalls", "sys_enter_clock_gettime", &rec);
	ok(!err && !strcmp(fdesc(rec, "which_clock"), "int32 @ 16") &&
	   !strcmp(fdesc(rec, "tp"), "struct __kernel_timespec * @ 24"),
	   "clock_gettime: which_clock %s, tp %s",
	   fdesc(rec, "which_clock"), fdesc(rec, "tp"));
	/* typedefs through kernel BTF */
	err = tp_args(&A, "syscalls", "sys_enter_rt_sigpending", &rec);
	ok(!err && !strcmp(fdesc(rec, "uset"), "sigset_t * @ 16"),
	   "typedef of an anonymous struct: %s", fdesc(rec, "uset"));
	err = tp_args(&A, "syscalls", "sys_enter_pselect6", &rec);
	ok(!err && !strcmp(fdesc(rec, "inp"), "__kernel_fd_set * @ 24"),
	   "typedef of a typedef: %s", fdesc(rec, "inp"));
	err = tp_args(&A, "filelock", "break_lease_block", &rec);
	ok(!err && field(rec, "owner") &&
	   !strcmp(type_str(&A, field(rec, "owner")->type), "void *"),
	   "typedef of void *: %s", fdesc(rec, "owner"));
	err = tp_format_read(&A, "syscalls", "sys_enter_openat", &f);
	ok(!err && f.nfields == 9 && f.fields[0].common &&
	   !strcmp(f.fields[6].decl, "const char * filename"),
	   "format fields as written (-lv)");
	err = tp_format_read(&A, "sched", "no_such_event", &f);
	ok(err == -ENOENT, "missing tracepoint: -ENOENT (%d)", err);
	err = tp_format_read(&A, "..", "sched", &f);
	ok(err == -ENOENT, "path tricks refused");
}

int main(void)
{
	const char *b = getenv("top_builddir");

	snprintf(target, sizeof(target), "%s/tests/probes/probes-target",
		 b ? b : ".");
	if (access(target, X_OK)) {
		printf("Bail out! %s not built\n", target);
		return 99;
	}
	{
		/* an absolute path, as the probes name it */
		char *r = realpath(target, NULL);

		if (r) {
			snprintf(target, sizeof(target), "%s", r);
			free(r);
		}
	}
	arena_init(&A);
	test_symbols();
	test_usdt();
	test_resolve();
	test_expand();
	test_expand_ast();
	test_ifunc();
	test_pid();
	test_format_parse();
	test_real_tracepoints();
	arena_release(&A);
	return tap_done();
}
