/*
 * The kernel side of the shim: load a cg_object with libbpf, attach its
 * programs (uprobes, tracepoints, interval perf events, BEGIN/END), read
 * the ring buffer and the maps, run until exit()/Ctrl-C/the -c child or
 * the -p process ends.
 */
#ifndef UBT_KERNEL_H
#define UBT_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct compile;
struct cg_object;
struct cg_map;
struct cg_prog;
struct metrics;
struct out;
struct out_map;

struct kernel_opts {
	size_t sz;		/* sizeof(struct kernel_opts) */
	int pid;		/* -p PID, 0 if none */
	const char *cmd;	/* -c CMD, NULL if none */
	bool dry_run;		/* --dry-run: everything but load/attach */
	bool dump_ir;		/* -d ir */
	bool dump_bpf;		/* -d bpf */
	int verbose;		/* -v */
	bool quiet;		/* -q: no "Attaching N probes..." */
	FILE *out;		/* -o FILE; NULL = stdout */
	bool json;		/* -f json */
	struct metrics *metrics;	/* --metrics: served by the loop, or
					 * NULL */
};

/*
 * Build (cg_build), load, attach, print "Attaching N probes...", run
 * until exit()/Ctrl-C/-c child exit/-p process exit, stop the probes
 * (a flag every program checks first), run END, print the maps, detach.
 * Uprobes are attached as uprobe_multi links (one per binary) when the
 * kernel has them (probes/kfeat.h), else as one perf event each. With many probes, the detaching (one RCU wait per
 * tracepoint in the kernel) is left to a child process that runs after
 * ubt has exited; the probes do nothing meanwhile. Returns the process
 * exit code (0, or 1 after an error, which has been printed; the
 * diagnostics cg_build() adds to c->diag are printed here).
 */
int kernel_run(struct compile *c, const struct kernel_opts *o);

/* The pieces kernel_run() is made of, for tests and the driver. */
struct kernel;

/* Open and load obj (verifier log printed on rejection).  -ENOEXEC: the
 * verifier refused a helper in the function a probe attaches to
 * (path()'s bpf_d_path outside its allowlist): as bpftrace 0.17, whose
 * load comes after it, "Attaching N probes..." and the located error are
 * printed, and the run's exit status is KERNEL_REFUSED_STATUS. */
#define KERNEL_REFUSED_STATUS 255
int kernel_load(const struct cg_object *obj, const struct kernel_opts *o,
		struct kernel **out);
/* Attach every program but the timers, so that programs on one event
 * run in program order; *nprobes counts attach points. 0 or -errno,
 * with nothing left attached on error. */
int kernel_attach(struct kernel *k, int *nprobes);
/* Attach interval and profile programs (after BEGIN has run: their
 * periods start now).  0 or -errno, with nothing left attached on
 * error. */
int kernel_attach_timers(struct kernel *k);
/* Program prog, standby no more, attached after kernel_attach() (a -p/-c
 * target's user-mode probes moved to the kernel: run/run_fallback.c).
 * 0 or -errno. */
int kernel_attach_late(struct kernel *k, int prog);
/* Run the iter probe's iterator, if there is one, to its end, then take
 * its events; the run then ends as after exit() (returns true).  False
 * when there is none; on error, a message and k->err set. */
bool kernel_run_iter(struct kernel *k);
/* Run the BEGIN probes (once). */
int kernel_run_begin(struct kernel *k);
int kernel_run_end(struct kernel *k);
/* Poll the ring buffer for at most timeout_ms; dispatches events.
 * Returns >= 0 events handled, -errno on error. */
int kernel_poll(struct kernel *k, int timeout_ms);
/* Take every record in the ring now, without waiting (and report
 * losses); >= 0 records, -errno. */
int kernel_drain(struct kernel *k);
/* Set the exit flag every program checks first: the probes (but BEGIN
 * and END) do nothing more. */
void kernel_stop_probes(struct kernel *k);
/* exit() was called in the program. */
bool kernel_exiting(const struct kernel *k);
/* The code of the exit(code) that ended the run, 0 without one. */
int kernel_exit_code(const struct kernel *k);
/* The exit status after kernel_attach() failed: bpftrace 0.17's 255
 * for a kprobe the kernel refused, 1 otherwise. */
int kernel_attach_status(const struct kernel *k);
/* Map fd for a cg_map index, -1 when not loaded. */
int kernel_map_fd(const struct kernel *k, int map);
/* Are the object's standby programs (cg.h) loaded: the verifier refused
 * one, and the object was loaded without them (a warning said so)? */
bool kernel_standby_loaded(const struct kernel *k);
/* One of ubt's own maps in the object (codegen/cg.h CG_MAP_*), or -1. */
int kernel_own_map_fd(const struct kernel *k, const char *name);
/*
 * Read every entry of map `map` with per-CPU values merged
 * (counts/sums add, min/max combine, hist buckets add); calls fn for
 * each user key with the merged value (the layout of cg.h's comment for
 * one CPU). For bucketed maps fn is called per (key, bucket).
 */
typedef int (*kernel_entry_fn)(const void *key, const void *value,
			       void *ctx);
int kernel_map_read(struct kernel *k, int map, kernel_entry_fn fn, void *ctx);
/* Updates of map `map` that found it full (E2BIG, ENOMEM), all CPUs. */
uint64_t kernel_map_full(struct kernel *k, int map);
/* clear(): delete every entry; zero(): set every value to zero. */
int kernel_map_clear(struct kernel *k, int map);
int kernel_map_zero(struct kernel *k, int map);
/* clear() as an event does it: the kernel's map, then the user side
 * through the map hook (kernel_set_map_hook()); every map of the program
 * so (SIGHUP under --metrics). */
/* own: a user-mode thread's values at its clear() of a keyless
 * aggregation (the event's, CG_EV_CLEAR), or NULL */
void kernel_map_clear_both(struct kernel *k, int map, const void *own);
void kernel_clear_all_maps(struct kernel *k);
void kernel_free(struct kernel *k);

/*
 * For shim/run/run.c, which runs kernel and user-mode probes together:
 * the compilation (for map printing), the globals (start time, cpid),
 * a record handed in from elsewhere (a user ring), printing every map,
 * and a source that kernel_map_read() asks instead of reading the BPF
 * map alone (it calls kernel_map_read_kernel() and merges other values
 * with kernel_merge_value(), as per-CPU values merge).
 */
void kernel_set_compile(struct kernel *k, struct compile *c);
int kernel_set_globals(struct kernel *k, uint64_t cpid);
int kernel_handle_event(struct kernel *k, const void *data, size_t size);
int kernel_print_maps(struct kernel *k);
/* Every map, as bpftrace prints them on SIGUSR1 (the run goes on). */
int kernel_print_maps_now(struct kernel *k);
typedef int (*kernel_source_fn)(void *ctx, int map, kernel_entry_fn fn,
				void *fctx);
void kernel_set_source(struct kernel *k, kernel_source_fn fn, void *ctx);
int kernel_map_read_kernel(struct kernel *k, int map, kernel_entry_fn fn,
			   void *ctx);
void kernel_merge_value(const struct cg_map *m, void *acc, const void *v);
/*
 * Called for every clear()/zero() event (kind CG_EV_CLEAR/CG_EV_ZERO, key
 * NULL) after the kernel's map was cleared or zeroed, and for every
 * CG_EV_DELETE event (a user-mode probe's delete() of an aggregation's
 * key) after the key was deleted from the kernel's map: events of both
 * sides, handed in through kernel_handle_event() or from the ring buffer.
 */
typedef void (*kernel_map_hook_fn)(void *ctx, int kind, int map,
				   const void *key);
void kernel_set_map_hook(struct kernel *k, kernel_map_hook_fn fn, void *ctx);
/*
 * Records of the ring buffer go to fn instead of being printed (NULL:
 * printed), for shim/run/run.c, which merges them with the user rings' and
 * prints each through kernel_handle_event().
 */
typedef int (*kernel_event_fn)(void *ctx, const void *data, size_t size);
void kernel_set_event_hook(struct kernel *k, kernel_event_fn fn, void *ctx);
/* The programs `probe` and `func` values index (default: the object's). */
void kernel_set_display_progs(struct kernel *k, const struct cg_prog *progs,
			      int n);

/*
 * --metrics (kernel_metrics.c): every map read as the exit printout reads
 * it, fn(ctx, map index, its entries, the out that prints its keys);
 * the endpoint given the maps and the kernel's own numbers (NULL k: taken
 * back); the events lost so far.
 */
typedef int (*kernel_out_map_fn)(void *ctx, int map, const struct out_map *om,
				 const struct out *o);
int kernel_for_each_map(struct kernel *k, kernel_out_map_fn fn, void *ctx);
void kernel_metrics_serve(struct kernel *k, struct metrics *m);
uint64_t kernel_events_lost(const struct kernel *k);

/* Route libbpf's messages: warnings to stderr, debug only with -v. */
void kernel_set_verbose(int verbose);

#endif
