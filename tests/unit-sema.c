/*
 * The typed AST after sema (frontend/sema*.c): every expression has a
 * type, with bpftrace 0.17's sizes and signedness, and the program tables
 * (maps, variables, formats, probes) say what codegen needs. TAP output.
 *
 * Each case lists every expression of a one-line program in walk order
 * as "source text :: type", then the tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "sema.h"
#include "util.h"

struct dump {
	struct compile *c;
	char *buf;
	size_t len;
	FILE *f;
	int untyped;
};

static bool is_expr(enum ast_kind k)
{
	return k >= AST_INT && k <= AST_RECORD && k != AST_RECORD_FIELD;
}

static int walk(struct ast_node *n, void *ctx)
{
	struct dump *d = ctx;
	const char *src = d->c->source;

	if (n->kind == AST_CONFIG)
		return 0;	/* settings, not expressions */
	if (is_expr(n->kind) && n->kind != AST_IDENT) {
		int a = n->loc.first_column - 1, b = n->loc.last_column - 1;

		if (!n->type || n->type->kind == TY_NONE)
			d->untyped++;
		fprintf(d->f, "%.*s :: %s\n", b - a, src + a,
			type_str(&d->c->arena, n->type));
	}
	return ast_visit_children(n, walk, d);
}

static void tables(struct dump *d)
{
	struct sema_program *p = d->c->sema;
	struct arena *a = &d->c->arena;

	for (int i = 0; i < p->nmaps; i++) {
		struct sema_map *m = p->maps[i];

		fprintf(d->f, "map %d %s[%s] %s\n", m->id, m->name,
			m->nkeys ? type_str(a, m->key) : "",
			type_str(a, m->value));
	}
	for (int i = 0; i < p->nprobes; i++) {
		struct sema_probe *sp = p->probes[i];

		fprintf(d->f, "probe %d %s\n", sp->index, sp->name);
		for (int j = 0; j < sp->nvars; j++)
			fprintf(d->f, "  var %d %s %s\n", sp->vars[j]->slot,
				sp->vars[j]->name,
				type_str(a, sp->vars[j]->type));
	}
	for (int i = 0; i < p->nfmts; i++)
		fprintf(d->f, "fmt %d %s %s\n", p->fmts[i]->id,
			sema_func_name(p->fmts[i]->func),
			type_str(a, p->fmts[i]->args));
}

static const struct {
	const char *prog;
	const char *expect;
} cases[] = {
	{ "BEGIN { $a = (uint8)3; $b = $a + 1; @m = $a; @n[(int8)-1] = 2; }",
	  "$a :: uint8\n(uint8)3 :: uint8\n3 :: int64\n"
	  "$b :: uint64\n$a + 1 :: uint64\n$a :: uint8\n1 :: int64\n"
	  "@m :: uint64\n$a :: uint8\n"
	  "@n[(int8)-1] :: int64\n(int8)-1 :: int8\n-1 :: int64\n2 :: int64\n"
	  "map 0 @m[] uint64\nmap 1 @n[int64] int64\n"
	  "probe 0 BEGIN\n  var 0 $a uint8\n  var 1 $b uint64\n" },
	{ "BEGIN { $c = (int8)-1; $d = $c * 2; $e = 1 == 2; $f = \"a\" == \"b\"; }",
	  "$c :: int8\n(int8)-1 :: int8\n-1 :: int64\n"
	  "$d :: int64\n$c * 2 :: int64\n$c :: int8\n2 :: int64\n"
	  "$e :: int64\n1 == 2 :: int64\n1 :: int64\n2 :: int64\n"
	  "$f :: uint64\n\"a\" == \"b\" :: uint64\n\"a\" :: string[2]\n"
	  "\"b\" :: string[2]\n"
	  "probe 0 BEGIN\n  var 0 $c int8\n  var 1 $d int64\n"
	  "  var 2 $e int64\n  var 3 $f uint64\n" },
	{ "BEGIN { @s = \"a\"; @s = \"abcdef\"; $t = (1, \"x\"); @t = $t; }",
	  "@s :: string[7]\n\"a\" :: string[2]\n"
	  "@s :: string[7]\n\"abcdef\" :: string[7]\n"
	  "$t :: (int64,string[2])\n(1, \"x\") :: (int64,string[2])\n"
	  "1 :: int64\n\"x\" :: string[2]\n"
	  "@t :: (int64,string[2])\n$t :: (int64,string[2])\n"
	  "map 0 @s[] string[7]\nmap 1 @t[] (int64,string[2])\n"
	  "probe 0 BEGIN\n  var 0 $t (int64,string[2])\n" },
	{ "BEGIN { @c[comm, pid] = count(); @h = hist(tid); @l = lhist(cpu, 0, 10, 2); @a = avg(-1); }",
	  "@c[comm, pid] :: count_t\ncomm :: string[16]\npid :: uint64\n"
	  "count() :: count_t\n"
	  "@h :: hist_t\nhist(tid) :: hist_t\ntid :: uint64\n"
	  "@l :: lhist_t\nlhist(cpu, 0, 10, 2) :: lhist_t\ncpu :: uint64\n"
	  "0 :: int64\n10 :: int64\n2 :: int64\n"
	  "@a :: avg_t\navg(-1) :: avg_t\n-1 :: int64\n"
	  "map 0 @c[(string[16],uint64)] count_t\nmap 1 @h[] hist_t\n"
	  "map 2 @l[] lhist_t\nmap 3 @a[] avg_t\nprobe 0 BEGIN\n" },
	{ "BEGIN { printf(\"%s %d\\n\", comm, 5); time(); } END { print(@x); } interval:s:1 { @x = nsecs; }",
	  "printf(\"%s %d\\n\", comm, 5) :: void\n\"%s %d\\n\" :: string[7]\n"
	  "comm :: string[16]\n5 :: int64\ntime() :: void\n"
	  "print(@x) :: void\n@x :: uint64\n"
	  "@x :: uint64\nnsecs :: uint64\n"
	  "map 0 @x[] uint64\nprobe 0 BEGIN\nprobe 1 END\n"
	  "probe 2 interval:s:1\n"
	  "fmt 0 printf (string[16],int64)\nfmt 1 time ()\n" },
	{ "uprobe:/bin/sh:main { @[func] = count(); $s = str(arg0); @p = probe; }",
	  "@[func] :: count_t\nfunc :: usym\ncount() :: count_t\n"
	  "$s :: string[64]\nstr(arg0) :: string[64]\narg0 :: uint64\n"
	  "@p :: probe\nprobe :: probe\n"
	  "map 0 @[usym] count_t\nmap 1 @p[] probe\n"
	  "probe 0 uprobe:/bin/sh:main\n  var 0 $s string[64]\n" },
	{ "uretprobe:/bin/sh:main /retval > 0/ { @ = -retval; @b = !1; @c = ~1; @d = 1 ? 2 : 3; }",
	  "retval > 0 :: uint64\nretval :: uint64\n0 :: int64\n"
	  "@ :: uint64\n-retval :: uint64\nretval :: uint64\n"
	  "@b :: uint64\n!1 :: uint64\n1 :: int64\n"
	  "@c :: int64\n~1 :: int64\n1 :: int64\n"
	  "@d :: int64\n1 ? 2 : 3 :: int64\n1 :: int64\n2 :: int64\n3 :: int64\n"
	  "map 0 @[] uint64\nmap 1 @b[] uint64\nmap 2 @c[] int64\n"
	  "map 3 @d[] int64\nprobe 0 uretprobe:/bin/sh:main\n" },
	{ "config = { max_strlen = 32 } uprobe:/bin/sh:main { $x = 1; $x = 100000; @ = str(arg1); @c++; @s += 5; }",
	  "$x :: int64\n1 :: int64\n$x :: int64\n100000 :: int64\n"
	  "@ :: string[32]\nstr(arg1) :: string[32]\narg1 :: uint64\n"
	  "@c++ :: int64\n@c :: int64\n@s :: int64\n5 :: int64\n"
	  "map 0 @[] string[32]\nmap 1 @c[] int64\nmap 2 @s[] int64\n"
	  "probe 0 uprobe:/bin/sh:main\n  var 0 $x int64\n" },
};

/* max_strlen from the environment and the config block. */
static const struct {
	const char *env, *value, *prog, *expect;
} strlens[] = {
	{ NULL, NULL, "uprobe:/bin/sh:main { @ = str(arg0); }",
	  "string[64]" },
	{ "BPFTRACE_MAX_STRLEN", "20", "uprobe:/bin/sh:main { @ = str(arg0); }",
	  "string[20]" },
	{ "BPFTRACE_STRLEN", "7", "uprobe:/bin/sh:main { @ = str(arg0); }",
	  "string[7]" },
	{ NULL, NULL,
	  "config = { max_strlen = 100 } uprobe:/bin/sh:main { @ = str(arg0); }",
	  "string[100]" },
	{ "BPFTRACE_MAX_STRLEN", "30",
	  "config = { max_strlen = 100 } uprobe:/bin/sh:main { @ = str(arg0); }",
	  "string[30]" },
	{ "BPFTRACE_MAX_STRLEN", "zero", "BEGIN { exit(); }",
	  "ERROR: Invalid value for BPFTRACE_MAX_STRLEN: 'zero': expected a positive integer up to 65536" },
};

static int strlen_case(int no, int i)
{
	struct compile c;
	const char *got;
	char *out = NULL;
	size_t len = 0;
	bool ok;

	if (strlens[i].env)
		setenv(strlens[i].env, strlens[i].value, 1);
	compile_init(&c, "stdin", strlens[i].prog);
	if (compile_frontend(&c, STAGE_SEMA)) {
		FILE *f = open_memstream(&out, &len);

		if (!f)
			exit(99);
		diag_print(&c.diag, f);
		fclose(f);
		got = out;
	} else {
		got = type_str(&c.arena, c.sema->maps[0]->value);
	}
	ok = strstr(got, strlens[i].expect) != NULL;
	printf("%s %d - %s=%s %s\n", ok ? "ok" : "not ok", no,
	       strlens[i].env ? strlens[i].env : "",
	       strlens[i].value ? strlens[i].value : "", strlens[i].prog);
	if (!ok)
		printf("# expected %s, got %s\n", strlens[i].expect, got);
	free(out);
	compile_release(&c);
	if (strlens[i].env)
		unsetenv(strlens[i].env);
	return ok ? 0 : 1;
}

/* -d sema */
static const char dump_prog[] =
	"BEGIN { $x = (uint8)1; @m[comm] = count(); printf(\"%d\\n\", $x + 1); }";
static const char dump_expect[] =
	"program\n"
	" probe 0 BEGIN\n"
	"  attach_point BEGIN (BEGIN)\n"
	"  block\n"
	"   assign =\n"
	"    var $x (slot 0) :: unsigned int8\n"
	"    cast (unsigned int8) :: unsigned int8\n"
	"     int 1 :: int64\n"
	"   assign =\n"
	"    map @m (map 0) :: count\n"
	"     builtin comm :: string[16]\n"
	"    call count :: count\n"
	"   expr_stmt\n"
	"    call printf (fmt 0) :: none\n"
	"     string \"%d\\n\" :: string[4]\n"
	"     binop + :: unsigned int64\n"
	"      var $x (slot 0) :: unsigned int8\n"
	"      int 1 :: int64\n"
	"max_strlen 64\n"
	"map 0 @m [string[16]] count\n"
	"probe 0 var 0 $x unsigned int8\n"
	"fmt 0 printf (unsigned int64)\n";

static int dump_case(int no)
{
	struct compile c;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	bool ok;

	if (!f)
		exit(99);
	compile_init(&c, "stdin", dump_prog);
	ok = !compile_frontend(&c, STAGE_SEMA);
	sema_dump(f, &c);
	fclose(f);
	ok = ok && !strcmp(out, dump_expect);
	printf("%s %d - sema_dump %s\n", ok ? "ok" : "not ok", no, dump_prog);
	if (!ok)
		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
			printf("#   %s\n", l);
	free(out);
	compile_release(&c);
	return ok ? 0 : 1;
}

/* args in uprobes, from the DWARF of tests/targets/ubt-calls */
static int uprobe_args_case(int no)
{
	static const char *const expect =
		"a int32 112, b int32 104; s int8 * 112, n int32 104; "
		"a int64 112, b int64 104, c int64 96, d int64 88, "
		"e int64 72, f int64 64; ";
	char prog[1024], *out = NULL;
	const char *bin = UBT_BUILDDIR "/tests/targets/ubt-calls";
	struct compile c;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	bool ok;

	if (!f)
		exit(99);
	snprintf(prog, sizeof(prog),
		 "uprobe:%s:ubt_add { @a = args.a + args->b; } "
		 "uprobe:%s:ubt_str { @s = str(args->s, args->n); } "
		 "uprobe:%s:ubt_six { @f = args->f; }", bin, bin, bin);
	compile_init(&c, "stdin", prog);
	ok = !compile_frontend(&c, STAGE_SEMA);
	if (!ok)
		diag_print(&c.diag, f);
	for (int i = 0; ok && i < c.sema->nprobes; i++) {
		const struct type *rec = c.sema->probes[i]->args_type;

		for (int j = 0; rec && j < rec->nfields; j++)
			fprintf(f, "%s%s %s %zu", j ? ", " : "",
				rec->fields[j].name,
				type_str(&c.arena, rec->fields[j].type),
				rec->fields[j].offset);
		fputs("; ", f);
	}
	fclose(f);
	ok = ok && !strcmp(out, expect);
	printf("%s %d - uprobe args from DWARF\n", ok ? "ok" : "not ok", no);
	if (!ok)
		printf("# expected %s\n# got %s\n", expect, out);
	free(out);
	compile_release(&c);
	return ok ? 0 : 1;
}

int main(void)
{
	int n = (int)ARRAY_SIZE(cases), fails = 0;

	unsetenv("BPFTRACE_MAX_STRLEN");
	unsetenv("BPFTRACE_STRLEN");
	printf("1..%d\n", n + (int)ARRAY_SIZE(strlens) + 2);

	for (int i = 0; i < n; i++) {
		struct compile c;
		struct dump d = { .c = &c };
		int err;
		bool ok;

		compile_init(&c, "stdin", cases[i].prog);
		err = compile_frontend(&c, STAGE_SEMA);
		d.f = open_memstream(&d.buf, &d.len);
		if (!d.f)
			return 99;
		if (err) {
			diag_print(&c.diag, d.f);
		} else {
			walk(c.program, &d);
			tables(&d);
		}
		fclose(d.f);
		ok = !err && !d.untyped && !strcmp(d.buf, cases[i].expect);
		printf("%s %d - %s\n", ok ? "ok" : "not ok", i + 1,
		       cases[i].prog);
		if (!ok) {
			fails++;
			printf("# %d untyped expressions; got:\n", d.untyped);
			for (char *l = strtok(d.buf, "\n"); l;
			     l = strtok(NULL, "\n"))
				printf("#   %s\n", l);
		}
		free(d.buf);
		compile_release(&c);
	}
	for (int i = 0; i < (int)ARRAY_SIZE(strlens); i++)
		fails += strlen_case(n + i + 1, i);
	fails += dump_case(n + (int)ARRAY_SIZE(strlens) + 1);
	fails += uprobe_args_case(n + (int)ARRAY_SIZE(strlens) + 2);
	return fails ? 1 : 0;
}
