/*
 * Kernel features, asked of the running kernel (kprov.h); kprobe_multi,
 * fentry and BTF through kfeat (probes/kfeat.h), which --info prints.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "kfeat.h"
#include "kprov.h"

enum { KF_UNKNOWN, KF_NO, KF_YES };

/* r0 = 0; exit */
static const struct bpf_insn kprov_ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

static int kprov_load(enum bpf_prog_type type, enum bpf_attach_type eat,
		      uint32_t btf_id)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = eat,
		    .attach_btf_id = btf_id);

	return bpf_prog_load(type, NULL, "GPL", kprov_ret0,
			     sizeof(kprov_ret0) / sizeof(kprov_ret0[0]), &o);
}

/*
 * UBT_KERNEL_LACKS=kprobe,fentry,...: features reported missing whatever
 * the kernel says, so that the refusals can be tested on any kernel
 * (read on each question, not kept).
 */
static bool kprov_hidden(const char *name)
{
	const char *e = getenv("UBT_KERNEL_LACKS");
	size_t n = strlen(name);

	while (e && *e) {
		const char *c = strchr(e, ',');
		size_t l = c ? (size_t)(c - e) : strlen(e);

		if (l == n && !strncmp(e, name, n))
			return true;
		e = c ? c + 1 : NULL;
	}
	return false;
}

static bool kprov_answer(int *state, bool (*ask)(void), const char *name)
{
	if (kprov_hidden(name))
		return false;
	if (*state == KF_UNKNOWN)
		*state = ask() ? KF_YES : KF_NO;
	return *state == KF_YES;
}

static bool kprov_ask_kprobe(void)
{
	int fd;

	/* perf_event_open's kprobe PMU, or the tracefs interface */
	if (access("/sys/bus/event_source/devices/kprobe/type", R_OK) &&
	    access("/sys/kernel/tracing/kprobe_events", F_OK) &&
	    access("/sys/kernel/debug/tracing/kprobe_events", F_OK))
		return false;
	fd = kprov_load(BPF_PROG_TYPE_KPROBE, 0, 0);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static bool kprov_ask_rawtp(void)
{
	int fd = kprov_load(BPF_PROG_TYPE_RAW_TRACEPOINT, 0, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool kprov_kprobe(void)
{
	static int s;

	return kprov_answer(&s, kprov_ask_kprobe, "kprobe");
}

/* kprobe_multi, fentry and BTF are kfeat's probes (probes/kfeat.c) */
bool kprov_kprobe_multi(void)
{
	return !kprov_hidden("kprobe_multi") && kprov_kprobe() &&
	       kfeat_has(KFEAT_KPROBE_MULTI);
}

bool kprov_fentry(void)
{
	return !kprov_hidden("fentry") && kprov_btf() &&
	       kfeat_has(KFEAT_FENTRY);
}

bool kprov_d_path(void)
{
	return !kprov_hidden("d_path") && kprov_fentry() &&
	       kfeat_has(KFEAT_D_PATH);
}

bool kprov_rawtp(void)
{
	static int s;

	return kprov_answer(&s, kprov_ask_rawtp, "rawtp");
}

bool kprov_btf(void)
{
	return !kprov_hidden("btf") && kfeat_has(KFEAT_BTF);
}

static bool kprov_is(const char *p, const char *a, const char *b)
{
	return !strcmp(p, a) || (b && !strcmp(p, b));
}

bool kprov_provider(const char *p)
{
	if (kprov_is(p, "kprobe", "kretprobe"))
		return kprov_kprobe();
	if (kprov_is(p, "kfunc", "kretfunc"))
		return kprov_fentry();
	if (kprov_is(p, "rawtracepoint", NULL))
		return kprov_rawtp();
	return true;
}

const char *kprov_missing(const char *p)
{
	if (kprov_provider(p))
		return NULL;
	if (kprov_is(p, "kprobe", "kretprobe"))
		return "this kernel has no kprobes (no kprobe PMU, no kprobe_events)";
	if (kprov_is(p, "kfunc", "kretfunc"))
		return kprov_btf() ?
			       "this kernel does not load fentry programs (BPF trampolines)" :
			       "this kernel has no BTF (/sys/kernel/btf/vmlinux), which fentry programs need";
	return "this kernel does not load raw tracepoint programs";
}
