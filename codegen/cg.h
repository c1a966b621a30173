/*
 * Code generation: one lowering of the typed AST (after sema) to LLVM IR
 * through the LLVM-C API, behind the irb_* helpers (irb.h), emitted for a
 * target. Only the BPF target exists for now; the native x86-64 target for
 * user-mode probes differs only in the irb_* helpers.
 *
 * cg_build() produces a cg_object: the BPF ELF image handed to libbpf
 * (shim/kernel/kernel.c), and the tables that let the shim attach programs,
 * decode ring-buffer events and read maps back.
 *
 * Ring-buffer records start with a struct cg_event_hdr; the id indexes
 * cg_object.events, whose entry says what the record is and where each
 * argument lies in the record (offsets from the start of the record).
 */
#ifndef UBT_CG_H
#define UBT_CG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct compile;
struct type;
struct ast_node;
struct ast_attach_point;
struct probes_match;

enum cg_target {
	CG_TARGET_BPF,
	CG_TARGET_NATIVE,	/* user-mode probes: codegen/native.h */
};

/* What a ring-buffer record is. */
enum cg_event_kind {
	CG_EV_PRINTF,		/* fmt + args */
	CG_EV_TIME,		/* fmt (strftime) */
	CG_EV_EXIT,
	CG_EV_PRINT,		/* print(@map) / print(@map, top, div): map */
	CG_EV_PRINT_VALUE,	/* print(expr): one arg */
	CG_EV_CLEAR,		/* clear(@map): map */
	CG_EV_ZERO,		/* zero(@map): map */
	CG_EV_SYSTEM,		/* system(fmt, args): the command's output */
	CG_EV_CAT,		/* cat(fmt, args): the file's contents */
	CG_EV_DELETE,		/* delete(@agg[key]) in a user-mode probe:
				 * map, the key at offset 8 (the shim
				 * deletes it elsewhere) */
	CG_EV_WATCH,		/* a watchpoint's function was called: prog,
				 * sync; u64 address, u64 pid_tgid */
	CG_EV_UNWATCH,		/* unwatch(addr): u64 address */
	CG_EV_STACK_NOTE,	/* { hdr; u64 pid }: the process stopped
				 * itself for ubt to note its mappings, then
				 * let it go on (codegen/cg_stack.c) */
	CG_EV_USTACK,		/* { hdr; u64 id; u64 n; u64 frames[n] }:
				 * the frames of a user-mode probe's ustack
				 * id, sent once per thread and id */
	CG_EV_JOIN,		/* join(argv, sep): fmt the separator;
				 * CG_JOIN_ARGS strings of CG_JOIN_SIZE
				 * bytes at offset 8, "" after the last */
	CG_EV_HELPER_ERROR,	/* -k/-kk: helper and loc; the helper's
				 * return value (s64) at offset 8 */
};

/* The helper of a CG_EV_HELPER_ERROR that is the newest bpftrace's
 * division-by-zero warning (codegen/cg_div.c), not a helper's failure. */
#define CG_DIV_ZERO_HELPER "(division by zero)"
/* ... and its warning of an index past an array's end (compat
 * array-bounds, codegen/cg_div.c) */
#define CG_ARRAY_OOB_HELPER "(array out of bounds)"


/* Header of every ring-buffer record. */
struct cg_event_hdr {
	uint64_t id;		/* index into cg_object.events */
};

/*
 * When the events of one program come from the kernel's ring and from the
 * user rings (shim/run/run.c merges them in time order), every record ends in
 * a u64 time stamp, after the record padded to 8 bytes: the record's size
 * becomes cg_record_room(size).  CG_TIME_NS: CLOCK_MONOTONIC ns
 * (bpf_ktime_get_ns(), in the native target the vDSO's clock_gettime()
 * through the runtime's RT_FN_CLOCK_NS);
 * CG_TIME_TSC: the native target stores the raw time-stamp counter
 * (rdtsc, converted by the shim), the BPF target ns as for CG_TIME_NS.
 */
enum cg_event_time {
	CG_TIME_NONE,
	CG_TIME_NS,
	CG_TIME_TSC,
};

static inline size_t cg_record_room(enum cg_event_time t, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	return t == CG_TIME_NONE ? size : size + 8;
}

/*
 * Values the BPF side cannot print are written as ids the shim turns into
 * text (kernel.c converts them to strings before output):
 *   TY_PROBE: u64 index into cg_object.progs (probe_name)
 *   TY_USYM from `func` in a uprobe: { u64 address; u32 pid;
 *           u32 cg_object.progs index + 1 } (the program's function);
 *   TY_USYM from usym(): { u64 address; u32 pid; u32 0 }
 *   TY_KSTACK: s64 stack id in the map CG_MAP_STACK_PREFIX<limit>
 *           (negative: the kernel's error, an empty stack)
 *   TY_USTACK: { s64 stack id; u32 pid; u32 flags }: flags
 *           CG_USTACK_NATIVE: the id names frames a user-mode probe
 *           sent (CG_EV_USTACK), not an entry of the stack map
 *   TY_KSYM from ksym(): u64 address
 */
#define CG_USTACK_NATIVE 1u

struct cg_arg {
	const struct type *type;	/* sema's type of the argument */
	size_t offset;		/* from the start of the record */
	size_t size;
};

struct cg_event {
	enum cg_event_kind kind;
	const char *fmt;	/* printf/time format, NULL otherwise */
	int fmt_id;		/* sema_fmt id, -1 when none */
	const struct ast_node *call;	/* the call, for messages */
	const struct type *args_type;	/* printf/time/system/cat: sema's
					 * TY_TUPLE of the arguments, at
					 * offset 8 of the record */
	struct cg_arg *args;
	int nargs;
	size_t size;		/* record size, header included */
	int map;		/* CG_EV_PRINT/CLEAR/ZERO/DELETE: map index */
	int64_t top, div;	/* print(@m, top, div); 0 when not given */
	const char *helper;	/* CG_EV_HELPER_ERROR: bpftrace's name of
				 * the helper that failed */
	const struct ast_loc *loc;	/* CG_EV_HELPER_ERROR: where (in the
					 * AST; call is NULL) */
	bool native;		/* CG_EV_DELETE: sent by native code (the
				 * kernel's copy of the key is still there);
				 * CG_EV_CLEAR/ZERO: the thread's values of
				 * a keyless aggregation follow the header */
	int prog;		/* CG_EV_WATCH: the watchpoint's program */
	bool sync;		/* CG_EV_WATCH: the thread waits, stopped */
};

/*
 * A bpftrace map. Aggregations are stored as bpftrace's semantics need and
 * read back merged; the layouts are:
 *   count/sum:   per-CPU u64/s64
 *   min/max:     per-CPU { s64/u64 value; u64 set; }
 *   avg/stats:   per-CPU { u64 count; s64/u64 total; }
 *   hist/lhist:  per-CPU u64 counts; the BPF key is the user key padded
 *                to 8 bytes, then a u64 bucket index as out_hist_index()
 *                and out_lhist_index() (shim/output/output.h) compute it
 *   other:       plain value of value_type's size
 * The user key is the bytes of sema's key type (one key's type, or the
 * tuple of the key expressions' types); keyless maps use a u64 key 0
 * (keyless hist maps only the bucket).
 */
struct cg_map {
	const char *name;	/* "@", "@name" */
	const char *bpf_name;	/* name in the ELF ("AT_name") */
	const struct type *key_type;	/* NULL for keyless maps */
	const struct type *value_type;	/* sema's type (TY_COUNT, TY_INT...) */
	size_t key_size;	/* BPF key size (bucket index included) */
	size_t value_size;	/* BPF value size (one CPU) */
	bool percpu;
	bool bucketed;		/* hist/lhist: key ends with a u64 bucket */
	uint32_t max_entries;
	/* an ordinary map shared by user-mode and kernel probes: a table in
	 * a BPF_F_MMAPABLE array that the target maps (codegen/cg_xmap.h);
	 * xmap_slots its slots */
	bool xmap;
	uint32_t xmap_slots;
};

/*
 * One BPF program per attach point, attached to each of the attach
 * point's concrete matches (probes/probes.h probes_expand(), run by
 * cg_build()); one program per match instead when the probe uses `probe`
 * or `func`, so that their values are known per program.
 */
struct cg_prog {
	const char *name;	/* function name in the ELF */
	const char *section;	/* "uprobe", "tracepoint", "raw_tp", ... */
	const struct ast_node *probe;	/* AST_PROBE */
	const struct ast_node *ap;	/* AST_ATTACH_POINT */
	int provider;		/* enum sema_provider */
	const char *probe_name;	/* the `probe` builtin's value */
	const struct probes_match *matches;	/* where to attach */
	int nmatches;
	/* watchpoint:FUNC+argN: attached at run time, when the uprobe
	 * program at FUNC reports the address (shim/kernel/kernel_watch.c) */
	bool watch_later;
	/* ubt's own program (a watchpoint's uprobe): not a probe the
	 * "Attaching N probes..." line counts */
	bool internal;
	/* native target: the program's relocation-free code (malloc'ed) */
	void *code;
	size_t code_len;
	bool ctx_unused;	/* native: the code never reads its context */
	/* built but not placed: a BPF program of cg_opts.standby is not
	 * attached, a native one not installed (shim/run/run_xmap.c turns
	 * them: the probe runs in the kernel after all) */
	bool standby;
	/* the program calls path(): bpftrace's located error, printed
	 * when the verifier refuses bpf_d_path in this function */
	const char *d_path_refused;
};

/*
 * ubt's own maps in the object, beside the program's maps (AT_<name>):
 * outside that namespace, so that a program's @_ringbuf is its own.
 */
#define CG_MAP_RINGBUF "ubt_ringbuf"
#define CG_MAP_LOST "ubt_lost"
#define CG_MAP_GLOBALS "ubt_globals"
#define CG_MAP_JOIN "ubt_join"	/* per-CPU room for join() records */
/* join(): at most 16 strings of 1024 bytes, as bpftrace 0.17 */
#define CG_JOIN_ARGS 16
#define CG_JOIN_SIZE 1024
#define CG_MAP_FULL "ubt_full"
/* per-CPU and per-task room for big temporaries (codegen/irb_scratch.c) */
#define CG_MAP_SCRATCH "ubt_scratch"
#define CG_MAP_SCRATCH_TASK "ubt_scratch_task"
/*
 * The processes whose sites ubt patched system-wide (shim/run/sysw.c), and
 * their children: tgid (u32) -> the take's generation (u32, not 0), read
 * by the kernel programs cg_opts.skip_taken names.
 */
#define CG_MAP_TAKEN "ubt_taken"
#define CG_TAKEN_MAX 8192
/*
 * The calls the kernel saw enter in a process taken (another tracer's
 * int3 on the function; shim/run/sysw_bpf.c): {pid_tgid (u64), the stack
 * pointer they return with (u64)} -> the generation; a uretprobe's
 * program there skips their returns (user mode counts them).
 */
#define CG_MAP_RETMARK "ubt_retmark"
#define CG_RETMARK_MAX 16384
/*
 * The sites patched in the processes of a take (shared by its children):
 * {generation (u32), 0 (u32), the kernel probe's address (u64)} -> u32.
 * A uprobe's or usdt probe's program skips a hit there only: a site
 * mapped after the take (dlopen) or refused counts in the kernel.
 */
#define CG_MAP_PATCHED "ubt_patched"
#define CG_PATCHED_MAX 262144
/* BPF stack maps: "ubt_stack_<limit>" (codegen/cg_stack.c) */
#define CG_MAP_STACK_PREFIX "ubt_stack_"
#define CG_MAP_STACK_NOTED "ubt_stack_noted"

struct cg_object {
	enum cg_target target;
	void *image;		/* ELF (BPF) */
	size_t image_size;
	struct cg_prog *progs;
	int nprogs;
	struct cg_map *maps;
	int nmaps;
	struct cg_event *events;
	int nevents;
	const char *ringbuf_name;	/* CG_MAP_RINGBUF */
	size_t ringbuf_size;
	/* array map, one value: u64 start time (CLOCK_MONOTONIC ns, for
	 * elapsed), u64 -c child pid (cpid); written by the shim */
	const char *globals_name;
	/* per-CPU array map, one u64: records the full ring dropped */
	const char *lost_name;
	/* BPF target, per-CPU array map, a u64 by map index: updates that
	 * found the map full (E2BIG, ENOMEM); NULL when there is no map */
	const char *full_name;
	/* native target: where each map lives in a thread's map area
	 * (codegen/native.h), and the area's size */
	const struct native_map *native_maps;
	int nnative_maps;
	uint64_t native_area;
	/* native target: a probe reads comm, uid or gid (shim/user/user_comm.c's
	 * programs keep the threads' names and credentials up to date) */
	bool native_task;
};

struct cg_opts {
	size_t sz;		/* sizeof(struct cg_opts) */
	FILE *dump_ir;		/* -d ir: IR before optimisation */
	FILE *dump_ir_opt;	/* IR after optimisation */
	bool no_opt;
	/* lower only the probes for which want() is true (NULL: all) */
	bool (*want)(void *ctx, const struct ast_node *probe);
	void *want_ctx;
	/* added to the program indexes the code writes (probe, func): the
	 * native programs follow the kernel's in the shim's tables */
	int prog_base;
	/* native target, by sema map id (NULL: none): ordinary maps that
	 * each thread only reaches at its own key (@m[tid]), kept in
	 * per-thread tables instead of the shared one (shim/run/run.c) */
	const bool *native_thread_maps;
	/* native target, by sema map id (NULL: none): those of them kept
	 * in a slot of each thread's block, the table only for what a gone
	 * thread left (shim/place/place_slot.c, native.h) */
	const bool *native_slot_maps;
	/* a time stamp at the end of every event record (above) */
	enum cg_event_time event_time;
	/* BPF target, by sema map id (NULL: none): aggregations that
	 * user-mode probes also write; a kernel probe's delete() of one of
	 * their keys also sends a CG_EV_DELETE event, for ubt to delete the
	 * key from the user side */
	const bool *user_agg_maps;
	/* lower only the matches for which want_site() is true (NULL:
	 * all): a probe whose sites run in both domains (shim/place/place.c) */
	bool (*want_site)(void *ctx, const struct ast_node *probe,
			  const struct probes_match *m);
	/* both targets, by sema map id (NULL: none): ordinary maps kept in
	 * a table both sides map (codegen/cg_xmap.h, shim/place/place_xmap.c) */
	const bool *xmap_maps;
	/* BPF target: probes whose program returns at once in a process
	 * of CG_MAP_TAKEN (their sites there run in user mode: a kernel
	 * uprobe another tracer brings back must not count them twice) */
	bool (*skip_taken)(void *ctx, const struct ast_node *probe);
	/* probes want() refuses that are lowered all the same, their
	 * programs marked standby (NULL: none): the BPF programs of
	 * user-mode probes that share a map with kernel probes, attached
	 * instead of them when the target cannot map the table
	 * (shim/run/run_xmap.c) */
	bool (*standby)(void *ctx, const struct ast_node *probe);
};

/*
 * Expand every attach point (probes_expand(): its warnings and errors go
 * to c->diag) and lower c->program (typed by sema) for target t into
 * *out. Errors in the user's program (attach points that match nothing,
 * things sema let through that cannot be lowered yet: "... is not
 * supported yet") are added to c->diag and give -EINVAL; other failures
 * print a message and return -errno. *out is allocated in c->arena
 * except the image, freed by cg_object_free().
 */
int cg_build(struct compile *c, enum cg_target t, const struct cg_opts *o,
	     struct cg_object **out);
void cg_object_free(struct cg_object *obj);

/* The probes "Attaching N probes..." counts: the programs' attach points,
 * ubt's own programs left out, a kprobe_multi link one (bpftrace 0.17). */
int cg_object_probes(const struct cg_object *obj);

/* -d bpf: list the object's programs with their instructions. */
void cg_dump_bpf(const struct cg_object *obj, FILE *f);

#endif
