/*
 * Internals shared by the lowering files (cg.c, cg_expr.c, cg_stmt.c,
 * cg_call.c, cg_map.c) and the helpers below them all (cg_util.c,
 * cg_value.c).  cg.c drives a probe's lowering and calls down; the
 * lowerings reach each other through the one dispatch, cg_expr() and
 * its calls by function (cg_expr.c): an expression holds calls, map
 * reads and fields, which lower their sub-expressions by calling
 * cg_expr() back.  Never cg.c.  Not for use outside codegen/.
 *
 * Values: an expression of a scalar type (integers, booleans, pointers,
 * enums, anything of at most 8 bytes that is not a string, tuple, record
 * or array) lowers to an i64 (sign- or zero-extended by its type); every
 * other expression lowers to a pointer to a buffer of type->size bytes.
 */
#ifndef UBT_CG_INT_H
#define UBT_CG_INT_H

#include "cg.h"
#include "compile.h"
#include "irb.h"
#include "sema.h"

struct cg {
	struct compile *c;
	/* the / or % of the program being lowered, for the newest
	 * bpftrace's division by zero (cg_div.c); NULL otherwise */
	const struct ast_loc *div_loc;
	struct sema_program *sp;
	struct irb ir;
	struct cg_object *obj;
	const struct cg_opts *opts;	/* may be NULL */
	LLVMValueRef *maps;	/* by sema map id */
	LLVMValueRef ringbuf;
	LLVMValueRef globals;	/* array map: struct cg_globals */
	LLVMValueRef lost;	/* per-CPU array: u64 records lost */
	LLVMValueRef join;	/* per-CPU array: a join() record, made
				 * by the first join() (cg_call_out.c) */
	LLVMValueRef full;	/* per-CPU array by map: u64 updates the
				 * full map refused (BPF target only) */
	int cap_events;
	int cap_progs;

	/* the program being built */
	struct sema_probe *probe;
	const struct ast_node *ap;
	struct sema_ap *sap;
	const struct probes_match *match;	/* when the program has one */
	struct type *args_type;	/* tracepoint record of this program */
	int prog;
	LLVMValueRef ctxp;
	LLVMValueRef *vars;	/* allocas by slot */
	LLVMBasicBlockRef brk, cont;	/* innermost while */
	/* the inlined fn being lowered: where return goes, its value's
	 * slot and type (NULL outside) */
	LLVMBasicBlockRef fn_exit;
	LLVMValueRef fn_slot;
	const struct type *fn_ret;
	/* in a loop's callback: its context's "the probe returned" flag
	 * (NULL in the probe itself) */
	LLVMValueRef loop_ret;
	bool sleepable;		/* uses bpf_copy_from_user() */
	int nfor;		/* for-loop callbacks made */
	bool in_for;		/* lowering a for-loop callback */
	const struct ast_loc *update_loc;	/* -k: where a failed map update
						 * is reported, NULL: the map */
	int err;
};

/* Layout of the globals map's only value, written by the shim. */
#define CG_GLOBALS_START 0	/* u64: CLOCK_MONOTONIC ns at start */
#define CG_GLOBALS_CPID 8	/* u64: the -c child's pid */
#define CG_GLOBALS_EXIT 16	/* u64: exit() was called: probes stop */
#define CG_GLOBALS_SIZE 24

/*
 * cg_helper.c: -k/-kk.  After a helper call that returned ret, report
 * its failure (CG_CHECK_NEG: ret < 0, checked from -k on; CG_CHECK_READ:
 * a read's ret < 0, CG_CHECK_NULL: a lookup's null pointer, from -kk on)
 * as a warning at loc.
 */
enum cg_check {
	CG_CHECK_NEG,
	CG_CHECK_READ,
	CG_CHECK_NULL,
};
void cg_helper_check(struct cg *g, const struct ast_loc *loc,
		     const char *helper, LLVMValueRef ret,
		     enum cg_check how);
/* bpftrace's name of the helper a read of this kind calls. */
const char *cg_read_helper_name(enum irb_read kind);

/* Pointer to the globals map's value (may be null: check). */
LLVMValueRef cg_globals_ptr(struct cg *g);

/* The program's index as the shim knows it (cg_opts.prog_base added). */
static inline int cg_prog_id(const struct cg *g)
{
	return g->prog + (g->opts ? g->opts->prog_base : 0);
}

/* cg_util.c: helpers below every lowering. */
bool cg_is_scalar(const struct type *t);
static inline bool cg_signed(const struct type *t)
{
	return t && t->is_signed;
}
/* The step of pointer arithmetic on pointer type t, in bytes. */
uint64_t cg_pointee_size(const struct type *t);
/* The aggregation a map holds (from its value type), FN_NONE if none. */
enum sema_func cg_map_agg(const struct sema_map *sm);
/* Fail the build with a located "not supported" error. */
void cg_unsupported(struct cg *g, const struct ast_node *n, const char *what);

LLVMValueRef cg_expr(struct cg *g, struct ast_node *n);
/* An integer expression as i1 (!= 0), strings are errors. */
LLVMValueRef cg_cond(struct cg *g, struct ast_node *n);
/* Store v (of type vt) into dst typed dt, converting sizes. */
void cg_store(struct cg *g, LLVMValueRef dst, const struct type *dt,
	      LLVMValueRef v, const struct type *vt);
LLVMValueRef cg_load(struct cg *g, LLVMValueRef src, const struct type *t);
/* cg_value.c: binary operator op on the i64s l and r (of types lt and
 * rt), the result normalized to type result. */
/* cg_div.c: the newest bpftrace's x / 0 and x % 0: 1, and a warning at
 * g->div_loc when it happens (compat div-zero); v when !isz. */
LLVMValueRef cg_div_zero(struct cg *g, LLVMValueRef isz, LLVMValueRef v);
/* compat array-bounds: a located warning when !in (codegen/cg_div.c) */
void cg_array_oob(struct cg *g, LLVMValueRef in, const struct ast_loc *loc);
LLVMValueRef cg_binop_values(struct cg *g, enum ast_op op, LLVMValueRef l,
			     const struct type *lt, LLVMValueRef r,
			     const struct type *rt, const struct type *result);
/* String equality over the shorter buffer (at most limit bytes when not
 * 0); i64 0 or 1. */
LLVMValueRef cg_string_equal(struct cg *g, LLVMValueRef a,
			     const struct type *at, LLVMValueRef b,
			     const struct type *bt, size_t limit);
/* cg_builtin.c: a builtin's value; a field of args. */
LLVMValueRef cg_builtin(struct cg *g, struct ast_node *n);
LLVMValueRef cg_field(struct cg *g, struct ast_node *n);
/* cg_util.c: is the probe a uprobe, uretprobe or USDT probe (user
 * memory)? */
bool cg_is_uprobe(struct cg *g);
/* cg_kernel.c: the context of a kernel probe kind (BPF target only) */
enum cg_kctx {
	CG_KCTX_NONE,		/* not a kprobe, kfunc or raw tracepoint */
	CG_KCTX_REGS,		/* kprobe, kretprobe: struct pt_regs */
	CG_KCTX_U64,		/* fentry, fexit, raw_tp: u64 arguments */
};
enum cg_kctx cg_kernel_kind(struct cg *g);
struct probes_match;
const char *cg_kernel_section(struct cg *g, enum sema_provider p,
			      const struct probes_match *m, int nm);
LLVMValueRef cg_kernel_retval(struct cg *g, struct ast_node *n);
LLVMValueRef cg_kernel_func(struct cg *g);
/* The probed function's address in a uprobe's program (cg_stack.c). */
LLVMValueRef cg_func_ip(struct cg *g);
bool cg_reads_user(struct cg *g);
/* cg_btf.c: byte offset of a member of a kernel struct (vmlinux BTF) */
int cg_btf_member_offset(const char *sname, const char *member, size_t *off);
/* cg_field.c: reads of C data: p->f and s.f (args.f through
 * cg_field()), a[i] and p[i], *p */
LLVMValueRef cg_member(struct cg *g, struct ast_node *n);
LLVMValueRef cg_index(struct cg *g, struct ast_node *n);
LLVMValueRef cg_deref(struct cg *g, struct ast_node *n);
/* cg_util.c: a string literal in a zeroed buffer of >= size bytes. */
LLVMValueRef cg_string_lit(struct cg *g, const char *s, size_t len,
			   size_t size);
/* Truncate/extend an i64 by type (for narrow ints after arithmetic). */
LLVMValueRef cg_int_norm(struct cg *g, LLVMValueRef v, const struct type *t);
/* cg_util.c: argument i (from 0) of a call, NULL past the last. */
struct ast_node *cg_call_arg(struct ast_node *call, int i);

/* cg_watch.c: the uprobe program of watchpoint:FUNC+argN (the body is
 * program body); unwatch(addr). */
void cg_watch_setup_body(struct cg *g, int body, int argn, bool sync);
void cg_watch_unwatch(struct cg *g, const struct ast_node *call,
		      LLVMValueRef addr);
/* cg_stack.c: ustack/kstack values, reg(), kaddr(); the native
 * target's in cg_stack_native.c */
LLVMValueRef cg_stack(struct cg *g, struct ast_node *n);
/* The -c command's mappings noted once (a user address was taken). */
void cg_stack_note(struct cg *g, const struct ast_node *n);
LLVMValueRef cg_reg(struct cg *g, struct ast_node *n);
LLVMValueRef cg_kaddr(struct cg *g, struct ast_node *n);
LLVMValueRef cg_array_addr(struct cg *g, struct ast_node *n);
LLVMValueRef cg_record_addr(struct cg *g, struct ast_node *n);
LLVMValueRef cg_uaddr(struct cg *g, struct ast_node *n);
LLVMValueRef cg_stack_native(struct cg *g, struct ast_node *n);
LLVMValueRef cg_reg_native(struct cg *g, struct ast_node *n, size_t off);

/* cg_stmt.c: statements; a block expression's statements and value */
void cg_stmts(struct cg *g, struct ast_node *list);
void cg_stmt(struct cg *g, struct ast_node *n);
LLVMValueRef cg_block_expr(struct cg *g, struct ast_node *n);

/* Maps */
LLVMValueRef cg_map_key(struct cg *g, struct ast_node *mapnode,
			const struct cg_map *m, LLVMValueRef bucket);
/* A key of map id from nkeys key expressions (a tuple expression for
 * several keys when nkeys is 1), bucket for hist maps. */
LLVMValueRef cg_key_with(struct cg *g, int id, struct ast_node *keys,
			 int nkeys, LLVMValueRef bucket);
/* Value pointer for key, inserting a zero value first when absent;
 * returns a pointer that may be null (checked by the caller). */
LLVMValueRef cg_map_get_or_init(struct cg *g, int id, LLVMValueRef key);
LLVMValueRef cg_map_read(struct cg *g, struct ast_node *mapnode);
void cg_map_assign(struct cg *g, struct ast_node *mapnode, LLVMValueRef v,
		   const struct type *vt);
/* @m[k] += d in place, atomically (kernel, integer values); false: not
 * done, read and assign instead */
bool cg_map_can_add(struct cg *g, struct ast_node *mapnode);
bool cg_map_add(struct cg *g, struct ast_node *mapnode, LLVMValueRef d,
		const struct ast_loc *loc, LLVMValueRef *old);
/* delete() (the call, for its event) of keys from map id */
LLVMValueRef cg_map_delete(struct cg *g, const struct ast_node *call, int id,
		   struct ast_node *keys, int nkeys);
/* if (p) { body } helper: positions the builder in the then block and
 * returns the continuation block to branch to. */
LLVMBasicBlockRef cg_if_nonnull(struct cg *g, LLVMValueRef p);

/*
 * Calls, reached from the call dispatch in cg_expr.c (by function).
 * cg_call.c: printf/time/system/cat (the event kind), clear/zero/print
 * of a whole map, print of a value, exit, str, strncmp, usym.
 */
void cg_fmt_event(struct cg *g, struct ast_node *n, enum cg_event_kind kind);
void cg_map_event(struct cg *g, struct ast_node *n, enum cg_event_kind kind);
void cg_print(struct cg *g, struct ast_node *n);
void cg_exit(struct cg *g, struct ast_node *n);
LLVMValueRef cg_str(struct cg *g, struct ast_node *n);
LLVMValueRef cg_strncmp(struct cg *g, struct ast_node *n);
LLVMValueRef cg_usym(struct cg *g, struct ast_node *n);
/* cg_builtin.c: a uprobe's args as a record value */
LLVMValueRef cg_args_value(struct cg *g, struct ast_node *n);
/* cg_aggval.c: an aggregation's value of a key, merged (for over it) */
/* avg's value: total / count, 0 without a count; a signed total rounds
 * toward zero (cg_aggval.c) */
LLVMValueRef cg_avg_div(struct cg *g, LLVMValueRef total, LLVMValueRef count,
			bool sgn);
LLVMValueRef cg_agg_value(struct cg *g, int id, LLVMValueRef key,
			  LLVMValueRef val);
/* cg_call_new.c: functions of bpftrace after 0.17 */
LLVMValueRef cg_nsecs_mode(struct cg *g, struct ast_node *n);
LLVMValueRef cg_strlen(struct cg *g, struct ast_node *n);
/* nsecs(sw_tai): the boot clock plus TAI's offset from it (kernel) */
LLVMValueRef cg_sw_tai(struct cg *g);
/* cg_tseries.c: `@m[k] = tseries(...)` */
void cg_tseries(struct cg *g, struct ast_node *mapnode, struct ast_node *call);
/* cg_usermode.c */
LLVMValueRef cg_usermode(struct cg *g);
/* cg_arrcast.c: (int8[N])x, (uint32)arr (v0.26) */
bool cg_is_array_cast(const struct ast_node *n);
LLVMValueRef cg_array_cast(struct cg *g, struct ast_node *n, LLVMValueRef v);
/* cg_call_val.c: values made from bytes */
LLVMValueRef cg_buf(struct cg *g, struct ast_node *n);
LLVMValueRef cg_ntop(struct cg *g, struct ast_node *n);
LLVMValueRef cg_pton(struct cg *g, struct ast_node *n);
LLVMValueRef cg_macaddr(struct cg *g, struct ast_node *n);
LLVMValueRef cg_bswap(struct cg *g, struct ast_node *n);
LLVMValueRef cg_strcontains(struct cg *g, struct ast_node *n);
LLVMValueRef cg_cgroup_path(struct cg *g, struct ast_node *n);
/* cg_path.c */
LLVMValueRef cg_path(struct cg *g, struct ast_node *n);
/* cg_call_out.c: join(), debugf() (BPF target), signal() */
void cg_join(struct cg *g, struct ast_node *n);
void cg_debugf(struct cg *g, struct ast_node *n);
void cg_signal(struct cg *g, struct ast_node *n);
/* `@m[k] = agg(...)` */
void cg_aggregate(struct cg *g, struct ast_node *mapnode,
		  struct ast_node *call);

/* cg_xmap.c: ordinary maps both sides share (cg_xmap.h), map id's
 * definition; the read (as type vt), the assignment (of an i64 as the
 * map's value type stores it) and delete() of key k (an i64: the key's
 * bytes, cg_map.c); the read sets *found (an i64, 0: no such key) and
 * delete() returns 1 if the key was there */
LLVMValueRef cg_xmap_define(struct cg *g, int id);
LLVMValueRef cg_xmap_read(struct cg *g, int id, LLVMValueRef k,
			  const struct type *vt, LLVMValueRef *found);
void cg_xmap_assign(struct cg *g, int id, LLVMValueRef k, LLVMValueRef val);
LLVMValueRef cg_xmap_delete(struct cg *g, int id, LLVMValueRef k);
LLVMValueRef cg_xmap_has(struct cg *g, int id, LLVMValueRef k);
/* cg_map.c: has_key() of map id at the key expression k, when the map is
 * shared (cg_map.xmap) */
LLVMValueRef cg_map_xmap_has(struct cg *g, int id, struct ast_node *k);
/* cg_map.c: the calls delete(), has_key(), len() */
LLVMValueRef cg_delete(struct cg *g, struct ast_node *n);
LLVMValueRef cg_has_key(struct cg *g, struct ast_node *n);
LLVMValueRef cg_len(struct cg *g, struct ast_node *n);

int cg_event_new(struct cg *g, enum cg_event_kind kind,
		 const struct ast_node *call);
/* Start a record of `size` bytes (header included) with its id stored. */
LLVMValueRef cg_record_begin(struct cg *g, int ev, size_t size);
void cg_record_send(struct cg *g, LLVMValueRef rec, size_t size);

#endif
