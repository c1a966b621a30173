/*
 * User-mode layers end to end: attach (-c and -p), runtime placement,
 * patching, trampolines (entry and return probes), per-thread blocks, exact
 * counts with threads created before and after attach, refused sites,
 * detach restoring every byte, SIGKILL of the tracer, errors, and the cost
 * per hit of a count blob.  Probe code is small hand-written native blobs.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <poll.h>
#include <stddef.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "patch.h"
#include "proc.h"
#include "ptrace.h"
#include "user.h"
#include "tests/tap.h"

static char target[4096];

/* ---- blobs: preserve_most-compatible (only %r11 and flags clobbered) --- */

struct blob {
	uint8_t b[96];
	size_t n;
};

static void blob_prefix(struct blob *b, int64_t tls)
{
	int32_t t = (int32_t)tls;
	static const uint8_t mov[] = { 0x64, 0x4c, 0x8b, 0x1c, 0x25 };

	memcpy(b->b, mov, 5);		/* mov %fs:tls,%r11 */
	memcpy(b->b + 5, &t, 4);
	b->n = 9;
}

static void blob_op(struct blob *b, uint8_t op, uint8_t modrm, uint32_t off)
{
	uint32_t d = RT_BLK_MAP + off;

	b->b[b->n++] = 0x49;
	b->b[b->n++] = op;
	b->b[b->n++] = modrm;
	memcpy(b->b + b->n, &d, 4);
	b->n += 4;
	b->b[b->n++] = 0xc3;		/* ret */
}

/* incq off(block) */
static struct blob blob_count(int64_t tls, uint32_t off)
{
	struct blob b;

	blob_prefix(&b, tls);
	blob_op(&b, 0xff, 0x83, off);
	return b;
}

/* add %rdi,off(block): arg0 at entry, the return value at return */
static struct blob blob_sum_rdi(int64_t tls, uint32_t off)
{
	struct blob b;

	blob_prefix(&b, tls);
	blob_op(&b, 0x01, 0xbb, off);
	return b;
}

/*
 * Entry probe writing an event {arg0, arg1} (type 7) through the runtime's
 * rt_ring_write, found in ctl.fn[] from the thread block: saves the
 * registers the SysV call may clobber that preserve_most code must keep.
 */
static struct blob blob_event(int64_t tls)
{
	static const uint8_t pre[] = {
		0x57, 0x56, 0x52, 0x51, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52,
		0x48, 0x83, 0xec, 0x10,		/* sub $16,%rsp */
		0x48, 0x89, 0x3c, 0x24,		/* mov %rdi,(%rsp) */
		0x48, 0x89, 0x74, 0x24, 0x08,	/* mov %rsi,8(%rsp) */
		0x64, 0x4c, 0x8b, 0x1c, 0x25,	/* mov %fs:tls,%r11 */
	};
	static const uint8_t mid[] = {
		0x4d, 0x8b, 0x5b, RT_BLK_CTL,	/* mov ctl(%r11),%r11 */
		0x48, 0x89, 0xe7,		/* mov %rsp,%rdi */
		0xbe, 0x10, 0x00, 0x00, 0x00,	/* mov $16,%esi */
		0xba, 0x07, 0x00, 0x00, 0x00,	/* mov $7,%edx */
		0x41, 0xff, 0x93,		/* call *fn(%r11) */
	};
	static const uint8_t post[] = {
		0x48, 0x83, 0xc4, 0x10,		/* add $16,%rsp */
		0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x59, 0x5a, 0x5e, 0x5f,
		0xc3,
	};
	uint32_t fn = offsetof(struct rt_ctl, fn) + 8 * RT_FN_RING_WRITE;
	int32_t t = (int32_t)tls;
	struct blob b = { .n = 0 };

	memcpy(b.b + b.n, pre, sizeof(pre));
	b.n += sizeof(pre);
	memcpy(b.b + b.n, &t, 4);
	b.n += 4;
	memcpy(b.b + b.n, mid, sizeof(mid));
	b.n += sizeof(mid);
	memcpy(b.b + b.n, &fn, 4);
	b.n += 4;
	memcpy(b.b + b.n, post, sizeof(post));
	b.n += sizeof(post);
	return b;
}

/* ---- the target process ---- */

static void go(int fd)
{
	if (write(fd, "g", 1) != 1)
		diag("write to the target failed");
}

static int proc_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Exit code of our child pid.  When it exited while ubt was attached to it
 * (as a -c child can), ptrace reaped it: ask ubt for the status.
 */
static int exit_code(struct ubt_user *u, pid_t pid)
{
	int st = proc_wait(pid), ws;

	if (st == -1 && u && user_exit_status(u, &ws))
		st = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	return st;
}

/* Wait until pid's main thread is blocked in read(): inside ut_sys. */
static void wait_blocked(pid_t pid)
{
	char path[64], buf[64];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		bool in_read = false;

		if (f) {
			in_read = fgets(buf, sizeof(buf), f) &&
				  !strncmp(buf, "0 ", 2);
			fclose(f);
		}
		if (in_read)
			return;
		usleep(1000);
	}
}

/* Sum line of a round: both numbers must match. */
static int round_ok(const char *line)
{
	long a, b;

	return sscanf(line, "sum %ld expected %ld", &a, &b) == 2 && a == b;
}

/* ---- function bytes in the target, for the detach comparison ---- */

static const char *const funcs[] = {
	"ut_plain", "ut_endbr", "ut_riprel", "ut_jcc", "ut_short",
	"ut_loop", "ut_jrcxz", "ut_ret", "ut_lj", "ut_sys", "ut_flags",
	"ut_redzone", "ut_r11",
};

static int read_funcs(pid_t pid, uint8_t *out, size_t cap, size_t *len)
{
	uint64_t min_vaddr, base = 0, vaddr, size, off;
	char path[4096], mem[64];
	struct pt_map *m;
	int n, i, is_dyn, fd;
	size_t k, used = 0;

	if (!realpath(target, path) || pt_maps(pid, &m, &n))
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(m[i].path, path) && !m[i].off) {
			base = m[i].start;
			break;
		}
	free(m);
	if (!base || patch_elf_base(path, &min_vaddr, &is_dyn))
		return -1;
	if (is_dyn)
		base -= min_vaddr;
	else
		base = 0;
	snprintf(mem, sizeof(mem), "/proc/%d/mem", pid);
	fd = open(mem, O_RDONLY);
	if (fd < 0)
		return -1;
	for (k = 0; k < sizeof(funcs) / sizeof(funcs[0]); k++) {
		if (patch_find_symbol(path, funcs[k], &vaddr, &size, &off) ||
		    used + size > cap ||
		    pread(fd, out + used, size, (off_t)(base + vaddr)) !=
			    (ssize_t)size) {
			close(fd);
			return -1;
		}
		used += size;
	}
	close(fd);
	*len = used;
	return 0;
}

/* The SigCgt mask of pid: which signals it handles. */
static unsigned long long sigcgt(pid_t pid)
{
	char path[64], line[256];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %llx", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* ---- probes ---- */

/*
 * The counters, in the block's map area; RT_MAP_PID (24) is the
 * runtime's (the process's pid, written when a block is taken by another
 * process than the template's, which has none here): skipped.
 */
enum {
	OFF_PLAIN = 0,		/* count ut_plain */
	OFF_RIPREL_ARG = 8,	/* sum arg0 of ut_riprel */
	OFF_ENDBR = 16,		/* count ut_endbr */
	OFF_JCC = 96,		/* count ut_jcc */
	OFF_RET_SUM = 32,	/* sum retval of ut_ret */
	OFF_RET_ENTRY = 40,	/* count ut_ret entries */
	OFF_LJ_ENTRY = 48,	/* count ut_lj entries */
	OFF_LJ_RET = 56,	/* count ut_lj returns */
	OFF_LIBC = 64,		/* count atoi in libc */
	OFF_FLAGS = 72,		/* count ut_flags+4 */
	OFF_REDZONE = 80,	/* count ut_redzone+5 */
	OFF_R11 = 88,		/* count ut_r11+3 */
};

static int install_in(struct ubt_user *u, const char *bin, const char *sym,
		      enum user_probe_kind kind, struct blob b)
{
	struct user_probe p = {
		.sz = sizeof(p),
		.binary = bin,
		.symbol = sym,
		.kind = kind,
		.code = b.b,
		.code_len = b.n,
	};
	int err = user_install(u, &p);

	if (err)
		diag("install %s: %s", sym, user_error(u));
	return err;
}

static int install(struct ubt_user *u, const char *sym,
		   enum user_probe_kind kind, struct blob b)
{
	return install_in(u, target, sym, kind, b);
}

/* An entry probe at sym+off (inside the function). */
static int install_at(struct ubt_user *u, const char *sym, uint64_t off,
		      struct blob b)
{
	struct user_probe p = {
		.sz = sizeof(p),
		.binary = target,
		.symbol = sym,
		.kind = USER_PROBE_ENTRY,
		.code = b.b,
		.code_len = b.n,
		.offset = off,
	};
	int err = user_install(u, &p);

	if (err)
		diag("install %s+%llu: %s", sym, (unsigned long long)off,
		     user_error(u));
	return err;
}

static int install_all(struct ubt_user *u)
{
	int64_t t = user_tls_offset(u);
	int err = 0;

	err = err ?: install(u, "ut_plain", USER_PROBE_ENTRY,
			     blob_count(t, OFF_PLAIN));
	err = err ?: install(u, "ut_riprel", USER_PROBE_ENTRY,
			     blob_sum_rdi(t, OFF_RIPREL_ARG));
	err = err ?: install(u, "ut_endbr", USER_PROBE_ENTRY,
			     blob_count(t, OFF_ENDBR));
	err = err ?: install(u, "ut_jcc", USER_PROBE_ENTRY,
			     blob_count(t, OFF_JCC));
	err = err ?: install(u, "ut_ret", USER_PROBE_RETURN,
			     blob_sum_rdi(t, OFF_RET_SUM));
	err = err ?: install(u, "ut_ret", USER_PROBE_ENTRY,
			     blob_count(t, OFF_RET_ENTRY));
	err = err ?: install(u, "ut_lj", USER_PROBE_ENTRY,
			     blob_count(t, OFF_LJ_ENTRY));
	err = err ?: install(u, "ut_lj", USER_PROBE_RETURN,
			     blob_count(t, OFF_LJ_RET));
	err = err ?: install_in(u, "/lib/x86_64-linux-gnu/libc.so.6",
				"atoi", USER_PROBE_ENTRY,
				blob_count(t, OFF_LIBC));
	err = err ?: install_at(u, "ut_flags", 4, blob_count(t, OFF_FLAGS));
	err = err ?: install_at(u, "ut_redzone", 5,
				blob_count(t, OFF_REDZONE));
	err = err ?: install_at(u, "ut_r11", 3, blob_count(t, OFF_R11));
	return err;
}

static uint64_t get(struct ubt_user *u, uint64_t off)
{
	uint64_t v = 0;

	if (memfd_sum_u64(user_memfd(u), off, &v))
		return UINT64_MAX;
	return v;
}

/* Check every counter for `calls` calls of each function with i < iters. */
static void check_counts(struct ubt_user *u, const char *what, long calls,
			 long iters)
{
	long tri = iters * (iters - 1) / 2, rounds = calls / iters;

	ok(get(u, OFF_PLAIN) == (uint64_t)calls,
	   "%s: count at ut_plain (%llu, expected %ld)", what,
	   (unsigned long long)get(u, OFF_PLAIN), calls);
	ok(get(u, OFF_ENDBR) == (uint64_t)calls,
	   "%s: count at ut_endbr after endbr64", what);
	ok(get(u, OFF_RIPREL_ARG) == (uint64_t)(rounds * tri),
	   "%s: sum(arg0) at ut_riprel (RIP-relative first instruction)",
	   what);
	ok(get(u, OFF_JCC) == (uint64_t)calls,
	   "%s: count at ut_jcc (short jcc relocated: %llu, expected %ld)",
	   what, (unsigned long long)get(u, OFF_JCC), calls);
	ok(get(u, OFF_RET_ENTRY) == (uint64_t)calls &&
		   get(u, OFF_RET_SUM) == (uint64_t)(rounds * 3 * tri),
	   "%s: entry count and sum(retval) at ut_ret", what);
	ok(get(u, OFF_LJ_ENTRY) == (uint64_t)calls &&
		   get(u, OFF_LJ_RET) == (uint64_t)(rounds * ((iters + 1) / 2)),
	   "%s: return probe across longjmp (entries %llu, returns %llu)",
	   what, (unsigned long long)get(u, OFF_LJ_ENTRY),
	   (unsigned long long)get(u, OFF_LJ_RET));
	ok(get(u, OFF_LIBC) == (uint64_t)calls,
	   "%s: count at atoi in libc (a second code area)", what);
	ok(get(u, OFF_FLAGS) == (uint64_t)calls &&
		   get(u, OFF_REDZONE) == (uint64_t)calls &&
		   get(u, OFF_R11) == (uint64_t)calls,
	   "%s: probes inside functions (flags, red zone, %%r11 live)", what);
	ok(memfd_shadow_lost(user_memfd(u)) == 0,
	   "%s: no return probe lost", what);
}

static int add_u64(const void *data, uint32_t block, void *arg)
{
	uint64_t v;

	memcpy(&v, data, 8);
	*(uint64_t *)arg += v;
	return 0;
}

/* ---- the tests ---- */

/*
 * A probe inside a function keeps the flags unless the code after it sets
 * all six status flags before reading one (the trampoline then drops its
 * pushfq/popfq): at +1, a nop kept in place, then the window.
 */
static void test_flags_dead(void)
{
	static const struct {
		const char *what;
		uint8_t code[12];
		size_t len;
		bool dead;
	} t[] = {
		{ "add sets them all",
		  { 0x90, 0x90, 0x48, 0x01, 0xf8, 0x48, 0x01, 0xf8, 0xc3 },
		  9, true },
		{ "sete reads ZF",
		  { 0x90, 0x90, 0x0f, 0x94, 0xc0, 0x48, 0x01, 0xf8, 0xc3 },
		  9, false },
		{ "inc leaves CF, jc reads it",
		  { 0x90, 0x90, 0x48, 0xff, 0xc0, 0x48, 0xff, 0xc0, 0x72,
		    0x00, 0xc3 },
		  11, false },
		{ "mov, then xor sets them",
		  { 0x90, 0x90, 0x48, 0x89, 0xf8, 0x31, 0xc0, 0x31, 0xc0,
		    0xc3 },
		  10, true },
		{ "a jump before any is set",
		  { 0x90, 0x90, 0xeb, 0x06, 0x48, 0x01, 0xf8, 0x48, 0x01,
		    0xf8, 0xc3 },
		  11, false },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct patch_site s;
		int err = patch_analyze(t[i].code, t[i].len, 0x1000, 1, &s);

		ok(!err && s.mid && s.flags_dead == t[i].dead,
		   "flags %s after the site: %s (%s)",
		   t[i].dead ? "dead" : "live", t[i].what,
		   err ? s.reason : "patchable");
	}
}

/*
 * A function too short for the jump after its entry instruction, given
 * the bytes after it (patch_analyze_room()): the window takes the rest of
 * it and the padding, when the padding is all nops or int3 and the
 * function ends in a ret or jmp; its original bytes (padding included)
 * are what detach writes back.
 */
static void test_tail(void)
{
	static const struct {
		const char *what;
		uint8_t code[20];
		size_t size, room;
		bool ok;
	} t[] = {
		{ "lea; ret; cs nopw",
		  { 0x48, 0x8d, 0x44, 0x7f, 0x01, 0xc3, 0x66, 0x2e, 0x0f, 0x1f,
		    0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		  6, 10, true },
		{ "xor; ret; int3 x4",
		  { 0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc },
		  3, 4, true },
		{ "mov; jmp rel8; nops",
		  { 0x48, 0x89, 0xf8, 0xeb, 0xeb, 0x90, 0x90, 0x90 },
		  5, 3, true },
		{ "too little padding",
		  { 0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc },
		  3, 3, false },
		{ "padding that is code",
		  { 0x31, 0xc0, 0xc3, 0x55, 0x90, 0x90, 0x90 },
		  3, 4, false },
		{ "falls through at its end",
		  { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc0, 0x90, 0x90, 0x90 },
		  6, 3, false },
		{ "an indirect call",
		  { 0x48, 0x89, 0xf8, 0xff, 0xd0, 0xc3, 0x90, 0x90, 0x90 },
		  6, 3, false },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct patch_site s;
		int err = patch_analyze_room(t[i].code, t[i].size, t[i].room,
					     0x1000, 0, &s);
		uint64_t start = s.addr - 0x1000;

		if (t[i].ok)
			ok(!err && s.tail && s.len == 5 &&
				   !memcmp(s.orig, t[i].code + start, 5),
			   "tail window: %s (%s)", t[i].what,
			   err ? s.reason : "patchable");
		else
			ok(err == -EINVAL && strstr(s.reason, "shorter than"),
			   "no tail window: %s (%s)", t[i].what,
			   err ? s.reason : "patchable");
	}
	{
		/* the 2-byte jmp relocated as a jmp rel32 to its target */
		const uint8_t code[] = { 0x48, 0x89, 0xf8, 0xeb, 0xeb, 0x90,
					 0x90, 0x90 };
		struct patch_site s;
		struct patch_reloc r;
		uint8_t out[64];
		int32_t rel = 0;
		int err = patch_analyze_room(code, 5, 3, 0x1000, 0, &s);

		if (!err)
			err = patch_relocate(&s, 0x2000, out, sizeof(out), &r);
		if (!err)
			memcpy(&rel, out + 1, 4);
		ok(!err && out[0] == 0xe9 &&
			   0x2000 + 5 + (int64_t)rel == 0x1005 - 0x15,
		   "tail window: its jmp rel8 runs as a jmp rel32 to 0xff0");
	}
}

static void test_sites(void)
{
	static const struct {
		const char *sym, *reason;
	} t[] = {
		{ "ut_plain", NULL },
		{ "ut_endbr", NULL },
		{ "ut_riprel", NULL },
		{ "ut_jcc", NULL },
		{ "ut_short", "shorter than 5 bytes" },
		{ "ut_loop", "inside the patched window" },
		{ "ut_jrcxz", "transfers control" },
		{ "ut_icall", "transfers control" },
	};
	char reason[256];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int err = user_site_check(target, t[i].sym, reason,
					  sizeof(reason));

		if (!t[i].reason)
			ok(!err, "site %s is patchable", t[i].sym);
		else
			ok(err == -EINVAL && strstr(reason, t[i].reason),
			   "site %s refused: %s", t[i].sym, reason);
	}
	ok(!user_site_check_at(target, "ut_flags", 4, reason, sizeof(reason)),
	   "site ut_flags+4 is patchable");
	ok(user_site_check_at(target, "ut_plain", 2, reason,
			      sizeof(reason)) == -EINVAL &&
		   strstr(reason, "instruction boundary"),
	   "site ut_plain+2 refused: %s", reason);
	/* the instruction at an offset stays before the jump: refused
	 * when it changes a register or transfers control */
	ok(user_site_check_at(target, "ut_flags", 7, reason,
			      sizeof(reason)) == -EINVAL &&
		   strstr(reason, "changes eax"),
	   "site ut_flags+7 refused: %s", reason);
	ok(user_site_check_at(target, "ut_flags", 5, reason,
			      sizeof(reason)) == -EINVAL &&
		   strstr(reason, "transfers control"),
	   "site ut_flags+5 refused: %s", reason);
	ok(user_site_check_at(target, "ut_sys", 4, reason,
			      sizeof(reason)) == -EINVAL &&
		   strstr(reason, "to the end of the function"),
	   "site ut_sys+4 refused: %s", reason);
	ok(user_site_check(target, "no_such_function", reason,
			   sizeof(reason)) == -ENOENT,
	   "no such symbol: %s", reason);
	test_flags_dead();
	test_tail();
}

/* Every function of libc through the analysis: no crash, most patchable. */
static void test_scan_libc(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	int fd, good = 0, refused = 0, other = 0;
	Elf_Scn *scn = NULL;
	char reason[256];
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(libc, O_RDONLY);
	e = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			int err;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_size || sym.st_shndx == SHN_UNDEF)
				continue;
			err = user_site_check(libc,
					      elf_strptr(e, sh.sh_link,
							 sym.st_name),
					      reason, sizeof(reason));
			if (!err)
				good++;
			else if (err == -EINVAL)
				refused++;
			else
				other++;
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	/* refused: mostly an entry instruction that changes an argument
	 * register, or too little code after it (see shim/patch/patch.h) */
	ok(good > 1000 && good > 3 * refused && !other,
	   "libc: %d functions patchable, %d refused, %d errors", good,
	   refused, other);
}

static void test_cmd(void)
{
	enum { T1 = 2, T2 = 2, N = 20000 };
	char n1[16], n2[16], n3[16], line[256], err[512];
	char *argv[] = { target, n1, n2, n3, NULL };
	struct ubt_user *u;
	int in[2], out[2], saved_in, saved_out, st;

	snprintf(n1, sizeof(n1), "%d", T1);
	snprintf(n2, sizeof(n2), "%d", T2);
	snprintf(n3, sizeof(n3), "%d", N);
	/* the command inherits our stdin/stdout: point them at pipes */
	if (pipe(in) || pipe(out))
		return;
	saved_in = dup(0);
	saved_out = dup(1);
	fflush(stdout);
	dup2(in[0], 0);
	dup2(out[1], 1);
	u = user_attach_cmd(argv, NULL, err, sizeof(err));
	dup2(saved_in, 0);
	dup2(saved_out, 1);
	close(in[0]);
	close(out[1]);
	ok(u != NULL, "-c: start stopped and place the runtime%s%s",
	   u ? "" : ": ", u ? "" : err);
	if (!u)
		return;
	ok(!install_all(u), "-c: install 12 probes on 10 functions in 2 modules");
	ok(!user_resume(u), "-c: resume");
	diag("-c: target stopped %.3f ms", user_stop_ns(u) / 1e6);
	ok(!read_line(out[0], line, sizeof(line)) && !strcmp(line, "ready"),
	   "-c: target runs");
	go(in[1]);
	ok(!read_line(out[0], line, sizeof(line)) && round_ok(line),
	   "-c: round 1 results right with probes: %s", line);
	go(in[1]);
	ok(!read_line(out[0], line, sizeof(line)) && round_ok(line),
	   "-c: round 2 results right with probes: %s", line);
	st = proc_wait(user_pid(u));
	ok(st == 0, "-c: target exits 0 (%d)", st);
	/* warm-up in main + 2 rounds in T1 + T2 threads */
	check_counts(u, "-c", (long)N * (1 + 2 * (T1 + T2)), N);
	{
		uint64_t sum = 0;

		ok(!user_read_maps(u, OFF_PLAIN, 8, add_u64, &sum) &&
			   sum == get(u, OFF_PLAIN) &&
			   user_read_maps(u, 16380, 8, add_u64, &sum) ==
				   -ERANGE,
		   "-c: user_read_maps merges blocks, refuses out of range");
	}
	ok(memfd_nblocks_used(user_memfd(u)) == 1 + T1 + T2 &&
		   user_unrecorded_threads(u) == 0,
	   "-c: one block per thread (%u)",
	   memfd_nblocks_used(user_memfd(u)));
	ok(!user_detach(u), "-c: detach after exit");
	user_free(u);
	close(in[1]);
	close(out[0]);
}

static void test_pid(void)
{
	enum { T1 = 3, T2 = 2, N = 20000 };
	char *argv[] = { target, "3", "2", "20000", NULL };
	static uint8_t before[65536], after[65536];
	size_t nb = 0, na = 0;
	char line[256], err[512];
	unsigned long long cgt;
	struct ubt_user *u;
	struct proc p;
	int st;

	if (spawn(&p, argv))
		return;
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "ready"),
	   "-p: target running with %d threads", T1 + 1);
	usleep(100000);
	ok(!read_funcs(p.pid, before, sizeof(before), &nb),
	   "-p: read code before attach");
	cgt = sigcgt(p.pid);
	u = user_attach_pid(p.pid, &(struct user_opts){
					   .sz = sizeof(struct user_opts),
					   .runtime_path = "/nonexistent.so",
				   },
			    err, sizeof(err));
	ok(!u && strstr(err, "nonexistent"),
	   "-p: runtime missing: clean error: %s", u ? "attached?" : err);
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	ok(u != NULL, "-p: attach to a running process%s%s", u ? "" : ": ",
	   u ? "" : err);
	if (!u)
		goto out;
	ok(!install_all(u), "-p: install 12 probes");
	ok(user_install(u, &(struct user_probe){
				   .sz = sizeof(struct user_probe),
				   .binary = target,
				   .symbol = "no_such_function",
				   .code = "\xc3",
				   .code_len = 1,
			   }) == -ENOENT &&
		   strstr(user_error(u), "no function"),
	   "-p: no symbol: %s", user_error(u));
	ok(user_install(u, &(struct user_probe){
				   .sz = sizeof(struct user_probe),
				   .binary = target,
				   .symbol = "ut_short",
				   .code = "\xc3",
				   .code_len = 1,
			   }) == -EINVAL,
	   "-p: refused site not installed: %s", user_error(u));
	ok(!user_resume(u), "-p: resume");
	diag("-p: target stopped %.3f ms", user_stop_ns(u) / 1e6);
	ok(user_stop_ns(u) < 200000000ULL, "-p: stopped under 200 ms");
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && round_ok(line),
	   "-p: round 1 results right with probes: %s", line);
	check_counts(u, "-p", (long)N * (T1 + T2), N);
	st = user_detach(u);
	ok(!st, "-p: detach%s%s", st ? ": " : "", st ? user_error(u) : "");
	ok(!read_funcs(p.pid, after, sizeof(after), &na) && na == nb &&
		   !memcmp(before, after, nb),
	   "-p: /proc/PID/mem identical before attach and after detach "
	   "(%zu bytes)", nb);
	ok(sigcgt(p.pid) == cgt, "-p: signal handlers unchanged (%llx)", cgt);
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && round_ok(line),
	   "-p: round 2 after detach right: %s", line);
	ok(get(u, OFF_PLAIN) == (uint64_t)N * (T1 + T2),
	   "-p: nothing counted after detach");
	user_free(u);
out:
	ok(proc_wait(p.pid) == 0, "-p: target exits 0");
	close(p.in);
	close(p.out);
}

static void test_sigkill(void)
{
	char *argv[] = { target, "2", "1", "20000", NULL };
	char line[256];
	struct proc p;
	pid_t tracer;
	int st;

	if (spawn(&p, argv))
		return;
	ok(!read_line(p.out, line, sizeof(line)), "kill: target running");
	tracer = fork();
	if (!tracer) {
		char err[512];
		struct ubt_user *u = user_attach_pid(p.pid, NULL, err,
						     sizeof(err));

		if (!u || install_all(u) || user_resume(u))
			_exit(1);
		kill(getpid(), SIGKILL);
		_exit(2);
	}
	waitpid(tracer, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	   "kill: tracer attached, patched and died of SIGKILL");
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && round_ok(line),
	   "kill: target keeps running, round 1 right: %s", line);
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && round_ok(line),
	   "kill: round 2 right: %s", line);
	ok(proc_wait(p.pid) == 0, "kill: target finishes, exit 0");
	close(p.in);
	close(p.out);
}

static void test_errors(void)
{
	char err[512];
	struct ubt_user *u;
	pid_t z;

	u = user_attach_pid(0x3ffffff0, NULL, err, sizeof(err));
	ok(!u && strstr(err, "cannot attach to pid") &&
		   strstr(err, "No such process"),
	   "no such pid: %s", u ? "attached?" : err);
	z = fork();
	if (!z)
		_exit(0);
	{
		siginfo_t si;

		/* a zombie: exited, not reaped */
		waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT);
	}
	u = user_attach_pid(z, NULL, err, sizeof(err));
	ok(!u && strstr(err, "cannot attach to pid") &&
		   strstr(err, "exited"),
	   "exited process: %s", u ? "attached?" : err);
	waitpid(z, NULL, WNOHANG);
	{
		char *argv[] = { "/nonexistent/cmd", NULL };

		u = user_attach_cmd(argv, NULL, err, sizeof(err));
		ok(!u && strstr(err, "No such file"), "-c missing: %s",
		   u ? "started?" : err);
	}
}

struct events {
	int n;
	uint64_t sum;
	bool in_order;
};

static int on_event(uint32_t type, const void *data, uint32_t len, void *arg)
{
	struct events *ev = arg;
	uint64_t a[2];

	if (type != 7 || len != sizeof(a)) {
		ev->in_order = false;
		return 0;
	}
	memcpy(a, data, sizeof(a));
	if (a[0] != (uint64_t)(ev->n & 3))
		ev->in_order = false;
	ev->sum += a[0];
	ev->n++;
	return 0;
}

/* Events through the per-thread ring; a full ring drops and counts. */
static void test_events(void)
{
	char *argv[] = { target, "1", "0", "500", NULL };
	struct user_opts o = {
		.sz = sizeof(o),
		.layout = { .map_size = 4096, .ring_size = 4096, .nblocks = 8 },
	};
	struct events ev = { .in_order = true };
	char line[256], err[512];
	struct ubt_user *u;
	struct proc p;
	int n;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	u = user_attach_pid(p.pid, &o, err, sizeof(err));
	ok(u && !install(u, "ut_jcc", USER_PROBE_ENTRY,
			 blob_event(user_tls_offset(u))) &&
		   !user_resume(u),
	   "events: probe calling rt_ring_write installed%s%s",
	   u ? "" : ": ", u ? "" : err);
	if (!u)
		goto out;
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && round_ok(line),
	   "events: round 1 right: %s", line);
	/* 4096-byte ring, 24-byte records: 170 of 500 fit */
	n = user_read_events(u, on_event, &ev);
	ok(n == 170 && ev.n == 170 && ev.in_order,
	   "events: 170 events read back in order (%d)", n);
	ok(user_lost_events(u) == 330, "events: 330 lost and counted (%llu)",
	   (unsigned long long)user_lost_events(u));
	go(p.in);
	read_line(p.out, line, sizeof(line));
	ev = (struct events){ .in_order = true };
	n = user_read_events(u, on_event, &ev);
	ok(n == 170 && ev.in_order && user_lost_events(u) == 660,
	   "events: room again after reading (%d read, %llu lost)", n,
	   (unsigned long long)user_lost_events(u));
	ok(!user_detach(u), "events: detach");
out:
	ok(exit_code(u, p.pid) == 0, "events: target exits 0");
	user_free(u);
	close(p.in);
	close(p.out);
}

/* The process runs execve() while probed: detach has nothing to undo. */
static void test_exec(void)
{
	char *argv[] = { target, "exec", NULL };
	char line[256], err[512];
	struct ubt_user *u;
	struct proc p;
	int st;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	ok(u && !install(u, "ut_plain", USER_PROBE_ENTRY,
			 blob_count(user_tls_offset(u), OFF_PLAIN)) &&
		   !user_resume(u),
	   "exec: probe installed%s%s", u ? "" : ": ", u ? "" : err);
	if (!u)
		goto out;
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "ready"),
	   "exec: the process ran execve()");
	ok(get(u, OFF_PLAIN) == 1, "exec: the call before it counted");
	wait_blocked(p.pid);
	st = user_detach(u);
	ok(!st, "exec: detach from the new image%s%s", st ? ": " : "",
	   st ? user_error(u) : "");
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 1"),
	   "exec: new image runs: %s", line);
out:
	close(p.in);
	ok(exit_code(u, p.pid) == 0, "exec: target exits 0");
	user_free(u);
	close(p.out);
}

/* Giving up after installing, before resuming: everything put back. */
static void test_abort(void)
{
	char *argv[] = { target, "1", "0", "1000", NULL };
	static uint8_t before[65536], after[65536];
	size_t nb = 0, na = 0;
	char line[256], err[512];
	struct ubt_user *u;
	struct proc p;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	read_funcs(p.pid, before, sizeof(before), &nb);
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	ok(u && !install_all(u), "abort: attach, install");
	ok(u && user_install(u, &(struct user_probe){
				    .sz = sizeof(struct user_probe),
				    .binary = target,
				    /* its entry window covers +4.., where
				     * install_all() put a probe at +4 */
				    .symbol = "ut_flags",
				    .code = "\xc3",
				    .code_len = 1,
			    }) == -EINVAL &&
		   strstr(user_error(u), "overlaps"),
	   "abort: overlapping windows refused: %s", u ? user_error(u) : "");
	ok(u && !user_detach(u), "abort: detach without resuming");
	ok(!read_funcs(p.pid, after, sizeof(after), &na) && na == nb &&
		   !memcmp(before, after, nb),
	   "abort: code identical");
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && round_ok(line),
	   "abort: round 1 right: %s", line);
	ok(u && get(u, OFF_PLAIN) == 0, "abort: nothing counted");
	go(p.in);
	read_line(p.out, line, sizeof(line));
	ok(exit_code(u, p.pid) == 0, "abort: target exits 0");
	user_free(u);
	close(p.in);
	close(p.out);
}

/* A thread blocked in a system call inside the patch window is moved. */
static void test_sys(void)
{
	char *argv[] = { target, "sys", NULL };
	static uint8_t before[65536], after[65536];
	char line[256], err[512];
	size_t nb = 0, na = 0;
	struct ubt_user *u, *u2;
	struct proc p;
	int st;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	wait_blocked(p.pid);	/* in read() inside ut_sys */
	read_funcs(p.pid, before, sizeof(before), &nb);
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	if (!u) {
		ok(0, "window: attach: %s", err);
		goto out;
	}
	st = install(u, "ut_sys", USER_PROBE_ENTRY,
		     blob_count(user_tls_offset(u), OFF_PLAIN));
	/*
	 * The attach's remote calls interrupted the read(); the thread
	 * restarts it from the syscall instruction, the window's first,
	 * where a commit stop that comes first leaves it (nothing to move:
	 * it takes the jump, one count more).  In read() again first.
	 */
	wait_blocked(p.pid);
	/* the jump is written, and the thread moved, at resume */
	ok(!st && !user_resume(u), "window: resume");
	ok(user_moved_threads(u) == 1,
	   "window: the thread blocked inside the window was moved (%d)",
	   user_moved_threads(u));
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 1"),
	   "window: interrupted system call completes: %s", line);
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 2"),
	   "window: next call through the trampoline: %s", line);
	wait_blocked(p.pid);
	ok(get(u, OFF_PLAIN) == 2, "window: 2 entries counted (%llu)",
	   (unsigned long long)get(u, OFF_PLAIN));
	st = user_detach(u);
	ok(!st, "window: detach while blocked in the trampoline%s%s",
	   st ? ": " : "", st ? user_error(u) : "");
	ok(!read_funcs(p.pid, after, sizeof(after), &na) && na == nb &&
		   !memcmp(before, after, nb),
	   "window: code identical after detach");
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 3"),
	   "window: still running after detach: %s", line);
	/* a second session: the runtime is there already, new memfd */
	wait_blocked(p.pid);
	u2 = user_attach_pid(p.pid, NULL, err, sizeof(err));
	st = u2 ? install(u2, "ut_sys", USER_PROBE_ENTRY,
			  blob_count(user_tls_offset(u2), OFF_PLAIN)) : -1;
	wait_blocked(p.pid);	/* as above */
	ok(u2 && !st && !user_resume(u2),
	   "again: attach a second time%s%s", u2 ? "" : ": ",
	   u2 ? "" : err);
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 4"),
	   "again: running: %s", line);
	wait_blocked(p.pid);
	ok(u2 && get(u2, OFF_PLAIN) == 1 && get(u, OFF_PLAIN) == 2 &&
		   user_moved_threads(u2) == 1,
	   "again: counts go to the new session only (%llu, old %llu)",
	   u2 ? (unsigned long long)get(u2, OFF_PLAIN) : 0ULL,
	   (unsigned long long)get(u, OFF_PLAIN));
	ok(u2 && !user_detach(u2), "again: detach");
	user_free(u2);
	user_free(u);
out:
	close(p.in);
	ok(proc_wait(p.pid) == 0, "window: target exits 0");
	close(p.out);
}

/*
 * Another thread holds the loader's lock nearly all the time (asleep in a
 * dl_iterate_phdr() callback): no remote dlopen() is started that could
 * wait on it (issue 25: one abandoned would leave the lock held), the
 * attach is refused and says why, and the target runs on untouched.
 */
static void test_lock(void)
{
	char *argv[] = { target, "sys", "phdr", NULL };
	char line[256], err[512];
	struct ubt_user *u;
	struct proc p;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	wait_blocked(p.pid);
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	ok(!u && strstr(err, "holds the dynamic loader's lock"),
	   "lock: attach while the loader lock is held is refused: %s",
	   u ? "attached" : err);
	user_free(u);
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 1"),
	   "lock: target runs: %s", line);
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "got 2"),
	   "lock: target runs on: %s", line);
	close(p.in);
	ok(proc_wait(p.pid) == 0, "lock: target exits 0");
	close(p.out);
}

/* A child forked inside a wrapped call: nothing breaks, -p counts none. */
static void test_fork(void)
{
	char *argv[] = { target, "fork", NULL };
	char line[256], err[512];
	struct ubt_user *u;
	struct proc p;
	int64_t t;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	if (!u) {
		ok(0, "fork: attach: %s", err);
		goto out;
	}
	t = user_tls_offset(u);
	ok(!install(u, "ut_plain", USER_PROBE_ENTRY,
		    blob_count(t, OFF_PLAIN)) &&
		   !install(u, "ut_forker", USER_PROBE_RETURN,
			    blob_count(t, OFF_LJ_RET)) &&
		   !install(u, "ut_ret", USER_PROBE_RETURN,
			    blob_count(t, OFF_RET_SUM)) &&
		   !user_resume(u),
	   "fork: return probe on a function that forks");
	go(p.in);
	ok(!read_line(p.out, line, sizeof(line)) && !strcmp(line, "done 0"),
	   "fork: child returned through the wrapped call and exited 0: %s",
	   line);
	/*
	 * -p: as the kernel's probes on the process, the child records
	 * nothing (with -c it would: RT_CTL_CHILDREN); the wrapped call of
	 * ut_forker in progress at fork() returns in both, the child's
	 * through its private copy of the shadow stack.
	 */
	ok(get(u, OFF_PLAIN) == 10 && get(u, OFF_LJ_RET) == 1 &&
		   get(u, OFF_RET_SUM) == 0,
	   "fork: only the parent counted (%llu, %llu, %llu)",
	   (unsigned long long)get(u, OFF_PLAIN),
	   (unsigned long long)get(u, OFF_LJ_RET),
	   (unsigned long long)get(u, OFF_RET_SUM));
	user_detach(u);
out:
	close(p.in);
	ok(exit_code(u, p.pid) == 0, "fork: target exits 0");
	user_free(u);
	close(p.out);
}

/* Best of three timed loops of N calls; -1 on error. */
static double timed(struct proc *p)
{
	double best = -1, ns;
	char line[256];
	int i;

	for (i = 0; i < 3; i++) {
		go(p->in);
		if (read_line(p->out, line, sizeof(line)) ||
		    sscanf(line, "ns %lf", &ns) != 1)
			return -1;
		if (best < 0 || ns < best)
			best = ns;
	}
	return best;
}

/*
 * Processes exiting at every stage of attach: clean errors, and each exits
 * 0.  The target is a child of a shell that reports its status, as a -p
 * target is not ubt's child.
 */
static void test_exit_race(void)
{
	int i, clean = 0, attached = 0, good_exit = 0;
	char msg[512] = "";

	for (i = 0; i < 20; i++) {
		char us[16], err[512], line[256];
		char *argv[] = { "/bin/sh", "-c",
				 "\"$0\" exit $1; echo status $?", target, us,
				 NULL };
		struct ubt_user *u;
		struct proc p;
		int pid = 0, st = -1;

		snprintf(us, sizeof(us), "%d", i * 100);
		if (spawn(&p, argv))
			return;
		if (read_line(p.out, line, sizeof(line)) ||
		    sscanf(line, "ready %d", &pid) != 1)
			break;
		u = user_attach_pid(pid, NULL, err, sizeof(err));
		if (u) {
			struct blob b = blob_count(user_tls_offset(u), 0);

			attached++;
			clean++;
			user_install(u, &(struct user_probe){
						.sz = sizeof(struct user_probe),
						.binary = target,
						.symbol = "ut_plain",
						.code = b.b,
						.code_len = b.n,
					});
			user_resume(u);
			user_detach(u);
			user_free(u);
		} else if (strstr(err, "exited") ||
			   strstr(err, "No such process")) {
			clean++;
		} else {
			snprintf(msg, sizeof(msg), "%s", err);
		}
		if (!read_line(p.out, line, sizeof(line)))
			sscanf(line, "status %d", &st);
		good_exit += st == 0;
		if (st)
			diag("exit race: target exit status %d after: %s", st,
			     u ? "attach" : err);
		proc_wait(p.pid);
		close(p.in);
		close(p.out);
	}
	ok(clean == 20, "exit race: %d attached, %d exited%s%s", attached,
	   clean - attached, msg[0] ? ": " : "", msg);
	ok(good_exit == 20, "exit race: every target exited 0 (%d)",
	   good_exit);
}

static void test_bench(bool ret)
{
	enum { N = 10000000 };
	char *argv[] = { target, "bench", "10000000", ret ? "ret" : NULL,
			 NULL };
	const char *what = ret ? "uretprobe count()" : "count()";
	char line[256], err[512];
	double plain, patched;
	struct ubt_user *u;
	struct proc p;

	if (spawn(&p, argv))
		return;
	read_line(p.out, line, sizeof(line));
	plain = timed(&p);
	ok(plain > 0, "bench: unpatched loop");
	u = user_attach_pid(p.pid, NULL, err, sizeof(err));
	if (!u) {
		ok(0, "bench: attach: %s", err);
		goto out;
	}
	install(u, ret ? "ut_ret" : "ut_plain",
		ret ? USER_PROBE_RETURN : USER_PROBE_ENTRY,
		blob_count(user_tls_offset(u), OFF_PLAIN));
	user_resume(u);
	patched = timed(&p);
	ok(patched > 0, "bench: patched loop");
	ok(get(u, OFF_PLAIN) == 3 * N, "bench: %s: %d hits counted", what,
	   3 * N);
	diag("ns per call: unpatched %.2f, with %s %.2f: %+.2f ns per hit",
	     plain, what, patched, patched - plain);
	diag("stop time %.3f ms", user_stop_ns(u) / 1e6);
	user_detach(u);
	user_free(u);
out:
	close(p.in);
	proc_wait(p.pid);
	close(p.out);
}

int main(int argc, char **argv)
{
	const char *b = getenv("top_builddir");

	snprintf(target, sizeof(target), "%s/tests/user/target",
		 b ? b : ".");
	if (access(target, X_OK)) {
		printf("Bail out! no %s\n", target);
		return 99;
	}
	signal(SIGPIPE, SIG_IGN);
	/* UBT_USER_TESTS=name,name runs only those (for debugging) */
#define RUN(name, call)                                           \
	do {                                                      \
		const char *only = getenv("UBT_USER_TESTS");      \
		if (!only || strstr(only, name))                  \
			call;                                     \
	} while (0)
	RUN("sites", test_sites());
	RUN("sites", test_scan_libc());
	RUN("errors", test_errors());
	RUN("cmd", test_cmd());
	RUN("pid", test_pid());
	RUN("sigkill", test_sigkill());
	RUN("events", test_events());
	RUN("exec", test_exec());
	RUN("abort", test_abort());
	RUN("sys", test_sys());
	RUN("lock", test_lock());
	RUN("fork", test_fork());
	RUN("exit", test_exit_race());
	RUN("bench", test_bench(false));
	RUN("bench", test_bench(true));
	return tap_done();
}
