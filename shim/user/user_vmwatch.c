/*
 * A child that shares the target's memory, made after ubt attached
 * (clone(CLONE_VM) without CLONE_THREAD or CLONE_VFORK, through libc's
 * clone() or a raw system call): it runs beside its parent with the
 * thread pointer of the thread that made it, so on that thread's
 * per-thread block, shadow stack and pid.  user_check.c refuses a
 * process that has one at the attach (kcmp); this watches for one made
 * later: a BPF program on the task:task_newtask tracepoint (it runs in
 * the parent, before the child runs; all of 6.1, 6.12 and 6.18 have the
 * tracepoint with clone_flags), for the target's pid only, keeps the
 * first such child's pid in a one-slot array map, and a count of them.
 * The run loop reads the slot (user_vm_child()); user_detach() then
 * stops the child as well while it restores the code, and leaves ubt's
 * mappings in place (the child may be inside them).
 *
 * A child made by libc's clone() is announced before it exists (the
 * runtime's hook on clone, runtime/rt_vfork.c: struct rt_ctl vm_seq,
 * vm_tid; user_vm_asked()): the calling thread waits until the detach,
 * so the hand-over comes before the child's first instruction and the
 * watcher flags it only after.  This watch is for the rest: clone(2) or
 * clone3(2) called directly.
 *
 * Children that make their parent wait (CLONE_VFORK) are the vfork
 * hooks' (user_vfork.c), and threads (CLONE_THREAD) have their own
 * thread pointer: neither is flagged.  Forked children (no CLONE_VM)
 * have their own memory.
 *
 * The program is written as instructions (a fixed program, as
 * user_comm.c's), with the target's pid and the tracepoint's field
 * offsets (its format file) as constants.
 */
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/ioctl.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "arena.h"
#include "tracepoint.h"
#include "user_int.h"

#define VMW_INSN(c, d, s, o, i)                                               \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s),      \
			    .off = (o), .imm = (i) })

struct vmw_slot {
	uint32_t pid;	/* the first child, 0: none */
	uint32_t n;	/* how many */
};

/*
 *	if (get_current_pid_tgid() >> 32 != PID)
 *		return 0;
 *	if ((ctx->clone_flags & (VM | THREAD | VFORK)) != VM ||
 *	    !(slot = map_lookup_elem(map, &zero)))
 *		return 0;
 *	if (!slot->pid)
 *		slot->pid = ctx->pid;
 *	__sync_fetch_and_add(&slot->n, 1);
 */
static int vmw_prog(int map_fd, pid_t pid, int pid_off, int flags_off)
{
	struct bpf_insn in[] = {
		VMW_INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0,
			 0),
		VMW_INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			 BPF_FUNC_get_current_pid_tgid),
		VMW_INSN(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_0, 0, 0, 32),
		VMW_INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 16, pid),
		VMW_INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_1, BPF_REG_6,
			 (int16_t)flags_off, 0),
		VMW_INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_1, 0, 0,
			 CLONE_VM | CLONE_THREAD | CLONE_VFORK),
		VMW_INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_1, 0, 13, CLONE_VM),
		VMW_INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		VMW_INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1,
			 BPF_PSEUDO_MAP_FD, 0, map_fd),
		VMW_INSN(0, 0, 0, 0, 0),
		VMW_INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0,
			 0),
		VMW_INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		VMW_INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			 BPF_FUNC_map_lookup_elem),
		VMW_INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 6, 0),
		VMW_INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_0, 0, 0),
		VMW_INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_1, 0, 2, 0),
		VMW_INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_6,
			 (int16_t)pid_off, 0),
		VMW_INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_0, BPF_REG_1, 0, 0),
		VMW_INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		VMW_INSN(BPF_STX | BPF_ATOMIC | BPF_W, BPF_REG_0, BPF_REG_1, 4,
			 BPF_ADD),
		VMW_INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		VMW_INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	static char log[4096];
	LIBBPF_OPTS(bpf_prog_load_opts, po, .log_buf = log,
		    .log_size = sizeof(log));

	return bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, "ubt_vmwatch", "GPL",
			     in, sizeof(in) / sizeof(in[0]), &po);
}

void user_vmwatch_stop(struct ubt_user *u)
{
	if (u->vmw_ev > 0)
		close(u->vmw_ev);
	if (u->vmw_map > 0)
		close(u->vmw_map);
	u->vmw_ev = u->vmw_map = 0;
}

int user_vmwatch_start(struct ubt_user *u)
{
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT,
				     .size = sizeof(a), .sample_period = 1,
				     .wakeup_events = 1 };
	const struct tp_field *pid, *flags;
	struct tp_format f;
	struct arena ar;
	int err, prog = -1;

	user_vmwatch_stop(u);
	arena_init(&ar);
	err = tp_format_read(&ar, "task", "task_newtask", &f);
	if (!err && f.id < 0)
		err = -ENOENT;
	pid = err ? NULL : tp_field_sized(&f, "pid", 4);
	flags = err ? NULL : tp_field_sized(&f, "clone_flags", 8);
	if (!err && (!pid || !flags))
		err = -ENOENT;
	if (err) {
		arena_release(&ar);
		return user_err(u, err, "tracepoint task:task_newtask");
	}
	a.config = (uint64_t)f.id;
	err = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ubt_vmwatch", 4,
			     sizeof(struct vmw_slot), 1, NULL);
	if (err >= 0) {
		u->vmw_map = err;
		prog = vmw_prog(u->vmw_map, u->pid, (int)pid->offset,
				(int)flags->offset);
		err = prog < 0 ? prog : 0;
	}
	arena_release(&ar);
	if (!err) {
		u->vmw_ev = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1,
					 PERF_FLAG_FD_CLOEXEC);
		if (u->vmw_ev < 0 ||
		    ioctl(u->vmw_ev, PERF_EVENT_IOC_SET_BPF, prog) ||
		    ioctl(u->vmw_ev, PERF_EVENT_IOC_ENABLE, 0))
			err = -errno;
	}
	if (prog >= 0)
		close(prog);
	if (err) {
		if (u->vmw_ev < 0)
			u->vmw_ev = 0;
		user_vmwatch_stop(u);
		return user_err(u, err, "a BPF program on task:task_newtask");
	}
	return 0;
}

pid_t user_vm_child(struct ubt_user *u, unsigned *n)
{
	struct vmw_slot s = { 0 };
	uint32_t zero = 0;

	if (u && !u->vm_child && u->vmw_map > 0 &&
	    !bpf_map_lookup_elem(u->vmw_map, &zero, &s) && s.pid) {
		u->vm_child = (pid_t)s.pid;
		u->vm_children = s.n;
	}
	if (n)
		*n = u ? u->vm_children : 0;
	return u ? u->vm_child : 0;
}

pid_t user_vm_asked(struct ubt_user *u)
{
	struct rt_ctl *ctl = u ? u->m.ctl : NULL;
	uint32_t tid;

	if (!ctl || u->vm_asked || u->detached ||
	    !__atomic_load_n(&ctl->vm_seq, __ATOMIC_ACQUIRE))
		return u ? u->vm_asked : 0;
	/* the target's word: a thread id, or the target's pid */
	tid = __atomic_load_n(&ctl->vm_tid, __ATOMIC_RELAXED);
	u->vm_asked = tid && tid <= INT32_MAX ? (pid_t)tid : u->pid;
	return u->vm_asked;
}

const char *user_vmwatch_note(const struct ubt_user *u)
{
	return u && u->vmw_ev <= 0 ? u->vmw_why : NULL;
}
