/*
 * kprov: the kernel probe kinds (kprobe, kretprobe, kfunc, kretfunc,
 * rawtracepoint) the running kernel lets ubt attach, each asked of the kernel
 * itself (a program it loads, a link it creates, a file it has), never
 * inferred from its version. Each answer is asked once and kept.
 *
 *   kprobe        kprobes: a kprobe program loads and the kernel has a
 *                 kprobe PMU or tracefs kprobe_events
 *   kprobe_multi  kprobes, and kfeat_has(KFEAT_KPROBE_MULTI): a link
 *                 with a symbol that does not exist is refused with ESRCH
 *   fentry        kprov_btf(), and kfeat_has(KFEAT_FENTRY): a tracing
 *                 program attached at a function's BTF id (a trampoline)
 *   rawtp         a raw tracepoint program loads
 *   btf           kfeat_has(KFEAT_BTF): /sys/kernel/btf/vmlinux is BTF
 *   d_path        fentry, and kfeat_has(KFEAT_D_PATH): path()'s helper,
 *                 bpf_d_path, loads in an fentry program (bpftrace 0.17's
 *                 "dpath")
 *
 * UBT_KERNEL_LACKS=NAME[,NAME...] (the names above) makes ubt take those
 * as missing, for tests of the refusals on kernels that have them.
 *
 * kprov_missing() gives the words of the error for a probe kind whose
 * feature the kernel lacks (kprov_provider() false).
 */
#ifndef UBT_KPROV_H
#define UBT_KPROV_H

#include <stdbool.h>

bool kprov_kprobe(void);
bool kprov_kprobe_multi(void);
bool kprov_fentry(void);
bool kprov_rawtp(void);
bool kprov_btf(void);
bool kprov_d_path(void);

/*
 * Does the kernel have what the provider ("kprobe", "kretprobe",
 * "kfunc", "kretfunc", "rawtracepoint") needs? Other providers: true.
 */
bool kprov_provider(const char *provider);
/* The HINT naming what is missing for provider, or NULL. */
const char *kprov_missing(const char *provider);

#endif
