/*
 * Target resolution: a uprobe/usdt target (a path, a library name, a
 * program on $PATH, the -p process's files) to the ELF files it names.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem */
#endif
#include <ctype.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "arena.h"
#include "ast.h"
#include "compile.h"
#include "diag.h"
#include "probes.h"
#include "tracepoint.h"
#include "util.h"
#include "probes_int.h"

/* ------------------------------------------------------------------ */
/* Target resolution                                                   */

static bool probes_is_elf(const char *path)
{
	unsigned char magic[4];
	struct stat st;
	int fd;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = read(fd, magic, 4) == 4 && !memcmp(magic, ELFMAG, SELFMAG);
	close(fd);
	return ok;
}

static const char *probes_basename(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/*
 * Does a library file name (a basename or soname) match a library name
 * as written: "libc.so.6" exactly, "libc" -> libc.so*, "c" -> libc.so*.
 */
static bool probes_lib_matches(const char *base, const char *lib)
{
	size_t n = strlen(lib);

	if (!strcmp(base, lib))
		return true;
	if (!strncmp(base, lib, n) && !strncmp(base + n, ".so", 3) &&
	    (base[n + 3] == '\0' || base[n + 3] == '.'))
		return true;
	if (strncmp(lib, "lib", 3) && !strncmp(base, "lib", 3) &&
	    !strncmp(base + 3, lib, n) && !strncmp(base + 3 + n, ".so", 3) &&
	    (base[n + 6] == '\0' || base[n + 6] == '.'))
		return true;
	return false;
}

/* Every file mapped by pid (executable mappings first seen), deduplicated. */
static int probes_pid_files(struct arena *a, int pid, const char ***out,
			    int *n)
{
	char path[64], line[PATH_MAX + 256];
	struct probes_vec v = { .elem = sizeof(char *) };
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		char *nl;
		bool dup = false;

		if (!p)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(p, " (deleted)"))
			continue;
		for (size_t i = 0; i < v.len; i++)
			if (!strcmp(((char **)v.data)[i], p))
				dup = true;
		if (dup)
			continue;
		*(char **)probes_vec_push(&v) = arena_strdup(a, p);
	}
	fclose(f);
	*n = v.len;
	*out = probes_vec_to_arena(a, &v);
	return 0;
}

/* ld.so.cache (glibc's new format): soname -> path. */
static const char *probes_ldcache_find(struct arena *a, const char *lib)
{
	static const char magic[] = "glibc-ld.so.cache1.1";
	const char *res = NULL;
	struct stat st;
	const char *base, *h;
	int fd;
	void *map;

	fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size < 48) {
		close(fd);
		return NULL;
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	base = map;
	h = memmem(base, st.st_size, magic, sizeof(magic) - 1);
	if (h && (size_t)(h - base) + 48 <= (size_t)st.st_size) {
		uint32_t nlibs;
		size_t first = h - base + 48;
		size_t size = st.st_size - (h - base);

		memcpy(&nlibs, h + 20, 4);
		for (uint32_t i = 0; i < nlibs; i++) {
			size_t e = first + (size_t)i * 24;
			uint32_t flags, key, value;
			const char *name, *val;

			if (e + 24 > (size_t)st.st_size)
				break;
			memcpy(&flags, base + e, 4);
			memcpy(&key, base + e + 4, 4);
			memcpy(&value, base + e + 8, 4);
			/* key/value are offsets from the new format's header
			 * (the file start, unless an old-format part leads) */
			if ((size_t)key >= size || (size_t)value >= size)
				continue;
			name = h + key;
			val = h + value;
			if (!memchr(name, 0, size - key) ||
			    !memchr(val, 0, size - value))
				continue;
			/* x86-64 libraries only: FLAG_X8664_LIB64 */
			if ((flags & 0xff00) != 0x0300 && (flags & 0xff00))
				continue;
			if (probes_lib_matches(name, lib) &&
			    probes_is_elf(val)) {
				res = arena_strdup(a, val);
				break;
			}
		}
	}
	munmap(map, st.st_size);
	return res;
}

static const char *probes_find_library(struct arena *a, const char *lib,
				       int pid)
{
	static const char *const dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
		"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
	};
	const char *p;

	if (pid > 0) {
		const char **files;
		int n;

		if (!probes_pid_files(a, pid, &files, &n))
			for (int i = 0; i < n; i++)
				if (probes_lib_matches(
					    probes_basename(files[i]), lib) &&
				    probes_is_elf(files[i]))
					return files[i];
	}
	p = probes_ldcache_find(a, lib);
	if (p)
		return p;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		const char *cands[] = {
			arena_printf(a, "%s/%s", dirs[i], lib),
			arena_printf(a, "%s/lib%s.so", dirs[i], lib),
			arena_printf(a, "%s/%s.so", dirs[i], lib),
		};

		for (size_t j = 0; j < ARRAY_SIZE(cands); j++) {
			if (strstr(probes_basename(cands[j]), ".so") &&
			    probes_is_elf(cands[j]))
				return cands[j];
		}
	}
	return NULL;
}

static const char *probes_path_env(void)
{
	const char *p = getenv("PATH");

	return p && *p ? p : "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
			     "/usr/bin:/sbin:/bin";
}

/* Candidate paths of name in $PATH, in order (glob when wildcard). */
static void probes_path_candidates(struct arena *a, const char *name,
				   struct probes_vec *v)
{
	char *env = arena_strdup(a, probes_path_env());
	char *save = NULL;

	for (char *dir = strtok_r(env, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		char *cand = arena_printf(a, "%s/%s", dir, name);

		if (probes_has_wildcard(name)) {
			glob_t g;

			if (glob(cand, 0, NULL, &g) == 0)
				for (size_t i = 0; i < g.gl_pathc; i++)
					*(const char **)probes_vec_push(v) =
						arena_strdup(a,
							     g.gl_pathv[i]);
			globfree(&g);
		} else if (access(cand, X_OK) == 0) {
			*(const char **)probes_vec_push(v) = cand;
		}
	}
}

static void probes_add_unique(struct arena *a, struct probes_vec *v,
			      const char *path)
{
	char real[PATH_MAX];
	const char *rp = realpath(path, real) ? real : path;

	for (size_t i = 0; i < v->len; i++) {
		char r2[PATH_MAX];
		const char *q = ((const char **)v->data)[i];

		if (!strcmp(q, path) ||
		    (realpath(q, r2) && !strcmp(r2, rp)))
			return;
	}
	*(const char **)probes_vec_push(v) = arena_strdup(a, path);
}

int probes_resolve_target(struct arena *a, const char *target, int pid,
			  const char ***paths, int *npaths)
{
	struct probes_vec v = { .elem = sizeof(char *) };
	struct probes_vec cands = { .elem = sizeof(char *) };

	*paths = NULL;
	*npaths = 0;
	if (!target || !*target)
		return -ENOENT;
	if (probes_has_wildcard(target)) {
		if (pid > 0) {
			const char **files;
			int n;
			bool has_slash = strchr(target, '/') != NULL;

			if (!probes_pid_files(a, pid, &files, &n))
				for (int i = 0; i < n; i++) {
					const char *s = has_slash ? files[i] :
						probes_basename(files[i]);

					const char *f = files[i];

					if (!probes_match_wildcard(target, s))
						continue;
					/* a file of another mount namespace
					 * (a container): through its root */
					if (!probes_is_elf(f) && f[0] == '/')
						f = arena_printf(
							a, "/proc/%d/root%s",
							pid, f);
					if (probes_is_elf(f))
						probes_add_unique(a, &v, f);
				}
		} else if (strchr(target, '/')) {
			glob_t g;

			if (glob(target, 0, NULL, &g) == 0)
				for (size_t i = 0; i < g.gl_pathc; i++)
					*(const char **)probes_vec_push(&cands) =
						arena_strdup(a,
							     g.gl_pathv[i]);
			globfree(&g);
		} else {
			probes_path_candidates(a, target, &cands);
		}
	} else if (strchr(target, '/')) {
		*(const char **)probes_vec_push(&cands) = arena_strdup(a, target);
		/* a path as the -p process sees it, in its own mount
		 * namespace (a container): through its root */
		if (pid > 0 && target[0] == '/' && !probes_is_elf(target))
			*(const char **)probes_vec_push(&cands) =
				arena_printf(a, "/proc/%d/root%s", pid,
					     target);
	} else {
		const char *lib = probes_find_library(a, target, pid);

		if (lib)
			*(const char **)probes_vec_push(&cands) = lib;
		else
			probes_path_candidates(a, target, &cands);
	}
	for (size_t i = 0; i < cands.len; i++) {
		const char *c = ((const char **)cands.data)[i];

		if (probes_is_elf(c))
			probes_add_unique(a, &v, c);
		/* a name found in $PATH: the first one, as bpftrace */
		if (v.len && !strchr(target, '/') &&
		    !probes_has_wildcard(target))
			break;
	}
	free(cands.data);
	if (!v.len) {
		free(v.data);
		return -ENOENT;
	}
	*npaths = v.len;
	*paths = probes_vec_to_arena(a, &v);
	return 0;
}
