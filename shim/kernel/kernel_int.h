/*
 * State shared by the parts of the kernel side (shim/README): struct
 * kernel, owned by kernel_load.c (kernel_load(), kernel_free()), filled
 * by kernel_attach.c, read by kernel_maps.c, kernel_events.c and
 * kernel_display.c.
 */
#ifndef UBT_KERNEL_INT_H
#define UBT_KERNEL_INT_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include "cg.h"
#include "child.h"
#include "compile.h"
#include "format.h"
#include "exitwatch.h"
#include "kernel.h"
#include "output.h"
#include "probes.h"
#include "sema.h"
#include "tracepoint.h"
#include "util.h"

/* A concrete attach target of one program. */
struct kernel_target {
	int prog;		/* cg_prog index */
	struct probes_match m;
};

/* A watchpoint ubt placed (kernel_watch.c). */
struct kernel_watch {
	int prog;		/* cg_prog index */
	uint64_t addr;
	int pid;		/* -1: every process */
	int link;		/* index in kernel.links, -1 after unwatch */
};

struct kernel {
	const struct cg_object *obj;
	/* the standby programs (cg.h) did not load: the object was loaded
	 * again without them (kernel_load()) */
	bool standby_dropped;
	struct compile *c;
	struct arena arena;
	const struct kernel_opts *opts;
	struct out out;
	struct bpf_object *bo;
	struct bpf_program **progs;	/* by cg_prog index */
	bool *multi;		/* by cg_prog index: uprobe_multi links */
	int *map_fds;
	int globals_fd;
	int lost_fd;
	int full_fd;		/* cg_object.full_name, -1 if none */
	uint64_t lost;		/* losses reported so far */
	struct ring_buffer *rb;
	struct bpf_link **links;
	int nlinks, caplinks;
	struct bpf_link *iter;	/* the iter probe's link (also in links) */
	int *pfds;		/* perf event fds */
	int npfds, cappfds;
	struct kernel_target *targets;
	int ntargets;
	struct fmt_string *fmts;	/* by event index */
	const struct type **ev_types;	/* by event: the arguments' type
					 * for output (kernel_display_type) */
	int ncpus;
	bool exiting;		/* exit() seen */
	int exit_code;		/* exit(code)'s, 0 without one */
	bool in_end;		/* running END: events are printed again */
	bool in_iter;		/* running an iterator: its events print
				 * after exit() too, as bpftrace's */
	bool stopped;		/* kernel_stop_probes() done */
	char *log_buf;		/* BPFTRACE_LOG_SIZE bytes, or NULL */
	kernel_source_fn source;	/* shim/run/run.c: maps of both sides */
	kernel_event_fn hook;	/* shim/run/run.c: records to merge, or NULL */
	void *hook_ctx;
	const struct cg_prog *dprogs;	/* for probe/func values, or NULL */
	int ndprogs;
	void *source_ctx;
	kernel_map_hook_fn map_hook;	/* shim/run/run.c: the user side too */
	void *map_hook_ctx;
	struct stack_syms *syms;	/* kernel_syms(): symbols, stacks */
	bool display_key;	/* kernel_display() of a map key: stacks
				 * indented by 4, as bpftrace prints keys */
	int err;
	int cpid;		/* the -c command's pid, 0 if none */
	struct kernel_watch *watches;
	int nwatches, capwatches;
	int attach_status;	/* exit status of a failed attach, 0: 1 */
};

/* kernel_attach_err.c: "ERROR: Error attaching probe: NAME" after the
 * reason, and the exit status 255, as bpftrace 0.17 ends such a run */
void kernel_attach_error(struct kernel *k, const struct cg_prog *p,
			 const struct probes_match *m);

/* kernel_kprobe.c: kprobe, kretprobe, kfunc, kretfunc, rawtracepoint
 * programs, and attaching one (all its targets); 0 or -errno. */
bool kernel_kprobe_is(const struct cg_prog *p);
/* kernel_load.c: -v's level, -1 while libbpf's messages are held back */
int kernel_get_verbose(void);
/*
 * Hold libbpf's messages (kernel_log_hold()) instead of printing them,
 * then print them or not (kernel_log_release()); kernel_log_held(): the
 * text held so far ("" when none); kernel_log_failed_prog(): the ELF name of
 * the program libbpf says the kernel refused (NULL: none named).
 */
void kernel_log_hold(void);
const char *kernel_log_held(void);
void kernel_log_release(bool print);
const char *kernel_log_failed_prog(void);
int kernel_kprobe_attach_prog(struct kernel *k, int i);

/* kernel_link.c: a link to detach at the end; prog attached to the perf
 * event fd (the link owns fd). */
void kernel_add_link(struct kernel *k, struct bpf_link *l);
void kernel_add_pfd(struct kernel *k, int fd);	/* ubt closes it */
struct bpf_link *kernel_attach_pfd(struct kernel *k,
				   struct bpf_program *prog, int fd);

/* kernel_watch.c: attach a watchpoint program (one whose address comes
 * at run time waits for it); the events of watchpoints. */
int kernel_watch_attach(struct kernel *k, int prog);
void kernel_watch_resume(struct kernel *k);
void kernel_watch_event(struct kernel *k, const struct cg_event *e,
			const void *args, size_t size);

/* The symbolizer of ustack/usym/kstack/ksym values (made on first use). */
struct stack_syms *kernel_syms(struct kernel *k);
/* CG_EV_STACK_NOTE and CG_EV_USTACK records (kernel_display.c). */
void kernel_stack_event(struct kernel *k, const struct cg_event *e,
			const void *args, size_t size);

/* The type output is given: probe and usym values become strings. */
const struct type *kernel_display_type(struct kernel *k,
					      const struct type *t);

/* Convert a value for output when needed; returns src or *tmp. */
const void *kernel_display(struct kernel *k, const struct type *t,
				  const struct type *dt, const void *src,
				  void **tmp);

int kernel_print_map(struct kernel *k, int i, uint64_t top,
			    uint64_t div);

/* Every map (at exit after two newlines, else as on SIGUSR1). */
int kernel_print_all_maps(struct kernel *k, bool at_exit);

/* A record of the ring buffer: printed, or handed to the hook. */
int kernel_rb_event(void *ctx, void *data, size_t size);

/* "Map full" at exit, for each map that refused updates. */
void kernel_map_full_warnings(struct kernel *k);

/* Take every record waiting in the ring, then report losses. */
void kernel_consume(struct kernel *k);

/*
 * Uprobe programs are attached with one uprobe_multi link per binary
 * where the kernel has them (kfeat_has(KFEAT_UPROBE_MULTI), which asks
 * for a link: Debian 12's 6.1 loads such a program and then refuses its
 * link), else with one perf event per uprobe (libbpf 1.1 has no API for
 * the links); the kernel registers and
 * unregisters all of a link's uprobes with one RCU wait instead of one
 * per uprobe (~0.1-0.2 s each on this kernel).
 */
#define KERNEL_BPF_LINK_CREATE 28

#define KERNEL_BPF_TRACE_UPROBE_MULTI 48

#define KERNEL_BPF_F_UPROBE_MULTI_RETURN 1

bool kernel_use_multi(const struct cg_prog *p);

void kernel_detach(struct kernel *k);

void kernel_detach_fast(struct kernel *k);

/* ---- -c CMD -------------------------------------------------------- */

struct kernel_child {
	pid_t pid;
	int go;			/* write end: the child execs when closed */
	int pidfd;
	bool exited;		/* reaped, with its wait status: */
	int status;		/* -1 if not known */
};

int kernel_child_start(const char *cmd, struct kernel_child *ch);

void kernel_child_go(struct kernel_child *ch);

void kernel_child_kill(struct kernel_child *ch);

#endif
