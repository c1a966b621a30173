/*
 * Internal to cdefs.c, cdefs_eval.c and cdefs_clang.c: the libclang
 * functions ubt uses, found with dlsym() in the library dlopen()ed by
 * cdefs_clang_load(); declared by clang-c/Index.h, never linked.
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
	X(clang_getPresumedLocation)                                      \
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
