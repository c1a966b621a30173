/*
 * How a -p process ended.  ubt is not its parent, so no wait status comes
 * to ubt; a small BPF program on the sched_process_exit raw tracepoint
 * keeps the exit code of the process's main thread (task_struct's
 * exit_code, its offset from the kernel's BTF) in a one-slot array, which
 * ubt reads once the process is gone.  A raw tracepoint needs neither
 * kprobes nor a perf event per CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "exitwatch.h"
#include "kfeat.h"

struct exitwatch {
	int map_fd, prog_fd, link_fd;
};

#define INSN(c, d, s, o, i)                                          \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })

/* The byte offset of task_struct.exit_code, from the kernel's BTF. */
static int exit_code_offset(void)
{
	const struct btf *btf = kfeat_vmlinux_btf();
	const struct btf_member *m;
	const struct btf_type *t;
	int id, off = -ENOENT;

	if (!btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	m = t ? btf_members(t) : NULL;
	for (int i = 0; m && i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off),
			    "exit_code") &&
		    !(btf_member_bit_offset(t, i) % 8))
			off = (int)(btf_member_bit_offset(t, i) / 8);
	return off;
}

struct exitwatch *exitwatch_start(pid_t pid)
{
	struct exitwatch *w;
	int off = exit_code_offset();

	if (off < 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ubt_exit", 4, 8, 1,
				   NULL);
	if (w->map_fd < 0)
		goto fail_map;
	{
		const struct bpf_insn prog[] = {
			/* r6 = ctx; pid and tgid of the exiting thread */
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0),
			INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			     BPF_FUNC_get_current_pid_tgid),
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, 7, 0, 0, 0),
			INSN(BPF_ALU64 | BPF_RSH | BPF_K, 7, 0, 0, 32),
			INSN(BPF_JMP | BPF_JNE | BPF_K, 7, 0, 19, pid),
			/* the main thread only: its code is the process's */
			INSN(BPF_ALU | BPF_MOV | BPF_X, 0, 0, 0, 0),
			INSN(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 17, pid),
			/* value = 0; read task->exit_code (args[0]) */
			INSN(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, 0),
			INSN(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, 0, 0),
			INSN(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, off),
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0),
			INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -8),
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 4),
			INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			     BPF_FUNC_probe_read_kernel),
			/* the top bit says "ended" (an exit code of 0 too) */
			INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 1),
			/* key 0 */
			INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -16, 0),
			INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0,
			     w->map_fd),
			INSN(0, 0, 0, 0, 0),
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
			INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -16),
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0),
			INSN(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, -8),
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0),
			INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			     BPF_FUNC_map_update_elem),
			/* out: */
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
			INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		};

		w->prog_fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT,
					   "ubt_exit", "GPL", prog,
					   sizeof(prog) / sizeof(prog[0]),
					   NULL);
	}
	if (w->prog_fd < 0)
		goto fail_prog;
	w->link_fd = bpf_raw_tracepoint_open("sched_process_exit",
					     w->prog_fd);
	if (w->link_fd < 0)
		goto fail_link;
	return w;
fail_link:
	close(w->prog_fd);
fail_prog:
	close(w->map_fd);
fail_map:
	free(w);
	return NULL;
}

bool exitwatch_status(struct exitwatch *w, int *status)
{
	uint32_t key = 0;
	uint64_t v = 0;

	if (!w || bpf_map_lookup_elem(w->map_fd, &key, &v) ||
	    !(v >> 32))
		return false;
	*status = (int)(uint32_t)v;	/* as a wait status */
	return true;
}

void exitwatch_free(struct exitwatch *w)
{
	if (!w)
		return;
	close(w->link_fd);
	close(w->prog_fd);
	close(w->map_fd);
	free(w);
}
