/*
 * --info: what this system gives ubt, in bpftrace 0.17's layout (System,
 * Build, Kernel helpers, Kernel features, Map types, Probe types), each
 * feature asked of the running kernel (libbpf's probes, tracefs, sysfs).
 * Probe types say what ubt can attach here: kprobe, kfunc, kprobe_multi
 * and rawtracepoint as frontend/kprov.c asks the kernel (what decides
 * whether those probes are refused), iter an iterator program the
 * kernel loads.  With --compat newest, the newest bpftrace's layout.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <llvm-c/Core.h>

#include "compat.h"
#include "info.h"
#include "kernel.h"
#include "kprov.h"
#include "kfeat.h"
#include "util.h"

static const char *info_yes(bool b)
{
	return b ? "yes" : "no";
}

static bool info_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL) > 0;
}

static bool info_map(enum bpf_map_type t)
{
	return libbpf_probe_bpf_map_type(t, NULL) > 0;
}

static bool info_prog(enum bpf_prog_type t)
{
	return libbpf_probe_bpf_prog_type(t, NULL) > 0;
}

static bool info_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* An iterator program over the kernel's bpf_iter_NAME loads here. */
static bool info_iter(const char *name)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0,
		  .imm = 0 },				/* r0 = 0 */
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int id = libbpf_find_vmlinux_btf_id(name, BPF_TRACE_ITER), fd;
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = BPF_TRACE_ITER,
		    .attach_btf_id = id > 0 ? (uint32_t)id : 0);

	if (id <= 0)
		return false;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), &o);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* A socket filter with a bounded loop: loads where the verifier takes
 * loops (and then a million instructions). */
static bool info_loops(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0,
		  .imm = 0 },				/* r0 = 0 */
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = 0,
		  .imm = 1 },				/* r0 += 1 */
		{ .code = BPF_JMP | BPF_JLT | BPF_K, .dst_reg = 0,
		  .off = -2, .imm = 4 },		/* if r0 < 4 goto -2 */
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL",
			       insns, sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* BPF_MAP_LOOKUP_BATCH on an empty hash: ENOENT where batches exist. */
static bool info_map_batch(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, 4, 4, 4, NULL);
	uint32_t keys[4], vals[4], out, count = 4;
	bool ok;
	int err;

	if (fd < 0)
		return false;
	err = bpf_map_lookup_batch(fd, NULL, &out, keys, vals, &count, NULL);
	ok = !err || err == -ENOENT;
	close(fd);
	return ok;
}

/* The kernel helpers and map types listed, in bpftrace's order. */
static const struct info_item {
	const char *name;
	int id;
} info_helpers[] = {
	{ "probe_read", BPF_FUNC_probe_read },
	{ "probe_read_str", BPF_FUNC_probe_read_str },
	{ "probe_read_user", BPF_FUNC_probe_read_user },
	{ "probe_read_user_str", BPF_FUNC_probe_read_user_str },
	{ "probe_read_kernel", BPF_FUNC_probe_read_kernel },
	{ "probe_read_kernel_str", BPF_FUNC_probe_read_kernel_str },
	{ "get_current_cgroup_id", BPF_FUNC_get_current_cgroup_id },
	{ "send_signal", BPF_FUNC_send_signal },
	{ "override_return", BPF_FUNC_override_return },
	{ "get_boot_ns", BPF_FUNC_ktime_get_boot_ns },
}, info_maps[] = {
	{ "hash", BPF_MAP_TYPE_HASH },
	{ "percpu hash", BPF_MAP_TYPE_PERCPU_HASH },
	{ "array", BPF_MAP_TYPE_ARRAY },
	{ "percpu array", BPF_MAP_TYPE_PERCPU_ARRAY },
	{ "stack_trace", BPF_MAP_TYPE_STACK_TRACE },
	{ "perf_event_array", BPF_MAP_TYPE_PERF_EVENT_ARRAY },
};

/* bpftrace's two-column table: "  name: value" padded to 35, then the
 * next pair on the same line */
static void info_pairs(FILE *f, const char *const (*kv)[2], size_t n)
{
	char cell[128];

	for (size_t i = 0; i < n; i += 2) {
		snprintf(cell, sizeof(cell), "  %s: %s", kv[i][0], kv[i][1]);
		if (i + 1 < n)
			fprintf(f, "%-35s%s: %s\n", cell, kv[i + 1][0],
				kv[i + 1][1]);
		else
			fprintf(f, "%-35s\n", cell);
	}
}

/*
 * compat info-layout: the newest bpftrace's --info, its sections and
 * pairs, each asked of this kernel as in 0.17's layout.  kprobe_session:
 * ubt attaches no kprobe sessions; dwunwind: ubt's ustack does not
 * unwind through DWARF.
 */
static void info_print_newest(FILE *f)
{
	char limit[16];
	const char *const helpers[][2] = {
		{ "dpath", info_yes(kfeat_has(KFEAT_D_PATH)) },
		{ "get_tai_ns",
		  info_yes(info_helper(BPF_FUNC_ktime_get_tai_ns)) },
		{ "get_func_ip",
		  info_yes(info_helper(BPF_FUNC_get_func_ip)) },
		{ "lookup_percpu_elem",
		  info_yes(info_helper(BPF_FUNC_map_lookup_percpu_elem)) },
	};
	const char *const features[][2] = {
		{ "Instruction limit", limit },
		{ "btf", info_yes(info_exists("/sys/kernel/btf/vmlinux")) },
		{ "module btf", info_yes(kfeat_has(KFEAT_MODULE_BTF)) },
	};
	const char *const probes[][2] = {
		{ "kprobe_multi", info_yes(kprov_kprobe_multi()) },
		{ "uprobe_multi", info_yes(kfeat_has(KFEAT_UPROBE_MULTI)) },
		{ "kprobe_session", "no" },
		{ "iter", info_yes(info_iter("task")) },
	};

	snprintf(limit, sizeof(limit), "%d", info_loops() ? 1000000 : 4096);
	fprintf(f, "  bfd: no\n  libdw (DWARF support): yes\n"
		"  libsystemd (systemd notify support): no\n"
		"  blazesym (advanced symbolization): no\n"
		"  dwunwind (DWARF stack unwinding): no\n\n");
	fprintf(f, "Kernel helpers\n");
	info_pairs(f, helpers, ARRAY_SIZE(helpers));
	fprintf(f, "\nKernel features\n");
	info_pairs(f, features, ARRAY_SIZE(features));
	fprintf(f, "\nProbe types\n");
	info_pairs(f, probes, ARRAY_SIZE(probes));
	fputc('\n', f);
}

int info_print(FILE *f)
{
	struct utsname u;
	unsigned major, minor, patch;
	bool loops = info_loops();
	size_t i;

	libbpf_set_print(NULL);
	if (uname(&u))
		memset(&u, 0, sizeof(u));
	LLVMGetVersion(&major, &minor, &patch);
	fprintf(f, "System\n  OS: %s %s %s\n  Arch: %s\n\n", u.sysname,
		u.release, u.version, u.machine);
	fprintf(f, "Build\n  version: v%s\n  LLVM: %u.%u.%u\n",
		PACKAGE_VERSION, major, minor, patch);
	if (compat_has(COMPAT_INFO_LAYOUT)) {
		info_print_newest(f);
		return 0;
	}
	fprintf(f, "  unsafe uprobe: no\n  bfd: no\n"
		"  libdw (DWARF support): yes\n\n");
	fprintf(f, "Kernel helpers\n");
	for (i = 0; i < ARRAY_SIZE(info_helpers); i++)
		fprintf(f, "  %s: %s\n", info_helpers[i].name,
			info_yes(info_helper(info_helpers[i].id)));
	/* path()'s bpf_d_path (probes/kfeat.c); skb_output: ubt has no
	 * skboutput() */
	fprintf(f, "  dpath: %s\n  skboutput: no\n\n",
		info_yes(kfeat_has(KFEAT_D_PATH)));
	fprintf(f, "Kernel features\n  Instruction limit: %d\n"
		"  Loop support: %s\n  btf: %s\n  map batch: %s\n"
		"  uprobe refcount (depends on Build:bcc bpf_attach_uprobe "
		"refcount): %s\n", loops ? 1000000 : 4096, info_yes(loops),
		info_yes(info_exists("/sys/kernel/btf/vmlinux")),
		info_yes(info_map_batch()),
		info_yes(info_exists("/sys/bus/event_source/devices/uprobe/"
				     "format/ref_ctr_offset")));
	/* ubt's own: each asked of the kernel (probes/kfeat.c) */
	kfeat_print(f);
	fputc('\n', f);
	fprintf(f, "Map types\n");
	for (i = 0; i < ARRAY_SIZE(info_maps); i++)
		fprintf(f, "  %s: %s\n", info_maps[i].name,
			info_yes(info_map(info_maps[i].id)));
	fputc('\n', f);
	fprintf(f, "Probe types\n");
	fprintf(f, "  kprobe: %s\n", info_yes(kprov_kprobe()));
	fprintf(f, "  tracepoint: %s\n",
		info_yes(info_prog(BPF_PROG_TYPE_TRACEPOINT)));
	fprintf(f, "  perf_event: %s\n",
		info_yes(info_prog(BPF_PROG_TYPE_PERF_EVENT)));
	fprintf(f, "  kfunc: %s\n  iter:task: %s\n  iter:task_file: %s\n"
		"  kprobe_multi: %s\n", info_yes(kprov_fentry()),
		info_yes(info_iter("task")), info_yes(info_iter("task_file")),
		info_yes(kprov_kprobe_multi()));
	fprintf(f, "  rawtracepoint: %s\n", info_yes(kprov_rawtp()));
	fprintf(f, "  raw_tp_special: %s\n",
		info_yes(info_prog(BPF_PROG_TYPE_RAW_TRACEPOINT)));
	fprintf(f, "  watchpoint (hardware breakpoints delivered): %s\n",
		info_yes(kfeat_has(KFEAT_HW_BREAKPOINT)));
	fputc('\n', f);
	return 0;
}
