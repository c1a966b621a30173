/*
 * Kernel struct members from the running kernel's BTF, for builtins that
 * walk the current task (ppid: task->real_parent->pid). Loaded once.
 */
#include <errno.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cg_int.h"
#include "util.h"

static struct btf *cg_vmlinux;

/* Byte offset of member of struct sname (a direct member, not a
 * bitfield): 0, or -ENOENT. */
int cg_btf_member_offset(const char *sname, const char *member, size_t *off)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id;

	if (!cg_vmlinux) {
		cg_vmlinux = btf__load_vmlinux_btf();
		if (!cg_vmlinux)
			return -ENOENT;
	}
	id = btf__find_by_name_kind(cg_vmlinux, sname, BTF_KIND_STRUCT);
	if (id < 0)
		return -ENOENT;
	t = btf__type_by_id(cg_vmlinux, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		uint32_t bits = btf_member_bit_offset(t, i);

		if (strcmp(btf__name_by_offset(cg_vmlinux, m->name_off),
			   member) ||
		    btf_member_bitfield_size(t, i) || bits % 8)
			continue;
		*off = bits / 8;
		return 0;
	}
	return -ENOENT;
}
