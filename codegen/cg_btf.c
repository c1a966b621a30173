/*
 * Kernel struct members from the running kernel's BTF, for builtins that
 * walk the current task (ppid: task->real_parent->pid). Loaded once.
 */
#include <errno.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cg_int.h"
#include "kfeat.h"
#include "util.h"

static struct btf *cg_vmlinux;

/* Byte offset of member in the struct or union of BTF id id, looked for
 * in its anonymous struct and union members too: 0, or -ENOENT. */
static int cg_btf_find_member(int id, const char *member, size_t *off)
{
	const struct btf_type *t = btf__type_by_id(cg_vmlinux, id);
	const struct btf_member *m;

	if (!t || (!btf_is_struct(t) && !btf_is_union(t)))
		return -ENOENT;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		uint32_t bits = btf_member_bit_offset(t, i);
		size_t inner;

		if (btf_member_bitfield_size(t, i) || bits % 8)
			continue;
		if (!m->name_off) {
			int sub = btf__resolve_type(cg_vmlinux, m->type);

			if (sub > 0 &&
			    !cg_btf_find_member(sub, member, &inner)) {
				*off = bits / 8 + inner;
				return 0;
			}
			continue;
		}
		if (strcmp(btf__name_by_offset(cg_vmlinux, m->name_off),
			   member))
			continue;
		*off = bits / 8;
		return 0;
	}
	return -ENOENT;
}

/* Byte offset of member of struct sname (a direct member, or one of an
 * anonymous struct or union in it; not a bitfield): 0, or -ENOENT. */
int cg_btf_member_offset(const char *sname, const char *member, size_t *off)
{
	int id;

	if (!cg_vmlinux) {
		cg_vmlinux = kfeat_vmlinux_btf();
		if (!cg_vmlinux)
			return -ENOENT;
	}
	id = btf__find_by_name_kind(cg_vmlinux, sname, BTF_KIND_STRUCT);
	if (id < 0)
		return -ENOENT;
	return cg_btf_find_member(id, member, off);
}
