/*
 * irb_scratch: the BPF scratch room, where a program's big temporaries
 * (strings, tuples, map keys and values, output records) live instead of
 * its 512-byte stack, which the verifier counts for a program and the
 * loop callbacks it calls together.
 *
 * The room is the value of a per-CPU array map, CG_MAP_SCRATCH, one
 * entry per program that needs it, as large as the largest program's.
 * Every BPF function starts with a prologue that looks its program's
 * entry up:
 *
 *   entry:        allocas; key = <program>; base = lookup(key);
 *                 if (!base) goto scratch_none
 *   scratch_ok:   the slots' addresses (irb_base.c: base + offset)
 *   body:         the function
 *   scratch_none: return 0
 *
 * A program and its callbacks share the entry; their slots are
 * bump-allocated from it, so that a callback's never overlap the ones of
 * the function that runs it. A slot is given again only within its
 * function, after its scope ended (irb_base.c), as a stack slot is.
 * A kprobe's, tracepoint's or perf event's program runs with preemption
 * off and is not entered again on its CPU before it returns (the kernel
 * refuses the recursion); other programs have entries of their own.
 *
 * A uprobe's program may be preempted (only migration is off: a kernel
 * with full preemption) or sleep (bpf_copy_from_user() in a sleepable
 * one), and another task may run it on the same CPU meanwhile: its room
 * is its task's value of a task storage map, CG_MAP_SCRATCH_TASK, made
 * on the task's first hit (base = task_storage_get(map,
 * current_task_btf(), NULL, F_CREATE)). A task runs one uprobe's program
 * at a time, so their rooms all start at 0. That room costs two helper
 * calls: a uprobe's program keeps its temporaries on the stack unless
 * they do not fit (cg_build() builds again, with ir->task_room).
 *
 * irb_scratch_finish() runs when every function is built: it numbers the
 * entries of the programs that used the room, defines the map and drops
 * the prologue of the functions that did not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "irb.h"
#include "util.h"

/* A uprobe's program (sleepable or not) may be preempted. */
static enum irb_room irb_scratch_room_of(const char *section)
{
	if (!strncmp(section, "uprobe", 6) || !strncmp(section, "uretprobe", 9))
		return IRB_ROOM_TASK;
	return IRB_ROOM_CPU;
}

static LLVMValueRef irb_scratch_call(struct irb *ir, int id, LLVMTypeRef ret,
				     LLVMValueRef *args, int n,
				     const char *name)
{
	LLVMTypeRef params[4];
	LLVMValueRef callee = LLVMConstIntToPtr(LLVMConstInt(ir->i64, id, 0),
						ir->ptr);

	for (int i = 0; i < n; i++)
		params[i] = LLVMTypeOf(args[i]);
	return LLVMBuildCall2(ir->b, LLVMFunctionType(ret, params, n, 0),
			      callee, args, n, name);
}

/* base: the program's entry of the per-CPU map, or the task's value */
static void irb_scratch_lookup(struct irb *ir, struct irb_scratch_fn *s)
{
	LLVMValueRef map = ir->scratch_map[s->room], args[4], key;

	if (s->room == IRB_ROOM_TASK) {
		args[0] = map;
		args[1] = irb_scratch_call(ir, BPF_FUNC_get_current_task_btf,
					   ir->ptr, NULL, 0, "task");
		args[2] = LLVMConstNull(ir->ptr);
		args[3] = irb_const(ir, BPF_LOCAL_STORAGE_GET_F_CREATE);
		s->made[s->nmade++] = args[1];
		s->base = irb_scratch_call(ir, BPF_FUNC_task_storage_get,
					   ir->ptr, args, 4, "scratch_base");
		return;
	}
	key = irb_alloca_type(ir, ir->i32, "scratch_key");
	/* the entry's number is set by irb_scratch_finish() */
	s->key_store = LLVMBuildStore(ir->b, LLVMConstInt(ir->i32, 0, 0),
				      key);
	s->made[s->nmade++] = key;
	s->made[s->nmade++] = s->key_store;
	args[0] = map;
	args[1] = key;
	s->base = irb_scratch_call(ir, BPF_FUNC_map_lookup_elem, ir->ptr,
				   args, 2, "scratch_base");
}

void irb_scratch_prologue(struct irb *ir, bool callback, const char *section)
{
	unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
	struct irb_scratch_fn s = { .fn = ir->fn };
	LLVMBasicBlockRef body;

	if (!callback) {
		ir->scratch_prog++;
		ir->scratch_top = 0;
		ir->scratch_room = irb_scratch_room_of(section);
		if (ir->scratch_room == IRB_ROOM_TASK && !ir->task_room) {
			ir->scratch_room = IRB_ROOM_NONE;
			ir->room_skipped = true;
		}
	}
	if (ir->scratch_room == IRB_ROOM_NONE) {
		LLVMPositionBuilderAtEnd(ir->b, ir->entry);
		return;
	}
	s.prog = ir->scratch_prog;
	s.room = ir->scratch_room;
	if (!ir->scratch_map[s.room])
		ir->scratch_map[s.room] = LLVMAddGlobal(
			ir->mod, ir->i64,
			s.room == IRB_ROOM_TASK ? "ubt_scratch_task_stand_in" :
						  "ubt_scratch_stand_in");
	s.ok = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "scratch_ok");
	s.fail = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn,
					       "scratch_none");
	body = LLVMAppendBasicBlockInContext(ir->ctx, ir->fn, "body");

	LLVMPositionBuilderAtEnd(ir->b, ir->entry);
	irb_scratch_lookup(ir, &s);
	/* map values are 8-byte aligned: said, LLVM copies and clears the
	 * slots by words, not byte by byte */
	LLVMAddCallSiteAttribute(s.base, LLVMAttributeReturnIndex,
				 LLVMCreateEnumAttribute(ir->ctx, align, 8));
	s.cmp = LLVMBuildICmp(ir->b, LLVMIntEQ, s.base,
			      LLVMConstNull(ir->ptr), "");
	irb_unlikely(ir, LLVMBuildCondBr(ir->b, s.cmp, s.fail, s.ok), true);
	LLVMPositionBuilderAtEnd(ir->b, s.fail);
	LLVMBuildRet(ir->b, LLVMConstInt(ir->i64, 0, 0));
	LLVMPositionBuilderAtEnd(ir->b, s.ok);
	LLVMBuildBr(ir->b, body);
	LLVMPositionBuilderAtEnd(ir->b, body);

	if (ir->nsfn == ir->capsfn) {
		ir->capsfn = ir->capsfn ? 2 * ir->capsfn : 16;
		ir->sfn = xrealloc(ir->sfn, ir->capsfn * sizeof(*ir->sfn));
	}
	ir->sfn[ir->nsfn++] = s;
}

/* A function that made no slot: its entry goes straight on. */
static void irb_scratch_drop(struct irb *ir, struct irb_scratch_fn *s)
{
	LLVMBasicBlockRef entry = LLVMGetInstructionParent(s->base);

	LLVMInstructionEraseFromParent(LLVMGetBasicBlockTerminator(entry));
	LLVMInstructionEraseFromParent(s->cmp);
	LLVMInstructionEraseFromParent(s->base);
	for (int i = s->nmade - 1; i >= 0; i--)
		LLVMInstructionEraseFromParent(s->made[i]);
	LLVMDeleteBasicBlock(s->fail);
	LLVMPositionBuilderAtEnd(ir->b, entry);
	LLVMBuildBr(ir->b, s->ok);
}

/* The map of a room, in place of its stand-in (if any function used
 * it), sized for the largest program. */
static void irb_scratch_define(struct irb *ir, enum irb_room room,
			       int nkeys)
{
	LLVMValueRef map;

	if (!ir->scratch_map[room])
		return;
	if (room == IRB_ROOM_TASK && ir->scratch_max[room])
		map = irb_map_define_flags(ir, CG_MAP_SCRATCH_TASK,
					   BPF_MAP_TYPE_TASK_STORAGE, 4,
					   ir->scratch_max[room], 0,
					   BPF_F_NO_PREALLOC);
	else if (room == IRB_ROOM_CPU && nkeys)
		map = irb_map_define(ir, CG_MAP_SCRATCH,
				     BPF_MAP_TYPE_PERCPU_ARRAY, 4,
				     ir->scratch_max[room], nkeys);
	else
		map = NULL;
	if (map)
		LLVMReplaceAllUsesWith(ir->scratch_map[room], map);
	LLVMDeleteGlobal(ir->scratch_map[room]);
	ir->scratch_map[room] = NULL;
}

int irb_scratch_finish(struct irb *ir)
{
	int *keys, nkeys = 0;

	for (int r = 0; r < IRB_NROOMS; r++)
		if (ir->scratch_max[r] > IRB_SCRATCH_MAX) {
			fprintf(stderr,
				"ubt: cannot emit BPF code: a probe needs %zu bytes of temporaries, more than the %d a map value holds\n",
				ir->scratch_max[r], IRB_SCRATCH_MAX);
			return -E2BIG;
		}
	keys = xmalloc((ir->scratch_prog + 1) * sizeof(*keys));
	for (int i = 0; i <= ir->scratch_prog; i++)
		keys[i] = -1;
	for (int i = 0; i < ir->nsfn; i++) {
		struct irb_scratch_fn *s = &ir->sfn[i];

		if (!s->used) {
			irb_scratch_drop(ir, s);
			continue;
		}
		if (s->room != IRB_ROOM_CPU)
			continue;
		if (keys[s->prog] < 0)
			keys[s->prog] = nkeys++;
		LLVMSetOperand(s->key_store, 0,
			       LLVMConstInt(ir->i32, keys[s->prog], 0));
	}
	free(keys);
	for (int r = 0; r < IRB_NROOMS; r++)
		irb_scratch_define(ir, r, nkeys);
	ir->nsfn = 0;
	return 0;
}
