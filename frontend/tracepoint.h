/*
 * Tracepoints: the tracefs format files and the `args` record type built
 * from them, typed as bpftrace 0.17 types tracepoint arguments:
 *
 *   - fields keep their tracefs offsets; the common_* fields are left out
 *     (bpftrace refuses them: sema reports "BPF does not support
 *     accessing common tracepoint fields" for a name starting "common_");
 *   - the C type decides size and signedness ("int" is int32, "long" is
 *     int64, "pid_t" int32, "umode_t" uint16, "bool" uint8, ...), except
 *     that a field of size 8 declared int / unsigned int / unsigned / u32 /
 *     pid_t / uid_t / gid_t becomes int64 / uint64 (syscall arguments);
 *     typedefs are resolved through a built-in table, then kernel BTF,
 *     and a type still unknown takes the format file's size and sign;
 *   - `char x[N]` is string[N]; other arrays are TY_ARRAY (u8 x[16] is
 *     uint8[16]); pointers are TY_POINTER (char * -> int8 *, void * ->
 *     void *, struct foo * -> pointer to a TY_NAMED "struct foo"), in the
 *     user address space for the syscalls category, kernel elsewhere;
 *   - `__data_loc T[] name` fields are int64 (as bpftrace types them)
 *     whose struct type has ->name "__data_loc" (tp_field_is_data_loc()):
 *     the record holds a u32 at the field offset, and the value is
 *     ctx + (that u32 & 0xffff), a pointer to the data, which str() reads.
 */
#ifndef UBT_TRACEPOINT_H
#define UBT_TRACEPOINT_H

#include <stdbool.h>
#include <stddef.h>

struct arena;
struct type;
struct type_field;

/* One "field:" line of a format file. */
struct tp_field {
	const char *decl;	/* as written: "const char * filename" */
	const char *ctype;	/* the type part: "const char *", "char" */
	const char *name;	/* "filename", without [N] */
	size_t offset, size;	/* from the format file */
	bool is_signed;		/* "signed:" from the format file */
	bool data_loc;		/* __data_loc */
	bool common;		/* common_* */
	long array_len;		/* [N]: N; [] or none: -1 (0 is kept as 0) */
};

struct tp_format {
	const char *category, *event;
	int id;			/* "ID:" line, -1 when missing */
	struct tp_field *fields;	/* in file order, common_* included */
	int nfields;
};

/*
 * The tracefs root ("/sys/kernel/tracing" or "/sys/kernel/debug/tracing"),
 * mounting tracefs at /sys/kernel/tracing (or debugfs at /sys/kernel/debug)
 * when neither has events.
 * NULL with errno when there is no tracefs.
 */
const char *tp_tracefs(void);

/* Parse the text of a format file (for tests and tp_format_read()). */
int tp_format_parse(struct arena *a, const char *category, const char *event,
		    const char *text, struct tp_format *out);

/*
 * Read CATEGORY/EVENT/format from tracefs. -ENOENT when the tracepoint
 * does not exist (no diagnostic: the caller words it, see
 * probes/probes.h probes_expand()), other -errno on read errors.
 */
int tp_format_read(struct arena *a, const char *category, const char *event,
		   struct tp_format *out);

/*
 * The args record (TY_RECORD named "struct _tracepoint_CAT_EVENT",
 * is_ctx set, ->size the end of the last field) without common_* fields.
 */
struct type *tp_args_type(struct arena *a, const struct tp_format *f);

/* tp_format_read() + tp_args_type(); -ENOENT when not found. */
int tp_args(struct arena *a, const char *category, const char *event,
	    struct type **out);

/* The field called name of size bytes in f, or NULL. */
const struct tp_field *tp_field_sized(const struct tp_format *f,
				      const char *name, size_t size);

/* Is field i of a record made by tp_args_type() a __data_loc field? */
bool tp_field_is_data_loc(const struct type *record, int i);

/* Every "CATEGORY:EVENT" with a format file, sorted bytewise; the
 * ftrace category (not attachable) is left out, as bpftrace does. */
int tp_list(struct arena *a, const char ***out, int *n);

#endif
