/*
 * umulti PATH OFFSET: another tracer for tests/user/share.py, placing a
 * uprobe the way libbpf's uprobe_multi links do (BPF_LINK_CREATE with
 * BPF_TRACE_UPROBE_MULTI; libbpf 1.1 has no API for it, the kernel does).
 * Its program counts hits at PATH:OFFSET (a file offset) in every process.
 * Prints "attached", then "count N" once stdin ends.  Exit 77 when the
 * kernel has no uprobe_multi links.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

#define INSN(c, d, s, o, i)                                          \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })

/* The kernel's number for an enumerator of enum bpf_attach_type. */
static int attach_type(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_enum *e;
	const struct btf_type *t;
	int id, v = -1;

	if (!btf)
		return -1;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	e = t ? btf_enum(t) : NULL;
	for (int i = 0; e && i < btf_vlen(t); i++, e++)
		if (!strcmp(btf__name_by_offset(btf, e->name_off), name))
			v = e->val;
	btf__free(btf);
	return v;
}

/* union bpf_attr's link_create with the uprobe_multi member (Linux 6.6) */
struct link_create_umulti {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, umflags, pid;
	uint8_t pad[64];
};

int main(int argc, char **argv)
{
	int type = attach_type("BPF_TRACE_UPROBE_MULTI");
	uint64_t off, count = 0;
	int map, prog, link;
	uint32_t key = 0;
	char buf[64];

	if (argc != 3)
		return 2;
	off = strtoull(argv[2], NULL, 0);
	if (type < 0) {
		fprintf(stderr, "umulti: no uprobe_multi in this kernel\n");
		return 77;
	}
	map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "umulti", 4, 8, 1, NULL);
	{
		const struct bpf_insn insns[] = {
			INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0),
			INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0,
			     map),
			INSN(0, 0, 0, 0, 0),
			INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),
			INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4),
			INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			     BPF_FUNC_map_lookup_elem),
			INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2, 0),
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, 1),
			INSN(BPF_STX | BPF_ATOMIC | BPF_DW, 0, 1, 0, BPF_ADD),
			INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
			INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
		};
		LIBBPF_OPTS(bpf_prog_load_opts, po,
			    .expected_attach_type = (enum bpf_attach_type)type);

		prog = map < 0 ? -1 :
		       bpf_prog_load(BPF_PROG_TYPE_KPROBE, "umulti", "GPL",
				     insns, sizeof(insns) / sizeof(insns[0]),
				     &po);
	}
	if (prog < 0) {
		fprintf(stderr, "umulti: load: %s\n", strerror(errno));
		return 1;
	}
	{
		struct link_create_umulti a = {
			.prog_fd = (uint32_t)prog,
			.attach_type = (uint32_t)type,
			.path = (uint64_t)(uintptr_t)argv[1],
			.offsets = (uint64_t)(uintptr_t)&off,
			.cnt = 1,
		};

		link = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	}
	if (link < 0) {
		fprintf(stderr, "umulti: link: %s\n", strerror(errno));
		return errno == EINVAL || errno == EOPNOTSUPP ? 77 : 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	bpf_map_lookup_elem(map, &key, &count);
	printf("count %llu\n", (unsigned long long)count);
	close(link);
	return 0;
}
