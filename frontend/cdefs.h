/*
 * C definitions in scripts: struct, union, enum and typedef text,
 * #include and #define lines (AST_C_DEFINITION nodes), and --include
 * files, parsed with libclang (as bpftrace does) into type objects
 * (types.h) in the compilation's arena.
 *
 * libclang is loaded with dlopen() by the first program that has C
 * definitions: it is large (it brings its own LLVM), and a program
 * without them starts without it (DESIGN.md: start-up time and RSS).
 */
#ifndef UBT_CDEFS_H
#define UBT_CDEFS_H

#include <stdbool.h>
#include <stdint.h>

struct compile;
struct cdefs;

/*
 * Parse the program's C definitions and c->includes into c->cdefs.
 * Nothing to do (0, libclang not loaded) when there are none; else 0, or
 * -EINVAL with clang's errors as diagnostics at the script's locations.
 */
int cdefs_parse(struct compile *c);
/*
 * The type named name: "struct foo", "union foo", "enum foo" or a
 * typedef name, as the definitions declare it (records with their
 * fields, arrays, pointers, enums; typedefs resolved). NULL when the
 * definitions do not name it, or have only a declaration of it.
 */
struct type *cdefs_type(struct compile *c, const char *name);
/* An enum constant or a #define of an integer constant expression. */
bool cdefs_const(struct compile *c, const char *name, int64_t *v);
/*
 * The type of an enumerator of the definitions named name: uint64 with
 * its enum's enumerators (they print by name with compat enum-names);
 * NULL when name is no enumerator of the definitions.
 */
struct type *cdefs_const_type(struct compile *c, const char *name);
void cdefs_free(struct cdefs *d);

#endif
