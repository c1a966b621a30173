/*
 * C definitions in scripts, parsed with libclang (cdefs.h). The program's
 * definitions become one in-memory header, each at its own line and
 * column (#line), after a prelude of the kernel's and stdint's integer
 * typedefs (bpftrace finds those in the kernel's BTF) and the --include
 * files. One walk of the translation unit records the names it declares
 * (struct, union, enum tags, typedefs), enum constants and object-like
 * macros; a type is converted to a struct type when sema asks for it, so
 * that a large system header costs only what the program uses.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdefs.h"
#include "cdefs_int.h"
#include "compile.h"
#include "types.h"
#include "types_btf.h"
#include "util.h"

#ifdef UBT_LIBCLANG_PATH

static const char cdefs_prelude[] =
	"typedef signed char __s8; typedef unsigned char __u8;\n"
	"typedef short __s16; typedef unsigned short __u16;\n"
	"typedef int __s32; typedef unsigned int __u32;\n"
	"typedef long long __s64; typedef unsigned long long __u64;\n"
	"typedef __s8 s8; typedef __u8 u8; typedef __s16 s16;\n"
	"typedef __u16 u16; typedef __s32 s32; typedef __u32 u32;\n"
	"typedef __s64 s64; typedef __u64 u64;\n"
	"typedef signed char int8_t; typedef unsigned char uint8_t;\n"
	"typedef short int16_t; typedef unsigned short uint16_t;\n"
	"typedef int int32_t; typedef unsigned int uint32_t;\n"
	"typedef long int64_t; typedef unsigned long uint64_t;\n"
	"typedef unsigned long size_t; typedef long ssize_t;\n"
	"typedef int pid_t; typedef unsigned int uid_t;\n"
	"typedef unsigned int gid_t;\n";

char *cdefs_cx_str(struct cdefs *d, CXString s)
{
	const char *p = d->cx->clang_getCString(s);
	char *r = arena_strdup(&d->c->arena, p ? p : "");

	d->cx->clang_disposeString(s);
	return r;
}

struct cdefs_name *cdefs_name_find(struct cdefs *d, const char *name)
{
	for (int i = 0; i < d->nnames; i++)
		if (!strcmp(d->names[i].name, name))
			return &d->names[i];
	return NULL;
}

static struct cdefs_const *const_find(struct cdefs *d, const char *name)
{
	for (int i = d->nconsts - 1; i >= 0; i--)
		if (!strcmp(d->consts[i].name, name))
			return &d->consts[i];
	return NULL;
}

static void name_add(struct cdefs *d, const char *name, CXCursor cur)
{
	struct cdefs_name *n = cdefs_name_find(d, name);

	if (n) {
		/* the definition wins over declarations */
		if (d->cx->clang_isCursorDefinition(cur))
			n->cur = cur;
		return;
	}
	GROW(d->names, d->nnames, d->capnames);
	d->names[d->nnames++] = (struct cdefs_name){ .name = name, .cur = cur };
}

static void macro_add(struct cdefs *d, CXCursor cur, const char *name)
{
	const struct cdefs_clang *cx = d->cx;
	CXToken *toks = NULL;
	unsigned n = 0;
	struct cdefs_const *k;

	if (cx->clang_Cursor_isMacroBuiltin(cur) ||
	    cx->clang_Cursor_isMacroFunctionLike(cur))
		return;
	cx->clang_tokenize(d->tu, cx->clang_getCursorExtent(cur), &toks, &n);
	GROW(d->consts, d->nconsts, d->capconsts);
	k = &d->consts[d->nconsts++];
	*k = (struct cdefs_const){ .name = name, .state = CONST_MACRO,
				   .is_macro = true };
	/* the first token is the macro's name */
	if (n > 1) {
		k->toks = arena_alloc(&d->c->arena, (n - 1) * sizeof(*k->toks));
		for (unsigned i = 1; i < n; i++)
			k->toks[i - 1] = cdefs_cx_str(d, cx->clang_getTokenSpelling(
							   d->tu, toks[i]));
		k->ntoks = (int)n - 1;
	}
	cx->clang_disposeTokens(d->tu, toks, n);
}

static enum CXChildVisitResult visit(CXCursor cur, CXCursor parent,
				     CXClientData data)
{
	struct cdefs *d = data;
	const struct cdefs_clang *cx = d->cx;
	enum CXCursorKind k = cx->clang_getCursorKind(cur);
	const char *prefix = NULL, *name;

	switch (k) {
	case CXCursor_StructDecl:
		prefix = "struct";
		break;
	case CXCursor_UnionDecl:
		prefix = "union";
		break;
	case CXCursor_EnumDecl:
		prefix = "enum";
		break;
	case CXCursor_TypedefDecl:
		name_add(d, cdefs_cx_str(d, cx->clang_getCursorSpelling(cur)), cur);
		return CXChildVisit_Continue;
	case CXCursor_EnumConstantDecl: {
		struct cdefs_const *c;

		GROW(d->consts, d->nconsts, d->capconsts);
		c = &d->consts[d->nconsts++];
		*c = (struct cdefs_const){
			.name = cdefs_cx_str(d, cx->clang_getCursorSpelling(cur)),
			.v = cx->clang_getEnumConstantDeclValue(cur),
			.state = CONST_VALUE,
			.in_enum = cx->clang_getCursorKind(parent) ==
				   CXCursor_EnumDecl,
			.enum_decl = parent,
		};
		return CXChildVisit_Continue;
	}
	case CXCursor_MacroDefinition:
		macro_add(d, cur, cdefs_cx_str(d, cx->clang_getCursorSpelling(cur)));
		return CXChildVisit_Continue;
	default:
		/* functions, variables: nothing ubt uses inside */
		return CXChildVisit_Continue;
	}
	name = cdefs_cx_str(d, cx->clang_getCursorSpelling(cur));
	if (name[0] && !strchr(name, '(') && !strchr(name, ' '))
		name_add(d, arena_printf(&d->c->arena, "%s %s", prefix, name),
			 cur);
	/* nested definitions are visible at file scope in C */
	return CXChildVisit_Recurse;
}

struct toks {
	const char **t;
	int n, cap;
};

/*
 * A macro's body with the object-like macros it names replaced by their
 * bodies, as the preprocessor does (#define B A * 2 with #define A 1 + 2
 * is 5); a macro is not expanded inside its own expansion.
 */
static bool expand(struct cdefs *d, const char *const *in, int n,
		   struct toks *out, int depth)
{
	if (depth > 32)
		return false;
	for (int i = 0; i < n; i++) {
		struct cdefs_const *k = const_find(d, in[i]);

		if (k && k->is_macro && !k->expanding) {
			bool ok;

			k->expanding = true;
			ok = expand(d, k->toks, k->ntoks, out, depth + 1);
			k->expanding = false;
			if (!ok)
				return false;
			continue;
		}
		GROW(out->t, out->n, out->cap);
		out->t[out->n++] = in[i];
	}
	return true;
}

static bool const_lookup(void *ctx, const char *name, int64_t *v);

static bool macro_value(struct cdefs *d, struct cdefs_const *k)
{
	struct toks t = { 0 };
	bool ok;

	k->expanding = true;
	ok = expand(d, k->toks, k->ntoks, &t, 0) &&
	     cdefs_eval(t.t, t.n, const_lookup, d, &k->v);
	k->expanding = false;
	free(t.t);
	return ok;
}

static bool const_lookup(void *ctx, const char *name, int64_t *v)
{
	struct cdefs *d = ctx;
	struct cdefs_const *k = const_find(d, name);

	if (!k)
		return false;
	switch (k->state) {
	case CONST_VALUE:
		*v = k->v;
		return true;
	case CONST_MACRO:
		k->state = CONST_BUSY;
		if (macro_value(d, k)) {
			k->state = CONST_VALUE;
			*v = k->v;
			return true;
		}
		k->state = CONST_BAD;
		return false;
	default:
		return false;
	}
}

bool cdefs_const(struct compile *c, const char *name, int64_t *v)
{
	return c->cdefs && const_lookup(c->cdefs, name, v);
}

/* "text" with C's simple escapes undone; NULL when tok is not a string. */
static char *string_literal(struct cdefs *d, const char *tok, size_t *len)
{
	size_t n = strlen(tok);
	char *s, *p;

	if (n < 2 || tok[0] != '"' || tok[n - 1] != '"')
		return NULL;
	s = p = arena_alloc(&d->c->arena, n);
	for (size_t i = 1; i < n - 1; i++) {
		char ch = tok[i];

		if (ch == '\\' && i + 1 < n - 1) {
			static const char from[] = "ntr0\\\"'", to[] = "\n\t\r\0\\\"'";
			const char *e = strchr(from, tok[++i]);

			if (!e)
				return NULL;
			ch = to[e - from];
		}
		*p++ = ch;
	}
	*len = (size_t)(p - s);
	return s;
}

/*
 * Identifiers that name a #define of one string literal become that
 * string, before sema (bpftrace substitutes macros' text): a format
 * string can come from a macro.
 */
static int subst_strings(struct ast_node *n, void *ctx)
{
	struct cdefs *d = ctx;

	if (n->kind == AST_IDENT) {
		struct cdefs_const *k = const_find(d, n->ident.name);
		struct toks t = { 0 };
		size_t len;
		char *s = NULL;

		if (k && k->is_macro && expand(d, k->toks, k->ntoks, &t, 0) &&
		    t.n == 1)
			s = string_literal(d, t.t[0], &len);
		free(t.t);
		if (s) {
			n->kind = AST_STRING;
			n->str.value = s;
			n->str.len = len;
		}
		return 0;
	}
	return ast_visit_children(n, subst_strings, ctx);
}

/* Parsing. */

/* The prelude, the kernel's types from BTF (when btf), the definitions */
static char *cdefs_source(struct compile *c, const char *btf)
{
	struct ast_node *n;
	size_t len = sizeof(cdefs_prelude) + 128 + (btf ? strlen(btf) : 0);
	char *s, *p;

	for (n = c->program->program.c_defs; n; n = n->next)
		len += strlen(n->cdef.text) + n->loc.first_column +
		       strlen(c->filename) + 64;
	s = p = arena_alloc(&c->arena, len);
	p = stpcpy(p, "#line 1 \"<ubt prelude>\"\n");
	p = stpcpy(p, cdefs_prelude);
	if (btf) {
		p = stpcpy(p, "#line 1 \"<kernel BTF>\"\n");
		p = stpcpy(p, btf);
	}
	for (n = c->program->program.c_defs; n; n = n->next) {
		p += sprintf(p, "#line %d \"%s\"\n", n->loc.first_line,
			     c->filename);
		for (int i = 1; i < n->loc.first_column; i++)
			*p++ = ' ';
		p = stpcpy(p, n->cdef.text);
		/* "struct foo { ... }" ends without ';' in scripts, also
		 * after its __attribute__((...)) */
		if (p > s && (p[-1] == '}' || p[-1] == ')'))
			*p++ = ';';
		*p++ = '\n';
	}
	*p = '\0';
	return s;
}

/*
 * One of clang's diagnostics in clang's format, as bpftrace shows them (it
 * lets libclang print them): located in the script when it is there (the
 * source line follows), else at clang's place (a header, the prelude).
 */
static bool cdefs_ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);

	return n >= m && !strcmp(s + n - m, end);
}

static struct diag *cdefs_diag_one(struct cdefs *d, CXDiagnostic g,
				   enum diag_level level, const char *sev)
{
	const struct cdefs_clang *cx = d->cx;
	struct compile *c = d->c;
	const char *msg, *fname;
	unsigned line, col;
	CXString file;

	msg = cdefs_cx_str(d, cx->clang_getDiagnosticSpelling(g));
	cx->clang_getPresumedLocation(cx->clang_getDiagnosticLocation(g),
				      &file, &line, &col);
	fname = cdefs_cx_str(d, file);
	/*
	 * A missing #include of the script: bpftrace's one line, placed in
	 * its definitions.h (the script's line + 1), no source line, no hint
	 */
	if (!strcmp(fname, c->filename) && line && level == DIAG_ERROR &&
	    !strcmp(sev, "fatal error") && cdefs_ends_with(msg,
							  "file not found")) {
		d->include_missing = true;
		return diag_clang(&c->diag, level, sev, NULL,
				  "definitions.h:%u:%u: %s: %s", line + 1, col,
				  sev, msg);
	}
	if (!strcmp(fname, c->filename) && line) {
		struct ast_loc loc = {
			.first_line = (int)line, .last_line = (int)line,
			.first_column = (int)col,
			.last_column = (int)col + 1,
		};

		return diag_clang(&c->diag, level, sev, &loc, "%s", msg);
	}
	if (!*fname)
		return diag_clang(&c->diag, level, sev, NULL, "%s: %s", sev,
				  msg);
	return diag_clang(&c->diag, level, sev, NULL, "%s:%u:%u: %s: %s",
			  fname, line, col, sev, msg);
}

/* clang's errors and their notes */
static int cdefs_diags(struct cdefs *d)
{
	const struct cdefs_clang *cx = d->cx;
	struct compile *c = d->c;
	unsigned n = cx->clang_getNumDiagnostics(d->tu);
	struct diag *last = NULL;
	int err = 0;

	for (unsigned i = 0; i < n; i++) {
		CXDiagnostic g = cx->clang_getDiagnostic(d->tu, i);
		enum CXDiagnosticSeverity sev =
			cx->clang_getDiagnosticSeverity(g);
		CXDiagnosticSet notes;

		if (sev < CXDiagnostic_Error) {
			cx->clang_disposeDiagnostic(g);
			continue;
		}
		last = cdefs_diag_one(d, g, DIAG_ERROR,
				      sev == CXDiagnostic_Fatal ?
				      "fatal error" : "error");
		notes = cx->clang_getChildDiagnostics(g);
		for (unsigned j = 0;
		     notes && j < cx->clang_getNumDiagnosticsInSet(notes); j++)
			last = cdefs_diag_one(
				d, cx->clang_getDiagnosticInSet(notes, j),
				DIAG_NOTE, "note");
		err = -EINVAL;
		cx->clang_disposeDiagnostic(g);
	}
	/* bpftrace's advice after clang's errors (and their notes) */
	if (last && !d->include_missing)
		diag_hint(&c->diag, last,
			  "Include headers with missing type definitions or install BTF information to your system.");
	return err;
}

/* Parse the definitions (after the kernel's types btf) into d->tu. */
static int cdefs_tu(struct cdefs *d, const char *const *args, int nargs,
		    const char *btf)
{
	struct CXUnsavedFile file = { .Filename = "definitions.h" };
	enum CXErrorCode rc;

	if (d->tu)
		d->cx->clang_disposeTranslationUnit(d->tu);
	d->tu = NULL;
	file.Contents = cdefs_source(d->c, btf);
	file.Length = strlen(file.Contents);
	rc = d->cx->clang_parseTranslationUnit2(
		d->idx, "definitions.h", args, nargs, &file, 1,
		CXTranslationUnit_DetailedPreprocessingRecord, &d->tu);
	if (rc != CXError_Success || !d->tu) {
		diag_error(&d->c->diag, NULL,
			   "cannot parse the C definitions: libclang error %d",
			   (int)rc);
		return -EINVAL;
	}
	return 0;
}

struct cdefs_names {
	const char **v;
	int n, cap;
};

static bool names_has(const struct cdefs_names *w, const char *name)
{
	for (int i = 0; i < w->n; i++)
		if (!strcmp(w->v[i], name))
			return true;
	return false;
}

/*
 * Add to w the kernel types clang's errors ask for; the number added.
 * With redef, whether an error is a redefinition instead.
 */
static int cdefs_wanted(struct cdefs *d, struct cdefs_names *w, bool *redef)
{
	const struct cdefs_clang *cx = d->cx;
	unsigned n = cx->clang_getNumDiagnostics(d->tu);
	int added = 0;

	if (redef)
		*redef = false;
	for (unsigned i = 0; i < n; i++) {
		CXDiagnostic g = cx->clang_getDiagnostic(d->tu, i);
		const char *msg, *name;

		if (cx->clang_getDiagnosticSeverity(g) >= CXDiagnostic_Error) {
			msg = cdefs_cx_str(d, cx->clang_getDiagnosticSpelling(g));
			if (redef && (strstr(msg, "redefinition") ||
				      strstr(msg, "conflicting types")))
				*redef = true;
			name = cdefs_btf_wanted(&d->c->arena, msg);
			if (w && name && !names_has(w, name) &&
			    cdefs_btf_has(name)) {
				GROW(w->v, w->n, w->cap);
				w->v[w->n++] = name;
				added++;
			}
		}
		cx->clang_disposeDiagnostic(g);
	}
	return added;
}

/* The record types a probe names: curtask's, casts', sizeof's, offsetof's */
static void used_type(struct cdefs_names *u, const struct type *t)
{
	while (t && (t->kind == TY_POINTER || t->kind == TY_ARRAY))
		t = t->elem;
	if (t && t->name && (t->kind == TY_NAMED || t->kind == TY_RECORD) &&
	    !names_has(u, t->name)) {
		GROW(u->v, u->n, u->cap);
		u->v[u->n++] = t->name;
	}
}

static int used_walk(struct ast_node *n, void *ctx)
{
	static struct type task = { .kind = TY_NAMED,
				    .name = "struct task_struct" };

	if (n->kind == AST_BUILTIN && !strcmp(n->ident.name, "curtask"))
		used_type(ctx, &task);
	else if (n->kind == AST_CAST)
		used_type(ctx, n->cast.to);
	else if (n->kind == AST_SIZEOF || n->kind == AST_OFFSETOF)
		used_type(ctx, n->size.of_type);
	return ast_visit_children(n, used_walk, ctx);
}

/*
 * bpftrace's rule: a program whose definitions redefine a kernel type
 * that its probes use (struct task_struct { ... } and curtask) takes no
 * type from BTF; it defines every type it needs itself.
 */
static bool cdefs_redefines_used(struct cdefs *d)
{
	struct cdefs_names u = { 0 };
	bool r = false;

	for (struct ast_node *p = d->c->program->program.probes; p;
	     p = p->next)
		used_walk(p, &u);
	if (u.n)
		d->cx->clang_visitChildren(
			d->cx->clang_getTranslationUnitCursor(d->tu), visit, d);
	for (int i = 0; i < u.n && !r; i++) {
		struct cdefs_name *n = cdefs_name_find(d, u.v[i]);

		r = n && d->cx->clang_isCursorDefinition(n->cur) &&
		    cdefs_btf_has(u.v[i]);
	}
	d->nnames = d->nconsts = 0;
	free(u.v);
	return r;
}

/*
 * Parse; while clang asks for types the kernel's BTF has, parse again
 * with them written as C before the definitions. When they clash with
 * the script's own definitions, the script goes without them.
 */
static int cdefs_parse_btf(struct cdefs *d, const char *const *args,
			   int nargs)
{
	struct cdefs_names w = { 0 };
	const char *btf = NULL;
	bool redef;
	int err;

	err = cdefs_tu(d, args, nargs, NULL);
	if (err || !types_btf_vmlinux() || !cdefs_wanted(d, &w, NULL) ||
	    cdefs_redefines_used(d))
		goto out;
	/* a type's dependencies come with it: a second round only for
	 * names the first one's text did not define */
	for (int round = 0; round < 8; round++) {
		btf = cdefs_btf_header(&d->c->arena, w.v, w.n);
		if (!btf)
			break;
		err = cdefs_tu(d, args, nargs, btf);
		if (err || !cdefs_wanted(d, &w, &redef))
			break;
	}
	if (!err && btf) {
		cdefs_wanted(d, NULL, &redef);
		if (redef)
			err = cdefs_tu(d, args, nargs, NULL);
	}
out:
	free(w.v);
	return err;
}

int cdefs_parse(struct compile *c)
{
	static const char *const base_args[] = {
		/* the system's include directories come from clang's
		 * driver, after its own (resource) headers */
		"-x", "c", "-std=gnu11", "-fno-color-diagnostics",
	};
	const char **args;
	int nargs = 0;
	const char *why = NULL;
	struct cdefs *d;

	if (!c->program->program.c_defs && !c->nincludes)
		return 0;
	d = xcalloc(1, sizeof(*d));
	d->c = c;
	d->cx = cdefs_clang_load(&why);
	if (!d->cx) {
		struct ast_node *n = c->program->program.c_defs;

		diag_error(&c->diag, n ? &n->loc : NULL,
			   "C definitions are not supported: %s", why);
		free(d);
		return -EINVAL;
	}
	c->cdefs = d;
	args = arena_alloc(&c->arena,
			   (ARRAY_SIZE(base_args) + 3 + 2 * c->nincludes +
			    2 * c->ninclude_dirs) * sizeof(*args));
	for (int i = 0; i < c->ninclude_dirs; i++) {
		args[nargs++] = "-I";
		args[nargs++] = c->include_dirs[i];
	}
	for (size_t i = 0; i < ARRAY_SIZE(base_args); i++)
		args[nargs++] = base_args[i];
#ifdef UBT_CLANG_RESOURCE_DIR
	args[nargs++] = "-resource-dir";
	args[nargs++] = UBT_CLANG_RESOURCE_DIR;
#endif
	/* scripts choose their headers by it, as for bpftrace */
	if (!access("/sys/kernel/btf/vmlinux", R_OK))
		args[nargs++] = "-DBPFTRACE_HAVE_BTF";
	for (int i = 0; i < c->nincludes; i++) {
		args[nargs++] = "-include";
		args[nargs++] = c->includes[i];
	}
	d->idx = d->cx->clang_createIndex(0, 0);
	if (cdefs_parse_btf(d, args, nargs) || cdefs_diags(d))
		return -EINVAL;
	d->cx->clang_visitChildren(
		d->cx->clang_getTranslationUnitCursor(d->tu), visit, d);
	for (struct ast_node *p = c->program->program.probes; p; p = p->next)
		subst_strings(p, d);
	return 0;
}

void cdefs_free(struct cdefs *d)
{
	if (!d)
		return;
	if (d->tu)
		d->cx->clang_disposeTranslationUnit(d->tu);
	if (d->idx)
		d->cx->clang_disposeIndex(d->idx);
	free(d->names);
	free(d->consts);
	free(d->recs);
	free(d);
}

#else /* !UBT_LIBCLANG_PATH */

int cdefs_parse(struct compile *c)
{
	struct ast_node *n = c->program->program.c_defs;

	if (!n && !c->nincludes)
		return 0;
	diag_error(&c->diag, n ? &n->loc : NULL,
		   "C definitions are not supported: ubt was built without libclang");
	return -EINVAL;
}

bool cdefs_const(struct compile *c, const char *name, int64_t *v)
{
	return false;
}

void cdefs_free(struct cdefs *d)
{
}

#endif
