/*
 * kfeat: the running kernel's features, each found by trying it.
 *
 * A program that loads is not proof that its link attaches: Debian 12's
 * 6.1 loads a kprobe program with the uprobe_multi attach type and then
 * refuses the link (EINVAL).  So the link features ask for a link that
 * must fail, and tell "this kernel has it" from "this kernel does not
 * know it" by the errno: the kernel checks the attach type before the
 * arguments, which are chosen to be wrong (a directory as the binary, a
 * symbol that no kernel has, no perf event).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "kfeat.h"
#include "util.h"

/* kernels >= 6.6: uprobe_multi (the headers of libbpf 1.1 lack it) */
#define KFEAT_TRACE_UPROBE_MULTI 48

/* r0 = 0; exit */
static const struct bpf_insn kfeat_ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

static int kfeat_load(enum bpf_prog_type type, enum bpf_attach_type at,
		      int btf_id)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = at,
		    .attach_btf_id = btf_id > 0 ? (uint32_t)btf_id : 0);

	return bpf_prog_load(type, NULL, "GPL", kfeat_ret0,
			     ARRAY_SIZE(kfeat_ret0), &o);
}

static bool kfeat_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL) > 0;
}

static bool kfeat_map(enum bpf_map_type t)
{
	return libbpf_probe_bpf_map_type(t, NULL) > 0;
}

struct btf *kfeat_vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(btf))
			btf = NULL;
	}
	return btf;
}

static bool kfeat_btf(void)
{
	return kfeat_vmlinux_btf() != NULL;
}

/* /sys/kernel/btf holds more than vmlinux */
static bool kfeat_module_btf(void)
{
	DIR *d = opendir("/sys/kernel/btf");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = e->d_name[0] != '.' && strcmp(e->d_name, "vmlinux");
	closedir(d);
	return found;
}

static bool kfeat_mmapable(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	long page = sysconf(_SC_PAGESIZE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 8, 1, &mo);
	void *p;

	if (fd < 0)
		return false;
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	munmap(p, page);
	return true;
}

static bool kfeat_task_storage(void)
{
	return kfeat_map(BPF_MAP_TYPE_TASK_STORAGE) &&
	       kfeat_helper(BPF_FUNC_task_storage_get) &&
	       kfeat_helper(BPF_FUNC_get_current_task_btf);
}

/* A link over no perf event: EBADF where such links exist. */
static bool kfeat_perf_link(void)
{
	int fd = kfeat_load(BPF_PROG_TYPE_TRACEPOINT, 0, 0), l, err;

	if (fd < 0)
		return false;
	l = bpf_link_create(fd, -1, BPF_PERF_EVENT, NULL);
	err = l < 0 ? errno : 0;
	if (l >= 0)
		close(l);
	close(fd);
	return err == EBADF;
}

/* The link_create part of union bpf_attr for uprobe_multi (>= 6.6). */
struct kfeat_uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid, pad;
};

static int kfeat_uprobe_multi_link(int prog, const char *path, int pid)
{
	uint64_t off = 0;
	struct kfeat_uprobe_multi_attr a = {
		.prog_fd = prog,
		.attach_type = KFEAT_TRACE_UPROBE_MULTI,
		.path = (uintptr_t)path,
		.offsets = (uintptr_t)&off,
		.cnt = 1,
		.pid = (uint32_t)pid,
	};
	int l = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));

	if (l >= 0) {
		close(l);
		return 0;
	}
	return errno;
}

/*
 * uprobe_multi: a directory as the binary is EBADF where the kernel has
 * these links (EINVAL where it does not know the attach type).  Its
 * first kernels filtered by thread, not by process, which -p needs:
 * where that is fixed, an invalid pid is EINVAL before the path is
 * looked at.
 */
static bool kfeat_uprobe_multi(void)
{
	int fd = kfeat_load(BPF_PROG_TYPE_KPROBE, KFEAT_TRACE_UPROBE_MULTI, 0);
	bool has;

	if (fd < 0)
		return false;
	has = kfeat_uprobe_multi_link(fd, "/", 0) == EBADF &&
	      kfeat_uprobe_multi_link(fd, "/", -1) == EINVAL;
	close(fd);
	return has;
}

/* kprobe_multi: a symbol no kernel has is ESRCH (or ENOENT) where these
 * links exist; EINVAL or EOPNOTSUPP where they do not. */
static bool kfeat_kprobe_multi(void)
{
	const char *syms[] = { "ubt_kfeat_no_such_function" };
	LIBBPF_OPTS(bpf_link_create_opts, lo, .kprobe_multi.syms = syms,
		    .kprobe_multi.cnt = 1);
	int fd = kfeat_load(BPF_PROG_TYPE_KPROBE, BPF_TRACE_KPROBE_MULTI, 0);
	int l, err;

	if (fd < 0)
		return false;
	l = bpf_link_create(fd, 0, BPF_TRACE_KPROBE_MULTI, &lo);
	err = l < 0 ? errno : 0;
	if (l >= 0)
		close(l);
	close(fd);
	return err == ESRCH || err == ENOENT;
}

/*
 * fentry: a program on a function the kernel keeps for BPF's own tests,
 * attached (a trampoline made) and taken down at once.  Loading alone
 * proves nothing where the kernel has no ftrace to attach it with.
 */
static bool kfeat_fentry(void)
{
	static const char *const fns[] = { "bpf_fentry_test1",
					    "bpf_modify_return_test" };
	const struct btf *b = kfeat_vmlinux_btf();
	bool has = false;

	for (size_t i = 0; b && i < ARRAY_SIZE(fns) && !has; i++) {
		int id = btf__find_by_name_kind(b, fns[i], BTF_KIND_FUNC);
		int fd, l;

		if (id <= 0)
			continue;
		fd = kfeat_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, id);
		if (fd < 0)
			continue;
		l = bpf_raw_tracepoint_open(NULL, fd);
		has = l >= 0;
		if (l >= 0)
			close(l);
		close(fd);
	}
	return has;
}

/* A BTF-typed raw tracepoint program on sched_switch loads. */
static bool kfeat_raw_tp_btf(void)
{
	const struct btf *b = kfeat_vmlinux_btf();
	int id = b ? btf__find_by_name_kind(b, "btf_trace_sched_switch",
					    BTF_KIND_TYPEDEF) :
		     -1;
	int fd;

	if (id <= 0)
		return false;
	fd = kfeat_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, id);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * bpf_d_path() in an fentry program on dentry_open() (one of the
 * functions the verifier lets call it) loads: its first argument, a
 * struct path *, and 8 bytes of stack.  Only loaded, as bpftrace 0.17's
 * "dpath" probe.
 */
static bool kfeat_d_path(void)
{
	static const struct bpf_insn insns[] = {
		/* r1 = ctx[0]; r2 = r10 - 8; *(u64 *)r2 = 0; r3 = 8 */
		{ .code = BPF_LDX | BPF_MEM | BPF_DW, .dst_reg = 1,
		  .src_reg = 1 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = 2,
		  .src_reg = 10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = 2,
		  .imm = -8 },
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = 2 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 3, .imm = 8 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_d_path },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	const struct btf *b = kfeat_vmlinux_btf();
	int id = b ? btf__find_by_name_kind(b, "dentry_open",
					    BTF_KIND_FUNC) : -1;
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = BPF_TRACE_FENTRY);
	int fd;

	if (id <= 0)
		return false;
	o.attach_btf_id = (uint32_t)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns,
			   ARRAY_SIZE(insns), &o);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * Does this machine deliver hardware breakpoints?  Some virtual machines
 * accept the perf event but never raise it (their debug registers are not
 * passed through): a watchpoint there would attach and count nothing.
 * Asked on ubt itself: four writes to a watched word.  true where the
 * event cannot even be opened (the attach then says why).
 */
static bool kfeat_hw_breakpoint(void)
{
	static volatile int word;
	struct perf_event_attr a = {
		.type = PERF_TYPE_BREAKPOINT,
		.size = sizeof(a),
		.bp_type = HW_BREAKPOINT_W,
		.bp_addr = (uintptr_t)&word,
		.bp_len = HW_BREAKPOINT_LEN_4,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	uint64_t n = 0;
	bool known;
	int fd;

	fd = syscall(__NR_perf_event_open, &a, 0, -1, -1,
		     PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return true;
	for (int i = 0; i < 4; i++)
		word = i;
	known = read(fd, &n, sizeof(n)) == sizeof(n) && n > 0;
	close(fd);
	return known;
}

static bool kfeat_ringbuf(void)
{
	return kfeat_map(BPF_MAP_TYPE_RINGBUF);
}

static bool kfeat_loop(void)
{
	return kfeat_helper(BPF_FUNC_loop);
}

static bool kfeat_cookie(void)
{
	return kfeat_helper(BPF_FUNC_get_attach_cookie);
}

static const struct kfeat_probe {
	const char *name;
	bool (*ask)(void);
} kfeat_probes[KFEAT_NR] = {
	[KFEAT_BTF] = { "vmlinux BTF", kfeat_btf },
	[KFEAT_MODULE_BTF] = { "module BTF", kfeat_module_btf },
	[KFEAT_RINGBUF] = { "ring buffer", kfeat_ringbuf },
	[KFEAT_MMAPABLE] = { "mmapable arrays", kfeat_mmapable },
	[KFEAT_TASK_STORAGE] = { "task storage", kfeat_task_storage },
	[KFEAT_LOOP] = { "bpf_loop", kfeat_loop },
	[KFEAT_COOKIE] = { "bpf cookies", kfeat_cookie },
	[KFEAT_PERF_LINK] = { "perf-event links", kfeat_perf_link },
	[KFEAT_UPROBE_MULTI] = { "uprobe_multi links", kfeat_uprobe_multi },
	[KFEAT_KPROBE_MULTI] = { "kprobe_multi links", kfeat_kprobe_multi },
	[KFEAT_FENTRY] = { "fentry trampolines", kfeat_fentry },
	[KFEAT_RAW_TP_BTF] = { "raw tracepoints with BTF", kfeat_raw_tp_btf },
	[KFEAT_HW_BREAKPOINT] = { "hardware breakpoints delivered",
				  kfeat_hw_breakpoint },
	[KFEAT_D_PATH] = { "bpf_d_path", kfeat_d_path },
};

/* 0 not asked yet, 1 no, 2 yes */
static unsigned char kfeat_known[KFEAT_NR];

bool kfeat_has(enum kfeat f)
{
	if ((unsigned)f >= KFEAT_NR)
		BUG("kfeat_has(%d)", (int)f);
	if (!kfeat_known[f]) {
		/* the probes' refusals are answers, not errors to print */
		libbpf_print_fn_t old = libbpf_set_print(NULL);

		kfeat_known[f] = kfeat_probes[f].ask() ? 2 : 1;
		libbpf_set_print(old);
	}
	return kfeat_known[f] == 2;
}

const char *kfeat_name(enum kfeat f)
{
	if ((unsigned)f >= KFEAT_NR)
		BUG("kfeat_name(%d)", (int)f);
	return kfeat_probes[f].name;
}

void kfeat_print(FILE *f)
{
	for (int i = 0; i < KFEAT_NR; i++)
		fprintf(f, "  %s: %s\n", kfeat_name(i),
			kfeat_has(i) ? "yes" : "no");
}

const char *kfeat_missing(enum kfeat f)
{
	static char why[KFEAT_NR][64];

	if (kfeat_has(f))
		return NULL;
	if (!why[f][0])
		snprintf(why[f], sizeof(why[f]), "this kernel has no %s",
			 kfeat_name(f));
	return why[f];
}
