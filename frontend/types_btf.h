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

#include <stdbool.h>
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

/* BTF type id of btf (vmlinux's or a module's) as a struct type, or
 * NULL (floats, functions' own types, bad ids). */
struct type *types_btf_type(struct arena *a, const struct btf *btf,
			    uint32_t id);

/*
 * Kernel functions and raw tracepoints from BTF (types_btf_func.c).
 *
 * types_btf_func_args(): the arguments of function name (rawtp false: a
 * BTF FUNC, as fentry/fexit programs see them) or of raw tracepoint name
 * (rawtp true: typedef btf_trace_NAME, its first, private argument left
 * out), in the BTF of module (NULL: vmlinux, then every loaded module),
 * as a TY_RECORD with one field per argument at 8 * its slot of the
 * program's u64 context (a struct by value takes its size in slots);
 * for a function that returns a value, a field "$retval" (no program can
 * name it) in the slot after the last argument, as fexit programs get
 * it. *module_out (may be NULL) gets the module it was found in, NULL
 * for vmlinux. 0, -ENODATA (no kernel BTF), -ENOENT (no such function).
 */
int types_btf_func_args(struct arena *a, const char *module, const char *name,
			bool rawtp, struct type **out,
			const char **module_out);

/* -lv's lines for it: "    TYPE NAME\n" per argument, TYPE as C
 * declares it ("struct file *"), and "    TYPE retval" when ret and it
 * returns a value; NULL when BTF does not know it. */
const char *types_btf_func_decls(struct arena *a, const char *module,
				 const char *name, bool rawtp, bool ret);
/* Where it is in BTF (the BTF's place, then its type id; 0: nowhere):
 * the decls of a listing are made in this order, as bpftrace 0.17 makes
 * them, since one BTF's declarations share a btf_dump, which names a
 * second struct of the same name "NAME___2". */
uint64_t types_btf_func_order(const char *module, const char *name,
			      bool rawtp);

/* One function or raw tracepoint named in BTF. */
struct types_btf_func {
	const char *name;
	const char *module;	/* NULL: vmlinux */
	int nparams;		/* as its FUNC_PROTO has them */
};
/* Every function (rawtp false) or raw tracepoint (rawtp true) of vmlinux
 * and the loaded modules' BTF, sorted by module then name, duplicates
 * left out. 0, or -ENODATA without kernel BTF. */
int types_btf_funcs(struct arena *a, bool rawtp, struct types_btf_func **out,
		    int *n);

/* The value of the kernel enumerator name (BPF_MAP_TYPE_HASH): 0, or
 * -ENOENT. */
int types_btf_enum_value(const char *name, int64_t *value);
/* The same, and with type, an integer of 8 bytes that carries the
 * enumerators of name's enum (types.h), allocated in a. */
int types_btf_enum_lookup(struct arena *a, const char *name, int64_t *value,
			  struct type **type);

#endif
