/*
 * Unit tests of shim/user/rtpath.c: the runtime is loaded only from a file that
 * root alone can have written.  A copy in a world-writable directory, a
 * sticky one, below a directory of another user, group-writable, owned by
 * another uid, not a regular file, or missing is refused with the reason;
 * symbolic links are resolved and the resolved path is what is checked and
 * returned; the override ($UBT_RUNTIME, user_opts.runtime_path) is taken
 * only under the same checks; a test program of the build tree finds the
 * build tree's copy from /proc/self/exe.  The files live in a directory
 * made in the build tree (root's, as root runs these tests).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rtpath.h"
#include "tests/tap.h"

/* the test's directory: short enough that base/anything fits PATH_MAX */
static char base[PATH_MAX / 2];

/* base/rel made with mode (directories end in '/'); exits 99 on failure */
static void make(const char *rel, mode_t mode, uid_t uid)
{
	char p[PATH_MAX];
	size_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	n = strlen(p);
	if (p[n - 1] == '/') {
		p[n - 1] = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			goto fail;
	} else {
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, "\177ELF", 4) != 4 || close(fd))
			goto fail;
	}
	if (chown(p, uid, 0) || chmod(p, mode))
		goto fail;
	return;
fail:
	printf("Bail out! %s: %s\n", p, strerror(errno));
	exit(99);
}

static void link_to(const char *rel, const char *target)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (symlink(target, p)) {
		printf("Bail out! symlink %s: %s\n", p, strerror(errno));
		exit(99);
	}
}

/*
 * rtpath_check(base/rel): expect err; the reason must contain want (with
 * "BASE" replaced by base); on success the resolved path must be
 * base/real.
 */
static void check(const char *rel, int want_err, const char *want,
		  const char *real_rel, const char *what)
{
	char p[PATH_MAX], real[PATH_MAX] = "", why[512] = "", w[PATH_MAX];
	char exp_real[PATH_MAX];
	const char *b = want ? strstr(want, "BASE") : NULL;
	int err;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (b)
		snprintf(w, sizeof(w), "%.*s%s%s", (int)(b - want), want, base,
			 b + 4);
	else
		snprintf(w, sizeof(w), "%s", want ? want : "");
	err = rtpath_check(p, real, sizeof(real), why, sizeof(why));
	if (!want_err) {
		snprintf(exp_real, sizeof(exp_real), "%s/%s", base, real_rel);
		ok(!err && !strcmp(real, exp_real), "%s: loaded as %s%s%s",
		   what, real_rel, err ? ": refused: " : "", err ? why : "");
		return;
	}
	ok(err == want_err && strstr(why, w), "%s: refused: %s", what, why);
	if (err != want_err || !strstr(why, w))
		diag("want error %d with \"%s\", got %d", want_err, w, err);
}

static void test_check(void)
{
	make("ok/", 0755, 0);
	make("ok/libubt-rt.so", 0755, 0);
	check("ok/libubt-rt.so", 0, NULL, "ok/libubt-rt.so",
	      "root's file in root's 0755 directories");
	make("ok/ro.so", 0444, 0);
	check("ok/ro.so", 0, NULL, "ok/ro.so", "a read-only file");

	make("ww/", 0777, 0);
	make("ww/libubt-rt.so", 0755, 0);
	check("ww/libubt-rt.so", -EPERM,
	      "BASE/ww is writable by others (mode 0777)", NULL,
	      "in a world-writable directory");
	make("sticky/", 01777, 0);
	make("sticky/libubt-rt.so", 0755, 0);
	check("sticky/libubt-rt.so", -EPERM,
	      "BASE/sticky is writable by others (mode 1777)", NULL,
	      "in a sticky, /tmp-like directory");
	make("gw/", 0775, 0);
	make("gw/libubt-rt.so", 0755, 0);
	check("gw/libubt-rt.so", -EPERM,
	      "BASE/gw is writable by its group (mode 0775)", NULL,
	      "in a group-writable directory");
	make("ww/sub/", 0755, 0);
	make("ww/sub/libubt-rt.so", 0755, 0);
	check("ww/sub/libubt-rt.so", -EPERM,
	      "BASE/ww is writable by others (mode 0777)", NULL,
	      "below a world-writable directory");
	make("user/", 0755, 4321);
	make("user/libubt-rt.so", 0755, 0);
	check("user/libubt-rt.so", -EPERM,
	      "BASE/user is owned by uid 4321, not by root", NULL,
	      "in a directory of another user");

	make("ok/group.so", 0775, 0);
	check("ok/group.so", -EPERM,
	      "BASE/ok/group.so is writable by its group (mode 0775)", NULL,
	      "a group-writable file");
	make("ok/other.so", 0757, 0);
	check("ok/other.so", -EPERM,
	      "BASE/ok/other.so is writable by others (mode 0757)", NULL,
	      "a world-writable file");
	make("ok/theirs.so", 0755, 4321);
	check("ok/theirs.so", -EPERM,
	      "BASE/ok/theirs.so is owned by uid 4321, not by root", NULL,
	      "a file of another uid");
	make("ok/dir.so/", 0755, 0);
	check("ok/dir.so", -EPERM, "BASE/ok/dir.so is not a regular file",
	      NULL, "a directory");
	check("ok/missing.so", -ENOENT, "No such file or directory", NULL,
	      "a missing file");

	/* links: the resolved path is checked, and is what gets loaded */
	link_to("ok/link.so", "libubt-rt.so");
	check("ok/link.so", 0, NULL, "ok/libubt-rt.so",
	      "a link to a safe file");
	link_to("ww/link.so", "../ok/libubt-rt.so");
	check("ww/link.so", 0, NULL, "ok/libubt-rt.so",
	      "a link in a world-writable directory to a safe file "
	      "(the target is loaded, not the link)");
	link_to("ok/bad.so", "../ww/libubt-rt.so");
	check("ok/bad.so", -EPERM,
	      "BASE/ww is writable by others (mode 0777)", NULL,
	      "a link to a file in a world-writable directory");
	link_to("dirlink", "ww");
	check("dirlink/sub/libubt-rt.so", -EPERM,
	      "BASE/ww is writable by others (mode 0777)", NULL,
	      "a path through a linked directory");
}

/* rtpath_find(): the override and $UBT_RUNTIME, under the same checks. */
static void test_find(void)
{
	char good[PATH_MAX / 2 + 32], bad[PATH_MAX / 2 + 32], out[PATH_MAX];
	char build[PATH_MAX], want[PATH_MAX * 2], why[PATH_MAX * 2];
	const char *top = getenv("top_builddir");
	int err;

	snprintf(good, sizeof(good), "%s/ok/libubt-rt.so", base);
	snprintf(bad, sizeof(bad), "%s/ww/libubt-rt.so", base);

	unsetenv("UBT_RUNTIME");
	err = rtpath_find(good, out, sizeof(out), why, sizeof(why));
	ok(!err && !strcmp(out, good), "override: a safe file is taken%s%s",
	   err ? ": " : "", err ? why : "");
	err = rtpath_find(bad, out, sizeof(out), why, sizeof(why));
	snprintf(want, sizeof(want),
		 "the runtime %s is not safe to load: %s/ww is writable by "
		 "others (mode 0777)", bad, base);
	ok(err == -EPERM && !strcmp(why, want),
	   "override: an unsafe file is refused, not skipped: %s", why);

	setenv("UBT_RUNTIME", good, 1);
	err = rtpath_find(NULL, out, sizeof(out), why, sizeof(why));
	ok(!err && !strcmp(out, good),
	   "UBT_RUNTIME: a safe file is taken%s%s", err ? ": " : "",
	   err ? why : "");
	setenv("UBT_RUNTIME", bad, 1);
	err = rtpath_find(NULL, out, sizeof(out), why, sizeof(why));
	ok(err == -EPERM && !strcmp(why, want),
	   "UBT_RUNTIME: an unsafe file is refused, not skipped: %s", why);
	err = rtpath_find(good, out, sizeof(out), why, sizeof(why));
	ok(!err && !strcmp(out, good),
	   "the override comes before UBT_RUNTIME");
	snprintf(want, sizeof(want), "%s/ok/missing.so", base);
	setenv("UBT_RUNTIME", want, 1);
	err = rtpath_find(NULL, out, sizeof(out), why, sizeof(why));
	ok(err == -ENOENT && strstr(why, "cannot load the runtime") &&
		   strstr(why, "No such file"),
	   "UBT_RUNTIME: a missing file: %s", why);

	/* this program lies in tests/ of a build tree */
	unsetenv("UBT_RUNTIME");
	if (!top || !realpath(top, build)) {
		ok(0, "top_builddir is set");
		return;
	}
	strcat(build, "/" RTPATH_NAME);
	err = rtpath_find(NULL, out, sizeof(out), why, sizeof(why));
	ok(!err && !strcmp(out, build),
	   "a program of the build tree finds the build tree's runtime: %s",
	   err ? why : out);
}

static void relative(const char *from, const char *to, const char *want)
{
	char out[PATH_MAX];
	int err = rtpath_relative(from, to, out, sizeof(out));

	ok(!err && !strcmp(out, want), "relative path from %s to %s: %s", from,
	   to, err ? strerror(-err) : out);
}

static void test_relative(void)
{
	char out[8];

	relative("/usr/local/bin", "/usr/local/libexec/ubt", "../libexec/ubt");
	relative("/usr/bin/", "/usr/lib/x86_64-linux-gnu/ubt",
		 "../lib/x86_64-linux-gnu/ubt");
	relative("/opt//ubt/./bin", "/opt/ubt/libexec/ubt", "../libexec/ubt");
	relative("/usr/bin", "/usr/bin", ".");
	relative("/usr/bin", "/usr", "..");
	relative("/", "/libexec/ubt", "libexec/ubt");
	relative("/a/b/c", "/x", "../../../x");
	ok(rtpath_relative("/a/b/c", "/xyzzy", out, sizeof(out)) ==
		   -ENAMETOOLONG,
	   "relative path: too long for the buffer: -ENAMETOOLONG");
}

int main(void)
{
	const char *top = getenv("top_builddir");
	char why[512], real[PATH_MAX], tests[PATH_MAX / 2 - 16];
	int err;

	test_relative();
	if (geteuid()) {
		printf("# SKIP the other checks: not root (they chown)\n");
		return tap_done();
	}
	/* a safe place for the files: the build tree's tests/ */
	if (snprintf(tests, sizeof(tests), "%s/tests", top ? top : ".") >=
	    (int)sizeof(tests)) {
		printf("Bail out! the build tree's path is too long\n");
		return 99;
	}
	snprintf(base, sizeof(base), "%s/rtpath.XXXXXX", tests);
	if (!mkdtemp(base)) {
		printf("Bail out! mkdtemp %s: %s\n", base, strerror(errno));
		return 99;
	}
	if (!realpath(base, real)) {
		printf("Bail out! realpath %s: %s\n", base, strerror(errno));
		return 99;
	}
	if (snprintf(base, sizeof(base), "%s", real) >= (int)sizeof(base)) {
		printf("Bail out! the build tree's path is too long\n");
		return 99;
	}
	make("probe", 0755, 0);
	snprintf(real, sizeof(real), "%s/probe", base);
	err = rtpath_check(real, real, sizeof(real), why, sizeof(why));
	if (err) {
		/* the build tree is not root's alone: nothing to build on */
		printf("# SKIP the other checks: %s\n", why);
	} else {
		test_check();
		test_find();
	}
	if (system(strcat(strcat(strcpy(real, "rm -rf '"), base), "'"))) {
		printf("Bail out! cannot remove %s\n", base);
		return 99;
	}
	return tap_done();
}
