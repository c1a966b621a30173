/* Where the runtime comes from, and whether it may be loaded (rtpath.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rtpath.h"

#ifndef UBT_BINDIR
#define UBT_BINDIR "/usr/local/bin"
#endif
#ifndef UBT_PKGLIBEXECDIR
#define UBT_PKGLIBEXECDIR "/usr/local/libexec/ubt"
#endif

/* Directories above the executable that may be the top of a build tree. */
#define RTPATH_BUILD_DEPTH 2

static int rtpath_fail(char *why, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int rtpath_fail(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err;
}

/* One component of a resolved path: root's, writable by nobody else. */
static int rtpath_node(const char *path, bool dir, char *why, size_t len)
{
	unsigned int mode;
	struct stat st;

	if (lstat(path, &st))
		return rtpath_fail(why, len, -errno, "%s: %s", path,
				   strerror(errno));
	mode = st.st_mode & 07777;
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return rtpath_fail(why, len, -EPERM, "%s is not a %s", path,
				   dir ? "directory" : "regular file");
	if (st.st_uid != 0)
		return rtpath_fail(why, len, -EPERM,
				   "%s is owned by uid %u, not by root", path,
				   (unsigned int)st.st_uid);
	if (mode & S_IWOTH)
		return rtpath_fail(why, len, -EPERM,
				   "%s is writable by others (mode %04o)",
				   path, mode);
	if (mode & S_IWGRP)
		return rtpath_fail(why, len, -EPERM,
				   "%s is writable by its group (mode %04o)",
				   path, mode);
	return 0;
}

int rtpath_check(const char *path, char *real, size_t len, char *why,
		 size_t whylen)
{
	char rp[PATH_MAX];
	char *slash;
	int err;

	if (!realpath(path, rp))
		return rtpath_fail(why, whylen, -errno, "%s", strerror(errno));
	err = rtpath_node(rp, false, why, whylen);
	if (err)
		return err;
	if (strlen(rp) + 1 > len)
		return rtpath_fail(why, whylen, -ENAMETOOLONG,
				   "the path is too long");
	strcpy(real, rp);
	/* every directory above it, up to and including / */
	while ((slash = strrchr(rp, '/'))) {
		if (slash == rp) {
			err = rtpath_node("/", true, why, whylen);
			break;
		}
		*slash = 0;
		err = rtpath_node(rp, true, why, whylen);
		if (err)
			break;
	}
	return err;
}

/* The next component of a path: its length, *p moved past it. */
static size_t rtpath_next(const char **p)
{
	size_t n;

	for (;;) {
		while (**p == '/')
			(*p)++;
		n = strcspn(*p, "/");
		if (n == 1 && **p == '.') {
			*p += 1;
			continue;
		}
		*p += n;
		return n;
	}
}

int rtpath_relative(const char *from, const char *to, char *out,
		    size_t len)
{
	const char *f = from, *t = to;
	size_t fn, tn, used = 0;
	int n;

	/* skip the leading components both have */
	for (;;) {
		const char *f0 = f, *t0 = t;

		fn = rtpath_next(&f);
		tn = rtpath_next(&t);
		if (!fn || fn != tn || memcmp(f - fn, t - tn, fn)) {
			f = f0;
			t = t0;
			break;
		}
	}
	/* one ".." per component left in from, then the rest of to */
	while ((fn = rtpath_next(&f))) {
		n = snprintf(out + used, len - used, "%s..", used ? "/" : "");
		if (n < 0 || (size_t)n >= len - used)
			return -ENAMETOOLONG;
		used += (size_t)n;
	}
	while ((tn = rtpath_next(&t))) {
		n = snprintf(out + used, len - used, "%s%.*s",
			     used ? "/" : "", (int)tn, t - tn);
		if (n < 0 || (size_t)n >= len - used)
			return -ENAMETOOLONG;
		used += (size_t)n;
	}
	if (!used) {
		if (len < 2)
			return -ENAMETOOLONG;
		strcpy(out, ".");
	}
	return 0;
}

/* out = a/b, PATH_MAX bytes; false if it does not fit */
static bool rtpath_join(char *out, const char *a, const char *b)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", a, b);

	return n >= 0 && n < PATH_MAX;
}

/* Does dir/name exist (without following a last symbolic link)? */
static bool rtpath_exists(const char *dir, const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return false;
	return !lstat(p, &st);
}

/* Check the candidate path and say why in full when it is refused. */
static int rtpath_take(const char *path, char *out, size_t len, char *why,
		       size_t whylen)
{
	char r[512];
	int err = rtpath_check(path, out, len, r, sizeof(r));

	if (err == -EPERM)
		rtpath_fail(why, whylen, err,
			    "the runtime %s is not safe to load: %s", path, r);
	else if (err)
		rtpath_fail(why, whylen, err, "cannot load the runtime %s: %s",
			    path, r);
	return err;
}

int rtpath_find(const char *override, char *out, size_t len, char *why,
		size_t whylen)
{
	char exe[PATH_MAX], dir[PATH_MAX], cand[2][PATH_MAX], rel[PATH_MAX];
	const char *env = getenv("UBT_RUNTIME");
	int ncand = 0;
	ssize_t n;

	if (override && *override)
		return rtpath_take(override, out, len, why, whylen);
	if (env && *env)
		return rtpath_take(env, out, len, why, whylen);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		/* a build tree: the executable's directory or one above */
		snprintf(dir, sizeof(dir), "%s", exe);
		for (int up = 0; up <= RTPATH_BUILD_DEPTH; up++) {
			if (rtpath_exists(dir, "config.status") &&
			    rtpath_exists(dir, RTPATH_NAME) &&
			    rtpath_join(cand[0], dir, RTPATH_NAME))
				return rtpath_take(cand[0], out, len, why,
						   whylen);
			slash = strrchr(dir, '/');
			if (!slash || slash == dir)
				break;
			*slash = 0;
		}
		/* the installed copy, as placed next to an installed ubt */
		if (!rtpath_relative(UBT_BINDIR, UBT_PKGLIBEXECDIR, rel,
				     sizeof(rel)) &&
		    rtpath_join(dir, exe, rel) &&
		    rtpath_join(cand[0], dir, RTPATH_NAME))
			ncand++;
	}
	if (rtpath_join(cand[ncand], UBT_PKGLIBEXECDIR, RTPATH_NAME) &&
	    (!ncand || strcmp(cand[0], cand[1])))
		ncand++;
	for (int i = 0; i < ncand; i++) {
		struct stat st;

		if (!lstat(cand[i], &st))
			return rtpath_take(cand[i], out, len, why, whylen);
	}
	return rtpath_fail(why, whylen, -ENOENT,
			   "cannot find " RTPATH_NAME " (looked in %s%s%s)",
			   ncand ? cand[0] : "no place",
			   ncand > 1 ? " and " : "", ncand > 1 ? cand[1] : "");
}
