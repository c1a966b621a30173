/*
 * The BPF programs of system-wide user mode (sysw_bpf.h), as instructions:
 * each conditional exit of a program jumps to its one "return 0".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "arena.h"
#include "sysw_bpf.h"
#include "tracepoint.h"

#define SWB_MAX 64

/* offsetof(struct pt_regs, sp) on x86-64 */
#define SWB_REGS_SP 152
#define SWB_REGS_IP 128

struct swb {
	struct bpf_insn in[SWB_MAX];
	int n;
	int exits[8];		/* jumps to the final return 0 */
	int nexits;
	int err;
};

#define INSN(c, d, s, o, i)                                                 \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s),    \
			    .off = (o), .imm = (i) })

static void swb_add(struct swb *b, struct bpf_insn in)
{
	if (b->n < SWB_MAX)
		b->in[b->n] = in;
	else
		b->err = -E2BIG;
	b->n++;
}

static void swb_ld_map(struct swb *b, int reg, int fd)
{
	swb_add(b, INSN(BPF_LD | BPF_DW | BPF_IMM, reg, BPF_PSEUDO_MAP_FD, 0,
			fd));
	swb_add(b, INSN(0, 0, 0, 0, 0));
}

/* reg = r10 + off */
static void swb_fp(struct swb *b, int reg, int off)
{
	swb_add(b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, reg, BPF_REG_10, 0, 0));
	swb_add(b, INSN(BPF_ALU64 | BPF_ADD | BPF_K, reg, 0, 0, off));
}

static void swb_call(struct swb *b, int fn)
{
	swb_add(b, INSN(BPF_JMP | BPF_CALL, 0, 0, 0, fn));
}

/* return 0 if (reg op imm), or (reg op src) with BPF_X */
static void swb_exit_if(struct swb *b, int op, int reg, int src, int imm)
{
	if (b->nexits == (int)(sizeof(b->exits) / sizeof(b->exits[0])))
		b->err = -E2BIG;
	else
		b->exits[b->nexits++] = b->n;
	swb_add(b, INSN(BPF_JMP | op, reg, src, 0, imm));
}

/* *(u32 *)(r10 + off) = the current tgid (r0 clobbered; r0 keeps it) */
static void swb_tgid(struct swb *b, int off)
{
	swb_call(b, BPF_FUNC_get_current_pid_tgid);
	swb_add(b, INSN(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_0, 0, 0, 32));
	swb_add(b, INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_0, off,
			0));
}

/* lost[slot]++, the slot's key at r10 + off */
/*
 * taken[the tgid at r10 - 4]: the program ends when it is not there; its
 * generation in r1 and at r10 - 8.
 */
static void swb_taken_gen(struct swb *b, int taken_fd)
{
	swb_ld_map(b, BPF_REG_1, taken_fd);
	swb_fp(b, BPF_REG_2, -4);
	swb_call(b, BPF_FUNC_map_lookup_elem);
	swb_exit_if(b, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0);
	swb_add(b, INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_0, 0, 0));
	swb_add(b, INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_1, -8,
			0));
}

/* map_update_elem(fd, fp + key, fp + val, flags): its result in r0 */
static void swb_update(struct swb *b, int fd, int key, int val, int flags)
{
	swb_ld_map(b, BPF_REG_1, fd);
	swb_fp(b, BPF_REG_2, key);
	swb_fp(b, BPF_REG_3, val);
	swb_add(b, INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, flags));
	swb_call(b, BPF_FUNC_map_update_elem);
}

static void swb_lost(struct swb *b, int lost_fd, int slot, int off)
{
	swb_add(b, INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, off, slot));
	swb_ld_map(b, BPF_REG_1, lost_fd);
	swb_fp(b, BPF_REG_2, off);
	swb_call(b, BPF_FUNC_map_lookup_elem);
	swb_exit_if(b, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0);
	swb_add(b, INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1));
	swb_add(b, INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0,
			BPF_ADD));
}

/* The final return 0, every exit jump pointed at it; then load. */
static int swb_load(struct swb *b, enum bpf_prog_type type, const char *name)
{
	int fd;

	swb_add(b, INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));
	swb_add(b, INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
	if (b->err)
		return b->err;
	for (int i = 0; i < b->nexits; i++)
		b->in[b->exits[i]].off = (int16_t)(b->n - 2 - b->exits[i] - 1);
	fd = bpf_prog_load(type, name, "GPL", b->in, (size_t)b->n, NULL);
	return fd < 0 ? -errno : fd;
}

int sysw_bpf_report(int seen_fd, int ring_fd, int taken_fd)
{
	struct swb b = { .n = 0 };

	swb_tgid(&b, -4);
	swb_add(&b, INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -8, 0));
	/* a process taken, or one of its children: never taken again */
	if (taken_fd >= 0) {
		swb_ld_map(&b, BPF_REG_1, taken_fd);
		swb_fp(&b, BPF_REG_2, -4);
		swb_call(&b, BPF_FUNC_map_lookup_elem);
		swb_exit_if(&b, BPF_JNE | BPF_K, BPF_REG_0, 0, 0);
	}
	/* BPF_NOEXIST: one report however many threads race */
	swb_update(&b, seen_fd, -4, -8, BPF_NOEXIST);
	swb_exit_if(&b, BPF_JNE | BPF_K, BPF_REG_0, 0, 0);
	swb_ld_map(&b, BPF_REG_1, ring_fd);
	swb_fp(&b, BPF_REG_2, -4);
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 4));
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0));
	swb_call(&b, BPF_FUNC_ringbuf_output);
	return swb_load(&b, BPF_PROG_TYPE_KPROBE, "ubt_sysw");
}

/*
 * The mark's key is {pid_tgid, sp + 8, the return address}: the stack
 * pointer after the function's ret and where it returns, as the kernel's
 * uretprobe program sees them (the kernel sets ip to the original return
 * address before it runs the return consumers).  The return address
 * tells apart sibling calls from one frame (a loop calling a patched
 * function, then one whose site is the kernel's, at the same stack
 * pointer).  Its value, the take's generation: a mark left by a call
 * that never returned (longjmp, exec) from an earlier take of that pid
 * means nothing.  At the entry of a return site not patched there (the
 * kernel's), a mark with the same key is gone: that call has ended, and
 * this one's return must count.
 */
int sysw_bpf_mark(int taken_fd, int patched_fd, int marks_fd, int lost_fd)
{
	struct swb b = { .n = 0 };

	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0,
			 0));
	swb_call(&b, BPF_FUNC_get_current_pid_tgid);
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_7, BPF_REG_0, 0,
			 0));
	swb_add(&b, INSN(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_0, 0, 0, 32));
	swb_add(&b, INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_0, -4,
			 0));
	swb_taken_gen(&b, taken_fd);
	/* the site patched in this take: {gen, 0, ip} at r10 - 48 */
	swb_add(&b, INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_1, -48,
			 0));
	swb_add(&b, INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -44, 0));
	swb_add(&b, INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_1, BPF_REG_6,
			 SWB_REGS_IP, 0));
	swb_add(&b, INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_1, -40,
			 0));
	/* the mark's key at r10 - 72: {pid_tgid, sp + 8, *sp} */
	swb_add(&b, INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_7, -72,
			 0));
	swb_add(&b, INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_8, BPF_REG_6,
			 SWB_REGS_SP, 0));
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_8, 0,
			 0));
	swb_add(&b, INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, 8));
	swb_add(&b, INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_1, -64,
			 0));
	swb_add(&b, INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, -56, 0));
	swb_fp(&b, BPF_REG_1, -56);
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 8));
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_8, 0,
			 0));
	swb_call(&b, BPF_FUNC_probe_read_user);
	swb_ld_map(&b, BPF_REG_1, patched_fd);
	swb_fp(&b, BPF_REG_2, -48);
	swb_call(&b, BPF_FUNC_map_lookup_elem);
	/* not patched: an earlier call's mark at this slot goes */
	swb_add(&b, INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 6, 0));
	swb_ld_map(&b, BPF_REG_1, marks_fd);
	swb_fp(&b, BPF_REG_2, -72);
	swb_call(&b, BPF_FUNC_map_delete_elem);
	swb_exit_if(&b, BPF_JA, 0, 0, 0);
	swb_update(&b, marks_fd, -72, -8, BPF_ANY);
	swb_exit_if(&b, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0);
	swb_lost(&b, lost_fd, SYSW_LOST_MARK, -28);
	return swb_load(&b, BPF_PROG_TYPE_KPROBE, "ubt_sysw_mark");
}

/*
 * task_newtask, in the parent: the child (pid) goes in the taken table
 * with its parent's generation when the parent is in it, unless it is a
 * thread (CLONE_THREAD: the same tgid).  The child runs later.
 */
static int swb_newtask(const struct tp_format *f, int taken_fd, int lost_fd)
{
	const struct tp_field *pid = tp_field_sized(f, "pid", 4),
			      *flags = tp_field_sized(f, "clone_flags", 8);
	struct swb b = { .n = 0 };

	if (!pid || !flags)
		return -ENOENT;
	swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0,
			 0));
	swb_add(&b, INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_1, BPF_REG_6,
			 (int16_t)flags->offset, 0));
	swb_exit_if(&b, BPF_JSET | BPF_K, BPF_REG_1, 0, CLONE_THREAD);
	swb_tgid(&b, -4);
	swb_taken_gen(&b, taken_fd);
	swb_add(&b, INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_6,
			 (int16_t)pid->offset, 0));
	swb_add(&b, INSN(BPF_STX | BPF_MEM | BPF_W, BPF_REG_10, BPF_REG_1, -12,
			 0));
	swb_update(&b, taken_fd, -12, -8, BPF_ANY);
	swb_exit_if(&b, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0);
	swb_lost(&b, lost_fd, SYSW_LOST_CHILD, -16);
	return swb_load(&b, BPF_PROG_TYPE_TRACEPOINT, "ubt_sysw_fork");
}

/*
 * sched_process_exec (the new image, unpatched, is the kernel's until it
 * is taken), sched_process_exit with group_dead (else, on a kernel
 * without it, the leader's exit): the current tgid out of the table.
 */
static int swb_leave(const struct tp_format *f, int taken_fd, bool exit)
{
	const struct tp_field *dead = exit ? tp_field_sized(f, "group_dead", 1) :
					     NULL;
	struct swb b = { .n = 0 };

	if (dead) {
		swb_add(&b, INSN(BPF_LDX | BPF_MEM | BPF_B, BPF_REG_2,
				 BPF_REG_1, (int16_t)dead->offset, 0));
		swb_exit_if(&b, BPF_JEQ | BPF_K, BPF_REG_2, 0, 0);
	} else if (exit) {
		swb_call(&b, BPF_FUNC_get_current_pid_tgid);
		swb_add(&b, INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1,
				 BPF_REG_0, 0, 0));
		swb_add(&b, INSN(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_1, 0, 0,
				 32));
		swb_add(&b, INSN(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_0,
				 BPF_REG_0, 0, 0));
		swb_exit_if(&b, BPF_JNE | BPF_X, BPF_REG_0, BPF_REG_1, 0);
	}
	swb_tgid(&b, -4);
	swb_ld_map(&b, BPF_REG_1, taken_fd);
	swb_fp(&b, BPF_REG_2, -4);
	swb_call(&b, BPF_FUNC_map_delete_elem);
	return swb_load(&b, BPF_PROG_TYPE_TRACEPOINT,
			exit ? "ubt_sysw_exit" : "ubt_sysw_exec");
}

/* A tracepoint's perf event running prog (all CPUs: its BPF programs
 * run wherever it fires).  The fd, or -errno. */
static int swb_attach_tp(int id, int prog)
{
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT,
				     .size = sizeof(a), .config = (uint64_t)id,
				     .sample_period = 1, .wakeup_events = 1 };
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1,
			      PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) ||
	    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int sysw_bpf_follow(int taken_fd, int lost_fd, int *fds, char *why,
		    size_t len)
{
	static const char *const ev[SYSW_BPF_FOLLOWERS][2] = {
		{ "task", "task_newtask" },
		{ "sched", "sched_process_exec" },
		{ "sched", "sched_process_exit" },
	};
	struct arena a;
	int err = 0, i;

	for (i = 0; i < SYSW_BPF_FOLLOWERS; i++)
		fds[i] = -1;
	arena_init(&a);
	for (i = 0; i < SYSW_BPF_FOLLOWERS && !err; i++) {
		struct tp_format f;
		int prog;

		err = tp_format_read(&a, ev[i][0], ev[i][1], &f);
		if (!err && f.id < 0)
			err = -ENOENT;
		if (err) {
			snprintf(why, len, "tracepoint %s:%s: %s", ev[i][0],
				 ev[i][1], strerror(-err));
			break;
		}
		prog = i == 0 ? swb_newtask(&f, taken_fd, lost_fd) :
				swb_leave(&f, taken_fd, i == 2);
		err = prog < 0 ? prog : 0;
		if (!err) {
			fds[i] = swb_attach_tp(f.id, prog);
			err = fds[i] < 0 ? fds[i] : 0;
			close(prog);
		}
		if (err)
			snprintf(why, len, "%s:%s: %s", ev[i][0], ev[i][1],
				 strerror(-err));
	}
	arena_release(&a);
	if (err)
		for (i = 0; i < SYSW_BPF_FOLLOWERS; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
	return err;
}
