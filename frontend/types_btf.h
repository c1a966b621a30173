/*
 * Kernel types from the running kernel's BTF (/sys/kernel/btf/vmlinux),
 * as struct type (types.h), in the caller's arena:
 *
 *   - struct and union -> TY_RECORD named "struct foo" / "union foo",
 *     fields at their byte offsets, bitfields with bitfield_bits and
 *     bitfield_shift (bits above the field's byte offset), the members
 *     of an anonymous struct or union member lifted into the record (C
 *     names them as the record's own);
 *   - typedefs, const, volatile, restrict and type tags are looked
 *     through; enums are unsigned integers of their size (as bpftrace
 *     0.17 types them); `char x[N]` is string[N], other arrays TY_ARRAY;
 *   - a pointer is TY_POINTER in the kernel address space; a pointer to
 *     a named struct or union points to a TY_NAMED of that name, looked
 *     up again when the program follows it (a struct refers to itself
 *     through pointers: task_struct's real_parent), so a lookup converts
 *     one record and the records it holds by value, not the whole graph.
 */
#ifndef UBT_TYPES_BTF_H
#define UBT_TYPES_BTF_H

#include <stdint.h>

struct arena;
struct btf;
struct type;

/* The kernel's BTF, loaded on first use and kept; NULL if unavailable. */
struct btf *types_btf_vmlinux(void);

/*
 * The type named name ("struct task_struct", "union foo", "enum bar", a
 * typedef such as "pid_t"), or NULL (errno ENOENT, or ENODATA without
 * kernel BTF).
 */
struct type *types_btf_lookup(struct arena *a, const char *name);
/* The BTF id of a C type name ("struct x", "enum e", a typedef), or 0. */
uint32_t types_btf_id(const struct btf *btf, const char *name);

/* The value of the kernel enumerator name (BPF_MAP_TYPE_HASH): 0, or
 * -ENOENT. */
int types_btf_enum_value(const char *name, int64_t *value);

#endif
