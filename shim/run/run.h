/*
 * The run loop for kernel and user-mode probes together (DESIGN.md
 * "shim/"): decide per probe where it runs, build the BPF object for the
 * kernel probes and native code for the user-mode ones from the same typed
 * AST, attach both, print one stream of events, merge maps from both sides,
 * detach leaving no patched byte.
 */
#ifndef UBT_RUN_H
#define UBT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compile.h"

struct metrics;

struct run_opts {
	size_t sz;		/* sizeof(struct run_opts) */
	int pid;		/* -p PID, 0 if none */
	const char *cmd;	/* -c CMD, NULL if none */
	enum ubt_mode mode;	/* --mode */
	bool dry_run;		/* --dry-run */
	bool dump_ir;		/* -d ir */
	bool dump_bpf;		/* -d bpf */
	bool dump_native;	/* -d native: user-mode probes' code */
	int verbose;		/* -v */
	bool quiet;		/* -q */
	bool json;		/* -f json */
	FILE *out;		/* -o FILE; NULL = stdout */
	const char *runtime_path;	/* libubt-rt.so; NULL: the default */
	/* --all-processes: system-wide user mode (no -p/-c) also takes
	 * processes that were running before ubt started (shim/run/sysw.c) */
	bool all_processes;
	struct metrics *metrics;	/* --metrics (shim/metrics/), NULL */
};

enum run_where {
	RUN_KERNEL,
	RUN_USER,
	RUN_BOTH,	/* some sites in user mode, the rest in the kernel */
};

struct probes_match;

/* Where one site of a uprobe/uretprobe probe runs, and why. */
struct run_site_decision {
	const char *bin;	/* resolved path */
	const char *func;
	uint64_t func_offset;
	bool ret;		/* uretprobe */
	bool usdt;		/* a USDT site: func_offset is its nop's */
	uint64_t addr;		/* usdt: the site's address in the file */
	const char *name;	/* "uprobe:/bin/x:f", for -v */
	enum run_where where;	/* RUN_KERNEL or RUN_USER */
	const char *why;	/* RUN_KERNEL: why not user mode, in full */
	const char *reason;	/* the same, short, for -v under the probe */
	uint64_t span_lo, span_hi;	/* RUN_USER: the bytes patched,
					 * from the function's start */
	uint64_t fhash;		/* run_func_hash(func), 0: not known */
};

/* A function name's hash, never 0: compared before the names are (a
 * library's wildcard compares every site with every other). */
uint64_t run_func_hash(const char *func);

/*
 * Where one probe (AST_PROBE, by probe index) runs, and why; its sites
 * when it has uprobe sites in a -p/-c target (each weighed alone: a probe
 * runs in user mode at the sites that can be patched, RUN_BOTH).
 */
struct run_decision {
	enum run_where where;
	const char *why;	/* in c->arena */
	struct run_site_decision *sites;
	int nsites;
	bool sarg;		/* the probe reads stack arguments */
	bool weighed;		/* where each site runs is its own (-v) */
};

/* Where site m of probe p runs: RUN_KERNEL or RUN_USER. */
enum run_where run_site_where(const struct run_decision *d,
			      const struct probes_match *m);

/*
 * Decide for every probe of c->program (after sema). With --mode user, a
 * uprobe/uretprobe that cannot run in user mode is an error: -EINVAL,
 * with a message printed. *out is allocated in c->arena, indexed by probe
 * index.
 */
int run_decide(struct compile *c, const struct run_opts *o,
	       struct run_decision **out);

/*
 * Build, attach, run until exit()/Ctrl-C/-c child exit/-p process exit,
 * print the maps, detach. -v and --dry-run print each probe's decision
 * on stderr. Returns the process exit code (0, or 1 after an error, which
 * has been printed).
 */
int shim_run(struct compile *c, const struct run_opts *o);

#endif
