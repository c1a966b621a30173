/*
 * What the running kernel lets ubt attach, each asked of the kernel
 * itself (a program it loads, a link it creates, a file it has), never
 * inferred from its version. Each answer is asked once and kept.
 *
 *   kprobe        kprobes: a kprobe program loads and the kernel has a
 *                 kprobe PMU or tracefs kprobe_events
 *   kprobe_multi  a BPF_TRACE_KPROBE_MULTI link can be created (asked
 *                 with a symbol that does not exist: ESRCH says yes)
 *   fentry        kernel BTF, and a tracing program attached at a
 *                 function's BTF id (BPF trampolines) loads
 *   rawtp         a raw tracepoint program loads
 *   btf           /sys/kernel/btf/vmlinux can be read
 *
 * UBT_KFEAT_HIDE=NAME[,NAME...] (the names above) makes ubt take those
 * as missing, for tests of the refusals on kernels that have them.
 *
 * kfeat_missing() gives the words of the error for a probe kind whose
 * feature the kernel lacks (kfeat_provider() false).
 */
#ifndef UBT_KFEAT_H
#define UBT_KFEAT_H

#include <stdbool.h>

bool kfeat_kprobe(void);
bool kfeat_kprobe_multi(void);
bool kfeat_fentry(void);
bool kfeat_rawtp(void);
bool kfeat_btf(void);

/*
 * Does the kernel have what the provider ("kprobe", "kretprobe",
 * "kfunc", "kretfunc", "rawtracepoint") needs? Other providers: true.
 */
bool kfeat_provider(const char *provider);
/* The HINT naming what is missing for provider, or NULL. */
const char *kfeat_missing(const char *provider);

#endif
