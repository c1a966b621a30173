/*
 * Types of expressions, variables and map keys/values, as bpftrace sizes
 * them. Allocated in the compilation arena; compare with type_equal().
 */
#ifndef UBT_TYPES_H
#define UBT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct arena;

enum type_kind {
	TY_NONE,	/* not yet inferred */
	TY_VOID,	/* statement-only calls: printf(), exit(), ... */
	TY_INT,
	TY_BOOL,
	TY_STRING,	/* fixed-size NUL-padded buffer of size bytes */
	TY_BUFFER,	/* buf(): length-prefixed bytes */
	TY_POINTER,
	TY_ARRAY,
	TY_RECORD,	/* C struct or union (is_union) */
	TY_ENUM,
	TY_TUPLE,
	TY_NAMED,	/* a C type name not resolved yet (typedef or struct) */
	/* values with a special printing */
	TY_USYM, TY_KSYM, TY_USTACK, TY_KSTACK, TY_USERNAME, TY_INET,
	TY_MAC, TY_TIMESTAMP, TY_CGROUP_PATH, TY_STRERROR, TY_PROBE,
	TY_SYSCALL_NAME,	/* syscall_name(nr): the number, its name printed */
	TY_SIGNAL_NAME,	/* signal_name(sig): the number, strsignal() printed */
	/* aggregation map values */
	TY_COUNT, TY_SUM, TY_AVG, TY_MIN, TY_MAX, TY_STATS, TY_HIST, TY_LHIST,
	TY_TSERIES,	/* tseries(): frontend/func_tseries.c */
	TY_KIND_COUNT,
};

/* An enumerator of a C enum: its name and value. */
struct type_enumval {
	const char *name;
	int64_t value;
};

struct type_field {
	const char *name;	/* NULL for tuple elements */
	struct type *type;
	size_t offset;
	int bitfield_bits;	/* 0 when not a bitfield */
	int bitfield_shift;
};

struct type {
	enum type_kind kind;
	size_t size;		/* bytes; for TY_STRING the buffer size */
	bool is_signed;		/* TY_INT, TY_SUM, TY_MIN, TY_MAX, TY_AVG, TY_STATS */
	bool sign_flex;		/* TY_INT of a literal not negative (compat
				 * int-types): takes the sign of the
				 * integers it meets, as v0.26's */
	bool is_union;		/* TY_RECORD */
	bool is_ctx;		/* pointer into the probe context (args) */
	bool is_local;		/* pointer to a variable (&$x): the probe's
				 * stack (the BPF program's, or in user mode
				 * the traced thread's) */
	enum {
		AS_NONE, AS_KERNEL, AS_USER,
	} addrspace;
	const char *name;	/* record/enum/named type name ("struct foo") */
	struct type *elem;	/* pointee / array element */
	size_t nelems;		/* array length */
	struct type_field *fields;	/* records and tuples */
	int nfields;
	/* lhist(value, min, max, step); hist(value, bits) */
	int64_t lhist_min, lhist_max, lhist_step;
	int hist_bits;
	/* tseries(value, interval, num_intervals[, agg]): agg is enum
	 * tseries_agg (func_tseries.c) */
	int64_t ts_interval, ts_num;
	int ts_agg;
	/* an integer of a C enum of the script's definitions: its
	 * enumerators, for printing them by name (compat enum-names) */
	const struct type_enumval *enumvals;
	int nenumvals;
};

struct type *type_new(struct arena *a, enum type_kind kind, size_t size);
struct type *type_int(struct arena *a, size_t size, bool is_signed);
struct type *type_string(struct arena *a, size_t size);
struct type *type_pointer(struct arena *a, struct type *elem);
bool type_equal(const struct type *x, const struct type *y);
/*
 * The field of tuple src that goes into field i of tuple d (same count):
 * a record's by name, whatever its place (bpftrace's records), a plain
 * tuple's by place; NULL when there is none.
 */
const struct type_field *type_tuple_match(const struct type *d,
					  const struct type *src, int i);
bool type_is_integer(const struct type *t);	/* int, bool, pointer-free */
bool type_is_aggregation(const struct type *t);	/* count ... tseries */
/* bpftrace's spelling of a type in messages: "uint64", "string[64]", ... */
/* "(p0,p1,...)" from the n strings parts, built at once (not quadratic
 * in n as repeated printing would be). */
const char *type_tuple_str(struct arena *a, const char *const *parts, int n);
const char *type_str(struct arena *a, const struct type *t);
/* The class of a type in bpftrace's messages: "integer", "string",
 * "pointer", "tuple", "count", ... */
const char *type_class(const struct type *t);

#endif
