/*
 * Internal to the cdefs*.c files: the libclang functions ubt uses,
 * found with dlsym() in the library dlopen()ed by cdefs_clang_load()
 * (declared by clang-c/Index.h, never linked); the definitions' state.
 */
#ifndef UBT_CDEFS_INT_H
#define UBT_CDEFS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#ifdef UBT_LIBCLANG_PATH
#include <clang-c/Index.h>

#define CDEFS_FNS(X)                                                     \
	X(clang_createIndex) X(clang_disposeIndex)                        \
	X(clang_parseTranslationUnit2) X(clang_disposeTranslationUnit)    \
	X(clang_getNumDiagnostics) X(clang_getDiagnostic)                 \
	X(clang_disposeDiagnostic) X(clang_getDiagnosticSeverity)         \
	X(clang_getDiagnosticSpelling) X(clang_getDiagnosticLocation)     \
	X(clang_getPresumedLocation) X(clang_getChildDiagnostics)         \
	X(clang_getNumDiagnosticsInSet) X(clang_getDiagnosticInSet)       \
	X(clang_getCString) X(clang_disposeString)                        \
	X(clang_getTranslationUnitCursor) X(clang_visitChildren)          \
	X(clang_getCursorKind) X(clang_getCursorSpelling)                 \
	X(clang_getCursorType) X(clang_isCursorDefinition)                \
	X(clang_getCanonicalType) X(clang_getTypeDeclaration)             \
	X(clang_getPointeeType) X(clang_getArrayElementType)              \
	X(clang_getArraySize) X(clang_Type_getSizeOf)                     \
	X(clang_Type_visitFields) X(clang_Cursor_getOffsetOfField)        \
	X(clang_Cursor_isBitField) X(clang_getFieldDeclBitWidth)          \
	X(clang_Cursor_isAnonymousRecordDecl)                             \
	X(clang_getEnumConstantDeclValue)                                 \
	X(clang_getEnumConstantDeclUnsignedValue)                         \
	X(clang_getEnumDeclIntegerType)                                   \
	X(clang_Cursor_isMacroBuiltin) X(clang_Cursor_isMacroFunctionLike) \
	X(clang_getCursorExtent) X(clang_tokenize) X(clang_disposeTokens) \
	X(clang_getTokenSpelling) X(clang_getTokenKind)                   \
	X(clang_Cursor_getTranslationUnit) X(clang_equalCursors)          \
	X(clang_getTypedefDeclUnderlyingType)

struct cdefs_clang {
#define CDEFS_FN_PTR(name) __typeof__(&name) name;
	CDEFS_FNS(CDEFS_FN_PTR)
#undef CDEFS_FN_PTR
};

/* The functions, NULL with a message in *why when libclang cannot be
 * loaded (cdefs_clang.c). */
const struct cdefs_clang *cdefs_clang_load(const char **why);

/* The state of the program's definitions (cdefs.c, cdefs_types.c). */
struct cdefs_name {
	const char *name;	/* "struct foo", "enum bar", "baz" (typedef) */
	CXCursor cur;
	struct type *type;	/* converted, or NULL */
};

struct cdefs_const {
	const char *name;
	int64_t v;
	const char **toks;	/* macros: the body, evaluated on first use */
	int ntoks;
	enum { CONST_VALUE, CONST_MACRO, CONST_BUSY, CONST_BAD } state;
	bool is_macro;
	bool expanding;		/* its body is being expanded */
	bool in_enum;		/* an enumerator of enum_decl */
	CXCursor enum_decl;
};

struct cdefs_rec {
	CXCursor decl;
	struct type *type;
};

struct cdefs {
	const struct cdefs_clang *cx;
	struct compile *c;
	CXIndex idx;
	CXTranslationUnit tu;
	struct cdefs_name *names;
	int nnames, capnames;
	struct cdefs_const *consts;
	int nconsts, capconsts;
	struct cdefs_rec *recs;
	int nrecs, caprecs;
	int depth;
	bool include_missing;	/* a #include of the script not found */
};

#define GROW(arr, n, cap)                                               \
	do {                                                            \
		if ((n) == (cap)) {                                     \
			(cap) = (cap) ? 2 * (cap) : 64;                 \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr))); \
		}                                                       \
	} while (0)

/* s as a string in the arena (s disposed of); the name's entry or NULL. */
char *cdefs_cx_str(struct cdefs *d, CXString s);
struct cdefs_name *cdefs_name_find(struct cdefs *d, const char *name);
/* The enumerators of an enum declaration, in the arena (cdefs_enum.c). */
const struct type_enumval *cdefs_enum_table(struct cdefs *d, CXCursor decl,
					    int *n);
#endif

/*
 * Kernel types for the definitions (cdefs_btf.c): the type name an
 * error of clang's asks for ("unknown type name 'u64'", "field has
 * incomplete type 'struct x'"), or NULL; whether the kernel's BTF has a
 * type of that name; the C text of the named types and the types they
 * need, from BTF (NULL when it has none of them).
 */
struct arena;
const char *cdefs_btf_wanted(struct arena *a, const char *msg);
bool cdefs_btf_has(const char *name);
char *cdefs_btf_header(struct arena *a, const char *const *names, int n);

/* An integer macro's value from its tokens (cdefs_eval.c); lookup finds
 * the names it uses (other macros, enum constants). */
typedef bool (*cdefs_lookup_fn)(void *ctx, const char *name, int64_t *v);
bool cdefs_eval(const char *const *toks, int ntoks, cdefs_lookup_fn lookup,
		void *ctx, int64_t *v);

#endif
