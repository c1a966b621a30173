/*
 * End to end through the library: parse, sema, codegen to BPF, load,
 * attach, run, read the ring buffer and maps, print — kernel_run() on
 * small programs, with this program itself as the traced -c command
 * ("unit-kernel child" calls the functions below a known number of times
 * with known arguments). Expected outputs are bpftrace 0.17's for the
 * same programs and the same child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include "compile.h"
#include "kernel.h"

/* ---- the traced child ---------------------------------------------- */

__attribute__((noinline, used)) long ukt_add(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a + b;
}

__attribute__((noinline, used)) int ukt_name(const char *s, int n)
{
	__asm__ volatile("" ::: "memory");
	return (int)strlen(s) + n;
}

__attribute__((noinline, used)) long ukt_neg(long v)
{
	__asm__ volatile("" ::: "memory");
	return -v;
}

__attribute__((noinline, used)) int ukt_paged(const char *s)
{
	__asm__ volatile("" ::: "memory");
	return (int)strlen(s);
}

/* A string in a page the process has never touched: a kernel read
 * without a fault finds nothing there. */
static void child_paged(void)
{
	char path[] = "/tmp/ukt-paged-XXXXXX";
	static char page[8192];
	int fd = mkstemp(path);
	char *p;

	if (fd < 0)
		return;
	strcpy(page + 4096, "paged in late");
	if (write(fd, page, sizeof(page)) == sizeof(page)) {
		p = mmap(NULL, sizeof(page), PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			ukt_paged(p + 4096);
			munmap(p, sizeof(page));
		}
	}
	close(fd);
	unlink(path);
}

int child(void);

/*
 * -p target: wait (10 s at most) until the tracer's uprobe is on ukt_name
 * (the kernel's breakpoint shows in our own text), then do the calls.
 */
static int child_wait(void)
{
	const volatile uint8_t *entry = (const volatile uint8_t *)ukt_name;

	for (int i = 0; i < 10000 && *entry != 0xcc; i++)
		usleep(1000);
	return child();
}

int child(void)
{
	static const char *names[] = { "alpha", "beta", "gamma" };

	for (long i = 0; i < 10; i++)
		ukt_add(i, 2 * i);
	for (int i = 0; i < 6; i++)
		ukt_name(names[i % 3], i);
	for (long v = -2; v <= 1000; v = v < 0 ? v + 1 : v * 2 + 1)
		ukt_neg(v);
	for (int i = 0; i < 5; i++)
		syscall(SYS_getppid);
	child_paged();
	return 0;
}

/* ---- the tests ----------------------------------------------------- */

struct ukt_case {
	const char *name;
	const char *prog;	/* BIN is replaced by this program's path */
	int with_child;		/* 1: -c "BIN child"; 2: -p of a running child */
	const char *expect;
	int expect_rc;
	const char *expect_err;	/* a line expected on stderr */
};

static const struct ukt_case cases[] = {
	{ "BEGIN printf and exit",
	  "BEGIN { printf(\"hello %d %s\\n\", 42, \"world\"); exit(); }",
	  false, "Attaching 1 probe...\nhello 42 world\n\n\n" },
	{ "nothing runs after exit()",
	  "BEGIN { exit(); printf(\"after\\n\"); }",
	  false, "Attaching 1 probe...\n\n\n" },
	{ "uprobe count",
	  "uprobe:BIN:ukt_add { @c = count(); }",
	  true, "Attaching 1 probe...\n\n\n@c: 10\n" },
	{ "uprobe keyed count, sum, min, max, avg",
	  "uprobe:BIN:ukt_add { @n[arg0 % 3] = count(); @s = sum(arg1);"
	  " @lo = min(arg1); @hi = max(arg1); @a = avg(arg0); }",
	  true,
	  "Attaching 1 probe...\n\n\n@a: 4\n\n@hi: 18\n@lo: 0\n"
	  "@n[1]: 3\n@n[2]: 3\n@n[0]: 4\n@s: 90\n" },
	{ "printf of arguments, str() of a user string",
	  "uprobe:BIN:ukt_name { printf(\"%s %d\\n\", str(arg0), arg1); }",
	  true,
	  "Attaching 1 probe...\nalpha 0\nbeta 1\ngamma 2\nalpha 3\n"
	  "beta 4\ngamma 5\n\n\n" },
	{ "string keys",
	  "uprobe:BIN:ukt_name { @[str(arg0)] = sum(arg1); }",
	  true,
	  "Attaching 1 probe...\n\n\n@[alpha]: 3\n@[beta]: 5\n@[gamma]: 7\n" },
	{ "uretprobe retval and tuple keys",
	  "uretprobe:BIN:ukt_add /retval > 20/ { @[retval, \"big\"] = sum(retval); }",
	  true,
	  "Attaching 1 probe...\n\n\n@[21, big]: 21\n@[24, big]: 24\n"
	  "@[27, big]: 27\n" },
	{ "hist of signed values",
	  "uprobe:BIN:ukt_neg { @h = hist(arg0); }",
	  true,
	  "Attaching 1 probe...\n\n\n@h: \n"
	  "(..., 0)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	  "[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[2, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[8, 16)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[32, 64)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[64, 128)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[128, 256)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "[256, 512)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
	  "\n" },
	{ "lhist",
	  "uprobe:BIN:ukt_add { @l = lhist(arg1, 0, 10, 5); }",
	  true,
	  "Attaching 1 probe...\n\n\n@l: \n"
	  "[0, 5)                 3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                     |\n"
	  "[5, 10)                2 |@@@@@@@@@@@@@@@@@@@@                                |\n"
	  "[10, ...)              5 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	  "\n" },
	{ "scratch variables, if/else, ternary, while, unroll",
	  "uprobe:BIN:ukt_add /arg0 < 4/ { $x = arg0 * 2; $i = 0;"
	  " while ($i < 3) { $x += 1; $i++; }"
	  " unroll(2) { $x = $x + 10; }"
	  " if ($x > 25) { printf(\"big %d\\n\", $x); }"
	  " else { printf(\"small %d %s\\n\", $x, $x % 2 ? \"odd\" : \"even\"); } }",
	  true,
	  "Attaching 1 probe...\nsmall 23 odd\nsmall 25 odd\nbig 27\nbig 29\n"
	  "\n\n" },
	{ "map ++, +=, delete, print, clear",
	  "uprobe:BIN:ukt_add { @x++; @y += arg1; @z[arg0] = arg0;"
	  " delete(@z[3]); }"
	  " END { print(@x); clear(@y); }",
	  true,
	  "Attaching 2 probes...\n@x: 10\n\n\n@x: 10\n\n@z[0]: 0\n@z[1]: 1\n"
	  "@z[2]: 2\n@z[4]: 4\n@z[5]: 5\n@z[6]: 6\n@z[7]: 7\n@z[8]: 8\n"
	  "@z[9]: 9\n" },
	{ "tracepoint with args and a cpid predicate",
	  "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); }"
	  " tracepoint:syscalls:sys_enter_acct /pid == cpid/ { @w[args->name] = count(); }",
	  true, "Attaching 2 probes...\n\n\n@: 5\n\n" },
	{ "interval and elapsed",
	  "interval:ms:50 { @i++; if (@i == 3) { printf(\"%d %d\\n\", @i,"
	  " elapsed > 100000000); exit(); } }",
	  false, "Attaching 1 probe...\n3 1\n\n\n@i: 3\n" },
	{ "probe and func with wildcards, func named after the exit",
	  "uprobe:BIN:ukt_a*,uprobe:BIN:ukt_neg { @[func, probe] = count(); }",
	  true,
	  "Attaching 2 probes...\n\n\n@[ukt_add, uprobe:BIN:ukt_add]: 10\n"
	  "@[ukt_neg, uprobe:BIN:ukt_neg]: 12\n" },
	{ "printf of probe and func",
	  "uprobe:BIN:ukt_add { printf(\"%s %s\\n\", probe, func); exit(); }",
	  true, "Attaching 1 probe...\nuprobe:BIN:ukt_add ukt_add\n\n\n" },
	{ "stats, zero, print of a tuple",
	  "uprobe:BIN:ukt_add { @s = stats(arg1); @z = sum(arg0); }"
	  " uprobe:BIN:ukt_name /arg1 < 2/ { $t = (str(arg0), arg1 * 2); print($t); }"
	  " END { zero(@z); }",
	  true,
	  "Attaching 3 probes...\n(alpha, 0)\n(beta, 2)\n\n\n"
	  "@s: count 10, average 9, total 90\n\n@z: 0\n" },
	{ "-p: probes filtered by pid, the end when the process exits",
	  "uprobe:BIN:ukt_name { @[pid == $1] = count(); }",
	  2, "Attaching 1 probe...\n\n\n@[1]: 6\n" },
	{ "an unknown function is an error, nothing attached",
	  "uprobe:BIN:nosuchfunc { exit(); }",
	  true, "", 1,
	  "ERROR: Could not resolve symbol: BIN:nosuchfunc" },
	{ "str() of a string not paged in yet",
	  "uprobe:BIN:ukt_paged { printf(\"[%s]\\n\", str(arg0)); }",
	  true, "Attaching 1 probe...\n[paged in late]\n\n\n" },
	{ "system() and cat() (--unsafe)",
	  "BEGIN { system(\"echo sys %d\", 7); cat(\"/proc/sys/kernel/%s\","
	  " \"ostype\"); printf(\"after\\n\"); exit(); }",
	  false, "Attaching 1 probe...\nsys 7\nLinux\nafter\n\n\n" },
	{ "has_key()",
	  "BEGIN { @a[1] = 2; @s[\"k\"] = 1; printf(\"%d %d %d %d\\n\","
	  " has_key(@a, 1), has_key(@a, 2), has_key(@s, \"k\"),"
	  " has_key(@s, \"j\")); delete(@a[1]); delete(@s[\"k\"]); exit(); }",
	  false, "Attaching 1 probe...\n1 0 1 0\n\n\n\n\n" },
	{ "a program the verifier rejects: its log, nothing attached",
	  "BEGIN { while (1) { } exit(); }",
	  false, "Attaching 1 probe...\n", 1, "infinite loop detected" },
	{ "many strings in one probe: statements share the stack",
	  "uprobe:BIN:ukt_name /arg1 == 0/ { "
	  "printf(\"%s %d\\n\", str(arg0), 1); "
	  "printf(\"%s %d\\n\", str(arg0), 2); "
	  "printf(\"%s %d\\n\", str(arg0), 3); "
	  "printf(\"%s %d\\n\", str(arg0), 4); "
	  "printf(\"%s %d\\n\", str(arg0), 5); "
	  "printf(\"%s %d\\n\", str(arg0), 6); "
	  "printf(\"%s %d\\n\", str(arg0), 7); "
	  "printf(\"%s %d\\n\", str(arg0), 8); "
	  "printf(\"%s %d\\n\", str(arg0), 9); "
	  "printf(\"%s %d\\n\", str(arg0), 10); "
	  "printf(\"%s %d\\n\", str(arg0), 11); "
	  "printf(\"%s %d\\n\", str(arg0), 12); }",
	  true, "Attaching 1 probe...\n"
	  "alpha 1\nalpha 2\nalpha 3\nalpha 4\nalpha 5\nalpha 6\n"
	  "alpha 7\nalpha 8\nalpha 9\nalpha 10\nalpha 11\nalpha 12\n\n"
	  "\n" },
	{ "a wildcard uprobe and uretprobe: uprobe_multi links",
	  "uprobe:BIN:ukt_* { @calls = count(); }"
	  " uretprobe:BIN:ukt_[an]* { @ret[(int64)retval >= 0] = count(); }",
	  true, "Attaching 7 probes...\n\n\n@calls: 29\n"
	  "@ret[0]: 9\n@ret[1]: 19\n" },
	{ "for over a map: callbacks, continue, break",
	  "BEGIN { @m[\"a\"] = 1; @m[\"bb\"] = 2; @m[\"c\"] = 3;"
	  " for ($kv : @m) { $x = $kv.1 * 10; if ($kv.1 == 2) { continue; }"
	  " @s = sum($x); } for ($kv : @m) { @n = count(); break; }"
	  " delete(@m[\"a\"]); delete(@m[\"bb\"]); delete(@m[\"c\"]); exit(); }",
	  false, "Attaching 1 probe...\n\n\n\n@n: 1\n@s: 40\n" },
	{ "for over a map: variables from before the loop, set in it",
	  "BEGIN { @m[1] = 1; $y = 5; for ($kv : @m) { @s = sum($kv.0 + $y);"
	  " $y = 7; } printf(\"%d\\n\", $y); exit(); }",
	  false, "Attaching 1 probe...\n7\n\n\n@m[1]: 1\n@s: 6\n" },
	{ "indexing a pointer reads the process's memory",
	  "uprobe:BIN:ukt_name /arg1 == 0/ { $p = (uint8 *)arg0;"
	  " printf(\"%c%c%c\\n\", $p[0], $p[1], $p[4]); }",
	  true, "Attaching 1 probe...\nala\n\n\n" },
	{ "len() of a map",
	  "BEGIN { @m[1] = 1; @m[2] = 2; @m[7] = 3; printf(\"%d\\n\", len(@m));"
	  " clear(@m); exit(); }",
	  false, "Attaching 1 probe...\n3\n\n\n\n" },
	{ "comm, pid, strings compared",
	  "uprobe:BIN:ukt_name /str(arg0) == \"beta\"/ { @[comm, pid == cpid] = count(); }",
	  true, "Attaching 1 probe...\n\n\n@[unit-kernel, 1]: 2\n" },
};

static char self[PATH_MAX];

static char *replace_bin(const char *prog)
{
	size_t n = strlen(prog) + 1;
	const char *p;
	char *out, *o;

	for (p = prog; (p = strstr(p, "BIN")); p += 3)
		n += strlen(self);
	out = o = malloc(n);
	for (p = prog; *p;) {
		if (!strncmp(p, "BIN", 3)) {
			o = stpcpy(o, self);
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

static int run_case(int i, const struct ukt_case *tc)
{
	char *prog = replace_bin(tc->prog);
	char *expect = replace_bin(tc->expect);
	char *expect_err = tc->expect_err ? replace_bin(tc->expect_err) : NULL;
	char cmd[PATH_MAX + 16], pidstr[32];
	const char *params[1] = { pidstr };
	struct compile c;
	struct kernel_opts o = { .sz = sizeof(o) };
	FILE *out = tmpfile(), *err = tmpfile();
	char got[16384] = "", errs[16384] = "";
	pid_t pid = 0;
	size_t n;
	int rc, fail;

	snprintf(cmd, sizeof(cmd), "%s child", self);
	if (tc->with_child == 2) {
		fflush(NULL);
		pid = fork();
		if (!pid)
			_exit(child_wait());
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	compile_init(&c, "stdin", prog);
	c.has_cmd = tc->with_child == 1;
	c.unsafe = true;
	c.pid = pid;
	c.params = params;
	c.nparams = 1;
	o.out = out;
	o.cmd = tc->with_child == 1 ? cmd : NULL;
	o.pid = pid;
	fflush(stdout);
	if (compile_frontend(&c, STAGE_SEMA) || diag_has_errors(&c.diag)) {
		diag_print(&c.diag, err);
		rc = -1;
	} else {
		/* errors of kernel_run go to stderr: keep them for TAP */
		int saved = dup(2);

		dup2(fileno(err), 2);
		rc = kernel_run(&c, &o);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	rewind(out);
	n = fread(got, 1, sizeof(got) - 1, out);
	got[n] = 0;
	rewind(err);
	n = fread(errs, 1, sizeof(errs) - 1, err);
	errs[n] = 0;
	fail = rc != tc->expect_rc || strcmp(got, expect) ||
	       (expect_err && !strstr(errs, expect_err));
	printf("%s %d - %s\n", fail ? "not ok" : "ok", i + 1, tc->name);
	if (fail) {
		printf("# rc %d\n# program: %s\n", rc, prog);
		for (char *l = strtok(got, "\n"); l; l = strtok(NULL, "\n"))
			printf("# got: %s\n", l);
		for (char *l = strtok(errs, "\n"); l; l = strtok(NULL, "\n"))
			printf("# stderr: %s\n", l);
	}
	compile_release(&c);
	fclose(out);
	fclose(err);
	free(prog);
	free(expect);
	free(expect_err);
	return fail;
}

int main(int argc, char **argv)
{
	int failed = 0;
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		printf("Bail out! readlink /proc/self/exe: %s\n",
		       strerror(errno));
		return 99;
	}
	self[n] = 0;
	printf("1..%zu\n", sizeof(cases) / sizeof(cases[0]));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		failed += run_case(i, &cases[i]);
	return failed ? 1 : 0;
}
