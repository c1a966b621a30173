/*
 * Program types from a binary's DWARF debug info (libdw), as struct type
 * (types.h) in the caller's arena, by the rules of types_btf.h: records
 * with fields at their offsets (bitfields, anonymous members lifted),
 * typedefs and qualifiers looked through, enums as unsigned integers,
 * `char x[N]` as string[N], pointers in the user address space, a
 * pointer to a named struct or union pointing to a TY_NAMED looked up
 * again when followed.
 */
#ifndef UBT_TYPES_DWARF_H
#define UBT_TYPES_DWARF_H

#include <elfutils/libdw.h>
#include <stdint.h>

struct arena;
struct type;

/* The DWARF of the file at path, opened on first use and kept open;
 * NULL when the file has none (or cannot be read). */
Dwarf *types_dwarf_open(const char *path);

/* The type of a DIE that has a DW_AT_type (a parameter, a member), or
 * NULL when the type cannot be expressed. */
struct type *types_dwarf_type_of(struct arena *a, Dwarf_Die *die);

/*
 * The type named name ("struct foo", "union bar", "enum baz", a typedef)
 * as path's DWARF defines it; NULL (errno ENOENT, or ENODATA when the
 * file has no DWARF).
 */
struct type *types_dwarf_lookup(struct arena *a, const char *path,
				const char *name);

/* The value of the enumerator name in path's DWARF: 0, or -ENOENT. */
int types_dwarf_enum_value(const char *path, const char *name,
			   int64_t *value);

#endif
