/*
 * kfeat: what the running kernel gives ubt, each feature asked of it by
 * trying it (a map created, a program loaded, a link refused for the
 * right reason), never assumed from a version number.  Asked once per
 * feature, on first use, and remembered.  The frontend, codegen and the
 * shim consult it; ubt --info prints it ("Kernel features").
 */
#ifndef UBT_KFEAT_H
#define UBT_KFEAT_H

#include <stdbool.h>
#include <stdio.h>

struct btf;

enum kfeat {
	KFEAT_BTF,		/* vmlinux BTF */
	KFEAT_MODULE_BTF,	/* BTF of loaded modules */
	KFEAT_RINGBUF,		/* BPF_MAP_TYPE_RINGBUF */
	KFEAT_MMAPABLE,		/* BPF_F_MMAPABLE arrays that mmap() */
	KFEAT_TASK_STORAGE,	/* task storage from tracing programs */
	KFEAT_LOOP,		/* the bpf_loop() helper */
	KFEAT_COOKIE,		/* bpf_get_attach_cookie() */
	KFEAT_PERF_LINK,	/* BPF links over perf events */
	KFEAT_UPROBE_MULTI,	/* uprobe_multi links, per-process filter */
	KFEAT_KPROBE_MULTI,	/* kprobe_multi links */
	KFEAT_FENTRY,		/* fentry trampolines (attached) */
	KFEAT_RAW_TP_BTF,	/* BTF-typed raw tracepoints */
	KFEAT_HW_BREAKPOINT,	/* hardware breakpoints delivered */
	KFEAT_D_PATH,		/* bpf_d_path() in a tracing program */
	KFEAT_NR
};

/* Has the running kernel this feature?  Asked once, then remembered. */
bool kfeat_has(enum kfeat f);

/*
 * The running kernel's vmlinux BTF, parsed once and kept (NULL without
 * it): the frontend's and codegen's lookups share it with the probes
 * here, a parse taking seconds in an emulated guest.
 */
struct btf *kfeat_vmlinux_btf(void);

/* Its name as ubt --info and the errors that need it print it. */
const char *kfeat_name(enum kfeat f);

/* Every feature, one "  NAME: yes|no" line each (ubt --info). */
void kfeat_print(FILE *f);

/*
 * "this kernel has no NAME" when f is missing, else NULL: the reason
 * -v prints, or the end of an error ("ubt: cannot ...: %s").
 */
const char *kfeat_missing(enum kfeat f);

#endif
