/*
 * The native target's irb helpers (irb_native.c), called by irb.c when
 * ir->target is CG_TARGET_NATIVE; same contracts as irb.h.
 */
#ifndef UBT_IRB_NATIVE_H
#define UBT_IRB_NATIVE_H

#include "irb.h"
#include "native.h"

bool irb_is_native(const struct irb *ir);
int irb_native_init(struct irb *ir, const char *name);
void irb_native_release(struct irb *ir);
/* The object whose maps irb_map_define() lays out (cg_map by bpf_name). */
void irb_native_set_object(struct irb *ir, const struct cg_object *obj);
/*
 * Ordinary maps (by index in the object's maps, NULL: none) to keep in
 * per-thread tables instead of the shared one: each thread only reaches
 * its own key (@m[tid]), so per-thread tables hold what one map would,
 * without atomics.
 */
void irb_native_set_thread_maps(struct irb *ir, const bool *by_map);
/*
 * Of those, the maps (by index in the object's maps, NULL: none) whose
 * entry of the thread's own tid lives in a slot of the thread's block
 * (native.h struct native_map tslot), the table holding only what a gone
 * thread left there.
 */
void irb_native_set_slot_maps(struct irb *ir, const bool *by_map);
/*
 * The next program function takes a struct pt_regs of every register in
 * its first parameter (shim/patch/tramp.h spec.regs: a USDT site), not the
 * argument registers.
 */
void irb_native_set_regs_ctx(struct irb *ir, bool on);
/* A program function: preserve_most, the trampoline's registers in; the
 * returned context pointer is a struct pt_regs holding them. */
LLVMValueRef irb_native_func_begin(struct irb *ir, const char *name);
/* irb_callback_begin(): map iteration, not supported natively. */
LLVMValueRef irb_native_callback_begin(struct irb *ir, const char *name,
				       int nparams);
LLVMValueRef irb_native_map_define(struct irb *ir, const char *name,
				   int bpf_type, size_t key_size,
				   size_t value_size, uint32_t max_entries);
/* irb_native_xmap.c: a map shared with kernel probes (codegen/cg_xmap.h):
 * its word in the shared area; the table's address from it (null while
 * ubt has not placed it) */
LLVMValueRef irb_native_xmap_define(struct irb *ir, const char *name,
				    uint32_t nslots);
LLVMValueRef irb_native_xmap_table(struct irb *ir, LLVMValueRef map);
LLVMValueRef irb_native_map_lookup(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key);
LLVMValueRef irb_native_map_update(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key, LLVMValueRef value,
				   uint64_t flags);
LLVMValueRef irb_native_map_delete(struct irb *ir, LLVMValueRef map,
				   LLVMValueRef key);
void irb_native_memset(struct irb *ir, LLVMValueRef dst, int c, size_t size);
void irb_native_memcpy(struct irb *ir, LLVMValueRef dst, LLVMValueRef src,
		       size_t size);
LLVMValueRef irb_native_probe_read(struct irb *ir, enum irb_read kind,
				   LLVMValueRef dst, LLVMValueRef size,
				   LLVMValueRef src);
LLVMValueRef irb_native_ringbuf_output(struct irb *ir, LLVMValueRef rb,
				       LLVMValueRef data, size_t size);
LLVMValueRef irb_native_helper(struct irb *ir, int id, LLVMValueRef *args,
			       int n);
/* An inline system call nr with up to three i64 arguments. */
LLVMValueRef irb_native_syscall(struct irb *ir, long nr, LLVMValueRef *args,
				int n);
/* The time-stamp counter (rdtsc, inline: no call, no syscall), an i64. */
LLVMValueRef irb_native_cycles(struct irb *ir);
/* An event's stamp in counter units: rdtsc, or where the thread has the
 * counter off (RT_BLK_NOTSC) the clock converted, never rdtsc. */
LLVMValueRef irb_native_stamp(struct irb *ir);
/* irb_native_stack.c: the probed function's %rbp at its entry (the
 * probe function then keeps a frame pointer); the runtime's walk of the
 * stack (RT_FN_USTACK) into out, { id; n; frames[limit] } */
LLVMValueRef irb_native_entry_fp(struct irb *ir);
LLVMValueRef irb_native_ustack(struct irb *ir, LLVMValueRef out, int limit,
			       LLVMValueRef ip, LLVMValueRef sp,
			       LLVMValueRef fp);
/* The probed address (NATIVE_FUNC_SENTINEL, patched at install) as an
 * i64 LLVM cannot fold into other constants. */
LLVMValueRef irb_native_func_ip(struct irb *ir);
/* The map irb_map_define() made with this name in this build, or NULL. */
LLVMValueRef irb_native_map_named(struct irb *ir, const char *name);
/*
 * The first construct that cannot be lowered natively ("delete() in a
 * user-mode probe"), NULL when everything could.
 */
const char *irb_native_unsupported(const struct irb *ir);
/* The map-area layout (native.h), *area its size in bytes. */
/* Does a probe read comm, uid or gid (the shim keeps them up to date)? */
bool irb_native_uses_task(const struct irb *ir);
const struct native_map *irb_native_maps(const struct irb *ir, int *n,
					 uint64_t *area);
/* Emit: native_emit() unless something was unsupported (-ENOTSUP). */
int irb_native_emit(struct irb *ir, bool optimise, struct native_code *funcs,
		    int n, char *err, size_t errlen);

#endif
