/*
 * Where the runtime (libubt-rt.so) comes from, and whether it may be
 * loaded.  ubt loads it into processes of every user, root's too, so it
 * loads only a file that only root can have written: the file and every
 * directory above it (symbolic links resolved) owned by root and writable
 * by nobody else (no group or other write permission; a sticky, /tmp-like
 * directory is no exception).  The resolved path is what gets loaded.
 *
 * Where it looks, the first that exists wins (an unsafe one is an error,
 * never skipped):
 *   1. the override: user_opts.runtime_path, else $UBT_RUNTIME;
 *   2. the build tree's copy, when ubt runs from a build tree: the
 *      directory of /proc/self/exe, or the one or two above it (the test
 *      programs in tests/ and tests/user/), holds config.status and
 *      libubt-rt.so;
 *   3. the installed copy, $pkglibexecdir/libubt-rt.so: first where it
 *      lies relative to /proc/self/exe as $pkglibexecdir lies relative to
 *      $bindir (an install moved elsewhere, or made with DESTDIR), then at
 *      $pkglibexecdir.
 * No path of the build tree is compiled in.
 */
#ifndef UBT_RTPATH_H
#define UBT_RTPATH_H

#include <stddef.h>

#define RTPATH_NAME "libubt-rt.so"

/*
 * Is path safe to load?  0 with its resolved path in real (len bytes);
 * -EPERM when it is not, -errno when it cannot be checked (missing), with
 * the reason in why ("/x is writable by others (mode 0777)").
 */
int rtpath_check(const char *path, char *real, size_t len, char *why,
		 size_t whylen);

/*
 * The runtime to load (override: NULL for none): 0 with the resolved path
 * in out; else -errno with the whole message in why, e.g. "the runtime
 * /x/libubt-rt.so is not safe to load: /x is writable by others (mode
 * 0777)" or "cannot find libubt-rt.so (looked in ...)".
 */
int rtpath_find(const char *override, char *out, size_t len, char *why,
		size_t whylen);

/*
 * The relative path from directory from to directory to, both absolute
 * ("/usr/local/bin", "/usr/local/libexec/ubt" -> "../libexec/ubt"; "."
 * when equal); -ENAMETOOLONG if it does not fit.
 */
int rtpath_relative(const char *from, const char *to, char *out,
		    size_t len);

#endif
