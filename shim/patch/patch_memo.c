/* ELF lookups kept per file and name (patch_memo.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "patch_memo.h"
#include "util.h"

/* a handful of files (the command, libc, a library) and their names */
#define PATCH_MEMO_SLOTS 64

struct patch_memo_ent {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	enum patch_memo_kind kind;
	char *name;		/* NULL: a free slot */
	struct patch_memo_val val;
};

static struct patch_memo_ent patch_memo[PATCH_MEMO_SLOTS];
static unsigned int patch_memo_next;
static pthread_mutex_t patch_memo_lock = PTHREAD_MUTEX_INITIALIZER;

static bool patch_memo_same(const struct patch_memo_ent *e,
			    const struct stat *st, enum patch_memo_kind kind,
			    const char *name)
{
	return e->name && e->dev == st->st_dev && e->ino == st->st_ino &&
	       e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec &&
	       e->mtime.tv_nsec == st->st_mtim.tv_nsec && e->kind == kind &&
	       !strcmp(e->name, name);
}

bool patch_memo_get(const char *path, enum patch_memo_kind kind,
		    const char *name, struct patch_memo_val *out)
{
	struct stat st;
	bool hit = false;

	if (stat(path, &st))
		return false;
	pthread_mutex_lock(&patch_memo_lock);
	for (int i = 0; i < PATCH_MEMO_SLOTS && !hit; i++) {
		if (patch_memo_same(&patch_memo[i], &st, kind, name)) {
			*out = patch_memo[i].val;
			hit = true;
		}
	}
	pthread_mutex_unlock(&patch_memo_lock);
	return hit;
}

void patch_memo_put(const char *path, enum patch_memo_kind kind,
		    const char *name, const struct patch_memo_val *val)
{
	struct patch_memo_ent *e;
	struct stat st;

	if ((val->err && val->err != -ENOENT) || stat(path, &st))
		return;
	pthread_mutex_lock(&patch_memo_lock);
	e = &patch_memo[patch_memo_next++ % PATCH_MEMO_SLOTS];
	free(e->name);
	*e = (struct patch_memo_ent){ .dev = st.st_dev, .ino = st.st_ino,
				      .size = st.st_size,
				      .mtime = st.st_mtim, .kind = kind,
				      .name = xstrdup(name), .val = *val };
	pthread_mutex_unlock(&patch_memo_lock);
}
