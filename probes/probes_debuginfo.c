/*
 * --debuginfo DIR[:DIR] (the newest bpftrace's): more directories where
 * a stripped binary's debug file is looked for, before the standard
 * places (probes_debug_file()).  A relative DIR is taken from the
 * binary's directory.  In each: DIR/.build-id/xx/yyyy.debug, then the
 * file's .gnu_debuglink name, NAME.debug and NAME (the binary's base
 * name); a candidate is taken when its build id is the binary's (or
 * either has none).
 */
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "probes.h"
#include "probes_int.h"
#include "util.h"

static const char **dbg_dirs;
static int dbg_ndirs;

void probes_set_debuginfo(const char *const *dirs, int n)
{
	for (int i = 0; i < n; i++) {
		char *s = xstrdup(dirs[i]), *save = NULL;

		for (char *d = strtok_r(s, ":", &save); d;
		     d = strtok_r(NULL, ":", &save)) {
			dbg_dirs = xrealloc(dbg_dirs,
					    (dbg_ndirs + 1) * sizeof(*dbg_dirs));
			/* kept for the run: strdup'ed parts of s */
			dbg_dirs[dbg_ndirs++] = xstrdup(d);
		}
		free(s);
	}
}

/* path's debug file candidate c: readable, not path, same build id. */
static bool dbg_match(const char *c, const char *real,
		      const unsigned char *id, size_t idlen)
{
	struct probes_elf e;
	const unsigned char *cid;
	size_t clen;
	char creal[PATH_MAX];
	bool ok;

	if (access(c, R_OK) || !realpath(c, creal) || !strcmp(creal, real))
		return false;
	if (probes_elf_open(c, &e))
		return false;
	clen = probes_elf_build_id(e.elf, &cid);
	ok = !idlen || !clen || (clen == idlen && !memcmp(cid, id, idlen));
	probes_elf_close(&e);
	return ok;
}

static const char *dbg_debuglink(Elf *elf)
{
	Elf_Scn *scn = probes_elf_section(elf, ".gnu_debuglink");
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;

	if (!data || !data->d_buf || !data->d_size ||
	    strnlen(data->d_buf, data->d_size) == data->d_size)
		return NULL;
	return data->d_buf;
}

const char *probes_debuginfo_find(struct arena *a, Elf *elf,
				  const char *path)
{
	const unsigned char *id;
	size_t idlen;
	char real[PATH_MAX];
	const char *base, *link;
	char *dir;

	if (!dbg_ndirs || !realpath(path, real))
		return NULL;
	idlen = probes_elf_build_id(elf, &id);
	link = dbg_debuglink(elf);
	dir = arena_strdup(a, real);
	*strrchr(dir, '/') = '\0';
	base = strrchr(real, '/') + 1;
	for (int i = 0; i < dbg_ndirs; i++) {
		const char *d = dbg_dirs[i][0] == '/' ? dbg_dirs[i] :
				arena_printf(a, "%s/%s", dir, dbg_dirs[i]);
		const char *cands[4];
		int n = 0;

		if (idlen) {
			char *p = arena_printf(a, "%s/.build-id/%02x/", d,
					       id[0]);

			for (size_t j = 1; j < idlen; j++)
				p = arena_printf(a, "%s%02x", p, id[j]);
			cands[n++] = arena_printf(a, "%s.debug", p);
		}
		if (link)
			cands[n++] = arena_printf(a, "%s/%s", d, link);
		cands[n++] = arena_printf(a, "%s/%s.debug", d, base);
		cands[n++] = arena_printf(a, "%s/%s", d, base);
		for (int j = 0; j < n; j++)
			if (dbg_match(cands[j], real, id, idlen))
				return cands[j];
	}
	return NULL;
}
